/// @file
/// Identity: a link that returns its input, a placeholder layer (a skipped block, an optional
/// projection) that keeps a model's structure. Chainer 7 has no such link (only the function
/// `F.identity`); this is PyTorch's `nn.Identity`, named as Chainer names links.
#pragma once
#include "nn/link.h"

namespace chainer::links {

/// Returns its input unchanged; no parameters (as PyTorch's `nn.Identity`, named as `L.Identity`).
class Identity : public Link {
 public:
  /// X itself, the same variable: gradients flow through untouched.
  Variable forward(const Variable& x) override { return x; }
  /// Every input unchanged, so Identity also stands where a link takes several.
  std::vector<Variable> forward_args(const std::vector<Variable>& args) override { return args; }
};

}  // namespace chainer::links
