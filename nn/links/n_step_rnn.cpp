#include "nn/links/n_step_rnn.h"

#include <algorithm>
#include <numeric>

#include "nn/functions.h"
#include "nn/initializers.h"

namespace chainer::links {

NStepLSTMBase::NStepLSTMBase(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, int64_t directions)
    : n_layers_(n_layers), out_size_(out_size), directions_(directions), dropout_(dropout) {
  const char* who = directions == 2 ? "NStepBiLSTM" : "NStepLSTM";
  if (n_layers <= 0 || in_size <= 0 || out_size <= 0)
    throw Error(str(who, ": n_layers, in_size and out_size must be positive, got ", n_layers, ", ", in_size, " and ",
                    out_size));
  if (!(dropout >= 0 && dropout < 1)) throw Error(str(who, ": dropout ", dropout, " is outside [0, 1)"));
  for (int64_t layer = 0; layer < n_layers; ++layer)
    for (int64_t d = 0; d < directions; ++d) {
      auto weights = std::make_shared<Link>();
      for (int j = 0; j < 8; ++j) {
        // w0 .. w3 read the layer's input, w4 .. w7 the previous output.
        const int64_t fan_in = j < 4 ? (layer == 0 ? in_size : out_size * directions) : out_size;
        weights->add_param(str("w", j), initializers::lecun_normal({out_size, fan_in}));
        weights->add_param(str("b", j), Tensor::zeros({out_size}));
      }
      layers_.push_back(add_link(std::to_string(layers_.size()), weights));
    }
}

functions::NStepLSTMResult NStepLSTMBase::forward(const Variable& hx, const Variable& cx,
                                                  const std::vector<Variable>& xs) {
  namespace F = functions;
  if (xs.empty()) throw Error(str(directions_ == 2 ? "NStepBiLSTM" : "NStepLSTM", ": no sequences given"));
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
    for (int j = 0; j < 8; ++j) {
      ws.back().push_back(layer->param(str("w", j)));
      bs.back().push_back(layer->param(str("b", j)));
    }
  }
  const std::vector<Variable> steps = F::transpose_sequence(sorted_xs);
  if (steps.empty()) throw Error(str(directions_ == 2 ? "NStepBiLSTM" : "NStepLSTM", ": every sequence is empty"));
  F::NStepLSTMResult r = directions_ == 2
                             ? F::n_step_bilstm(n_layers_, dropout_, permute(hx, order), permute(cx, order), ws, bs, steps)
                             : F::n_step_lstm(n_layers_, dropout_, permute(hx, order), permute(cx, order), ws, bs, steps);
  std::vector<Variable> per_sequence = F::transpose_sequence(r.ys);
  std::vector<Variable> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    ys[size_t(order[i])] = i < per_sequence.size()
                               ? per_sequence[i]
                               : Variable(Tensor::zeros({0, out_size_ * directions_}, r.hy.dtype(), r.hy.data().device()));
  return {permute(r.hy, inverse), permute(r.cy, inverse), ys};
}

}  // namespace chainer::links
