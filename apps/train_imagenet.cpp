// ChainerMN's examples/chainermn/imagenet/train_imagenet.py: a convnet of the example's
// (apps/imagenet: nin, alex, googlenet, googlenetbn, resnet50) trained data-parallel on
// labelled image files, each process decoding its own share of them.
//   mpiexec -n 2 build/apps/train_imagenet train.txt val.txt --root DIR --mean mean.npy
//       [--arch nin] [--insize N] [-B 32] [-E 10] [-j LOADERJOB] [-b 250] [-o result] [-r SNAPSHOT]
// The lists name files under --root, one "path label" per line. Rank 0 reads the lists and the
// mean and scatters each rank its share as paths and labels (scatter_dataset sends an image
// dataset's description); every process decodes its own images, so they must be readable at the
// same paths on every host. compute_mean writes mean.npy; export_images writes Fashion-MNIST in
// this layout when no ImageNet is at hand.
#include <iostream>
#include <string>

#include "app_common.h"
#include "apps/imagenet/model.h"

namespace E = chainer::training::extensions;

namespace {

struct Options {
  std::string train, val, arch = "nin", mean = "mean.npy", root = ".", communicator = "hierarchical", initmodel;
  int64_t val_batchsize = 250, loaderjob = 0, n_class = 1000;
  bool allow_outside_root = false;
  std::optional<int64_t> insize;
  apps::CommonOptions common;
};

const char* kUsage = R"(usage: train_imagenet TRAIN VAL [options]
Trains a convnet of ChainerMN's ImageNet example on labelled image files (data parallel under
mpiexec: every process decodes its share of the images).
  TRAIN, VAL           image-label list files: one "path label" per line, paths under --root
  -a, --arch NAME      nin (default), alex, googlenet, googlenetbn or resnet50
      --insize N       the crop fed to nin or resnet50 (default: the model's, 227 or 224); the
                       images must be larger than N
      --n-class N      the number of classes (default 1000, the example's)
  -B, --batchsize N    training minibatch size per process (default 32)
  -E, --epoch N        epochs to train (default 10)
  -j, --loaderjob N    image-loading worker threads per process (default: its compute threads;
                       at most 8 per core it may run on)
  -m, --mean PATH      the mean image, from compute_mean (default mean.npy)
  -R, --root DIR       the directory the lists' paths start from (default .)
      --allow-outside-root  let the lists name files outside --root (absolute paths, or
                       paths climbing out with ..); refused by default
  -b, --val_batchsize N  validation minibatch size (default 250)
  -o, --out DIR        the log and snapshots (default result)
  -r, --resume FILE    resume from a snapshot written by an earlier run (one per rank)
      --checkpoint-interval N  every N iterations each process saves a checkpoint
                       (OUT/train_imagenet.RANK.ITERATION); a rerun resumes from the newest
                       one, also with another process count (docs/fault_tolerance.md)
      --initmodel FILE initialize the model's parameters from an .npz file (save_npz)
      --communicator NAME  hierarchical (default), naive, flat, two_dimensional, single_node,
                       pure_nccl, non_cuda_aware or dummy (no averaging: times everything
                       but the reduction)
  -g, --gpu [ID]       train on CUDA device ID + intra_rank
      --seed N         random seed for initialization, shuffling and crops (default 0)
      --threads N      compute threads per process (default: cores / processes on this node;
                       at most 8 per core it may run on)
      --dtype D        float32 (default), mixed16, mixed_bf16, float16 or bfloat16: the dtype the
                       model computes in (docs/mixed_precision.md)
      --timing         also log each epoch's training seconds, the part of them spent
                       waiting for batches, and the peak RSS
      --no-plot        draw no loss.png and accuracy.png (default: draw them, where this
                       build has cairo; --plot asks for them, and warns without it)
  -h, --help           show this help
)";

Options parse(int argc, char** argv) {
  Options o;
  o.common.batchsize = 32;
  o.common.observe_lr = true;  // the example's observe_lr and its 'lr' column
  o.common.epoch = 10;
  std::vector<std::string> positional;
  for (apps::Args args(argc, argv, kUsage); args.next();) {
    if (args.is("-a", "--arch")) o.arch = args.value();
    else if (args.is(nullptr, "--insize")) o.insize = args.integer(1);
    else if (args.is(nullptr, "--n-class")) o.n_class = args.integer(1);
    else if (args.is("-B", "--batchsize")) o.common.batchsize = args.integer(1);
    else if (args.is("-E", "--epoch")) o.common.epoch = args.integer(1);
    else if (args.is("-j", "--loaderjob")) {
      o.loaderjob = args.integer(1);
      apps::check_threads("-j/--loaderjob", o.loaderjob, "image-loading threads");
    }
    else if (args.is("-m", "--mean")) o.mean = args.value();
    else if (args.is("-R", "--root")) o.root = args.value();
    else if (args.is(nullptr, "--allow-outside-root")) o.allow_outside_root = true;
    else if (args.is("-b", "--val_batchsize")) o.val_batchsize = args.integer(1);
    else if (args.is("-o", "--out")) o.common.out = args.value();
    else if (args.is("-r", "--resume")) o.common.resume = args.value();
    else if (args.is(nullptr, "--initmodel")) o.initmodel = args.value();
    else if (args.is(nullptr, "--communicator")) o.communicator = args.value();
    else if (args.is("-g", "--gpu")) o.common.gpu = args.value_follows() ? int(args.integer(0, 1 << 20)) : 0;
    else if (args.is(nullptr, "--seed")) o.common.seed = args.integer(0);
    else if (args.is(nullptr, "--threads")) {
      const int64_t n = args.integer(1);
      apps::check_threads("--threads", n, "compute threads");
      o.common.threads = int(n);
    }
    else if (args.is(nullptr, "--timing")) o.common.timing = true;
    else if (args.is(nullptr, "--checkpoint-interval")) o.common.checkpoint_interval = args.integer(1);
    else if (apps::read_dtype_option(args, o.common.dtype)) continue;
    else if (args.is(nullptr, "--plot")) o.common.plot = true;
    else if (args.is(nullptr, "--no-plot")) o.common.plot = false;
    else if (!args.option().empty() && args.option()[0] != '-') positional.push_back(args.option());
    else args.unknown();
  }
  if (positional.size() != 2)
    throw chainer::Error(chainer::str("expected the two lists TRAIN and VAL, got ", positional.size(),
                                      " arguments\n", kUsage));
  o.train = positional[0], o.val = positional[1];
  return o;
}

// The example's customized evaluator: the model in test mode (the Evaluator switches
// config.train off already; the example's shows how create_multi_node_evaluator takes a
// subclass).
class TestModeEvaluator : public E::Evaluator {
 public:
  using E::Evaluator::Evaluator;
  chainer::Observation evaluate() override {
    chainer::config::TrainScope test_mode(false);
    return E::Evaluator::evaluate();
  }
};

// -B and -b against the memory this process has, before any image is read: a lower estimate,
// each batch's crops alone (3 x INSIZE x INSIZE float32), before any layer's outputs.
void check_batch_memory(const Options& o, int64_t insize, const chainer::Device& device,
                        const chainermn::Communicator& comm) {
  apps::check_memory(
      {{"-B/--batchsize", o.common.batchsize, "examples"},
       {"-b/--val_batchsize", o.val_batchsize, "examples"},
       {"--insize", insize, "pixels a side"}},
      [](const std::vector<int64_t>& v) {
        const double crop = 3.0 * double(v[2]) * double(v[2]) * 4;
        auto what = [&v](const char* kind, int64_t n) {
          return chainer::str("a ", kind, " batch of ", n, " crops of 3 x ", v[2], " x ", v[2],
                              " (float32, before any layer's outputs)");
        };
        return std::vector<apps::MemoryPart>{{0, what("training", v[0]), double(v[0]) * crop},
                                             {1, what("validation", v[1]), double(v[1]) * crop}};
      },
      device, comm);
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto comm = apps::create_communicator(o.communicator, o.common.gpu);
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.common.gpu, *comm);
  apps::set_compute(o.common);
  if (root)
    std::cout << "==========================================\nNum process (COMM_WORLD): " << comm->size()
              << "\nUsing " << comm->name() << " communicator\nUsing " << o.arch
              << " arch\nNum Minibatch-size: " << o.common.batchsize << "\nNum epoch: " << o.common.epoch
              << "\n==========================================" << std::endl;

  // --n-class before the model is made (its last layer is allocated at once): every architecture
  // scores N classes from at least 1024 features, with gradients and momentum.
  apps::check_memory({{"--n-class", o.n_class, "classes"}},
                     [](const std::vector<int64_t>& v) {
                       return std::vector<apps::MemoryPart>{
                           {0, chainer::str("a last layer of ", v[0], " classes (at least 1024 weights each, with their ",
                                            "gradients and momentum, float32)"),
                            12.0 * 1024 * double(v[0])}};
                     },
                     device, *comm);
  apps::set_stage(chainer::str("building the model ", o.arch));
  chainer::random::seed(uint64_t(o.common.seed));  // the same initial parameters on every rank
  auto model = apps::imagenet::make_model(o.arch, o.n_class, o.insize);
  check_batch_memory(o, model->insize(), device, *comm);
  if (!o.initmodel.empty()) chainer::serializers::load_npz(o.initmodel, *model);
  model->to_device(device);

  // As the example: rank 0 reads the lists and the mean, and each rank receives the paths and
  // labels of its share (with the mean and the crop settings) and decodes its own images.
  const int64_t crop = model->insize();
  chainer::datasets::DatasetPtr train, val;
  apps::set_stage("reading the lists and the mean, and scattering the lists");
  if (root) {
    const chainer::Tensor mean = chainer::load_npy(o.mean);
    train = std::make_shared<chainer::datasets::PreprocessedImageDataset>(
        std::make_shared<chainer::datasets::LabeledImageDataset>(o.train, o.root, chainer::DType::Float32,
                                                                 chainer::DType::Int32, o.allow_outside_root),
        mean, crop, /*random=*/true, uint64_t(o.common.seed));
    val = std::make_shared<chainer::datasets::PreprocessedImageDataset>(
        std::make_shared<chainer::datasets::LabeledImageDataset>(o.val, o.root, chainer::DType::Float32,
                                                                 chainer::DType::Int32, o.allow_outside_root),
        mean, crop, /*random=*/false);
  }
  const int64_t n_train = comm->bcast_obj<int64_t>(root ? int64_t(train->size()) : 0);
  const auto train_share = chainermn::scatter_dataset(train, comm, 0, /*shuffle=*/true, uint64_t(o.common.seed));
  const auto val_share = chainermn::scatter_dataset(val, comm, 0, /*shuffle=*/false, 0, /*force_equal_length=*/false);
  apps::check_batch("-B/--batchsize", o.common.batchsize, int64_t(train_share->size()), n_train, comm->size());

  auto train_iter = std::make_shared<chainer::iterators::MultiprocessIterator>(
      train_share, o.common.batchsize, true, true, uint64_t(o.common.seed) + uint64_t(comm->rank()), 2, o.loaderjob);
  auto val_iter = std::make_shared<chainer::iterators::MultiprocessIterator>(val_share, o.val_batchsize, false, false,
                                                                               0, 2, o.loaderjob);
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::MomentumSGD>(0.01, 0.9),
                                                          comm);
  optimizer->setup(model);
  apps::set_precision(*optimizer, o.common);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);  // on the model's device
  auto evaluator =
      chainermn::create_multi_node_evaluator(std::make_shared<TestModeEvaluator>(val_iter, model), comm);
  auto checkpointer = apps::make_checkpointer("train_imagenet", o.common, comm);
  if (checkpointer) checkpointer->set_scatter(n_train, true, uint64_t(o.common.seed));
  apps::train(updater, evaluator, o.common, *comm, /*dump_graph=*/true,
              [train_iter] { return train_iter->data_seconds(); }, checkpointer);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("train_imagenet", argc, argv, run); }
