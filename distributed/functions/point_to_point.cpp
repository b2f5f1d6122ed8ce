#include "distributed/functions/point_to_point.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "distributed/functions/delegate_variable.h"
#include "distributed/functions/function_channel.h"

namespace chainermn::functions {

using chainer::Device;
using chainer::DType;
using chainer::Error;
using chainer::Shape;
using chainer::str;
using chainer::Tensor;
using detail::MessageKind;

namespace {

struct TensorSpec {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
};
TensorSpec spec_of(const Tensor& t) { return {t.shape(), t.dtype(), t.device()}; }

// Inputs: xs and a placeholder. Backward receives the gradients of xs from the peer, in one message.
class SendNode : public chainer::FunctionNode {
 public:
  SendNode(std::shared_ptr<Communicator> comm, int peer, int tag, const std::vector<Variable>& xs)
      : comm_(std::move(comm)), peer_(peer), tag_(tag) {
    for (const Variable& x : xs) xs_.push_back(spec_of(x.data()));
  }
  std::string name() const override { return "Send"; }

  std::vector<Tensor> backward(const std::vector<Tensor>&) override {
    detail::ExpectedMessage expected{MessageKind::Gradient, tag_};
    for (const TensorSpec& x : xs_) expected.each.push_back({x.shape, x.dtype});
    // Received even when no x needs a gradient: the peer's recv has sent them.
    std::vector<Tensor> gs = detail::recv_message(*comm_, peer_, expected);
    std::vector<Tensor> gx(xs_.size() + 1);
    for (size_t i = 0; i < xs_.size(); ++i)
      if (input_requires_grad(i)) gx[i] = gs[i].to(xs_[i].device);
    return gx;
  }

 private:
  std::shared_ptr<Communicator> comm_;
  int peer_, tag_;
  std::vector<TensorSpec> xs_;
};

// Inputs: the delegate (if any) and a placeholder. Backward sends the outputs' gradients back to
// the peer in one message; the delegate's gradient is zeros, as in ChainerMN (its creator, a
// send, takes its gradient from its own peer).
class RecvNode : public chainer::FunctionNode {
 public:
  RecvNode(std::shared_ptr<Communicator> comm, int peer, int tag, const Variable& delegate)
      : comm_(std::move(comm)), peer_(peer), tag_(tag), has_delegate_(delegate.defined()) {
    if (has_delegate_) delegate_ = spec_of(delegate.data());
  }
  std::string name() const override { return "Recv"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    // The engine hands zeros for the outputs nobody used, so every member has a gradient to send.
    detail::send_message(*comm_, peer_, MessageKind::Gradient, tag_, gys);
    std::vector<Tensor> gx(has_delegate_ ? 2 : 1);
    if (has_delegate_ && input_requires_grad(0))
      gx[0] = Tensor::zeros(delegate_.shape, delegate_.dtype, delegate_.device);
    return gx;
  }

 private:
  std::shared_ptr<Communicator> comm_;
  int peer_, tag_;
  bool has_delegate_;
  TensorSpec delegate_;
};

// What both recvs do: receive the next message from RANK as EXPECTED, and record its backward.
std::vector<Variable> receive(const std::shared_ptr<Communicator>& comm, int rank, const Variable& delegate,
                              const detail::ExpectedMessage& expected, const RecvOptions& options) {
  chainer::ForwardHooks hooks("Recv", delegate);
  std::vector<Tensor> ys = detail::recv_message(*comm, rank, expected);
  const Device device = options.device ? *options.device : delegate.defined() ? delegate.data().device() : Device::cpu();
  for (Tensor& y : ys) y = y.to(device);
  if (!chainer::is_backprop_enabled()) return chainer::wrap_outputs(std::move(ys));
  std::vector<Variable> inputs;
  if (delegate.defined()) inputs.push_back(delegate);
  inputs.push_back(detail::placeholder());
  return chainer::record(std::make_shared<RecvNode>(comm, rank, expected.tag, delegate), inputs, std::move(ys));
}

}  // namespace

Variable send(const std::vector<Variable>& xs, const std::shared_ptr<Communicator>& comm, int rank, int tag) {
  chainer::ForwardHooks hooks("Send", xs);
  constexpr const char* op = "chainermn::functions::send";
  detail::check_peer(comm, rank, op);
  if (xs.empty()) throw Error(str(op, ": no variable to send (sending to rank ", rank, ", tag ", tag, ")"));
  std::vector<Tensor> values;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined() || !xs[i].data().defined())
      throw Error(str(op, ": ", xs.size() == 1 ? std::string("x") : str("xs[", i, "]"), " is undefined (sending to rank ",
                      rank, ", tag ", tag, ")"));
    values.push_back(xs[i].data());
  }
  detail::send_message(*comm, rank, MessageKind::Value, tag, values);
  Tensor delegate = detail::delegate_value(values[0].device());
  if (!chainer::is_backprop_enabled()) return Variable(std::move(delegate));
  std::vector<Variable> inputs = xs;
  inputs.push_back(detail::placeholder());
  return chainer::record(std::make_shared<SendNode>(comm, rank, tag, xs), inputs, {std::move(delegate)})[0];
}

Variable send(const Variable& x, const std::shared_ptr<Communicator>& comm, int rank, int tag) {
  return send(std::vector<Variable>{x}, comm, rank, tag);
}

Variable recv(const std::shared_ptr<Communicator>& comm, int rank, const Variable& delegate, int tag,
              const RecvOptions& options) {
  constexpr const char* op = "chainermn::functions::recv";
  detail::check_peer(comm, rank, op);
  if (options.count && *options.count != 1)
    throw Error(str(op, ": RecvOptions::count is ", *options.count, ", but a recv of one variable receives 1; pass "
                    "force_tuple to receive several"));
  return receive(comm, rank, delegate, {MessageKind::Value, tag, size_t(1), {options.shape, options.dtype}, {}},
                 options)[0];
}

std::vector<Variable> recv(const std::shared_ptr<Communicator>& comm, int rank, const Variable& delegate, int tag,
                           ForceTuple, const RecvOptions& options) {
  constexpr const char* op = "chainermn::functions::recv";
  detail::check_peer(comm, rank, op);
  if (options.count && *options.count == 0) throw Error(str(op, ": RecvOptions::count is 0; a message has at least one tensor"));
  return receive(comm, rank, delegate, {MessageKind::Value, tag, options.count, {options.shape, options.dtype}, {}},
                 options);
}

}  // namespace chainermn::functions
