/// @file
/// EmbedID link, as chainer.links.EmbedID: a table of in_size vectors of out_size, W
/// (in_size, out_size), looked up by integer ids (functions::embed_id). W is drawn from Normal(1.0)
/// unless initialW says otherwise, as Chainer's.
#pragma once
#include <optional>

#include "nn/initializers.h"
#include "nn/link.h"

namespace chainer::links {

/// Word embeddings (Chainer's `L.EmbedID`).
class EmbedID : public Link {
 public:
  /// IN_SIZE ids, each a vector of OUT_SIZE; IGNORE_LABEL: the id that gives zeros.
  EmbedID(int64_t in_size, int64_t out_size, initializers::Initializer initialW = {},
          std::optional<int64_t> ignore_label = std::nullopt);

  /// `W[x]` for integer ids X: shape x.shape + (out_size,).
  Variable forward(const Variable& x) override;

  /// The table, (in_size, out_size).
  Variable& W() { return param("W"); }
  /// The id that gives zeros, if any.
  std::optional<int64_t> ignore_label() const { return ignore_label_; }

 private:
  std::optional<int64_t> ignore_label_;
};

}  // namespace chainer::links
