/// @file
/// FunctionHook, as chainer.FunctionHook: callbacks run before and after the forward and the
/// backward computation of every function applied while the hook is registered. Registration is
/// a scope, as Chainer's `with hook:`, and per thread, as Chainer's thread-local hook registry:
///
///     chainer::TimerHook timer;
///     {
///       chainer::FunctionHook::Scope scope(timer);  // Chainer's `with timer:`
///       loss = model(x); loss.backward();
///     }
///     timer.print_report();
///
/// Forward hooks run for every application of a differentiable function (chainer::functions,
/// chainermn's communication functions, and custom functions that open a ForwardHooks), whether
/// or not it records a node; they are told the function's name, the name its node has (a node is
/// made after the forward computation, and only when it records). Backward hooks run around each
/// node's backward in Variable::backward and get the node itself. With no hook registered, a
/// function pays one read of a thread-local counter.
#pragma once
#include <exception>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

class FunctionNode;

/// Callbacks around the forward and backward computation of functions, as `chainer.FunctionHook`.
/// Every method does nothing unless overridden.
class FunctionHook {
 public:
  virtual ~FunctionHook() = default;
  /// The hook's name: one hook of a name at a time may be registered on a thread (Chainer's `name`).
  virtual std::string name() const { return "FunctionHook"; }
  /// Called when a Scope registers the hook (Chainer's `added(None)`: registered for every function).
  virtual void added() {}
  /// Called when the Scope ends (Chainer's `deleted(None)`).
  virtual void deleted() {}
  /// Before the forward computation of FUNCTION (the name of its node) on IN_DATA, its inputs' arrays.
  virtual void forward_preprocess(const std::string& /*function*/, const std::vector<Tensor>& /*in_data*/) {}
  /// After the forward computation of FUNCTION on IN_DATA (not when it throws).
  virtual void forward_postprocess(const std::string& /*function*/, const std::vector<Tensor>& /*in_data*/) {}
  /// Before FUNCTION's backward: IN_DATA its inputs' arrays, OUT_GRAD its outputs' gradients.
  virtual void backward_preprocess(const FunctionNode& /*function*/, const std::vector<Tensor>& /*in_data*/,
                                   const std::vector<Tensor>& /*out_grad*/) {}
  /// After FUNCTION's backward (not when it throws).
  virtual void backward_postprocess(const FunctionNode& /*function*/, const std::vector<Tensor>& /*in_data*/,
                                    const std::vector<Tensor>& /*out_grad*/) {}

  /// Registers a hook on this thread while it lives, as Chainer's `with hook:`. Scopes nest: the
  /// hooks run in the order they were registered. A second hook of a registered name throws
  /// chainer::Error, as Chainer's KeyError.
  class Scope {
   public:
    explicit Scope(FunctionHook& hook);  ///< Registers HOOK on this thread and calls its added().
    ~Scope();  ///< Unregisters the hook and calls its deleted().
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    FunctionHook* hook_;
  };
};

/// The hooks registered on this thread, in registration order (Chainer's `get_function_hooks()`).
std::vector<FunctionHook*> get_function_hooks();

namespace detail {
/// How many hooks are registered on this thread: the one check a function makes.
extern constinit thread_local int t_function_hook_count;
void run_forward_preprocess(const std::string& function, const std::vector<Tensor>& in_data);
void run_forward_postprocess(const std::string& function, const std::vector<Tensor>& in_data);
void run_backward_preprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                             const std::vector<Tensor>& out_grad);
void run_backward_postprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                              const std::vector<Tensor>& out_grad);
inline const Tensor& data_of(const Variable& v) {
  static const Tensor undefined;
  return v.defined() ? v.data() : undefined;
}
inline void append_data(std::vector<Tensor>& out, const Variable& v) { out.push_back(data_of(v)); }
inline void append_data(std::vector<Tensor>& out, const std::vector<Variable>& vs) {
  for (const Variable& v : vs) out.push_back(data_of(v));
}
}  // namespace detail

/// Runs the registered hooks around one function's forward computation: forward_preprocess when
/// made, forward_postprocess when it ends (unless an exception is leaving the function). Made
/// first thing in a function, with its node's name and its inputs (Variables or vectors of them):
///
///     Variable mul_add(const Variable& x, const Variable& w, const Variable& b) {
///       chainer::ForwardHooks hooks("MulAdd", x, w, b);
///       ...
class ForwardHooks {
 public:
  /// Runs forward_preprocess of the registered hooks for FUNCTION (its node's name) on the
  /// arrays of INPUTS (Variables, or vectors of them); nothing when none is registered.
  template <class... Inputs>
  explicit ForwardHooks(const char* function, const Inputs&... inputs) {
    if (detail::t_function_hook_count == 0) [[likely]] return;
    begin(function);
    (detail::append_data(in_data_, inputs), ...);
    detail::run_forward_preprocess(function_, in_data_);
  }
  /// Runs forward_postprocess, unless an exception is leaving the function.
  ~ForwardHooks() noexcept(false) {
    if (active_ && std::uncaught_exceptions() == exceptions_) detail::run_forward_postprocess(function_, in_data_);
  }
  ForwardHooks(const ForwardHooks&) = delete;
  ForwardHooks& operator=(const ForwardHooks&) = delete;

 private:
  void begin(const char* function) {
    active_ = true;
    exceptions_ = std::uncaught_exceptions();
    function_ = function;
  }
  bool active_ = false;
  int exceptions_ = 0;
  std::string function_;
  std::vector<Tensor> in_data_;
};

}  // namespace chainer
