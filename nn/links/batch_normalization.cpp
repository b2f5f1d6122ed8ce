#include "nn/links/batch_normalization.h"

#include <algorithm>

#include "core/util/config.h"

namespace chainer::links {

BatchNormalization::BatchNormalization(int64_t size, BatchNormalizationLinkOptions options)
    : BatchNormalization(Shape{size}, options, nullptr) {}

BatchNormalization::BatchNormalization(const Shape& size, BatchNormalizationLinkOptions options)
    : BatchNormalization(size, options, nullptr) {}

BatchNormalization::BatchNormalization(const Shape& size, BatchNormalizationLinkOptions options,
                                       functions::SumOverProcesses sum_over_processes)
    : shape_(size), options_(options), sum_over_processes_(std::move(sum_over_processes)) {
  if (size.empty() || shape_numel(size) <= 0 || *std::min_element(size.begin(), size.end()) <= 0)
    throw Error(str("BatchNormalization: size must be positive, got ",
                    size.size() == 1 ? std::to_string(size[0]) : shape_str(size)));
  if (options.dtype != DType::Float32 && options.dtype != DType::Float64)
    throw Error(
        str("BatchNormalization: dtype ", dtype_name(options.dtype), " is not supported; expected float32 or float64"));
  if (options.use_gamma) add_param("gamma", Tensor::full(size, options.initial_gamma, options.dtype));
  if (options.use_beta) add_param("beta", Tensor::full(size, options.initial_beta, options.dtype));
  add_persistent("avg_mean", Tensor::zeros(size, options.dtype));
  add_persistent("avg_var", Tensor::ones(size, options.dtype));
}

Variable BatchNormalization::forward(const Variable& x, bool finetune) {
  // Without gamma or beta: constants, which need no gradient.
  const DType dtype = options_.dtype;
  const Variable gamma = options_.use_gamma ? param("gamma") : Variable(Tensor::ones(shape_, dtype, device()));
  const Variable beta = options_.use_beta ? param("beta") : Variable(Tensor::zeros(shape_, dtype, device()));
  if (!config::train()) {
    return functions::fixed_batch_normalization(x, gamma, beta, Variable(avg_mean()), Variable(avg_var()),
                                                options_.eps, options_.axis);
  }
  // Fine-tuning counts this step only once it has run (a rejected input leaves N as it was).
  const int64_t steps = finetune ? N_ + 1 : N_;
  Variable y = functions::batch_normalization(x, gamma, beta,
                                              {.eps = options_.eps,
                                               .running_mean = avg_mean(),
                                               .running_var = avg_var(),
                                               .decay = finetune ? 1.0 - 1.0 / double(steps) : options_.decay,
                                               .sum_over_processes = sum_over_processes_,
                                               .axis = options_.axis});
  N_ = steps;
  return y;
}

void BatchNormalization::serialize(Serializer& s) {
  Link::serialize(s);
  s.value("N", N_);
}

}  // namespace chainer::links
