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

}  // namespace chainer::initializers
