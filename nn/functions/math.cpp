#include "nn/functions/math.h"

#include <cmath>
#include <limits>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
enum class Kind { Exp, Log, Sqrt, Square, Absolute, Clip };

// One input. SAVED is what the gradient formula reads: y for exp and sqrt, x for log, square and
// absolute, x for clip (with its output Y: the gradient passes where clipping changed nothing).
class UnaryMathNode : public FunctionNode {
 public:
  UnaryMathNode(Kind kind, Tensor saved, Tensor y = Tensor())
      : kind_(kind), saved_(std::move(saved)), y_(std::move(y)) {}
  std::string name() const override {
    static const char* const names[] = {"Exp", "Log", "Sqrt", "Square", "Absolute", "Clip"};
    return names[int(kind_)];
  }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    switch (kind_) {
      case Kind::Exp: return {ops::mul(gy, saved_)};
      case Kind::Log: return {ops::div(gy, saved_)};
      case Kind::Sqrt: return {ops::div(gy, ops::mul_scalar(saved_, 2.0))};
      case Kind::Square: return {ops::mul(gy, ops::mul_scalar(saved_, 2.0))};
      case Kind::Absolute: return {ops::mul(gy, ops::sign(saved_))};
      case Kind::Clip:
        // x == clip(x) exactly where x_min <= x <= x_max (never for NaN): Chainer's condition.
        return {ops::where(ops::equal(saved_, y_), gy, Tensor::zeros({}, gy.dtype(), gy.device()))};
    }
    CHAINER_ASSERT(false, "unknown kind ", int(kind_));
    return {};
  }

 protected:
  void release_saved() override { saved_ = y_ = Tensor(); }

 private:
  Kind kind_;
  Tensor saved_, y_;
};

void require_defined(const char* op, const Variable& x) {
  if (!x.defined()) throw Error(str(op, ": the input is undefined"));
}

Variable unary(Kind kind, const char* op, const Variable& x, Tensor (*forward)(const Tensor&)) {
  static const char* const node_names[] = {"Exp", "Log", "Sqrt", "Square", "Absolute", "Clip"};
  ForwardHooks hooks(node_names[int(kind)], x);
  require_defined(op, x);
  Tensor y = forward(x.data());  // checks the dtype (float32 or float64), naming OP
  if (!needs_recording({x})) return Variable(std::move(y));
  const bool saves_output = kind == Kind::Exp || kind == Kind::Sqrt;
  return record(std::make_shared<UnaryMathNode>(kind, saves_output ? y : x.data()), {x}, {y})[0];
}

// Maximum (IS_MAX) or minimum of two broadcast operands; ties send the gradient to x1.
class ExtremumNode : public FunctionNode {
 public:
  ExtremumNode(bool is_max, Tensor x1, Tensor x2) : is_max_(is_max), x1_(std::move(x1)), x2_(std::move(x2)) {}
  std::string name() const override { return is_max_ ? "Maximum" : "Minimum"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    const Tensor to_x1 = is_max_ ? ops::greater_equal(x1_, x2_) : ops::less_equal(x1_, x2_);
    const Tensor zero = Tensor::zeros({}, gy.dtype(), gy.device());
    std::vector<Tensor> g(2);
    if (input_requires_grad(0)) g[0] = ops::sum_to(ops::where(to_x1, gy, zero), x1_.shape());
    if (input_requires_grad(1)) g[1] = ops::sum_to(ops::where(to_x1, zero, gy), x2_.shape());
    return g;
  }

 protected:
  void release_saved() override { x1_ = x2_ = Tensor(); }

 private:
  bool is_max_;
  Tensor x1_, x2_;
};

Variable extremum(bool is_max, const Variable& x1, const Variable& x2) {
  ForwardHooks hooks(is_max ? "Maximum" : "Minimum", x1, x2);
  const char* op = is_max ? "maximum" : "minimum";
  if (!x1.defined() || !x2.defined()) throw Error(str(op, ": x1 and x2 must be defined"));
  if (!is_floating(x1.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(x1.dtype()), " is not supported (expected float32 or float64)"));
  Tensor y = is_max ? ops::maximum(x1.data(), x2.data()) : ops::minimum(x1.data(), x2.data());
  if (!needs_recording({x1, x2})) return Variable(std::move(y));
  return record(std::make_shared<ExtremumNode>(is_max, x1.data(), x2.data()), {x1, x2}, {y})[0];
}
}  // namespace

Variable exp(const Variable& x) { return unary(Kind::Exp, "exp", x, ops::exp); }
Variable log(const Variable& x) { return unary(Kind::Log, "log", x, ops::log); }
Variable sqrt(const Variable& x) { return unary(Kind::Sqrt, "sqrt", x, ops::sqrt); }
Variable square(const Variable& x) { return unary(Kind::Square, "square", x, ops::square); }
Variable absolute(const Variable& x) { return unary(Kind::Absolute, "absolute", x, ops::abs); }
Variable abs(const Variable& x) { return absolute(x); }

Variable clip(const Variable& x, std::optional<double> x_min, std::optional<double> x_max) {
  ForwardHooks hooks("Clip", x);
  require_defined("clip", x);
  if (!x_min && !x_max) throw Error("clip: x_min and x_max are both absent (give at least one)");
  if ((x_min && std::isnan(*x_min)) || (x_max && std::isnan(*x_max)))
    throw Error(str("clip: a bound is NaN (x_min ", x_min ? str(*x_min) : "absent", ", x_max ",
                    x_max ? str(*x_max) : "absent", ")"));
  if (x_min && x_max && !(*x_min < *x_max))
    throw Error(str("clip: x_min ", *x_min, " must be less than x_max ", *x_max));
  const double inf = std::numeric_limits<double>::infinity();
  Tensor y = ops::clip(x.data(), x_min.value_or(-inf), x_max.value_or(inf));
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<UnaryMathNode>(Kind::Clip, x.data(), y), {x}, {y})[0];
}

Variable maximum(const Variable& x1, const Variable& x2) { return extremum(true, x1, x2); }
Variable minimum(const Variable& x1, const Variable& x2) { return extremum(false, x1, x2); }

}  // namespace chainer::functions
