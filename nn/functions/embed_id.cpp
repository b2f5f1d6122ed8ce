#include "nn/functions/embed_id.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
// Saves the ids actually gathered (an ignored one replaced by 0) and the mask of the others.
class EmbedIDNode : public FunctionNode {
 public:
  EmbedIDNode(Tensor ids, Tensor keep, Shape w_shape)
      : ids_(std::move(ids)), keep_(std::move(keep)), w_shape_(std::move(w_shape)) {}
  std::string name() const override { return "EmbedIDFunction"; }

  // gW[r] = the sum of gy over the positions whose id is r: take's adjoint, scatter_add_.
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    std::vector<Tensor> g(2);
    if (!input_requires_grad(1)) return g;
    const Tensor& gy = grads[0];
    // Repeated ids sum in float32 for half W (scatter_add computes in full precision), then round.
    const DType sum_dtype = is_half(gy.dtype()) ? DType::Float32 : gy.dtype();
    Tensor gW = Tensor::zeros(w_shape_, sum_dtype, gy.device());
    const Tensor rows = keep_.defined() ? ops::mul(gy, keep_) : gy.contiguous();
    ops::scatter_add_(gW, ids_, 0, sum_dtype == gy.dtype() ? rows : rows.astype(sum_dtype));
    g[1] = sum_dtype == gy.dtype() ? gW : gW.astype(gy.dtype());
    return g;
  }

 protected:
  void release_saved() override { ids_ = keep_ = Tensor(); }

 private:
  Tensor ids_, keep_;
  Shape w_shape_;
};
}  // namespace

Variable embed_id(const Variable& x, const Variable& W, std::optional<int64_t> ignore_label) {
  ForwardHooks hooks("EmbedIDFunction", x, W);
  if (!x.defined() || !W.defined()) throw Error("embed_id: an operand is undefined");
  const Tensor& ids = x.data();
  const Tensor& w = W.data();
  if (ids.dtype() != DType::Int32 && ids.dtype() != DType::Int64)
    throw Error(str("embed_id: ids have dtype ", dtype_name(ids.dtype()), " (expected int32 or int64)"));
  if (w.ndim() != 2) throw Error(str("embed_id: W has shape ", shape_str(w.shape()), " (expected (n, D))"));
  if (!is_floating(w.dtype()))
    throw Error(str("embed_id: W has dtype ", dtype_name(w.dtype()), " (expected float32 or float64)"));
  if (ids.device() != w.device())
    throw Error(str("embed_id: the ids are on ", ids.device().str(), " and W on ", w.device().str()));
  const int64_t n = w.size(0);
  // Int64 once: what take and scatter_add_ index with, so neither converts again.
  const Tensor ids64 = ids.dtype() == DType::Int64 ? ids.contiguous() : ids.astype(DType::Int64);
  if (ids64.device().is_cpu()) {
    const int64_t* p = ids64.data<int64_t>();
    for (int64_t j = 0; j < ids64.numel(); ++j)
      if ((p[j] < 0 || p[j] >= n) && !(ignore_label && p[j] == *ignore_label))
        throw Error(str("embed_id: id ", p[j], " at flat position ", j, " is outside [0, ", n, ")",
                        ignore_label ? str(" and is not the ignore_label ", *ignore_label) : std::string()));
  }
  Tensor gathered = ids64, keep;
  if (ignore_label) {
    const Tensor ignored = Tensor::full({}, double(*ignore_label), DType::Int64, ids64.device());
    const Tensor mask = ops::not_equal(ids64, ignored);  // uint8: 1 where the id is used
    gathered = ops::where(mask, ids64, Tensor::zeros({}, DType::Int64, ids64.device()));
    Shape keep_shape = ids64.shape();
    keep_shape.push_back(1);
    keep = mask.astype(w.dtype()).reshape(keep_shape);
  }
  Tensor y = ops::take(w, gathered, 0);
  if (keep.defined()) y = ops::mul(y, keep);
  if (!needs_recording({W})) return Variable(std::move(y));
  return record(std::make_shared<EmbedIDNode>(gathered, keep, w.shape()), {x, W}, {y})[0];
}

}  // namespace chainer::functions
