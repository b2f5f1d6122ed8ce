#include "nn/autocast.h"

#include "nn/functions/cast.h"

namespace chainer {

namespace {
// The innermost AutocastScope: unset when none is open; set to nullopt by a disabled one.
thread_local bool t_scope_set = false;
thread_local std::optional<DType> t_scope_dtype;
}  // namespace

AutocastScope::AutocastScope(DType dtype, bool enabled) : previous_(t_scope_dtype), previous_set_(t_scope_set) {
  if (enabled && !is_half(dtype))
    throw Error(str("AutocastScope: dtype ", dtype_name(dtype), " is not a half type (expected float16 or bfloat16)"));
  t_scope_set = true;
  t_scope_dtype = enabled ? std::optional<DType>(dtype) : std::nullopt;
}

AutocastScope::~AutocastScope() {
  t_scope_set = previous_set_;
  t_scope_dtype = previous_;
}

DType get_dtype(config::Dtype dtype) {
  switch (dtype) {
    case config::Dtype::Float32: return DType::Float32;
    case config::Dtype::Float64: return DType::Float64;
    case config::Dtype::Float16:
    case config::Dtype::Mixed16: return DType::Float16;
    case config::Dtype::BFloat16:
    case config::Dtype::MixedBf16: return DType::BFloat16;
  }
  return DType::Float32;
}

std::optional<DType> autocast_dtype() {
  if (t_scope_set) return t_scope_dtype;
  const DType d = get_dtype();
  return is_half(d) ? std::optional<DType>(d) : std::nullopt;
}

DType param_dtype() {
  const config::Dtype d = config::dtype();
  return d == config::Dtype::Mixed16 || d == config::Dtype::MixedBf16 ? DType::Float32 : get_dtype(d);
}

namespace autocast {
Variable for_half(const Variable& x) {
  const std::optional<DType> half = autocast_dtype();
  if (!half || !x.defined() || x.dtype() == *half || !(x.dtype() == DType::Float32 || is_half(x.dtype()))) return x;
  return functions::cast(x, *half);
}

Variable for_float32(const Variable& x) {
  return x.defined() && is_half(x.dtype()) ? functions::cast(x, DType::Float32) : x;
}
}  // namespace autocast

}  // namespace chainer
