// PyTorch C++ frontend (Debian libtorch-dev 1.13, CPU) peer of the Fashion-MNIST CNN
// (apps/fashion_mnist_cnn); the same workload as fashion_mnist_cnn.py:
//   conv3x3(1->32, pad 1, nobias) - BN(32) - relu - conv3x3(32->32) - BN - relu - max_pool(2)
//   conv3x3(32->64, pad 1, nobias) - BN(64) - relu - conv3x3(64->64) - BN - relu - max_pool(2)
//   dropout(0.5) - Linear(3136 -> 10)
// softmax cross entropy, Adam(lr=1e-3, betas 0.9/0.999, eps 1e-8), batch 100 reshuffled each epoch,
// Fashion-MNIST 60,000/10,000 from the IDX files (pixels x 1/255), evaluation after each epoch in
// batches of 100 (mean of per-batch means; BN on running statistics, dropout off). Chainer's
// initialisation: W ~ N(0, 1/fan_in) for the convolutions and the Linear layer, b = 0; BN eps 2e-5,
// running statistics decay 0.9 (momentum 0.1). Flush-to-zero on unless --no-flush-denormal.
//
// build and run: bench/peers/run-cnn-peer libtorch_cnn --epochs 1 [--data DIR] [--threads 2]
// Prints one line per epoch
//   epoch E train_loss L train_acc A test_loss L test_acc A train_s T eval_s T
// and a final JSON line (with peak RSS, ru_maxrss).
#include <sys/resource.h>
#include <torch/torch.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// An unsigned-byte IDX file, PATH.gz or PATH (gzread reads both), and its dimensions.
std::vector<uint8_t> read_idx(const std::string& path, std::vector<int64_t>& dims) {
  std::string p = path + ".gz";
  gzFile f = gzopen(p.c_str(), "rb");
  if (!f) {
    p = path;
    f = gzopen(p.c_str(), "rb");
  }
  if (!f) throw std::runtime_error("cannot open " + path + "(.gz)");
  std::vector<uint8_t> data;
  std::vector<uint8_t> buf(1 << 20);
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    data.insert(data.end(), buf.begin(), buf.begin() + n);
  gzclose(f);
  if (data.size() < 4 || data[0] != 0 || data[1] != 0 || data[2] != 0x08)
    throw std::runtime_error(p + ": not an unsigned-byte IDX file");
  const int ndim = data[3];
  dims.clear();
  size_t off = 4, total = 1;
  for (int i = 0; i < ndim; ++i, off += 4) {
    const int64_t d = (int64_t(data[off]) << 24) | (int64_t(data[off + 1]) << 16) |
                      (int64_t(data[off + 2]) << 8) | int64_t(data[off + 3]);
    dims.push_back(d);
    total *= size_t(d);
  }
  if (data.size() != off + total) throw std::runtime_error(p + ": size mismatch");
  return std::vector<uint8_t>(data.begin() + off, data.end());
}

torch::Tensor load_images(const std::string& path) {
  std::vector<int64_t> dims;
  auto v = read_idx(path, dims);
  auto t = torch::from_blob(v.data(), {dims[0], 1, dims[1], dims[2]}, torch::kUInt8).to(torch::kFloat32);
  t.mul_(1.0 / 255.0);  // [0,1] like chainer.datasets.get_fashion_mnist
  return t;
}

torch::Tensor load_labels(const std::string& path) {
  std::vector<int64_t> dims;
  auto v = read_idx(path, dims);
  return torch::from_blob(v.data(), {dims[0]}, torch::kUInt8).to(torch::kInt64);
}

struct CNNImpl : torch::nn::Module {
  std::vector<torch::nn::Conv2d> convs;
  std::vector<torch::nn::BatchNorm2d> bns;
  torch::nn::Linear fc{nullptr};

  CNNImpl() {
    const int64_t chans[4][2] = {{1, 32}, {32, 32}, {32, 64}, {64, 64}};
    for (int i = 0; i < 4; ++i) {
      const std::string s = std::to_string(i + 1);
      convs.push_back(register_module(
          "conv" + s, torch::nn::Conv2d(torch::nn::Conv2dOptions(chans[i][0], chans[i][1], 3).padding(1).bias(false))));
      bns.push_back(register_module(
          "bn" + s, torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(chans[i][1]).eps(2e-5).momentum(0.1))));
    }
    fc = register_module("fc", torch::nn::Linear(64 * 7 * 7, 10));
    torch::NoGradGuard ng;
    for (auto& c : convs) {
      auto& w = c->weight;
      w.normal_(0.0, std::sqrt(1.0 / double(w[0].numel())));
    }
    fc->weight.normal_(0.0, std::sqrt(1.0 / double(fc->weight.size(1))));
    fc->bias.zero_();
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < convs.size(); ++i) {
      x = torch::relu(bns[i]->forward(convs[i]->forward(x)));
      if (i % 2 == 1) x = torch::max_pool2d(x, 2);
    }
    x = torch::dropout(x, 0.5, is_training());
    return fc->forward(x.flatten(1));
  }
};
TORCH_MODULE(CNN);

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  char b[64];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(b, sizeof b, "%s%.6f", i ? ", " : "", v[i]);
    s += b;
  }
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 10, threads = 2, bs = 100;
  uint64_t seed = 0;
  bool flush_denormal = true;
  std::string data = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
      return argv[++i];
    };
    if (a == "--epochs") epochs = std::stoi(next());
    else if (a == "--data") data = next();
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--batchsize") bs = std::stoi(next());
    else if (a == "--seed") seed = std::stoull(next());
    else if (a == "--no-flush-denormal") flush_denormal = false;
    else {
      std::fprintf(stderr,
                   "usage: %s [--epochs N] [--data DIR] [--threads T] [--batchsize B] [--seed S] "
                   "[--no-flush-denormal]\n",
                   argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(threads);
  at::globalContext().setFlushDenormal(flush_denormal);
  torch::manual_seed(seed);

  auto xtr = load_images(data + "/train-images-idx3-ubyte");
  auto ytr = load_labels(data + "/train-labels-idx1-ubyte");
  auto xte = load_images(data + "/t10k-images-idx3-ubyte");
  auto yte = load_labels(data + "/t10k-labels-idx1-ubyte");
  const int64_t n = xtr.size(0), nte = xte.size(0);

  CNN model;
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8));

  std::vector<double> train_s, eval_s;
  double tr_loss = 0, tr_acc = 0, te_loss = 0, te_acc = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const double t0 = now();
    model->train();
    auto perm = torch::randperm(n, torch::kInt64);
    auto loss_sum = torch::zeros({});
    auto acc_sum = torch::zeros({});
    int64_t nb = 0;
    for (int64_t i = 0; i < n; i += bs) {
      auto idx = perm.slice(0, i, std::min(i + bs, n));
      auto xb = xtr.index_select(0, idx);
      auto yb = ytr.index_select(0, idx);
      auto out = model->forward(xb);
      auto loss = torch::nn::functional::cross_entropy(out, yb);
      opt.zero_grad();
      loss.backward();
      opt.step();
      {
        torch::NoGradGuard ng;
        loss_sum += loss.detach();
        acc_sum += out.argmax(1).eq(yb).to(torch::kFloat32).mean();
      }
      ++nb;
    }
    tr_loss = loss_sum.item<double>() / nb;
    tr_acc = acc_sum.item<double>() / nb;
    const double t1 = now();
    model->eval();
    double ls = 0, as = 0;
    int64_t mb = 0;
    {
      torch::NoGradGuard ng;
      for (int64_t i = 0; i < nte; i += bs) {
        auto xb = xte.slice(0, i, std::min(i + bs, nte));
        auto yb = yte.slice(0, i, std::min(i + bs, nte));
        auto out = model->forward(xb);
        ls += torch::nn::functional::cross_entropy(out, yb).item<double>();
        as += out.argmax(1).eq(yb).to(torch::kFloat32).mean().item<double>();
        ++mb;
      }
    }
    te_loss = ls / mb;
    te_acc = as / mb;
    const double t2 = now();
    train_s.push_back(t1 - t0);
    eval_s.push_back(t2 - t1);
    std::printf(
        "epoch %d train_loss %.6f train_acc %.6f test_loss %.6f test_acc %.6f train_s %.3f eval_s %.3f\n", epoch,
        tr_loss, tr_acc, te_loss, te_acc, t1 - t0, t2 - t1);
    std::fflush(stdout);
  }
  double mtr = 0;
  for (size_t i = 1; i < train_s.size(); ++i) mtr += train_s[i];
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto env = [](const char* k) {
    const char* v = std::getenv(k);
    return v ? "\"" + std::string(v) + "\"" : std::string("null");
  };
  std::printf(
      "{\"peer\": \"pytorch-cpp-libtorch-fashion-cnn\", \"epochs\": %d, \"batchsize\": %d, \"threads\": %d, "
      "\"flush_denormal\": %s, \"final_train_loss\": %.6f, \"final_train_acc\": %.6f, \"final_test_loss\": %.6f, "
      "\"final_test_acc\": %.6f, \"train_s\": %s, \"eval_s\": %s, \"epoch1_train_s\": %.6f, "
      "\"mean_train_s_excl_first\": %s, \"peak_rss_mib\": %.1f, \"torch_threads\": %d, "
      "\"env\": {\"OPENBLAS_CORETYPE\": %s, \"OPENBLAS_NUM_THREADS\": %s, \"OMP_NUM_THREADS\": %s}, "
      "\"data\": \"%s\"}\n",
      epochs, bs, threads, flush_denormal ? "true" : "false", tr_loss, tr_acc, te_loss, te_acc,
      json_list(train_s).c_str(), json_list(eval_s).c_str(), train_s.empty() ? 0.0 : train_s[0],
      train_s.size() > 1 ? std::to_string(mtr / double(train_s.size() - 1)).c_str() : "null", ru.ru_maxrss / 1024.0,
      torch::get_num_threads(), env("OPENBLAS_CORETYPE").c_str(), env("OPENBLAS_NUM_THREADS").c_str(),
      env("OMP_NUM_THREADS").c_str(), data.c_str());
  return 0;
}
