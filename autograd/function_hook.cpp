#include "autograd/function_hook.h"

#include <algorithm>

namespace chainer {

namespace detail {
constinit thread_local int t_function_hook_count = 0;
}  // namespace detail

namespace {
// This thread's hooks, in registration order; t_function_hook_count mirrors its size.
std::vector<FunctionHook*>& registry() {
  thread_local std::vector<FunctionHook*> hooks;
  return hooks;
}
}  // namespace

FunctionHook::Scope::Scope(FunctionHook& hook) : hook_(&hook) {
  std::vector<FunctionHook*>& hooks = registry();
  const std::string name = hook.name();
  for (FunctionHook* h : hooks)
    if (h->name() == name)
      throw Error(str("FunctionHook: a hook named '", name,
                      "' is already registered on this thread; end its scope first, or give the new one another name"));
  hooks.push_back(&hook);
  detail::t_function_hook_count = int(hooks.size());
  hook.added();
}

FunctionHook::Scope::~Scope() {
  std::vector<FunctionHook*>& hooks = registry();
  hooks.erase(std::find(hooks.begin(), hooks.end(), hook_));
  detail::t_function_hook_count = int(hooks.size());
  hook_->deleted();
}

std::vector<FunctionHook*> get_function_hooks() { return registry(); }

namespace detail {
// Copies of the registry: a hook may open or close scopes of its own while it runs.
void run_forward_preprocess(const std::string& function, const std::vector<Tensor>& in_data) {
  for (FunctionHook* h : get_function_hooks()) h->forward_preprocess(function, in_data);
}
void run_forward_postprocess(const std::string& function, const std::vector<Tensor>& in_data) {
  for (FunctionHook* h : get_function_hooks()) h->forward_postprocess(function, in_data);
}
void run_backward_preprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                             const std::vector<Tensor>& out_grad) {
  for (FunctionHook* h : get_function_hooks()) h->backward_preprocess(function, in_data, out_grad);
}
void run_backward_postprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                              const std::vector<Tensor>& out_grad) {
  for (FunctionHook* h : get_function_hooks()) h->backward_postprocess(function, in_data, out_grad);
}
}  // namespace detail

}  // namespace chainer
