#include "nn/sequential.h"

#include <string>

namespace chainer {

void Sequential::append(Layer layer) {
  if (!layer.link() && !layer.function())
    throw Error(str("Sequential.append: layer ", layers_.size(), " is a null link or an empty function"));
  if (layer.link()) links_.push_back(layer.link());
  layers_.push_back(std::move(layer));
}

const Sequential::Layer& Sequential::operator[](size_t i) const {
  if (i >= layers_.size())
    throw Error(str("Sequential: index ", i, " is out of range for ", layers_.size(), " layers"));
  return layers_[i];
}

Variable Sequential::forward(const Variable& x) {
  Variable h = x;
  for (const Layer& layer : layers_) h = layer(h);
  return h;
}

void Sequential::serialize(Serializer& s) {
  Link::serialize(s);
  for (size_t k = 0; k < links_.size(); ++k) {
    Serializer sub = s[std::to_string(k)];
    links_[k]->serialize(sub);
  }
}

void Sequential::collect_children(std::vector<std::pair<std::string, Link*>>& out) const {
  for (size_t k = 0; k < links_.size(); ++k) out.emplace_back(std::to_string(k), links_[k].get());
}

}  // namespace chainer
