#include "nn/links/linear.h"

#include "nn/functions.h"
#include "nn/initializers.h"

namespace chainer::links {

Linear::Linear(int64_t out_size) : Linear(std::nullopt, out_size) {}

Linear::Linear(std::optional<int64_t> in_size, int64_t out_size, bool nobias, initializers::Initializer initialW,
               initializers::Initializer initial_bias)
    : out_size_(out_size), nobias_(nobias), initialW_(std::move(initialW)) {
  if (out_size <= 0) throw Error(str("Linear: out_size must be positive, got ", out_size));
  add_param("W");
  if (!nobias)
    add_param("b", initial_bias ? initial_bias({out_size}, "Linear: initial_bias") : Tensor::zeros({out_size}));
  if (in_size) {
    if (*in_size <= 0) throw Error(str("Linear: in_size must be positive, got ", *in_size));
    initialize(*in_size);
  }
}

void Linear::initialize(int64_t in_size) {
  in_size_ = in_size;
  // Drawn on the host, so a model initialized on a GPU starts from the same weights as on the CPU.
  const Shape shape{out_size_, in_size};
  W().set_data(initial_value(initialW_ ? initialW_(shape, "Linear: initialW") : initializers::lecun_normal(shape)));
}

void Linear::ensure_initialized(const Variable& x) {
  if (W().data().defined()) return;
  if (x.ndim() < 1) throw Error("Linear: the input must have a batch axis");
  initialize(x.ndim() == 1 ? x.shape()[0] : x.numel() / std::max<int64_t>(x.shape()[0], 1));
}

void Linear::serialize(Serializer& s) {
  Link::serialize(s);
  if (!s.is_reader() || !W().data().defined()) return;
  const Shape& shape = W().data().shape();
  if (shape.size() != 2 || shape[0] != out_size_ || (in_size_ != 0 && shape[1] != in_size_))
    throw Error(str("Linear: the loaded W '", s.prefix(), "W' has shape ", shape_str(shape), " but this link is (",
                    out_size_, ", ", in_size_ ? std::to_string(in_size_) : std::string("any"), ")"));
  in_size_ = shape[1];
}

Variable Linear::forward(const Variable& x) {
  ensure_initialized(x);
  return functions::linear(x, W(), nobias_ ? Variable() : *b());
}

Variable Linear::forward_relu(const Variable& x) {
  ensure_initialized(x);
  return functions::linear_relu(x, W(), nobias_ ? Variable() : *b());
}

}  // namespace chainer::links
