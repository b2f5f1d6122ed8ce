#include "nn/functions/accuracy.h"

#include "autograd/function_hook.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

Variable accuracy(const Variable& y_in, const Variable& t, int64_t ignore_label) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable y = autocast::for_float32(y_in);
  ForwardHooks hooks("Accuracy", y, t);  // no node, but an application the hooks see, as Chainer's
  if (!y.defined() || !t.defined()) throw Error("accuracy: y and t must be defined");
  return Variable(ops::accuracy(y.data(), t.data(), ignore_label));
}

}  // namespace chainer::functions
