#include "autograd/gradient_check.h"

#include <cmath>

#include "core/util/random.h"

namespace chainer {

namespace {
Tensor to_double(const Tensor& t) { return is_floating(t.dtype()) ? t.astype(DType::Float64) : t.clone(); }

double weighted_sum(const std::vector<Variable>& ys, const std::vector<Tensor>& gys) {
  double s = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    std::vector<double> y = ys[i].data().to_vector<double>(), g = gys[i].to_vector<double>();
    for (size_t k = 0; k < y.size(); ++k) s += y[k] * g[k];
  }
  return s;
}
}  // namespace

void check_backward(const std::function<std::vector<Variable>(const std::vector<Variable>&)>& f,
                    const std::vector<Tensor>& inputs, const GradientCheckOptions& options) {
  // XS stay on the host, where finite differences perturb them; F sees copies on options.device.
  const Device device = options.device;
  std::vector<Tensor> xs;
  std::vector<Variable> vars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(to_double(inputs[i].to(Device::cpu())));
    bool checked = is_floating(xs[i].dtype()) && !(i < options.no_grads.size() && options.no_grads[i]);
    vars.emplace_back(xs[i].to(device), checked);
  }
  std::vector<Variable> ys = f(vars);
  Generator gen(options.seed);
  std::vector<Tensor> gys;
  for (const Variable& y : ys) {
    if (y.dtype() != DType::Float64)
      throw Error(str("check_backward: an output has dtype ", dtype_name(y.dtype()), "; the function must keep float64"));
    gys.push_back(random::normal(y.shape(), 0.0, 1.0, DType::Float64, &gen).to(y.data().device()));
  }
  // Analytic: backward from the sum of <y_i, gy_i>, by seeding each output's grad.
  for (size_t i = 0; i < ys.size(); ++i) {
    if (!ys[i].creator()) continue;
    ys[i].set_grad(gys[i]);
    ys[i].backward({.retain_graph = true});
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].requires_grad()) continue;
    Tensor analytic = vars[i].grad().defined() ? vars[i].grad() : Tensor::zeros(xs[i].shape(), DType::Float64);
    std::vector<double> a = analytic.to_vector<double>();
    double* x = xs[i].data<double>();
    for (int64_t k = 0; k < xs[i].numel(); ++k) {
      const double saved = x[k];
      // F sees the perturbed inputs (copied to the device after each perturbation).
      auto evaluate = [&](double value) {
        x[k] = value;
        std::vector<Variable> plain;
        for (const Tensor& t : xs) plain.emplace_back(t.to(device), false);
        return weighted_sum(f(plain), gys);
      };
      const double fp = evaluate(saved + options.eps), fm = evaluate(saved - options.eps);
      x[k] = saved;
      double numeric = (fp - fm) / (2 * options.eps);
      if (!(std::abs(a[size_t(k)] - numeric) <= options.atol + options.rtol * std::abs(numeric)))
        throw Error(str("check_backward: gradient of input ", i, " (shape ", shape_str(xs[i].shape()), ") at flat index ",
                        k, ": backward gives ", a[size_t(k)], ", finite differences give ", numeric));
    }
  }
}

void check_backward(const std::function<Variable(const std::vector<Variable>&)>& f, const std::vector<Tensor>& inputs,
                    const GradientCheckOptions& options) {
  check_backward([&](const std::vector<Variable>& xs) { return std::vector<Variable>{f(xs)}; }, inputs, options);
}

}  // namespace chainer
