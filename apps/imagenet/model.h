// The models of ChainerMN's ImageNet example (examples/imagenet: nin, alex, googlenet,
// googlenetbn, resnet50) share this shape, the example's: forward_args({x, t}) computes the loss
// and the accuracy of the predictions for images X (N, 3, insize, insize) and labels T, reports
// them as "loss" and "accuracy" (GoogLeNets also their heads' losses "loss1".."loss3"), and
// returns {loss}; forward(x) (predict) returns the main head's scores (N, n_class) alone, what an
// evaluation or inference uses. insize is the crop the data pipeline feeds the model.
#pragma once
#include <chainer.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace apps::imagenet {

// One of the example's architectures.
class ImageNetModel : public chainer::Chain {
 public:
  // The example's name of the architecture ("resnet50").
  const std::string& arch() const { return arch_; }
  // The height and width of the input images.
  int64_t insize() const { return insize_; }
  // The number of classes scored.
  int64_t n_class() const { return n_class_; }

  // The main head's class scores for X (N, 3, insize, insize): (N, n_class).
  virtual chainer::Variable predict(const chainer::Variable& x) = 0;
  chainer::Variable forward(const chainer::Variable& x) override { return predict(x); }
  // ARGS = {x, t}: softmax_cross_entropy of predict(x) against T, reported with the accuracy.
  std::vector<chainer::Variable> forward_args(const std::vector<chainer::Variable>& args) override;

 protected:
  // SIZE_AGNOSTIC: the net ends in a global average, so any input size works (insize only says
  // which the data pipeline crops); otherwise the input must be insize x insize.
  ImageNetModel(std::string arch, int64_t n_class, int64_t insize, bool size_agnostic);
  // Checks that X is (N, 3, H, W) with H and W what the model takes, naming the model otherwise.
  void check_input(const chainer::Variable& x) const;
  // Checks that ARGS are {x, t}, and returns x checked.
  const chainer::Variable& checked_images(const std::vector<chainer::Variable>& args) const;

 private:
  std::string arch_;
  int64_t n_class_, insize_;
  bool size_agnostic_;
};

// The architectures make_model knows, sorted: alex, googlenet, googlenetbn, nin, resnet50.
std::vector<std::string> model_names();
// A model with two auxiliary classifiers (the GoogLeNets): predict(x) is the main head alone;
// forward_args({x, t}) returns the main head's cross-entropy plus 0.3 times the auxiliary
// heads', reported as loss (and loss1, loss2, loss3) with the main head's accuracy.
class AuxiliaryHeadsModel : public ImageNetModel {
 public:
  chainer::Variable predict(const chainer::Variable& x) override { return heads(x, nullptr); }
  std::vector<chainer::Variable> forward_args(const std::vector<chainer::Variable>& args) override;

 protected:
  using ImageNetModel::ImageNetModel;
  // The main head's scores, and with AUX the auxiliary heads' in AUX[0] and AUX[1].
  virtual chainer::Variable heads(const chainer::Variable& x, std::vector<chainer::Variable>* aux) = 0;
};

// Chainer's initializers.HeNormal() as a link's initialW (nin's and resnet50's convolutions).
inline chainer::initializers::Initializer he_normal() {
  return [](const chainer::Shape& shape) { return chainer::initializers::he_normal(shape); };
}

// The model ARCH for N_CLASS classes and INSIZE-pixel images (unset: the architecture's own,
// 227 for alex and nin, 224 for the others; alex, googlenet and googlenetbn take only their own).
// Throws chainer::Error for an unknown ARCH, listing the known ones.
std::shared_ptr<ImageNetModel> make_model(const std::string& arch, int64_t n_class = 1000,
                                          std::optional<int64_t> insize = std::nullopt);

}  // namespace apps::imagenet
