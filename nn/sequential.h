/// @file
/// Sequential, as chainer.Sequential: a link made of layers called one after another, each a
/// link or a plain function (F::relu, a lambda), so a feed-forward model needs no forward():
///
///     auto model = std::make_shared<chainer::Sequential>(std::make_shared<L::Linear>(100), F::relu,
///                                                        std::make_shared<L::Linear>(10));
///
/// Its links are its children, named by their position among the links only ("0", "1", ...;
/// functions take no name), as Chainer's Sequential (a ChainList) names them, so parameters are
/// "/0/W", "/0/b", "/1/W", ... and NPZ keys "0/W", ... as Chainer writes them.
#pragma once
#include <concepts>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "nn/link.h"

namespace chainer {

/// Layers called in order, each a link or a function of one variable (Chainer's `chainer.Sequential`).
class Sequential : public Link {
 public:
  /// A function layer: one variable in, one out.
  using Function = std::function<Variable(const Variable&)>;

  /// One layer: a link (shared, so the caller may keep a handle on it) or a function.
  class Layer {
   public:
    /// A link layer; LINK must not be null.
    template <std::derived_from<Link> L>
    Layer(std::shared_ptr<L> link) : link_(std::move(link)) {}  // NOLINT: implicit, as in append(link)
    /// A function layer: anything callable as `Variable(const Variable&)` (F::relu, a lambda). A
    /// link by value is refused at compile time: it would be copied, parameters and all; pass a
    /// shared_ptr to it.
    template <class F>
      requires(std::is_invocable_r_v<Variable, F&, const Variable&> &&
               !std::derived_from<std::remove_cvref_t<F>, Link> && !std::same_as<std::remove_cvref_t<F>, Layer>)
    Layer(F&& function) : function_(std::forward<F>(function)) {}  // NOLINT: implicit, as in append(F::relu)

    /// Calls the link's forward, or the function, on X.
    Variable operator()(const Variable& x) const { return link_ ? link_->forward(x) : function_(x); }
    /// The link of a link layer; null for a function layer.
    const std::shared_ptr<Link>& link() const { return link_; }
    /// The function of a function layer; empty for a link layer.
    const Function& function() const { return function_; }

   private:
    std::shared_ptr<Link> link_;
    Function function_;
  };

  /// An empty Sequential, to append() to.
  Sequential() = default;
  /// The layers LAYERS, in order: links as `std::shared_ptr`, functions as they are.
  template <class... Layers>
    requires(sizeof...(Layers) > 0 && (std::is_constructible_v<Layer, Layers> && ...))
  explicit Sequential(Layers&&... layers) {
    (append(Layer(std::forward<Layers>(layers))), ...);
  }

  /// Adds LAYER at the end; a link becomes child "<number of links before it>".
  void append(Layer layer);
  /// The number of layers, links and functions together (Chainer's `len(seq)`).
  size_t size() const { return layers_.size(); }
  /// Layer I (of size()), a link or a function, as Chainer's `seq[i]`; throws when out of range.
  const Layer& operator[](size_t i) const;

  /// Calls the layers in order, each on the previous one's output.
  Variable forward(const Variable& x) override;
  /// The link layers' parameters and persistents, under their names ("0/W", ...).
  void serialize(Serializer& s) override;

 protected:
  void collect_children(std::vector<std::pair<std::string, Link*>>& out) const override;

 private:
  std::vector<Layer> layers_;
  std::vector<std::shared_ptr<Link>> links_;  // the link layers, in order: child k is named "k"
};

}  // namespace chainer
