#include "nn/initializers.h"

#include <cmath>

namespace chainer::initializers {

namespace {
void fans(const Shape& shape, const char* who, double& fan_in, double& fan_out) {
  if (shape.size() < 2) throw Error(str(who, ": shape ", shape_str(shape), " needs at least 2 axes"));
  double receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= double(shape[i]);
  fan_in = double(shape[1]) * receptive;
  fan_out = double(shape[0]) * receptive;
}
}  // namespace

Tensor lecun_normal(const Shape& shape, double scale, DType dtype, Generator* gen) {
  double fan_in, fan_out;
  fans(shape, "LeCunNormal", fan_in, fan_out);
  return random::normal(shape, 0.0, scale * std::sqrt(1.0 / fan_in), dtype, gen);
}

Tensor he_normal(const Shape& shape, double scale, DType dtype, Generator* gen) {
  double fan_in, fan_out;
  fans(shape, "HeNormal", fan_in, fan_out);
  return random::normal(shape, 0.0, scale * std::sqrt(2.0 / fan_in), dtype, gen);
}

Tensor glorot_uniform(const Shape& shape, double scale, DType dtype, Generator* gen) {
  double fan_in, fan_out;
  fans(shape, "GlorotUniform", fan_in, fan_out);
  const double s = scale * std::sqrt(6.0 / (fan_in + fan_out));
  return random::uniform(shape, -s, s, dtype, gen);
}

Tensor normal(const Shape& shape, double scale, DType dtype, Generator* gen) {
  return random::normal(shape, 0.0, scale, dtype, gen);
}

Tensor constant(const Shape& shape, double value, DType dtype) { return Tensor::full(shape, value, dtype); }

Initializer::Initializer(Tensor array) {
  if (!array.defined()) throw Error("Initializer: the array is undefined");
  fn_ = [a = std::move(array)](const Shape&) { return a; };
}

Tensor Initializer::operator()(const Shape& shape, const std::string& who) const {
  if (!fn_) throw Error(str(who, ": no initializer given"));
  Tensor t = fn_(shape);
  if (!t.defined() || t.shape() != shape)
    throw Error(str(who, ": the initializer gave shape ", t.defined() ? shape_str(t.shape()) : std::string("undefined"),
                    " (expected ", shape_str(shape), ")"));
  return t.to(Device::cpu()).astype(DType::Float32);
}

}  // namespace chainer::initializers
