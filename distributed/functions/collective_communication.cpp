#include "distributed/functions/collective_communication.h"

#include <optional>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "distributed/functions/delegate_variable.h"

namespace chainermn::functions {

using chainer::Device;
using chainer::DType;
using chainer::Error;
using chainer::Shape;
using chainer::str;
using chainer::Tensor;

namespace {

void check_communicator(const std::shared_ptr<Communicator>& comm, const char* op) {
  if (!comm) throw Error(str(op, ": the communicator is null"));
}

void check_root(const std::shared_ptr<Communicator>& comm, int root, const char* op) {
  check_communicator(comm, op);
  if (root < 0 || root >= comm->size())
    throw Error(str(op, ": root ", root, " is outside [0, ", comm->size(), ") (the communicator has ", comm->size(),
                    " processes)"));
}

std::string describe(const Tensor& t) {
  return t.defined() ? str(chainer::dtype_name(t.dtype()), " ", chainer::shape_str(t.shape())) : "undefined";
}

// What backward needs to know of an input or output: shape, dtype and device.
struct TensorSpec {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;
  explicit TensorSpec(const Tensor& t) : shape(t.shape()), dtype(t.dtype()), device(t.device()) {}
};

std::vector<TensorSpec> specs(const std::vector<Tensor>& ts) { return {ts.begin(), ts.end()}; }

// GYS in the dtypes of the outputs: the engine makes the gradients of unused outputs zeros of
// one dtype for all, and outputs from different ranks may differ in dtype.
std::vector<Tensor> in_output_dtypes(const std::vector<Tensor>& gys, const std::vector<TensorSpec>& outputs) {
  std::vector<Tensor> out(gys.size());
  for (size_t i = 0; i < gys.size(); ++i)
    out[i] = gys[i].dtype() == outputs[i].dtype ? gys[i] : gys[i].astype(outputs[i].dtype);
  return out;
}

// Checks G, a gradient the collective of backward delivered for input X: another shape or dtype
// means the ranks' backward passes went through different collectives.
void check_gradient(const Tensor& g, const TensorSpec& x, const char* op, int rank) {
  if (!g.defined() || g.shape() != x.shape || g.dtype() != x.dtype)
    throw Error(str(op, ": in backward, rank ", rank, " received a gradient of ", describe(g), " for an input of ",
                    chainer::dtype_name(x.dtype), " ", chainer::shape_str(x.shape),
                    " (every rank must run backward through the same collective functions in the same order)"));
}

// G, checked, on X's device.
Tensor gradient_for(const Tensor& g, const TensorSpec& x, const char* op, int rank) {
  check_gradient(g, x, op, rank);
  return g.to(x.device);
}

std::vector<Tensor> data_of(const std::vector<Variable>& xs, const char* op) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined() || !xs[i].data().defined()) throw Error(str(op, ": xs[", i, "] is undefined"));
    out.push_back(xs[i].data());
  }
  return out;
}

Tensor data_of(const Variable& x, const char* op) {
  if (!x.defined() || !x.data().defined()) throw Error(str(op, ": x is undefined"));
  return x.data();
}

// Every collective node's inputs end with a placeholder (delegate_variable.h).
std::vector<Variable> with_placeholder(std::vector<Variable> inputs) {
  inputs.push_back(detail::placeholder());
  return inputs;
}

// Base of the collective nodes: the communicator, the op's name for messages.
class CollectiveNode : public chainer::FunctionNode {
 public:
  CollectiveNode(std::shared_ptr<Communicator> comm, const char* op, const char* name)
      : comm_(std::move(comm)), op_(op), name_(name) {}
  std::string name() const override { return name_; }

 protected:
  std::vector<Tensor> no_gradients() const { return std::vector<Tensor>(inputs().size()); }
  std::shared_ptr<Communicator> comm_;
  const char* op_;

 private:
  const char* name_;
};

// Inputs: x (the root only), placeholder.
class BcastNode : public CollectiveNode {
 public:
  BcastNode(std::shared_ptr<Communicator> comm, std::optional<TensorSpec> x)
      : CollectiveNode(std::move(comm), "chainermn::functions::bcast", "Bcast"), x_(std::move(x)) {}
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    const Tensor sum = comm_->allreduce(gys[0]);  // only the root's sum is needed: there is no reduce
    std::vector<Tensor> gx = no_gradients();
    if (x_ && input_requires_grad(0)) gx[0] = gradient_for(sum, *x_, op_, comm_->rank());
    return gx;
  }

 private:
  std::optional<TensorSpec> x_;  // the root's x (unset elsewhere)
};

// Inputs: x, placeholder. Outputs: size() pieces on the root, a delegate elsewhere.
class GatherNode : public CollectiveNode {
 public:
  GatherNode(std::shared_ptr<Communicator> comm, int root, TensorSpec x, std::vector<TensorSpec> outputs)
      : CollectiveNode(std::move(comm), "chainermn::functions::gather", "Gather"),
        root_(root), x_(std::move(x)), outputs_(std::move(outputs)) {}
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    const bool is_root = comm_->rank() == root_;
    const Tensor g = comm_->scatter(is_root ? in_output_dtypes(gys, outputs_) : std::vector<Tensor>(), root_);
    std::vector<Tensor> gx = no_gradients();
    if (input_requires_grad(0)) gx[0] = gradient_for(g, x_, op_, comm_->rank());
    return gx;
  }

 private:
  int root_;
  TensorSpec x_;
  std::vector<TensorSpec> outputs_;  // the root's pieces (empty elsewhere)
};

// Inputs: xs... (the root only), placeholder.
class ScatterNode : public CollectiveNode {
 public:
  ScatterNode(std::shared_ptr<Communicator> comm, int root, std::vector<TensorSpec> xs)
      : CollectiveNode(std::move(comm), "chainermn::functions::scatter", "Scatter"), root_(root), xs_(std::move(xs)) {}
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    const std::vector<Tensor> gathered = comm_->gather(gys[0], root_);
    std::vector<Tensor> gx = no_gradients();
    for (size_t i = 0; i < xs_.size(); ++i)
      if (input_requires_grad(i)) gx[i] = gradient_for(gathered[i], xs_[i], op_, comm_->rank());
    return gx;
  }

 private:
  int root_;
  std::vector<TensorSpec> xs_;  // the root's inputs (empty elsewhere)
};

// Inputs: x, placeholder. Outputs: size() pieces.
class AllgatherNode : public CollectiveNode {
 public:
  AllgatherNode(std::shared_ptr<Communicator> comm, TensorSpec x, std::vector<TensorSpec> outputs)
      : CollectiveNode(std::move(comm), "chainermn::functions::allgather", "Allgather"),
        x_(std::move(x)), outputs_(std::move(outputs)) {}
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    // Rank j's gradient of piece i goes to rank i, which sums what it gets, in rank order.
    const std::vector<Tensor> pieces = comm_->alltoall(in_output_dtypes(gys, outputs_));
    Tensor sum;  // on the CPU, where the pieces arrive
    for (const Tensor& p : pieces) {
      check_gradient(p, x_, op_, comm_->rank());
      sum = sum.defined() ? chainer::ops::add(sum, p) : p;
    }
    std::vector<Tensor> gx = no_gradients();
    if (input_requires_grad(0)) gx[0] = gradient_for(sum, x_, op_, comm_->rank());
    return gx;
  }

 private:
  TensorSpec x_;
  std::vector<TensorSpec> outputs_;
};

// Inputs: xs..., placeholder. Outputs: size() pieces.
class AlltoallNode : public CollectiveNode {
 public:
  AlltoallNode(std::shared_ptr<Communicator> comm, std::vector<TensorSpec> xs, std::vector<TensorSpec> outputs)
      : CollectiveNode(std::move(comm), "chainermn::functions::alltoall", "Alltoall"),
        xs_(std::move(xs)), outputs_(std::move(outputs)) {}
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    const std::vector<Tensor> back = comm_->alltoall(in_output_dtypes(gys, outputs_));
    std::vector<Tensor> gx = no_gradients();
    for (size_t i = 0; i < xs_.size(); ++i)
      if (input_requires_grad(i)) gx[i] = gradient_for(back[i], xs_[i], op_, comm_->rank());
    return gx;
  }

 private:
  std::vector<TensorSpec> xs_, outputs_;
};

// Inputs: x, placeholder.
class AllreduceNode : public CollectiveNode {
 public:
  AllreduceNode(std::shared_ptr<Communicator> comm, TensorSpec x)
      : CollectiveNode(std::move(comm), "chainermn::functions::allreduce", "Allreduce"), x_(std::move(x)) {}
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    const Tensor sum = comm_->allreduce(gys[0]);
    std::vector<Tensor> gx = no_gradients();
    if (input_requires_grad(0)) gx[0] = gradient_for(sum, x_, op_, comm_->rank());
    return gx;
  }

 private:
  TensorSpec x_;
};

// OUTPUTS as variables created by NODE over INPUTS (and a placeholder) when backprop is on.
template <class Node, class... Args>
std::vector<Variable> finish(std::vector<Tensor> outputs, const std::vector<Variable>& inputs, Args&&... args) {
  if (!chainer::is_backprop_enabled()) return chainer::wrap_outputs(std::move(outputs));
  return chainer::record(std::make_shared<Node>(std::forward<Args>(args)...), with_placeholder(inputs),
                         std::move(outputs));
}

}  // namespace

Variable bcast(const std::shared_ptr<Communicator>& comm, const Variable& x, int root) {
  chainer::ForwardHooks hooks("Bcast", x);
  constexpr const char* op = "chainermn::functions::bcast";
  check_root(comm, root, op);
  const bool is_root = comm->rank() == root;
  const bool has_x = x.defined() && x.data().defined();
  Tensor y = comm->bcast(is_root && has_x ? x.data() : Tensor(), root);
  if (!y.defined()) throw Error(str(op, ": x is undefined on the root (rank ", root, ")"));  // every rank sees it
  y = y.to(has_x ? x.data().device() : Device::cpu());
  std::optional<TensorSpec> x_spec;
  if (is_root) x_spec.emplace(x.data());
  return finish<BcastNode>({std::move(y)}, is_root ? std::vector<Variable>{x} : std::vector<Variable>{}, comm,
                           std::move(x_spec))[0];
}

std::vector<Variable> gather(const std::shared_ptr<Communicator>& comm, const Variable& x, int root) {
  chainer::ForwardHooks hooks("Gather", x);
  constexpr const char* op = "chainermn::functions::gather";
  check_root(comm, root, op);
  const Tensor xd = data_of(x, op);
  std::vector<Tensor> ys = comm->gather(xd, root);
  if (comm->rank() != root) ys = {detail::delegate_value(xd.device())};
  for (Tensor& y : ys) y = y.to(xd.device());
  std::vector<TensorSpec> outputs = comm->rank() == root ? specs(ys) : std::vector<TensorSpec>{};
  return finish<GatherNode>(std::move(ys), {x}, comm, root, TensorSpec(xd), std::move(outputs));
}

Variable scatter(const std::shared_ptr<Communicator>& comm, const std::vector<Variable>& xs, int root) {
  chainer::ForwardHooks hooks("Scatter", xs);
  constexpr const char* op = "chainermn::functions::scatter";
  check_root(comm, root, op);
  const bool is_root = comm->rank() == root;
  const std::vector<Tensor> xds = is_root ? data_of(xs, op) : std::vector<Tensor>{};
  Tensor y = comm->scatter(xds, root);  // checks, on every rank, that the root passed size() of them
  const Device device = is_root ? xds[size_t(root)].device()
                        : !xs.empty() && xs[0].defined() && xs[0].data().defined() ? xs[0].data().device()
                                                                                    : Device::cpu();
  y = y.to(device);
  return finish<ScatterNode>({std::move(y)}, is_root ? xs : std::vector<Variable>{}, comm, root, specs(xds))[0];
}

std::vector<Variable> allgather(const std::shared_ptr<Communicator>& comm, const Variable& x) {
  chainer::ForwardHooks hooks("Allgather", x);
  constexpr const char* op = "chainermn::functions::allgather";
  check_communicator(comm, op);
  const Tensor xd = data_of(x, op);
  std::vector<Tensor> ys = comm->allgather(xd);
  for (Tensor& y : ys) y = y.to(xd.device());
  std::vector<TensorSpec> outputs = specs(ys);
  return finish<AllgatherNode>(std::move(ys), {x}, comm, TensorSpec(xd), std::move(outputs));
}

std::vector<Variable> alltoall(const std::shared_ptr<Communicator>& comm, const std::vector<Variable>& xs) {
  chainer::ForwardHooks hooks("Alltoall", xs);
  constexpr const char* op = "chainermn::functions::alltoall";
  check_communicator(comm, op);
  if (int64_t(xs.size()) != comm->size())
    throw Error(str(op, ": rank ", comm->rank(), " passed ", xs.size(), " variables for ", comm->size(),
                    " ranks (one per rank is needed)"));
  const std::vector<Tensor> xds = data_of(xs, op);
  std::vector<Tensor> ys = comm->alltoall(xds);
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = ys[i].to(xds[i].device());
  std::vector<TensorSpec> outputs = specs(ys);
  return finish<AlltoallNode>(std::move(ys), xs, comm, specs(xds), std::move(outputs));
}

Variable allreduce(const std::shared_ptr<Communicator>& comm, const Variable& x) {
  chainer::ForwardHooks hooks("Allreduce", x);
  constexpr const char* op = "chainermn::functions::allreduce";
  check_communicator(comm, op);
  const bool has_x = x.defined() && x.data().defined();
  // Undefined goes in too: the communicator's check then fails on every rank alike.
  Tensor y = comm->allreduce(has_x ? x.data() : Tensor());
  if (!y.defined()) throw Error(str(op, ": x is undefined on every rank"));
  y = y.to(x.data().device());
  return finish<AllreduceNode>({std::move(y)}, {x}, comm, TensorSpec(x.data()))[0];
}

}  // namespace chainermn::functions
