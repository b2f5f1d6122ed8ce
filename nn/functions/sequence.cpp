#include "nn/functions/sequence.h"

#include <algorithm>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
// The transposition of lists of rows: out[t] = row t of every in[i] longer than t, IN sorted by
// length (LENGTHS), longest first. One gather of every row from the lists joined, the pieces of
// the result views of it: a copy per row would be one kernel launch per row on a GPU (a batch of
// 64 sequences of 20 steps: 1280 launches each way, most of an LSTM's step).
std::vector<Tensor> transpose_rows(const std::vector<Tensor>& in, const std::vector<int64_t>& lengths) {
  const int64_t steps = lengths.empty() ? 0 : lengths.front();
  if (steps == 0) return {};
  std::vector<Tensor> pieces;
  std::vector<int64_t> starts;
  int64_t at = 0;
  for (size_t i = 0; i < in.size() && lengths[i] > 0; ++i) {
    pieces.push_back(in[i]);
    starts.push_back(at);
    at += lengths[i];
  }
  std::vector<int64_t> index, sizes;
  for (int64_t t = 0; t < steps; ++t) {
    const size_t before = index.size();
    for (size_t i = 0; i < pieces.size() && lengths[i] > t; ++i) index.push_back(starts[i] + t);
    sizes.push_back(int64_t(index.size() - before));
  }
  const Tensor rows = ops::take(pieces.size() == 1 ? pieces[0] : ops::concat(pieces, 0), Tensor::from_vector(index), 0);
  std::vector<Tensor> out;
  at = 0;
  for (int64_t n : sizes) {
    out.push_back(rows.narrow(0, at, n));
    at += n;
  }
  return out;
}

class TransposeSequenceNode : public FunctionNode {
 public:
  TransposeSequenceNode(std::vector<int64_t> in_lengths, std::vector<int64_t> out_lengths, Shape row_shape)
      : in_lengths_(std::move(in_lengths)), out_lengths_(std::move(out_lengths)), row_shape_(std::move(row_shape)) {}
  std::string name() const override { return "TransposeSequence"; }

  // The transposition of the gradients: gx[i] = row i of every gy[t] with t < L_i (the engine
  // hands zeros for the steps no one used).
  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    const Tensor& any = gys.front();
    std::vector<Tensor> gx = transpose_rows(gys, out_lengths_);
    gx.resize(in_lengths_.size());  // sequences of length 0 get no gradient
    for (size_t i = 0; i < gx.size(); ++i)
      if (!gx[i].defined() && input_requires_grad(i)) {
        Shape s = row_shape_;
        s.insert(s.begin(), 0);
        gx[i] = Tensor::zeros(s, any.dtype(), any.device());
      }
    return gx;
  }

 private:
  std::vector<int64_t> in_lengths_, out_lengths_;
  Shape row_shape_;
};

class PadSequenceNode : public FunctionNode {
 public:
  explicit PadSequenceNode(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {}
  std::string name() const override { return "PadSequence"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    std::vector<Tensor> gx;
    for (size_t i = 0; i < lengths_.size(); ++i) gx.push_back(gy[0][int64_t(i)].narrow(0, 0, lengths_[i]).contiguous());
    return gx;
  }

 private:
  std::vector<int64_t> lengths_;
};

// Every sequence defined, with a time axis and one row shape, dtype and device; returns the lengths.
std::vector<int64_t> sequence_lengths(const char* op, const std::vector<Variable>& xs) {
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) throw Error(str(op, ": sequence ", i, " is undefined"));
    if (xs[i].ndim() < 1) throw Error(str(op, ": sequence ", i, " is 0-dimensional (expected (length, ...))"));
    const Shape a(xs[i].shape().begin() + 1, xs[i].shape().end()), b(xs[0].shape().begin() + 1, xs[0].shape().end());
    if (a != b || xs[i].dtype() != xs[0].dtype() || xs[i].data().device() != xs[0].data().device())
      throw Error(str(op, ": sequence ", i, " has rows of shape ", shape_str(a), " and dtype ",
                      dtype_name(xs[i].dtype()), " on ", xs[i].data().device().str(), ", sequence 0 ", shape_str(b),
                      " and ", dtype_name(xs[0].dtype()), " on ", xs[0].data().device().str()));
    lengths.push_back(xs[i].shape()[0]);
  }
  return lengths;
}
}  // namespace

std::vector<Variable> transpose_sequence(const std::vector<Variable>& xs) {
  ForwardHooks hooks("TransposeSequence", xs);
  const std::vector<int64_t> lengths = sequence_lengths("transpose_sequence", xs);
  for (size_t i = 1; i < lengths.size(); ++i)
    if (lengths[i] > lengths[i - 1])
      throw Error(str("transpose_sequence: sequence ", i, " (length ", lengths[i], ") is longer than sequence ", i - 1,
                      " (length ", lengths[i - 1], "); sort the sequences by length, longest first"));
  if (lengths.empty() || lengths.front() == 0) return {};
  const Shape row(xs[0].shape().begin() + 1, xs[0].shape().end());
  std::vector<Tensor> in;
  for (const Variable& x : xs) in.push_back(x.data());
  std::vector<Tensor> out = transpose_rows(in, lengths);
  if (!needs_recording(xs)) return std::vector<Variable>(out.begin(), out.end());
  std::vector<int64_t> out_lengths;  // B_t, longest first
  for (const Tensor& y : out) out_lengths.push_back(y.shape()[0]);
  return record(std::make_shared<TransposeSequenceNode>(lengths, out_lengths, row), xs, out);
}

Variable pad_sequence(const std::vector<Variable>& xs, std::optional<int64_t> length, double padding) {
  ForwardHooks hooks("PadSequence", xs);
  if (xs.empty()) throw Error("pad_sequence: no sequences given");
  const std::vector<int64_t> lengths = sequence_lengths("pad_sequence", xs);
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  if (length && *length < longest)
    throw Error(str("pad_sequence: length ", *length, " is shorter than the longest sequence (", longest, ")"));
  Shape shape = xs[0].shape();
  shape[0] = length.value_or(longest);
  shape.insert(shape.begin(), int64_t(xs.size()));
  Tensor y = Tensor::full(shape, padding, xs[0].dtype(), xs[0].data().device());
  for (size_t i = 0; i < xs.size(); ++i) y[int64_t(i)].narrow(0, 0, lengths[i]).copy_(xs[i].data());
  if (!needs_recording(xs)) return Variable(std::move(y));
  return record(std::make_shared<PadSequenceNode>(lengths), xs, {y})[0];
}

}  // namespace chainer::functions
