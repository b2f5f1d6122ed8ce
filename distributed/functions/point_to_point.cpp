#include "distributed/functions/point_to_point.h"

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

// Inputs: x and a placeholder. Backward receives x's gradient from the peer.
class SendNode : public chainer::FunctionNode {
 public:
  SendNode(std::shared_ptr<Communicator> comm, int peer, int tag, const Tensor& x)
      : comm_(std::move(comm)), peer_(peer), tag_(tag), shape_(x.shape()), dtype_(x.dtype()), device_(x.device()) {}
  std::string name() const override { return "Send"; }

  std::vector<Tensor> backward(const std::vector<Tensor>&) override {
    // Received even when x needs no gradient: the peer's recv has sent it.
    Tensor g = detail::recv_message(*comm_, peer_, {MessageKind::Gradient, tag_, shape_, dtype_});
    std::vector<Tensor> gx(2);
    if (input_requires_grad(0)) gx[0] = g.to(device_);
    return gx;
  }

 private:
  std::shared_ptr<Communicator> comm_;
  int peer_, tag_;
  Shape shape_;
  DType dtype_;
  Device device_;
};

// Inputs: the delegate (if any) and a placeholder. Backward sends the output's gradient back to
// the peer; the delegate's gradient is zeros, as in ChainerMN (its creator, a send, takes its
// gradient from its own peer).
class RecvNode : public chainer::FunctionNode {
 public:
  RecvNode(std::shared_ptr<Communicator> comm, int peer, int tag, const Variable& delegate)
      : comm_(std::move(comm)), peer_(peer), tag_(tag), has_delegate_(delegate.defined()) {
    if (has_delegate_) delegate_ = {delegate.shape(), delegate.dtype(), delegate.data().device()};
  }
  std::string name() const override { return "Recv"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    detail::send_message(*comm_, peer_, MessageKind::Gradient, tag_, gys[0]);
    std::vector<Tensor> gx(has_delegate_ ? 2 : 1);
    if (has_delegate_ && input_requires_grad(0))
      gx[0] = Tensor::zeros(delegate_.shape, delegate_.dtype, delegate_.device);
    return gx;
  }

 private:
  struct TensorSpec {
    Shape shape;
    DType dtype = DType::Float32;
    Device device;
  };
  std::shared_ptr<Communicator> comm_;
  int peer_, tag_;
  bool has_delegate_;
  TensorSpec delegate_;
};

}  // namespace

Variable send(const Variable& x, const std::shared_ptr<Communicator>& comm, int rank, int tag) {
  constexpr const char* op = "chainermn::functions::send";
  detail::check_peer(comm, rank, op);
  if (!x.defined() || !x.data().defined()) throw Error(str(op, ": x is undefined (sending to rank ", rank, ", tag ", tag, ")"));
  detail::send_message(*comm, rank, MessageKind::Value, tag, x.data());
  Tensor delegate = detail::delegate_value(x.data().device());
  if (!chainer::is_backprop_enabled()) return Variable(std::move(delegate));
  return chainer::record(std::make_shared<SendNode>(comm, rank, tag, x.data()), {x, detail::placeholder()},
                         {std::move(delegate)})[0];
}

Variable recv(const std::shared_ptr<Communicator>& comm, int rank, const Variable& delegate, int tag,
              const RecvOptions& options) {
  detail::check_peer(comm, rank, "chainermn::functions::recv");
  Tensor y = detail::recv_message(*comm, rank, {MessageKind::Value, tag, options.shape, options.dtype});
  const Device device = options.device ? *options.device : delegate.defined() ? delegate.data().device() : Device::cpu();
  y = y.to(device);
  if (!chainer::is_backprop_enabled()) return Variable(std::move(y));
  std::vector<Variable> inputs;
  if (delegate.defined()) inputs.push_back(delegate);
  inputs.push_back(detail::placeholder());
  return chainer::record(std::make_shared<RecvNode>(comm, rank, tag, delegate), inputs, {std::move(y)})[0];
}

}  // namespace chainermn::functions
