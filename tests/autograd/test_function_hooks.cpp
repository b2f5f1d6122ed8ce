// Function hooks (autograd/function_hook.h) and TimerHook: a registered hook sees every function
// of a small graph, forward in the order applied and backward in reverse, with the functions'
// names, their inputs' arrays and their outputs' gradients; scopes nest, names are unique, the
// registry is per thread, a throwing forward gets no postprocess. TimerHook's counts, nesting,
// total time and report (Chainer's table, on a scripted clock).
#include <catch2/catch.hpp>

#include <sstream>
#include <thread>

#include "autograd/function_hook.h"
#include "autograd/function_hooks/timer_hook.h"
#include "autograd/function_node.h"
#include "nn/functions.h"

using namespace chainer;
namespace F = chainer::functions;

namespace {

// Writes one line per callback: "<hook> <phase> <function> <shapes of the arrays it was given>".
class Recorder : public FunctionHook {
 public:
  Recorder(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  std::string name() const override { return name_; }
  void added() override { log_.push_back(name_ + " added"); }
  void deleted() override { log_.push_back(name_ + " deleted"); }
  void forward_preprocess(const std::string& f, const std::vector<Tensor>& in) override {
    note("fwd-pre", f, in, {});
  }
  void forward_postprocess(const std::string& f, const std::vector<Tensor>& in) override {
    note("fwd-post", f, in, {});
  }
  void backward_preprocess(const FunctionNode& f, const std::vector<Tensor>& in,
                           const std::vector<Tensor>& gy) override {
    note("bwd-pre", f.name(), in, gy);
  }
  void backward_postprocess(const FunctionNode& f, const std::vector<Tensor>& in,
                            const std::vector<Tensor>& gy) override {
    note("bwd-post", f.name(), in, gy);
  }

 private:
  void note(const char* phase, const std::string& f, const std::vector<Tensor>& in, const std::vector<Tensor>& gy) {
    std::ostringstream line;
    line << name_ << ' ' << phase << ' ' << f;
    for (const Tensor& t : in) line << ' ' << shape_str(t.shape());
    if (!gy.empty()) line << " |";
    for (const Tensor& t : gy) line << ' ' << shape_str(t.shape());
    log_.push_back(line.str());
  }
  std::string name_;
  std::vector<std::string>& log_;
};

// relu(x W^T + b) summed: x (2, 3), W (4, 3), b (4).
Variable small_graph(const Variable& x, const Variable& W, const Variable& b) {
  return F::sum(F::relu(F::linear(x, W, b)));
}

struct Inputs {
  Variable x{Tensor::full({2, 3}, 0.5), true}, W{Tensor::full({4, 3}, 0.25), true}, b{Tensor::full({4}, 0.1), true};
};

}  // namespace

TEST_CASE("FunctionHook sees every function of a graph, forward in order and backward in reverse") {
  std::vector<std::string> log;
  Recorder hook("rec", log);
  Inputs in;
  {
    FunctionHook::Scope scope(hook);
    CHECK(get_function_hooks() == std::vector<FunctionHook*>{&hook});
    Variable loss = small_graph(in.x, in.W, in.b);
    loss.backward();
  }
  CHECK(get_function_hooks().empty());
  CHECK(log == std::vector<std::string>{
                   "rec added",
                   "rec fwd-pre Linear (2, 3) (4, 3) (4,)",
                   "rec fwd-post Linear (2, 3) (4, 3) (4,)",
                   "rec fwd-pre ReLU (2, 4)",
                   "rec fwd-post ReLU (2, 4)",
                   "rec fwd-pre Sum (2, 4)",
                   "rec fwd-post Sum (2, 4)",
                   "rec bwd-pre Sum (2, 4) | ()",
                   "rec bwd-post Sum (2, 4) | ()",
                   "rec bwd-pre ReLU (2, 4) | (2, 4)",
                   "rec bwd-post ReLU (2, 4) | (2, 4)",
                   "rec bwd-pre Linear (2, 3) (4, 3) (4,) | (2, 4)",
                   "rec bwd-post Linear (2, 3) (4, 3) (4,) | (2, 4)",
                   "rec deleted",
               });
  // Outside the scope: nothing more.
  log.clear();
  small_graph(in.x, in.W, in.b).backward();
  CHECK(log.empty());

  // Functions that record no node (no input needs a gradient) are applications too.
  Variable plain(Tensor::full({2, 2}, 1.0));
  {
    FunctionHook::Scope scope(hook);
    F::exp(plain);
  }
  CHECK(log ==
        std::vector<std::string>{"rec added", "rec fwd-pre Exp (2, 2)", "rec fwd-post Exp (2, 2)", "rec deleted"});
}

TEST_CASE("FunctionHook scopes nest, in registration order; one hook of a name at a time") {
  std::vector<std::string> log;
  Recorder outer("outer", log), inner("inner", log), twin("outer", log);
  Variable x(Tensor::full({3}, 1.0), true);
  {
    FunctionHook::Scope a(outer);
    {
      FunctionHook::Scope b(inner);
      CHECK(get_function_hooks() == std::vector<FunctionHook*>{&outer, &inner});
      F::exp(x);
      REQUIRE_THROWS_WITH(FunctionHook::Scope(twin),
                          "FunctionHook: a hook named 'outer' is already registered on this thread; end its scope "
                          "first, or give the new one another name");
    }
    F::log(x);
  }
  CHECK(log == std::vector<std::string>{"outer added", "inner added", "outer fwd-pre Exp (3,)",
                                        "inner fwd-pre Exp (3,)", "outer fwd-post Exp (3,)", "inner fwd-post Exp (3,)",
                                        "inner deleted", "outer fwd-pre Log (3,)", "outer fwd-post Log (3,)",
                                        "outer deleted"});
}

TEST_CASE("FunctionHook: the registry is per thread, and a forward that throws gets no postprocess") {
  std::vector<std::string> log;
  Recorder hook("rec", log);
  FunctionHook::Scope scope(hook);
  std::thread other([] {
    CHECK(get_function_hooks().empty());
    F::exp(Variable(Tensor::full({1}, 1.0)));
  });
  other.join();
  CHECK(log == std::vector<std::string>{"rec added"});
  // x (2, 3) against W (4, 5): linear refuses it after the preprocess.
  CHECK_THROWS(F::linear(Variable(Tensor::zeros({2, 3})), Variable(Tensor::zeros({4, 5}))));
  CHECK(log == std::vector<std::string>{"rec added", "rec fwd-pre Linear (2, 3) (4, 5) ()"});
}

namespace {
// A TimerHook on a scripted clock: each reading returns the next of TIMES.
class ScriptedTimer : public function_hooks::TimerHook {
 public:
  explicit ScriptedTimer(std::vector<double> times) : times_(std::move(times)) {}
  size_t readings() const { return next_; }

 protected:
  double clock() const override { return times_.at(next_++); }

 private:
  std::vector<double> times_;
  mutable size_t next_ = 0;
};
}  // namespace

TEST_CASE("TimerHook times each function's forward and backward, and reports them as Chainer's table") {
  // Linear, ReLU, Sum forward, then Sum, ReLU, Linear backward: 1.5, 0.25, 0.0005, 0, 0, 0.5 s.
  ScriptedTimer timer({0, 1.5, 10, 10.25, 20, 20.0005, 30, 30, 40, 40, 50, 50.5});
  Inputs in;
  {
    FunctionHook::Scope scope(timer);
    small_graph(in.x, in.W, in.b).backward();
  }
  CHECK(timer.readings() == 12);
  const auto& history = timer.call_history();
  REQUIRE(history.size() == 6);
  CHECK(history[0].first == "Linear");
  CHECK(history[0].second == 1.5);
  CHECK(history[3].first == "Sum");
  CHECK(history[5].first == "Linear");
  CHECK(history[5].second == 0.5);
  CHECK(timer.total_time() == Approx(2.2505));
  const auto summary = timer.summary();
  REQUIRE(summary.size() == 3);
  CHECK(summary[0].first == "Linear");
  CHECK(summary[0].second.elapsed_time == 2.0);
  CHECK(summary[0].second.occurrence == 2);
  CHECK(summary[1].first == "ReLU");
  CHECK(summary[2].second.occurrence == 2);

  // The strings Chainer's print_report writes for this summary (its code run on the same numbers).
  std::ostringstream out;
  timer.print_report("auto", out);
  CHECK(out.str() ==
        "FunctionName  ElapsedTime  Occurrence\n"
        "      Linear      2.00sec           2\n"
        "        ReLU      0.25sec           2\n"
        "         Sum      0.00sec           2\n");
  out.str("");
  timer.print_report("auto_foreach", out);
  CHECK(out.str() ==
        "FunctionName  ElapsedTime  Occurrence\n"
        "      Linear      2.00sec           2\n"
        "        ReLU     250.00ms           2\n"
        "         Sum     500.00us           2\n");
  out.str("");
  timer.print_report("ms", out);
  CHECK(out.str() ==
        "FunctionName  ElapsedTime  Occurrence\n"
        "      Linear    2000.00ms           2\n"
        "        ReLU     250.00ms           2\n"
        "         Sum       0.50ms           2\n");
  REQUIRE_THROWS_WITH(timer.print_report("minutes", out),
                      "TimerHook.print_report: unknown unit 'minutes'; expected sec, ms, us, ns, auto or auto_foreach");
}

TEST_CASE("TimerHook: a function applied inside another is timed, but counted once in total_time") {
  // Outer from 0 to 10, ReLU inside it from 2 to 5.
  ScriptedTimer timer({0, 2, 5, 10});
  Variable x(Tensor::full({3}, 1.0), true);
  {
    FunctionHook::Scope scope(timer);
    ForwardHooks outer("Outer", x);
    F::relu(x);
  }
  REQUIRE(timer.call_history().size() == 2);
  CHECK(timer.call_history()[0] == std::pair<std::string, double>{"ReLU", 3});
  CHECK(timer.call_history()[1] == std::pair<std::string, double>{"Outer", 10});
  CHECK(timer.total_time() == 10);
}

TEST_CASE("TimerHook on the real clock: counts and a positive total") {
  function_hooks::TimerHook timer;
  Inputs in;
  {
    FunctionHook::Scope scope(timer);
    for (int i = 0; i < 3; ++i) small_graph(in.x, in.W, in.b).backward();
  }
  const auto summary = timer.summary();
  REQUIRE(summary.size() == 3);
  for (const auto& [name, record] : summary) {
    INFO(name);
    CHECK(record.occurrence == 6);
    CHECK(record.elapsed_time >= 0);
  }
  CHECK(timer.total_time() > 0);
  double sum = 0;
  for (const auto& [name, seconds] : timer.call_history()) sum += seconds;
  CHECK(timer.total_time() == Approx(sum));
}
