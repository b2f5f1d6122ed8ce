#include "nn/functions/arithmetic.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
enum class Kind { Add, Sub, Mul, Div };

// Two broadcast operands. Saves only what the gradient formulas read: nothing for add/sub,
// both operands for mul, the divisor and the quotient for div.
class BinaryNode : public FunctionNode {
 public:
  BinaryNode(Kind kind, Shape a_shape, Shape b_shape, Tensor s0, Tensor s1)
      : kind_(kind), a_shape_(std::move(a_shape)), b_shape_(std::move(b_shape)),
        s0_(std::move(s0)), s1_(std::move(s1)) {}
  std::string name() const override {
    static const char* const names[] = {"Add", "Sub", "Mul", "Div"};
    return names[int(kind_)];
  }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    const bool ga = input_requires_grad(0), gb = input_requires_grad(1);
    std::vector<Tensor> g(2);
    switch (kind_) {
      case Kind::Add:
        if (ga) g[0] = ops::sum_to(gy, a_shape_);
        if (gb) g[1] = ops::sum_to(gy, b_shape_);
        break;
      case Kind::Sub:
        if (ga) g[0] = ops::sum_to(gy, a_shape_);
        if (gb) g[1] = ops::neg(ops::sum_to(gy, b_shape_));  // negate after reducing: fewer elements
        break;
      case Kind::Mul:  // s0 = a, s1 = b
        if (ga) g[0] = ops::sum_to(ops::mul(gy, s1_), a_shape_);
        if (gb) g[1] = ops::sum_to(ops::mul(gy, s0_), b_shape_);
        break;
      case Kind::Div: {  // s0 = b, s1 = y = a / b; d/da = 1/b, d/db = -y/b
        Tensor gy_b = ops::div(gy, s0_);
        if (ga) g[0] = ops::sum_to(gy_b, a_shape_);
        if (gb) g[1] = ops::neg(ops::sum_to(ops::mul(gy_b, s1_), b_shape_));
        break;
      }
    }
    return g;
  }

 protected:
  void release_saved() override { s0_ = s1_ = Tensor(); }

 private:
  Kind kind_;
  Shape a_shape_, b_shape_;
  Tensor s0_, s1_;
};

Variable binary(Kind kind, const Variable& a, const Variable& b) {
  static const char* const node_names[] = {"Add", "Sub", "Mul", "Div"};
  ForwardHooks hooks(node_names[int(kind)], a, b);
  static const char* const ops_names[] = {"add", "sub", "mul", "div"};
  if (!a.defined() || !b.defined()) throw Error(str(ops_names[int(kind)], ": an operand is undefined"));
  const Tensor& ad = a.data();
  const Tensor& bd = b.data();
  Tensor y;
  switch (kind) {
    case Kind::Add: y = ops::add(ad, bd); break;
    case Kind::Sub: y = ops::sub(ad, bd); break;
    case Kind::Mul: y = ops::mul(ad, bd); break;
    case Kind::Div: y = ops::div(ad, bd); break;
  }
  if (!needs_recording({a, b})) return Variable(std::move(y));
  Tensor s0, s1;
  if (kind == Kind::Mul) s0 = ad, s1 = bd;
  if (kind == Kind::Div) s0 = bd, s1 = y;
  return record(std::make_shared<BinaryNode>(kind, ad.shape(), bd.shape(), s0, s1), {a, b}, {y})[0];
}

// y = x * m + c with constants m and c: every scalar form except s / x.
class AffineNode : public FunctionNode {
 public:
  AffineNode(const char* name, double m) : name_(name), m_(m) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    if (m_ == 1.0) return {gy[0]};
    if (m_ == -1.0) return {ops::neg(gy[0])};
    return {ops::mul_scalar(gy[0], m_)};
  }

 private:
  const char* name_;
  double m_;
};

Variable affine(const char* name, const Variable& x, double m, double c) {
  ForwardHooks hooks(name, x);
  if (!x.defined()) throw Error(str(name, ": the operand is undefined"));
  Tensor y;
  if (m == 1.0) y = ops::add_scalar(x.data(), c);
  else if (m == -1.0 && c == 0.0) y = ops::neg(x.data());
  else if (c == 0.0) y = ops::mul_scalar(x.data(), m);
  else y = ops::add_scalar(ops::mul_scalar(x.data(), m), c);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<AffineNode>(name, m), {x}, {y})[0];
}

// y = s / x: dy/dx = -s / x^2 = -y / x.
class DivFromConstantNode : public FunctionNode {
 public:
  DivFromConstantNode(Tensor x, Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  std::string name() const override { return "DivFromConstant"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::neg(ops::mul(gy[0], ops::div(y_, x_)))};
  }

 protected:
  void release_saved() override { x_ = y_ = Tensor(); }

 private:
  Tensor x_, y_;
};
}  // namespace

Variable add(const Variable& a, const Variable& b) { return binary(Kind::Add, a, b); }
Variable sub(const Variable& a, const Variable& b) { return binary(Kind::Sub, a, b); }
Variable mul(const Variable& a, const Variable& b) { return binary(Kind::Mul, a, b); }
Variable div(const Variable& a, const Variable& b) { return binary(Kind::Div, a, b); }

Variable add(const Variable& x, double s) { return affine("AddConstant", x, 1.0, s); }
Variable sub(const Variable& x, double s) { return affine("AddConstant", x, 1.0, -s); }
Variable sub(double s, const Variable& x) { return affine("SubFromConstant", x, -1.0, s); }
Variable mul(const Variable& x, double s) { return affine("MulConstant", x, s, 0.0); }
Variable div(const Variable& x, double s) {
  if (s == 0.0) throw Error("div: division of a variable by the constant 0");
  return affine("MulConstant", x, 1.0 / s, 0.0);
}
Variable neg(const Variable& x) { return affine("Neg", x, -1.0, 0.0); }

Variable div(double s, const Variable& x) {
  ForwardHooks hooks("DivFromConstant", x);
  if (!x.defined()) throw Error("div: the operand is undefined");
  if (!is_floating(x.dtype()))
    throw Error(str("div: dtype ", dtype_name(x.dtype()), " is not supported (expected float32 or float64)"));
  Tensor y = ops::div(Tensor::full({}, s, x.dtype(), x.data().device()), x.data());
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<DivFromConstantNode>(x.data(), y), {x}, {y})[0];
}

}  // namespace chainer::functions
