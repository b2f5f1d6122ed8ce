#include "nn/links/n_step_rnn.h"

#include <algorithm>
#include <numeric>

#include "nn/functions.h"
#include "nn/initializers.h"

namespace chainer::links {

NStepRNNBase::NStepRNNBase(const char* name, int n_weights, int64_t n_layers, int64_t in_size, int64_t out_size,
                           double dropout, int64_t directions)
    : name_(name), n_weights_(n_weights), n_layers_(n_layers), out_size_(out_size), directions_(directions),
      dropout_(dropout) {
  if (n_layers <= 0 || in_size <= 0 || out_size <= 0)
    throw Error(str(name, ": n_layers, in_size and out_size must be positive, got ", n_layers, ", ", in_size, " and ",
                    out_size));
  if (!(dropout >= 0 && dropout < 1)) throw Error(str(name, ": dropout ", dropout, " is outside [0, 1)"));
  for (int64_t layer = 0; layer < n_layers; ++layer)
    for (int64_t d = 0; d < directions; ++d) {
      auto weights = std::make_shared<Link>();
      for (int j = 0; j < n_weights; ++j) {
        // The first half reads the layer's input, the second half the previous output.
        const int64_t fan_in = j < n_weights / 2 ? (layer == 0 ? in_size : out_size * directions) : out_size;
        weights->add_param(str("w", j), initializers::lecun_normal({out_size, fan_in}));
        weights->add_param(str("b", j), Tensor::zeros({out_size}));
      }
      layers_.push_back(add_link(std::to_string(layers_.size()), weights));
    }
}

functions::NStepLSTMResult NStepRNNBase::call(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs,
                                              const Run& run) {
  namespace F = functions;
  if (xs.empty()) throw Error(str(name_, ": no sequences given"));
  // Sorted longest first (ties in XS's order), as transpose_sequence needs.
  std::vector<int64_t> order(xs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return xs[size_t(a)].shape()[0] > xs[size_t(b)].shape()[0]; });
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
  const bool sorted = std::is_sorted(order.begin(), order.end());
  const auto permute = [&](const Variable& s, const std::vector<int64_t>& index) {
    return !s.defined() || sorted ? s : F::get_item(s, {F::Slice(), index});
  };
  std::vector<Variable> sorted_xs;
  for (int64_t i : order) sorted_xs.push_back(xs[size_t(i)]);
  std::vector<std::vector<Variable>> ws, bs;
  for (const auto& layer : layers_) {
    ws.emplace_back();
    bs.emplace_back();
    for (int j = 0; j < n_weights_; ++j) {
      ws.back().push_back(layer->param(str("w", j)));
      bs.back().push_back(layer->param(str("b", j)));
    }
  }
  const std::vector<Variable> steps = F::transpose_sequence(sorted_xs);
  if (steps.empty()) throw Error(str(name_, ": every sequence is empty"));
  F::NStepLSTMResult r = run(permute(hx, order), permute(cx, order), ws, bs, steps);
  std::vector<Variable> per_sequence = F::transpose_sequence(r.ys);
  std::vector<Variable> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    ys[size_t(order[i])] = i < per_sequence.size()
                               ? per_sequence[i]
                               : Variable(Tensor::zeros({0, out_size_ * directions_}, r.hy.dtype(), r.hy.data().device()));
  return {permute(r.hy, inverse), permute(r.cy, inverse), ys};
}

functions::NStepLSTMResult NStepLSTMBase::forward(const Variable& hx, const Variable& cx,
                                                  const std::vector<Variable>& xs) {
  const bool bi = directions() == 2;
  const double ratio = dropout();
  const int64_t layers = n_layers();
  return call(hx, cx, xs, [&](const Variable& h, const Variable& c, const auto& ws, const auto& bs, const auto& steps) {
    return bi ? functions::n_step_bilstm(layers, ratio, h, c, ws, bs, steps)
              : functions::n_step_lstm(layers, ratio, h, c, ws, bs, steps);
  });
}

functions::NStepRNNResult NStepGRUBase::forward(const Variable& hx, const std::vector<Variable>& xs) {
  const bool bi = directions() == 2;
  const double ratio = dropout();
  const int64_t layers = n_layers();
  auto r = call(hx, Variable(), xs, [&](const Variable& h, const Variable&, const auto& ws, const auto& bs,
                                        const auto& steps) {
    functions::NStepRNNResult out;
    if (activation_.empty())
      out = bi ? functions::n_step_bigru(layers, ratio, h, ws, bs, steps)
               : functions::n_step_gru(layers, ratio, h, ws, bs, steps);
    else
      out = bi ? functions::n_step_birnn(layers, ratio, h, ws, bs, steps, activation_)
               : functions::n_step_rnn(layers, ratio, h, ws, bs, steps, activation_);
    return functions::NStepLSTMResult{out.hy, Variable(), out.ys};
  });
  return {r.hy, r.ys};
}

}  // namespace chainer::links
