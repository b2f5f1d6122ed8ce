/// @file
/// Linear link, as chainer.links.Linear: `y = x W^T + b` with W (out_size, in_size) drawn from
/// LeCunNormal unless initialW says otherwise, and b zeros unless initial_bias says otherwise.
/// Constructed with only out_size, the input size is taken from the first input (W is created
/// then, from initialW as well), as Chainer's Linear(None, out) / Linear(out).
#pragma once
#include <optional>

#include "nn/initializers.h"
#include "nn/link.h"

namespace chainer::links {

/// A fully connected layer, `y = x W^T + b` (Chainer's `L.Linear`).
class Linear : public Link {
 public:
  /// Linear(out_size): the input size is inferred at the first call.
  explicit Linear(int64_t out_size);
  /// Linear(in_size, out_size, nobias, initialW, initial_bias); `in_size = std::nullopt` infers
  /// it, as Chainer's None. An empty initializer is Chainer's None (LeCunNormal, zeros).
  Linear(std::optional<int64_t> in_size, int64_t out_size, bool nobias = false,
         initializers::Initializer initialW = {}, initializers::Initializer initial_bias = {});

  /// `x W^T + b`; the first call of a lazily sized link creates W from x.
  Variable forward(const Variable& x) override;
  /// Also checks a W loaded into a lazily sized link against out_size, and takes in_size from it.
  void serialize(Serializer& s) override;
  /// `relu(linear(x))` in one fused function: the hot path of MLPs.
  Variable forward_relu(const Variable& x);

  /// The input size; 0 until known.
  int64_t in_size() const { return in_size_; }
  /// The output size.
  int64_t out_size() const { return out_size_; }
  /// The weight, (out_size, in_size); undefined until the input size is known.
  Variable& W() { return param("W"); }
  /// The bias, (out_size,); null without one (nobias).
  Variable* b() { return nobias_ ? nullptr : &param("b"); }

 private:
  void initialize(int64_t in_size);
  void ensure_initialized(const Variable& x);
  int64_t in_size_ = 0, out_size_;
  bool nobias_;
  initializers::Initializer initialW_;
};

}  // namespace chainer::links
