#include "cifar_vgg.h"

#include <string>

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;

namespace apps {

namespace {

// The blocks' output channels, stage by stage, and the dropout ratio before each block but the
// first of a stage (VGG.py: 0.3 in the first stage, 0.4 after).
const std::vector<std::vector<int64_t>> kStages{{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512},
                                                {512, 512, 512}};

}  // namespace

VGGBlock::VGGBlock(std::shared_ptr<L::Convolution2D> conv, int64_t out_channels) {
  conv_ = add_link("conv", std::move(conv));
  bn_ = add_link("bn", std::make_shared<L::BatchNormalization>(out_channels));
}

Variable VGGBlock::forward(const Variable& x) { return F::relu((*bn_)((*conv_)(x))); }

VGG::VGG(int64_t n_class_labels, int64_t in_channels, const ConvFactory& conv) {
  int64_t in = in_channels;
  for (size_t s = 0; s < kStages.size(); ++s)
    for (size_t b = 0; b < kStages[s].size(); ++b) {
      const int64_t out = kStages[s][b];
      auto c = conv ? conv(in, out) : std::make_shared<L::Convolution2D>(in, out, 3, /*stride=*/1, /*pad=*/1,
                                                                         /*nobias=*/true);
      blocks_.push_back(add_link("block" + std::to_string(s + 1) + "_" + std::to_string(b + 1),
                                 std::make_shared<VGGBlock>(std::move(c), out)));
      in = out;
    }
  fc1_ = add_link("fc1", std::make_shared<L::Linear>(512, 512, /*nobias=*/true));  // 512 x 1 x 1 after 5 poolings
  bn_fc1_ = add_link("bn_fc1", std::make_shared<L::BatchNormalization>(512));
  fc2_ = add_link("fc2", std::make_shared<L::Linear>(512, n_class_labels, /*nobias=*/true));
}

Variable VGG::forward(const Variable& x) {
  Variable h = x;
  size_t i = 0;
  for (size_t s = 0; s < kStages.size(); ++s) {
    for (size_t b = 0; b < kStages[s].size(); ++b) {
      if (b > 0) h = F::dropout(h, s == 0 ? 0.3 : 0.4);
      h = (*blocks_[i++])(h);
    }
    h = F::max_pooling_2d(h, 2, 2);  // cover_all, as Chainer's default
  }
  h = F::dropout(h, 0.5);
  h = F::relu((*bn_fc1_)((*fc1_)(h)));
  h = F::dropout(h, 0.5);
  return (*fc2_)(h);
}

DenseCost vgg_cost(int64_t n_class_labels, int64_t in_channels, int64_t size) {
  DenseCost cost;
  int64_t in = in_channels, side = size, params = 0;
  double activations = double(in_channels * size * size);
  for (const auto& stage : kStages) {
    for (int64_t out : stage) {
      params += in * out * 9 + 2 * out;
      activations += 3.0 * double(out * side * side);  // convolution, normalization, ReLU
      in = out;
    }
    side = (side + 1) / 2;
  }
  params += 512 * 512 + 2 * 512 + 512 * n_class_labels;
  cost.parameter_count = params;
  cost.parameters = 4.0 * 3.0 * double(params);    // weights, gradients, momenta
  cost.per_example = 4.0 * 2.0 * activations + 4;  // each output and its gradient; the label
  return cost;
}

CifarOptions::CifarOptions(int64_t epochs) {
  batchsize = 64;  // the example's defaults
  epoch = epochs;
  unit = 0;  // no -u: the network's widths are fixed
  data_set = Data::Other;
}

std::string cifar_usage(const char* learnrate_help) {
  return chainer::str(R"(  -d, --dataset NAME  cifar10 (default), cifar100, or fashion-mnist (the same network on
                      1-channel 28x28 images)
  -l, --learnrate LR  )", learnrate_help, R"(
      --data PATH     cifar10/cifar100: the archive (cifar-10-binary.tar.gz,
                      cifar-100-binary.tar.gz) or the directory that holds it (default:
                      pfnet/chainer/cifar under $CHAINER_DATASET_ROOT or ~/.chainer/dataset,
                      downloaded there); fashion-mnist: the directory of its four files
                      (default: Debian's dataset-fashion-mnist, else the dataset root)
      --communicator NAME  naive (default on CPUs), flat, hierarchical, two_dimensional,
                      single_node, pure_nccl (default with --gpu), non_cuda_aware or dummy
)");
}

bool read_cifar_option(Args& args, CifarOptions& o) {
  if (args.is("-d", "--dataset")) o.dataset = args.value();
  else if (args.is("-l", "--learnrate")) o.learnrate = args.positive_number();
  else if (args.is(nullptr, "--data")) o.data = args.value();
  else if (args.is(nullptr, "--communicator")) o.communicator = args.value();
  else return false;
  return true;
}

void check_cifar_dataset(const CifarOptions& o) {
  if (o.dataset != "cifar10" && o.dataset != "cifar100" && o.dataset != "fashion-mnist")
    throw chainer::Error(
        chainer::str("-d/--dataset must be cifar10, cifar100 or fashion-mnist, got '", o.dataset, "'"));
}

std::pair<chainer::datasets::DatasetPtr, chainer::datasets::DatasetPtr> read_cifar_dataset(const CifarOptions& o) {
  chainer::datasets::DatasetPtr train, test;
  // [cifar-data]
  // Images (3, 32, 32) for CIFAR, (1, 28, 28) for Fashion-MNIST, pixels / 255; labels int32.
  namespace D = chainer::datasets;
  if (o.dataset == "cifar10")
    std::tie(train, test) = o.data.empty() ? D::get_cifar10() : D::get_cifar10(o.data);
  else if (o.dataset == "cifar100")
    std::tie(train, test) = o.data.empty() ? D::get_cifar100() : D::get_cifar100(o.data);
  else
    std::tie(train, test) = o.data.empty() ? D::get_fashion_mnist(true, 3) : D::get_fashion_mnist(o.data, true, 3);
  // [end]
  return {train, test};
}

}  // namespace apps
