#include "apps/imagenet/model.h"

#include <functional>
#include <map>
#include <utility>

#include "apps/imagenet/alex.h"
#include "apps/imagenet/googlenet.h"
#include "apps/imagenet/googlenetbn.h"
#include "apps/imagenet/nin.h"
#include "apps/imagenet/resnet50.h"

namespace apps::imagenet {

namespace F = chainer::functions;
using chainer::Error;
using chainer::str;
using chainer::Variable;

ImageNetModel::ImageNetModel(std::string arch, int64_t n_class, int64_t insize, bool size_agnostic)
    : arch_(std::move(arch)), n_class_(n_class), insize_(insize), size_agnostic_(size_agnostic) {
  if (n_class < 1) throw Error(str(arch_, ": n_class must be positive, got ", n_class));
  if (insize < 1) throw Error(str(arch_, ": insize must be positive, got ", insize));
}

void ImageNetModel::check_input(const Variable& x) const {
  const chainer::Shape& s = x.shape();
  const bool ok = s.size() == 4 && s[1] == 3 && (size_agnostic_ || (s[2] == insize_ && s[3] == insize_));
  if (!ok)
    throw Error(str(arch_, ": expected images (N, 3, ", size_agnostic_ ? "H, W" : str(insize_, ", ", insize_),
                    "), got ", chainer::shape_str(s)));
}

const Variable& ImageNetModel::checked_images(const std::vector<Variable>& args) const {
  if (args.size() != 2)
    throw Error(str(arch_, ": expected the images and the labels (2 arrays), got ", args.size()));
  check_input(args[0]);
  return args[0];
}

std::vector<Variable> ImageNetModel::forward_args(const std::vector<Variable>& args) {
  Variable h = predict(checked_images(args));
  Variable loss = F::softmax_cross_entropy(h, args[1]);
  chainer::report(std::map<std::string, Variable>{{"loss", loss}, {"accuracy", F::accuracy(h, args[1])}}, this);
  return {loss};
}

std::vector<Variable> AuxiliaryHeadsModel::forward_args(const std::vector<Variable>& args) {
  const Variable& x = checked_images(args);
  const Variable& t = args[1];
  std::vector<Variable> aux;
  const Variable main = heads(x, &aux);
  Variable loss1 = F::softmax_cross_entropy(aux[0], t);
  Variable loss2 = F::softmax_cross_entropy(aux[1], t);
  Variable loss3 = F::softmax_cross_entropy(main, t);
  Variable loss = 0.3 * (loss1 + loss2) + loss3;
  chainer::report(std::map<std::string, Variable>{{"loss", loss},
                                                  {"loss1", loss1},
                                                  {"loss2", loss2},
                                                  {"loss3", loss3},
                                                  {"accuracy", F::accuracy(main, t)}},
                  this);
  return {loss};
}

namespace {

using Factory = std::function<std::shared_ptr<ImageNetModel>(int64_t n_class, std::optional<int64_t> insize)>;

// A factory for an architecture that only takes its own input size.
template <class Model>
Factory fixed_size() {
  return [](int64_t n_class, std::optional<int64_t> insize) -> std::shared_ptr<ImageNetModel> {
    if (insize && *insize != Model::kInsize)
      throw Error(str("make_model: ", Model::kArch, " takes ", Model::kInsize, "x", Model::kInsize,
                      " images only (its fully connected layers fix the size), got insize ", *insize));
    return std::make_shared<Model>(n_class);
  };
}

// A factory for an architecture that ends in a global average and takes any input size.
template <class Model>
Factory any_size() {
  return [](int64_t n_class, std::optional<int64_t> insize) -> std::shared_ptr<ImageNetModel> {
    return std::make_shared<Model>(n_class, insize.value_or(Model::kInsize));
  };
}

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table{
      {"alex", fixed_size<Alex>()},
      {"googlenet", fixed_size<GoogLeNet>()},
      {"googlenetbn", fixed_size<GoogLeNetBN>()},
      {"nin", any_size<NIN>()},
      {"resnet50", any_size<ResNet50>()},
  };
  return table;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

std::shared_ptr<ImageNetModel> make_model(const std::string& arch, int64_t n_class, std::optional<int64_t> insize) {
  auto it = factories().find(arch);
  if (it == factories().end()) {
    std::string known;
    for (const std::string& name : model_names()) known += (known.empty() ? "" : ", ") + name;
    throw Error(str("make_model: unknown architecture '", arch, "'; known: ", known));
  }
  return it->second(n_class, insize);
}

}  // namespace apps::imagenet
