// The program of the guide to extending chainermn-cpp (docs/extending.md): a custom
// differentiable function (MulAdd) checked against finite differences, a link with a parameter
// of its own sized at the first call (Scale), a Chain using both (GatedBlock), and a Sequential of
// them trained a few steps on synthetic data, one step watched by function hooks (TimerHook and
// one of its own), saved and loaded. It includes <chainer.h> only, so it builds against the
// installed headers (the test install_consumer builds it so); it fails (exit 1, saying why) when
// a check does not hold.
//   build/docs/extending/extending
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

// [preamble]
#include <chainer.h>

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Tensor;
using chainer::Variable;
// [end]

namespace {

// [node]
// y = x * w + b elementwise: Chainer's guide's MulAdd. The node holds what backward needs
// (x and w, for the gradients of the product) and nothing else.
class MulAddNode : public chainer::FunctionNode {
 public:
  MulAddNode(Tensor x, Tensor w) : x_(std::move(x)), w_(std::move(w)) {}
  std::string name() const override { return "MulAdd"; }

  // One gradient per input, in the order of the inputs given to record(); an undefined Tensor
  // for an input that needs none.
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    std::vector<Tensor> gxs(3);
    if (input_requires_grad(0)) gxs[0] = chainer::ops::mul(gy[0], w_);
    if (input_requires_grad(1)) gxs[1] = chainer::ops::mul(gy[0], x_);
    if (input_requires_grad(2)) gxs[2] = gy[0];
    return gxs;
  }

 protected:
  // Called once backward has run (unless the graph is retained): frees the saved tensors.
  void release_saved() override {
    x_ = Tensor();
    w_ = Tensor();
  }

 private:
  Tensor x_, w_;
};
// [end]

// [function]
// The function users call: checks its arguments, computes on tensors with chainer::ops, and
// records a node only when some input needs a gradient. ForwardHooks, first, shows the
// application to the function hooks (TimerHook) under the node's name.
Variable muladd(const Variable& x, const Variable& w, const Variable& b) {
  chainer::ForwardHooks hooks("MulAdd", x, w, b);
  if (w.shape() != x.shape() || b.shape() != x.shape())
    throw chainer::Error(chainer::str("muladd: x, w and b must have one shape, got ", chainer::shape_str(x.shape()),
                                      ", ", chainer::shape_str(w.shape()), " and ", chainer::shape_str(b.shape())));
  Tensor y = chainer::ops::add(chainer::ops::mul(x.data(), w.data()), b.data());
  if (!chainer::needs_recording({x, w, b})) return Variable(std::move(y));
  return chainer::record(std::make_shared<MulAddNode>(x.data(), w.data()), {x, w, b}, {std::move(y)})[0];
}
// [end]

void check_muladd() {
  // [check]
  // float64 inputs of several shapes (odd sizes, size-1 axes): every gradient against central
  // differences of sum(muladd(x, w, b) * gy). Throws chainer::Error at the first mismatch.
  for (const chainer::Shape& shape : {chainer::Shape{3}, chainer::Shape{2, 5}, chainer::Shape{1, 7, 1}}) {
    std::vector<Tensor> inputs;
    for (int i = 0; i < 3; ++i) inputs.push_back(chainer::random::normal(shape, 0, 1, chainer::DType::Float64));
    chainer::check_backward([](const std::vector<Variable>& v) { return muladd(v[0], v[1], v[2]); }, inputs);
  }
  // [end]
  std::printf("check_backward: MulAdd's gradients match finite differences\n");
}

// [link]
// y = x * gamma, one gamma per feature: a link with a parameter of its own. The feature count is
// known only at the first call, so gamma is registered uninitialized and created then (as
// Linear(out_size) creates W), on the link's device.
class Scale : public chainer::Link {
 public:
  Scale() { add_param("gamma"); }

  Variable forward(const Variable& x) override {
    if (x.ndim() != 2)
      throw chainer::Error(chainer::str("Scale: expected a batch of feature vectors (N, C), got shape ",
                                        chainer::shape_str(x.shape())));
    Variable& gamma = param("gamma");
    if (!gamma.data().defined()) gamma.set_data(Tensor::ones({x.shape()[1]}, x.dtype(), device()));
    return F::mul(x, gamma);  // broadcast over the batch
  }
};
// [end]

// [chain]
// A highway-like block, y = sigmoid(gate(x)) * relu(transform(x)) + x: a Chain with two child
// links, computed with the custom function. Its parameters are "/transform/W", "/gate/b", ...
class GatedBlock : public chainer::Chain {
 public:
  explicit GatedBlock(int64_t units) {
    transform = add_link("transform", std::make_shared<L::Linear>(units));
    gate = add_link("gate", std::make_shared<L::Linear>(units));
  }

  Variable forward(const Variable& x) override {
    return muladd(F::sigmoid((*gate)(x)), F::relu((*transform)(x)), x);
  }

  std::shared_ptr<L::Linear> transform, gate;
};
// [end]

// [make-batch]
// Two classes of 4 features: the label says whether the first two features sum above zero.
std::vector<Variable> make_batch(int64_t n) {
  const std::vector<float> x = chainer::random::normal({n, 4}).to_vector<float>();
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (size_t i = 0; i < t.size(); ++i) t[i] = x[i * 4] + x[i * 4 + 1] > 0 ? 1 : 0;
  return {Variable(Tensor::from_vector(x, {n, 4})), Variable(Tensor::from_vector(t))};
}
// [end]

// [hook]
// Counts the forward computations of each function while it is registered.
class CountCalls : public chainer::FunctionHook {
 public:
  std::string name() const override { return "CountCalls"; }
  void forward_preprocess(const std::string& function, const std::vector<Tensor>& /*in_data*/) override {
    ++calls[function];
  }
  std::map<std::string, int> calls;
};
// [end]

void train_and_save(const std::string& file) {
  chainer::random::seed(0);
  // [sequential]
  // Links and functions in order; the links are named by their position among the links:
  // "/0/W" (the first Linear), "/1/transform/W" (the block), "/2/gamma" (Scale), "/3/W".
  auto make_model = [] {
    return std::make_shared<chainer::Sequential>(std::make_shared<L::Linear>(8), F::relu,
                                                 std::make_shared<GatedBlock>(8), std::make_shared<Scale>(),
                                                 std::make_shared<L::Linear>(2));
  };
  auto model = std::make_shared<L::Classifier>(make_model());
  chainer::optimizers::Adam optimizer(0.05);
  optimizer.setup(model);
  // [end]

  // [train]
  const std::vector<Variable> batch = make_batch(64);
  auto loss = [&] { return model->forward_args(batch)[0]; };
  const double first = loss().item();
  for (int step = 0; step < 30; ++step) optimizer.update(loss);
  const double last = loss().item();
  // [end]
  if (!(last < 0.5 * first))
    throw chainer::Error(chainer::str("extending: the loss fell only from ", first, " to ", last, " in 30 steps"));
  std::printf("training: the loss fell below half its first value in 30 steps\n");

  // [timer]
  chainer::function_hooks::TimerHook timer;
  CountCalls counter;
  {
    chainer::FunctionHook::Scope timing(timer);  // Chainer's `with timer:`
    chainer::FunctionHook::Scope counting(counter);
    optimizer.update(loss);
  }
  timer.print_report();  // FunctionName  ElapsedTime  Occurrence, one row per function
  // [end]
  if (counter.calls["MulAdd"] != 1 || timer.summary().empty())
    throw chainer::Error(chainer::str("extending: the hooks saw MulAdd ", counter.calls["MulAdd"], " times"));

  // [save]
  // Parameters and persistents are saved under their names ("0/W", "2/gamma", ...); a fresh,
  // uninitialized model takes its sizes from the file.
  chainer::serializers::save_npz(file, model->predictor());
  auto copy = make_model();
  chainer::serializers::load_npz(file, *copy);
  // [end]
  const Variable x = batch[0];
  if (copy->forward(x).data().to_vector<float>() != model->predictor().forward(x).data().to_vector<float>())
    throw chainer::Error("extending: the loaded model computes something else");
  std::printf("serializers: the loaded model computes what the saved one does\n");
}

}  // namespace

int main() {
  // A name of its own, so that runs at the same time (the tests) do not share the file.
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("extending_model_" + std::to_string(std::random_device()()) + ".npz");
  int status = 0;
  try {
    check_muladd();
    train_and_save(file.string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    status = 1;
  }
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  return status;
}
