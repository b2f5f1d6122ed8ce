#include "nn/optimizer.h"

#include <algorithm>

#include "core/ops/ops.h"
#include "core/ops/update_ops.h"

namespace chainer {

void Optimizer::setup(std::shared_ptr<Link> target) {
  if (!target) throw Error("Optimizer.setup: the target link is null");
  set_update_partition(nullptr);  // the old target's parameters go back to private memory
  target_ = std::move(target);
  t_ = 0;
  epoch_ = 0;
  states_.clear();
  param_steps_.clear();
  masters_.clear();
  last_skipped_ = false;
  skipped_ = 0;
}

void Optimizer::require_target(const char* what) const {
  if (!target_) throw Error(str("Optimizer.", what, ": call setup(link) first"));
}

void Optimizer::require_eps_representable(const char* optimizer, double eps) const {
  if (eps == 0.0 || float(eps) != 0.0f || !target_) return;  // float64 holds any eps that float32 does not
  for (const auto& [name, p] : target_->unique_namedparams())
    if (p.data().defined() && p.dtype() == DType::Float32)
      throw Error(str(optimizer, ": eps ", eps, " is too small for float32 (it rounds to 0); parameter ", name,
                      " is float32"));
}

Link& Optimizer::target() const {
  require_target("target");
  return *target_;
}

void Optimizer::add_hook(std::shared_ptr<OptimizerHook> hook) {
  if (!hook) throw Error("Optimizer.add_hook: the hook is null");
  for (const auto& h : hooks_)
    if (h->name() == hook->name()) throw Error(str("Optimizer.add_hook: a hook named '", hook->name(), "' is already added"));
  hooks_.push_back(std::move(hook));
}

void Optimizer::update_one(Variable&, TensorMap&) {
  throw Error("Optimizer: this optimizer defines neither update_rule() nor update_one()");
}

namespace {
// While it lives, half parameters hold their float32 master copies and widened gradients (what the
// hooks and the step see); commit() rounds the masters into the half data. Either way the half
// data and gradient tensors are put back, the gradient as it was (Chainer keeps it too).
class MasterSwap {
 public:
  void add(Variable p, const Tensor& master, Tensor grad) {
    swapped_.push_back({p, p.data(), p.grad()});
    p.set_data(master);
    p.set_grad(std::move(grad));
  }
  void commit() {
    for (Swapped& s : swapped_) s.half_data.copy_(s.param.data());  // rounds to nearest even
  }
  ~MasterSwap() {
    for (Swapped& s : swapped_) {
      s.param.set_data(s.half_data);
      s.param.set_grad(s.half_grad);
    }
  }

 private:
  struct Swapped {
    Variable param;
    Tensor half_data, half_grad;
  };
  std::vector<Swapped> swapped_;
};
}  // namespace

void Optimizer::loss_scaling(int64_t interval, std::optional<double> scale) {
  scaler_ = scale ? LossScaler::fixed(*scale) : LossScaler::chainer_dynamic(interval);
}

void Optimizer::loss_scaling(const LossScalingOptions& options) { scaler_ = LossScaler::dynamic(options); }

void Optimizer::use_fp32_update(bool flag) {
  fp32_update_ = flag;
  if (!flag) masters_.clear();
}

Tensor Optimizer::fp32_param(const std::string& name) const {
  auto it = masters_.find(name);
  return it == masters_.end() ? Tensor() : it->second;
}

void Optimizer::update() {
  require_target("update");
  auto params = target_->unique_namedparams();
  for (auto& [name, p] : params)
    if (p.data().defined() && !p.grad().defined()) p.set_grad(Tensor::zeros(p.shape(), p.dtype(), p.data().device()));
  // Half parameters step their float32 masters (the update rules compute in float32 or float64).
  MasterSwap swap;
  for (auto& [name, p] : params) {
    if (!p.data().defined() || !is_half(p.dtype())) continue;
    if (!fp32_update_)
      throw Error(str("Optimizer.update: parameter ", name, " is ", dtype_name(p.dtype()),
                      ", which the update rules cannot step (they compute in float32 or float64); call "
                      "use_fp32_update() on the optimizer to step a float32 master copy of it"));
    if (partition_) throw InternalError("Optimizer.update: a partitioned update holds a half parameter");
    Tensor& master = masters_[name];
    // Made at the first update, and again for a parameter replaced by one of another shape.
    if (!master.defined() || master.shape() != p.shape()) master = p.data().astype(DType::Float32);
    swap.add(p, master, p.grad().astype(DType::Float32));
  }
  // Unscaled gradients, before anything reads them: out of place, as they may be views that
  // other processes read (a gradient reducer's buffers).
  const double scale = loss_scale();
  if (scale != 1.0)
    for (auto& [name, p] : params)
      if (p.data().defined())
        p.set_grad(ops::div(p.grad(), Tensor::full({}, scale, p.grad().dtype(), p.grad().device())));
  last_skipped_ = false;
  if (scaler_ && scaler_->is_dynamic()) {
    std::vector<Tensor> grads;
    for (auto& [name, p] : params)
      if (p.data().defined()) grads.push_back(p.grad());
    bool overflow = !all_finite(grads);
    if (agree_) overflow = agree_(overflow);
    last_skipped_ = overflow;
    if (overflow) {
      ++t_;  // as Chainer's: t counts the skipped update, the parameters' own counts do not
      ++skipped_;
      scaler_->step_done(true);
      return;  // the swap puts the half data and gradients back
    }
  }
  for (auto& hook : hooks_) (*hook)(*this);
  ++t_;
  if (partition_) partition_->before_steps(!hooks_.empty());
  const std::optional<UpdateRule> rule = update_rule();
  const std::vector<std::string> keys = state_names();
  std::vector<ParamTensors> fused;  // what the rule steps, in parameter order
  std::vector<std::string> fused_names;
  auto add = [&](const std::string& name, const Tensor& data, const Tensor& grad, TensorMap& state) {
    auto key = [&](size_t k) { return keys.size() > k ? state.at(keys[k]) : Tensor(); };
    fused.push_back({data, grad, key(0), key(1), key(2)});
    fused_names.push_back(name);
  };
  for (auto& [name, p] : params) {
    if (!p.data().defined()) continue;  // not initialized yet (lazy input size)
    param_t_ = ++param_steps_[name];
    TensorMap& state = states_[name];
    if (!partition_) {
      if (!rule) {
        update_one(p, state);
        continue;
      }
      const Device device = p.data().device();
      for (const std::string& key : keys) {
        Tensor& t = state[key];
        if (t.defined()) t = t.to(device);
        else if (const double v = initial_state_value(key); v == 0.0) t = Tensor::zeros(p.shape(), p.dtype(), device);
        else t = Tensor::full(p.shape(), v, p.dtype(), device);
      }
      add(name, p.data(), p.grad().is_contiguous() ? p.grad() : p.grad().contiguous(), state);
      continue;
    }
    // This process's share of the parameter, as flat views of the data, gradient and state. The
    // partition starts missing state at zeros; state that starts otherwise is made here.
    for (const std::string& key : keys)
      if (!state[key].defined() && initial_state_value(key) != 0.0)
        state[key] = Tensor::full(p.shape(), initial_state_value(key), p.dtype(), p.data().device());
    const auto [first, last] = partition_->prepare(name, p, state, keys);
    if (first >= last) continue;
    const int64_t n = p.numel();
    auto share = [&](const Tensor& t) { return t.reshape({n}).narrow(0, first, last - first); };
    TensorMap part_state;
    for (const auto& [key, t] : state) part_state[key] = share(t);
    if (rule) {
      add(name, share(p.data()), share(p.grad()), part_state);
      continue;
    }
    Variable part(share(p.data()));
    part.set_grad(share(p.grad()));
    update_one(part, part_state);
  }
  // The scalars are read from the optimizer when the step runs (and at every graph replay).
  if (!fused.empty())
    ops::update_(*rule, fused, [this, names = std::move(fused_names)](size_t i) {
      return update_scalars(param_steps_.at(names[i]));
    });
  swap.commit();
  if (scaler_) scaler_->step_done(false);
}

void Optimizer::count_replayed_step() {
  require_target("update");
  ++t_;
  for (const auto& [name, p] : target_->unique_namedparams())
    if (p.data().defined()) ++param_steps_[name];
}

void Optimizer::set_update_partition(std::shared_ptr<UpdatePartition> partition) {
  if (partition && !elementwise())
    throw Error("Optimizer.set_update_partition: this optimizer's step is not elementwise, so it cannot be split");
  if (partition_) {
    if (target_)
      for (auto& [name, p] : target_->unique_namedparams())
        if (p.data().defined() && partition_->holds(p.data())) p.set_data(p.data().clone());
    for (auto& [name, state] : states_)
      for (auto& [key, t] : state)
        if (partition_->holds(t)) t = t.clone();
  }
  partition_ = std::move(partition);
}

Optimizer::NoSync::NoSync(Optimizer* optimizer) : optimizer_(optimizer) {
  if (optimizer_->no_sync_depth_ == 0) optimizer_->grad_sync_changed(false);
  ++optimizer_->no_sync_depth_;
}

Optimizer::NoSync::~NoSync() {
  if (optimizer_ && --optimizer_->no_sync_depth_ == 0) optimizer_->grad_sync_changed(true);
}

namespace {
thread_local const Link* backpropagating = nullptr;  // see Optimizer::backpropagating_target
}  // namespace

const Link* Optimizer::backpropagating_target() { return backpropagating; }

void Optimizer::update(const std::function<Variable()>& lossfun, bool retain_graph) {
  require_target("update");
  Variable loss = lossfun();
  target_->cleargrads();
  {
    struct Marker {
      const Link* previous;
      ~Marker() { backpropagating = previous; }
    } marker{backpropagating};
    backpropagating = target_.get();
    loss.backward({.retain_graph = retain_graph, .loss_scale = loss_scale()});
  }
  update();
}

namespace {
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}
}  // namespace

std::vector<std::string> Optimizer::hyperparam_names() const {
  std::vector<std::string> names;
  // hyperparams() only says where the values are; listing them changes nothing.
  for (const Hyperparam& h : const_cast<Optimizer*>(this)->hyperparams()) names.push_back(h.name);
  return names;
}

double Optimizer::hyperparam(const std::string& name) const {
  for (const Hyperparam& h : const_cast<Optimizer*>(this)->hyperparams())
    if (h.name == name) return h.field ? *h.field : h.derived();
  throw Error(str("Optimizer.hyperparam: no hyperparameter '", name, "'; this optimizer has ", joined(hyperparam_names())));
}

void Optimizer::set_hyperparam(const std::string& name, double value) {
  for (const Hyperparam& h : hyperparams()) {
    if (h.name != name) continue;
    if (!h.field)
      throw Error(str("Optimizer.set_hyperparam: '", name, "' is derived from other hyperparameters and cannot be set; set '",
                      h.set_instead, "' instead"));
    *h.field = value;
    return;
  }
  throw Error(str("Optimizer.set_hyperparam: no hyperparameter '", name, "'; this optimizer has ",
                  joined(hyperparam_names())));
}

const TensorMap& Optimizer::state(const std::string& name) const {
  static const TensorMap empty;
  auto it = states_.find(name);
  return it == states_.end() ? empty : it->second;
}

void Optimizer::require_known_state(const Serializer& sub) const {
  // Another optimizer's snapshot shares key names by chance (Adam's "v" is MomentumSGD's
  // velocity), so loading only the names this one keeps would succeed with the wrong values.
  const std::vector<std::string> names = state_names();
  const std::string& prefix = sub.prefix();
  for (auto it = sub.entries().lower_bound(prefix); it != sub.entries().end() && it->first.starts_with(prefix); ++it) {
    const std::string key = it->first.substr(prefix.size());
    if (key == "t" || key == "fp32_param" || key.find('/') != std::string::npos) continue;
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      std::string kept;
      for (const std::string& n : names) kept += (kept.empty() ? "" : ", ") + n;
      throw Error(str("deserialize: the optimizer state '", it->first, "' is not one this optimizer keeps (",
                      kept.empty() ? "it keeps none" : "it keeps " + kept,
                      "): the snapshot was written by another optimizer or with other options"));
    }
  }
}

void Optimizer::serialize(Serializer& s) {
  require_target("serialize");
  s.value("t", t_);
  s.value("epoch", epoch_);
  for (auto& [name, p] : target_->unique_namedparams()) {
    Serializer sub = s[name.substr(1)];
    if (s.is_reader()) {
      // The snapshot's state replaces this one (none: created at the next update).
      states_.erase(name);
      param_steps_.erase(name);
      if (sub.strict()) require_known_state(sub);
      for (const std::string& key : state_names())
        if (sub.contains(key)) {
          Tensor t;
          sub.tensor(key, t);
          if (p.data().defined() && t.shape() != p.data().shape())
            throw Error(str("deserialize: the optimizer state '", sub.prefix(), key, "' has shape ", shape_str(t.shape()),
                            " but its parameter has shape ", shape_str(p.data().shape())));
          states_[name][key] = t;
        }
      if (sub.contains("t")) sub.value("t", param_steps_[name]);
      else if (states_.count(name)) param_steps_[name] = t_;  // a snapshot with the global count only
      // The master copy continues bit for bit; without one it is made from the parameter again.
      masters_.erase(name);
      if (sub.contains("fp32_param")) {
        Tensor master;
        sub.tensor("fp32_param", master);
        if (master.dtype() != DType::Float32 || (p.data().defined() && master.shape() != p.data().shape()))
          throw Error(str("deserialize: the float32 master copy '", sub.prefix(), "fp32_param' is ",
                          dtype_name(master.dtype()), " of shape ", shape_str(master.shape()),
                          "; expected float32 of its parameter's shape ", p.data().defined() ? shape_str(p.shape()) : "?"));
        if (p.data().defined()) master = master.to(p.data().device());
        masters_[name] = master;
      }
    } else {
      if (auto it = states_.find(name); it != states_.end()) {
        for (auto& [key, t] : it->second) sub.tensor(key, t);
        sub.value("t", param_steps_[name]);
      }
      if (auto it = masters_.find(name); it != masters_.end()) sub.tensor("fp32_param", it->second);
    }
  }
  // The loss scale and its dynamic state; a snapshot without them leaves this optimizer's as set.
  Serializer scaling = s["loss_scaling"];
  if (!s.is_reader() && scaler_) scaler_->serialize(scaling);
  else if (s.is_reader() && scaler_ && scaling.contains("scale")) scaler_->serialize(scaling);
}

}  // namespace chainer
