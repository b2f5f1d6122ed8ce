// ChainerMN's DCGAN example (examples/dcgan: train_dcgan.py, net.py, updater.py, visualize.py):
// a generator (Linear, then Deconvolution2D with batch normalization and ReLU, a sigmoid at the
// end) and a discriminator (Convolution2D with batch normalization without gamma, leaky ReLU,
// Gaussian noise on the input and on every hidden layer while training), each stepped by its own
// multi-node Adam (alpha 2e-4, beta1 0.5, WeightDecay 1e-4). One iteration, as updater.py: the
// discriminator scores a real batch and a batch the generator made from uniform noise; the
// discriminator's optimizer steps on softplus(-y_real) + softplus(y_fake), then the generator's on
// softplus(-y_fake), backpropagated through the discriminator's graph over the same fake images
// (Optimizer::update(lossfun) keeps graphs, as Chainer).
//   mpiexec -n 2 build/apps/train_dcgan [-b 50] [--iteration 2000] [-o result] [--ch 512] [--dataset cifar10]
// Trains on Fashion-MNIST by default (installed with Debian's dataset-fashion-mnist, no network
// needed), its 28x28 images padded with black to 32x32, so that the networks are the example's
// (bottom width 4, three 2x upsamplings) with one channel instead of three; --dataset cifar10 is
// the example's own data (32x32, three channels; the archive is downloaded once). Every
// process trains on its share of the data; only rank 0 logs, prints and writes the preview images
// (OUT/preview/imageNNNNNNNN.png, a 10x10 grid from a fixed noise, every --snapshot_interval
// iterations) and gen_iter_N.npz / dis_iter_N.npz; every rank writes its trainer snapshot
// (snapshot_iter_N[.rankR-of-P]: the batch normalizations' running averages are its own).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "app_common.h"

namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
using chainer::Shape;
using chainer::Tensor;
using chainer::Variable;
using chainer::training::IntervalTrigger;
using chainer::training::Unit;

namespace {

chainer::initializers::Initializer normal(double scale) {
  return [scale](const Shape& shape) { return chainer::initializers::normal(shape, scale); };
}

// net.py's add_noise: h + sigma * N(0, 1) while training, h unchanged otherwise. The noise is
// made where h is (xp.random.randn in the example): drawn on the host and copied, it was most of
// a GPU iteration.
Variable add_noise(const Variable& h, double sigma = 0.2) {
  if (!chainer::config::train()) return h;
  return h + Variable(chainer::ops::random_normal(h.shape(), 0.0, sigma, h.dtype(), h.data().device(),
                                                  chainer::random::default_generator()));
}

// [dcgan-model]
// net.py's Generator: z (N, n_hidden, 1, 1) -> Linear -> (N, ch, 4, 4) -> three 4x4 stride-2
// deconvolutions halving the channels (8, 16, 32) -> a 3x3 deconvolution to the image's channels.
class Generator : public chainer::Chain {
 public:
  Generator(int64_t n_hidden, int64_t channels, int64_t bottom_width = 4, int64_t ch = 512, double wscale = 0.02)
      : n_hidden_(n_hidden), bottom_width_(bottom_width), ch_(ch) {
    const auto w = normal(wscale);
    l0 = add_link("l0", std::make_shared<L::Linear>(n_hidden, bottom_width * bottom_width * ch, false, w));
    const int64_t widths[] = {ch, ch / 2, ch / 4, ch / 8};
    for (int i = 0; i < 3; ++i)
      dc[i] = add_link("dc" + std::to_string(i + 1),
                       std::make_shared<L::Deconvolution2D>(widths[i], widths[i + 1], 4, 2, 1, false, std::nullopt, w));
    dc[3] = add_link("dc4", std::make_shared<L::Deconvolution2D>(ch / 8, channels, 3, 1, 1, false, std::nullopt, w));
    bn[0] = add_link("bn0", std::make_shared<L::BatchNormalization>(bottom_width * bottom_width * ch));
    for (int i = 1; i < 4; ++i)
      bn[i] = add_link("bn" + std::to_string(i), std::make_shared<L::BatchNormalization>(widths[i]));
  }

  // make_hidden: uniform noise in [-1, 1), from GEN (else the default generator).
  Tensor make_hidden(int64_t batchsize, chainer::Generator* gen = nullptr) const {
    return chainer::random::uniform({batchsize, n_hidden_, 1, 1}, -1.0, 1.0, chainer::DType::Float32, gen);
  }

  Variable forward(const Variable& z) override {
    Variable h = F::reshape(F::relu((*bn[0])((*l0)(z))), {z.shape()[0], ch_, bottom_width_, bottom_width_});
    for (int i = 0; i < 3; ++i) h = F::relu((*bn[i + 1])((*dc[i])(h)));
    return F::sigmoid((*dc[3])(h));
  }

 private:
  int64_t n_hidden_, bottom_width_, ch_;
  std::shared_ptr<L::Linear> l0;
  std::shared_ptr<L::Deconvolution2D> dc[4];
  std::shared_ptr<L::BatchNormalization> bn[4];
};

// net.py's Discriminator: pairs of a 3x3 convolution and a 4x4 stride-2 one (32 -> 16 -> 8 -> 4),
// batch normalization without gamma after all but the first, leaky ReLU, noise everywhere.
class Discriminator : public chainer::Chain {
 public:
  Discriminator(int64_t channels, int64_t bottom_width = 4, int64_t ch = 512, double wscale = 0.02) {
    const auto w = normal(wscale);
    // {in, out, ksize, stride, pad} of c0_0, c0_1, c1_0, c1_1, c2_0, c2_1, c3_0.
    const int64_t convs[7][5] = {{channels, ch / 8, 3, 1, 1}, {ch / 8, ch / 4, 4, 2, 1}, {ch / 4, ch / 4, 3, 1, 1},
                                 {ch / 4, ch / 2, 4, 2, 1},   {ch / 2, ch / 2, 3, 1, 1}, {ch / 2, ch, 4, 2, 1},
                                 {ch, ch, 3, 1, 1}};
    const char* names[7] = {"c0_0", "c0_1", "c1_0", "c1_1", "c2_0", "c2_1", "c3_0"};
    L::BatchNormalizationLinkOptions no_gamma;
    no_gamma.use_gamma = false;
    for (int i = 0; i < 7; ++i) {
      const auto& c = convs[i];
      conv[i] = add_link(names[i], std::make_shared<L::Convolution2D>(c[0], c[1], c[2], c[3], c[4], false, w));
      if (i > 0)
        bn[i] = add_link(std::string("bn") + (names[i] + 1), std::make_shared<L::BatchNormalization>(c[1], no_gamma));
    }
    l4 = add_link("l4", std::make_shared<L::Linear>(bottom_width * bottom_width * ch, 1, false, w));
  }

  Variable forward(const Variable& x) override {
    Variable h = F::leaky_relu(add_noise((*conv[0])(add_noise(x))));
    for (int i = 1; i < 7; ++i) h = F::leaky_relu(add_noise((*bn[i])((*conv[i])(h))));
    return (*l4)(h);
  }

 private:
  std::shared_ptr<L::Convolution2D> conv[7];
  std::shared_ptr<L::BatchNormalization> bn[7];  // bn[0] unused: c0_0 has none
  std::shared_ptr<L::Linear> l4;
};
// [end]

// [dcgan-updater]
// updater.py's DCGANUpdater: the losses are means over the batch (F.sum(...) / batchsize).
class DCGANUpdater : public chainer::training::StandardUpdater {
 public:
  DCGANUpdater(std::shared_ptr<Generator> gen, std::shared_ptr<Discriminator> dis,
               std::shared_ptr<chainer::iterators::Iterator> iterator, std::shared_ptr<chainer::Optimizer> gen_opt,
               std::shared_ptr<chainer::Optimizer> dis_opt, chainer::Device device)
      : StandardUpdater({{"main", std::move(iterator)}}, {{"gen", std::move(gen_opt)}, {"dis", std::move(dis_opt)}},
                        LossFunction{}, chainer::training::UpdaterOptions{device, /*cuda_graph=*/false}),
        gen_(std::move(gen)), dis_(std::move(dis)), device_(device) {}

 protected:
  void update_core() override {
    chainer::Optimizer& gen_opt = get_optimizer("gen");
    chainer::Optimizer& dis_opt = get_optimizer("dis");
    const Variable x_real(get_iterator("main").next_batch().at(0).to(device_));
    const int64_t batchsize = x_real.shape()[0];
    const Variable y_real = (*dis_)(x_real);
    const Variable x_fake = (*gen_)(Variable(gen_->make_hidden(batchsize).to(device_)));
    const Variable y_fake = (*dis_)(x_fake);
    // The generator's loss goes back through the discriminator's graph of y_fake after the
    // discriminator's step: update(lossfun) keeps the graph (Chainer's behaviour).
    dis_opt.update([&] {
      Variable loss = F::mean(F::softplus(-y_real)) + F::mean(F::softplus(y_fake));
      chainer::report({{"loss", loss}}, dis_.get());
      return loss;
    });
    gen_opt.update([&] {
      Variable loss = F::mean(F::softplus(-y_fake));
      chainer::report({{"loss", loss}}, gen_.get());
      return loss;
    });
  }

 private:
  std::shared_ptr<Generator> gen_;
  std::shared_ptr<Discriminator> dis_;
  chainer::Device device_;
};
// [end]

// visualize.py's out_generated_image: ROWS x COLS images from a noise drawn with SEED (the same
// every time), generated in test mode, written as one PNG grid to OUT/preview/image<iteration>.png
// (pixels x 255 clipped to 0..255 and truncated, as its uint8 cast).
void write_preview(Generator& gen, int64_t rows, int64_t cols, uint64_t seed, const std::string& out,
                   int64_t iteration) {
  chainer::Generator noise(seed);
  Tensor x;
  {
    chainer::config::TrainScope test(false);
    chainer::NoBackpropMode no_graph;
    x = gen(Variable(gen.make_hidden(rows * cols, &noise).to(gen.device()))).data().to(chainer::Device{});
  }
  const int64_t c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const std::vector<float> v = x.to_vector<float>();
  std::vector<float> grid(size_t(c * rows * h * cols * w));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t z = 0; z < w; ++z) {
            const float p = v[size_t((((r * cols + q) * c + k) * h + y) * w + z)];
            grid[size_t((k * rows * h + r * h + y) * cols * w + q * w + z)] =
                std::floor(std::clamp(p * 255.f, 0.f, 255.f));
          }
  const std::string dir = out + "/preview";
  std::filesystem::create_directories(dir);
  char name[32];
  std::snprintf(name, sizeof name, "/image%08lld.png", static_cast<long long>(iteration));
  chainer::datasets::write_png(dir + name, Tensor::from_vector(grid, {c, rows * h, cols * w}));
}

// IMAGES (N, C, H, W) with PAD black pixels on every side.
Tensor pad_images(const Tensor& images, int64_t pad) {
  const int64_t n = images.shape()[0], c = images.shape()[1], h = images.shape()[2], w = images.shape()[3];
  const int64_t ph = h + 2 * pad, pw = w + 2 * pad;
  const std::vector<float> v = images.to_vector<float>();
  std::vector<float> out(size_t(n * c * ph * pw), 0.f);
  for (int64_t i = 0; i < n * c; ++i)
    for (int64_t y = 0; y < h; ++y)
      std::copy_n(v.begin() + (i * h + y) * w, w, out.begin() + (i * ph + y + pad) * pw + pad);
  return Tensor::from_vector(out, {n, c, ph, pw});
}

struct Options : apps::CommonOptions {
  Options() {
    batchsize = 50;
    epoch = 1000;
    unit = 0;
    data_set = apps::Data::FashionMNIST;
  }
  std::string communicator;
  std::string dataset = "fashion-mnist";
  int64_t iteration = 0;  // 0: stop after -e epochs
  int64_t n_hidden = 100;
  int64_t ch = 512;
  int64_t snapshot_interval = 1000;
  int64_t display_interval = 100;
};

const char* const kUsage = R"(usage: train_dcgan [options]
ChainerMN's DCGAN example: a generator and a discriminator trained against each other on
Fashion-MNIST (padded to 32x32) or CIFAR-10, each with its own multi-node Adam (data parallel).
  -b, --batchsize N   images per mini-batch and process (default 50)
  -e, --epoch N       passes over the training set (default 1000)
      --iteration N   stop after N iterations instead (default: the epochs decide)
  -n, --n_hidden N    the generator's noise dimensions (default 100)
      --ch N          channels of the widest layer of both networks, a multiple of 8 (default
                      512, the example's; the others are ch/2, ch/4, ch/8)
      --snapshot_interval N  every N iterations: snapshots and a preview image (default 1000)
      --display_interval N   every N iterations: a log entry and a printed line (default 100)
  -o, --out DIR       directory for the log, snapshots and preview/ (default result)
  -r, --resume FILE   resume from a trainer snapshot (snapshot_iter_N; each process reads its own
                      FILE.rankR-of-P when several run)
      --dataset NAME  fashion-mnist (default: 28x28 gray, padded to 32x32) or cifar10 (the
                      example's: 32x32 colour)
      --data PATH     fashion-mnist: its directory (default: Debian's dataset-fashion-mnist,
                      else pfnet/chainer/fashion-mnist under $CHAINER_DATASET_ROOT or
                      ~/.chainer/dataset, downloaded there); cifar10: the archive
                      cifar-10-binary.tar.gz or its directory (default: pfnet/chainer/cifar
                      under the dataset root, downloaded there)
      --train-size N  train on the first N training images only (default: all)
      --communicator NAME  naive (default on CPUs), flat, hierarchical, two_dimensional,
                      single_node, pure_nccl (default with --gpu), non_cuda_aware
  -g, --gpu [ID]      train on CUDA device ID (default 0); with several processes each takes
                      device ID + intra_rank
      --seed N        random seed for initialization, noise and shuffling, and of the preview's
                      noise (default 0)
      --threads N     compute threads per process (default: cores / processes on this node)
      --dtype D       float32 (default), mixed16, mixed_bf16, float16 or bfloat16: the dtype the
                      networks compute in (docs/mixed_precision.md)
      --no-plot       draw no loss.png (default: draw it, where this build has cairo; --plot
                      asks for it, and warns without it)
  -h, --help          show this help
)";

Options parse(int argc, char** argv) {
  Options o;
  for (apps::Args args(argc, argv, kUsage); args.next();) {
    if (args.is("-b", "--batchsize")) o.batchsize = args.integer(1);
    else if (args.is("-e", "--epoch")) o.epoch = args.integer(1);
    else if (args.is(nullptr, "--iteration")) o.iteration = args.integer(1);
    else if (args.is("-n", "--n_hidden")) o.n_hidden = args.integer(1);
    else if (args.is(nullptr, "--ch")) {
      o.ch = args.integer(8);
      if (o.ch % 8 != 0) throw chainer::Error(chainer::str("--ch must be a multiple of 8, got ", o.ch));
    }
    else if (args.is(nullptr, "--snapshot_interval")) o.snapshot_interval = args.integer(1);
    else if (args.is(nullptr, "--display_interval")) o.display_interval = args.integer(1);
    else if (args.is("-o", "--out")) o.out = args.value();
    else if (args.is("-r", "--resume")) o.resume = args.value();
    else if (args.is(nullptr, "--dataset")) o.dataset = args.value();
    else if (args.is(nullptr, "--data")) o.data = args.value();
    else if (args.is(nullptr, "--train-size")) o.train_size = args.integer(1);
    else if (args.is(nullptr, "--communicator")) o.communicator = args.value();
    else if (args.is("-g", "--gpu")) o.gpu = args.value_follows() ? int(args.integer(0, 1023)) : 0;
    else if (args.is(nullptr, "--seed")) o.seed = args.integer(0);
    else if (args.is(nullptr, "--threads")) {
      o.threads = int(args.integer(1));
      apps::check_threads("--threads", o.threads, "compute threads");
    }
    else if (apps::read_dtype_option(args, o.dtype)) continue;
    else if (args.is(nullptr, "--plot")) o.plot = true;
    else if (args.is(nullptr, "--no-plot")) o.plot = false;
    else args.unknown();
  }
  if (o.dataset != "fashion-mnist" && o.dataset != "cifar10")
    throw chainer::Error(chainer::str("--dataset must be fashion-mnist or cifar10, got '", o.dataset, "'"));
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto comm = apps::create_communicator(o.communicator, o.gpu);
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);

  // [dcgan-training]
  // Rank 0 reads the images (pixels in [0, 1], as the example's x / 255), padding Fashion-MNIST's
  // to 32x32; every worker gets its share.
  const bool fashion = o.dataset == "fashion-mnist";
  const int64_t channels = fashion ? 1 : 3;
  chainer::datasets::DatasetPtr train;
  apps::set_stage("reading and scattering " + o.dataset);
  if (root) {
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << "\n# Using " << comm->name()
              << " communicator\n# n_hidden: " << o.n_hidden << "\n# Minibatch-size: " << o.batchsize
              << "\n# " << (o.iteration ? chainer::str("iterations: ", o.iteration) : chainer::str("epoch: ", o.epoch))
              << "\n\n"
              << std::flush;
    namespace D = chainer::datasets;
    D::DatasetPtr test;
    if (fashion)
      std::tie(train, test) = o.data.empty() ? D::get_fashion_mnist(false, 3) : D::get_fashion_mnist(o.data, false, 3);
    else
      std::tie(train, test) = o.data.empty() ? D::get_cifar10(false, 3) : D::get_cifar10(o.data, false, 3);
    apps::take_subsets(train, test, o);
    if (fashion) {
      std::vector<size_t> all(train->size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      train = std::make_shared<D::TupleDataset>(std::vector<Tensor>{pad_images(train->get_batch(all).at(0), 2)});
    }
  }
  const int64_t n_train = comm->bcast_obj<int64_t>(root ? int64_t(train->size()) : 0);
  train = chainermn::scatter_dataset(train, comm, 0, true, uint64_t(o.seed));
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), n_train, comm->size());

  apps::set_stage("building the models");
  // Noise and initial weights differ between ranks; rank 0's weights are broadcast to all.
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  auto gen = std::make_shared<Generator>(o.n_hidden, channels, 4, o.ch);
  auto dis = std::make_shared<Discriminator>(channels, 4, o.ch);
  gen->to_device(device);
  dis->to_device(device);
  auto make_optimizer = [&](const std::shared_ptr<chainer::Link>& model) {
    auto optimizer =
        chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(2e-4, 0.5), comm);
    optimizer->setup(model);
    apps::set_precision(*optimizer, o);
    optimizer->add_hook(std::make_shared<chainer::optimizer_hooks::WeightDecay>(0.0001));
    return optimizer;
  };
  auto gen_opt = make_optimizer(gen), dis_opt = make_optimizer(dis);

  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true,
                                                                         uint64_t(o.seed) + uint64_t(comm->rank()));
  auto updater = std::make_shared<DCGANUpdater>(gen, dis, train_iter, gen_opt, dis_opt, device);
  const IntervalTrigger stop = o.iteration ? IntervalTrigger(double(o.iteration), Unit::Iteration)
                                           : IntervalTrigger(double(o.epoch), Unit::Epoch);
  chainer::training::Trainer trainer(updater, stop, o.out);
  const IntervalTrigger snapshot_interval(double(o.snapshot_interval), Unit::Iteration);
  const IntervalTrigger display_interval(double(o.display_interval), Unit::Iteration);
  // Every rank saves its own trainer snapshot (its batch normalizations' running averages).
  trainer.extend(E::snapshot("snapshot_iter_{.updater.iteration}" + chainermn::rank_suffix(*comm)), "",
                 snapshot_interval);
  if (root) {
    trainer.extend(E::snapshot_object(*gen, "gen_iter_{.updater.iteration}.npz"), "", snapshot_interval);
    trainer.extend(E::snapshot_object(*dis, "dis_iter_{.updater.iteration}.npz"), "", snapshot_interval);
    trainer.extend(std::make_shared<E::LogReport>(std::vector<std::string>{}, display_interval));
    trainer.extend(std::make_shared<E::PrintReport>(
                       std::vector<std::string>{"epoch", "iteration", "gen/loss", "dis/loss", "elapsed_time"}),
                   "", display_interval);
    trainer.extend(std::make_shared<E::ProgressBar>(std::nullopt, 10));
    const uint64_t seed = uint64_t(o.seed);
    trainer.extend([gen, seed, out = o.out](chainer::training::Trainer& t) {
      write_preview(*gen, 10, 10, seed, out, t.updater().iteration());
    }, "out_generated_image", snapshot_interval);
    if (o.plot.value_or(E::PlotReport::available()))
      trainer.extend(std::make_shared<E::PlotReport>(std::vector<std::string>{"gen/loss", "dis/loss"}, "iteration",
                                                     display_interval, E::PlotReport::Postprocess{}, "loss.png"));
  }
  if (!o.resume.empty()) {
    apps::set_stage(chainer::str("resuming from '", o.resume, "'"));
    apps::resume(o.resume, trainer, *comm);
  }
  apps::set_stage([updater] { return chainer::str("training (", updater->iteration(), " iterations done)"); });
  trainer.run();
  // [end]
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("train_dcgan", argc, argv, run); }
