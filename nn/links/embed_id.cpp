#include "nn/links/embed_id.h"

#include "nn/functions/embed_id.h"

namespace chainer::links {

EmbedID::EmbedID(int64_t in_size, int64_t out_size, initializers::Initializer initialW,
                 std::optional<int64_t> ignore_label)
    : ignore_label_(ignore_label) {
  if (in_size <= 0 || out_size <= 0)
    throw Error(str("EmbedID: in_size and out_size must be positive, got ", in_size, " and ", out_size));
  const Shape shape{in_size, out_size};
  add_param("W", initialW ? initialW(shape, "EmbedID: initialW") : initializers::normal(shape, 1.0));
}

Variable EmbedID::forward(const Variable& x) { return functions::embed_id(x, W(), ignore_label_); }

}  // namespace chainer::links
