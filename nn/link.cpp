#include "nn/link.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "core/device/cuda.h"
#include "core/io/serializers.h"

namespace chainer {

Variable Link::forward(const Variable&) {
  throw Error("Link: this link does not define forward(x); override forward or forward_args");
}

std::vector<Variable> Link::forward_args(const std::vector<Variable>& args) {
  if (args.size() != 1)
    throw Error(str("Link: forward takes one input but ", args.size(),
                    " were given; override forward_args for links with several inputs"));
  return {forward(args[0])};
}

Variable& Link::add_param(const std::string& name, Tensor initial) {
  if (name.empty() || name.find('/') != std::string::npos)
    throw Error(str("add_param: '", name, "' is not a valid parameter name (non-empty, no '/')"));
  if (params_.count(name) || persistents_.count(name)) throw Error(str("add_param: '", name, "' is already registered"));
  if (initial.defined()) initial = initial_value(std::move(initial));
  return params_.emplace(name, Variable(std::move(initial), true, name)).first->second;
}

Tensor Link::initial_value(Tensor values) const {
  // Only a config that asks for another parameter dtype converts: under float32 and the mixed
  // modes, values a link or its user chose (a float64 BatchNormalization) keep their dtype.
  if (param_dtype_ != DType::Float32 && is_floating(values.dtype()) && values.dtype() != param_dtype_)
    values = values.astype(param_dtype_);
  return values.to(device_);
}

void Link::add_persistent(const std::string& name, Tensor value) {
  if (params_.count(name) || persistents_.count(name))
    throw Error(str("add_persistent: '", name, "' is already registered"));
  persistents_.emplace(name, std::move(value));
}

Variable& Link::param(const std::string& name) {
  auto it = params_.find(name);
  if (it == params_.end()) throw Error(str("param: this link has no parameter '", name, "'"));
  return it->second;
}

Tensor& Link::persistent(const std::string& name) {
  auto it = persistents_.find(name);
  if (it == persistents_.end()) throw Error(str("persistent: this link has no persistent value '", name, "'"));
  return it->second;
}

template <class T>
void Link::collect(std::map<std::string, T> Link::*member, const std::string& prefix,
                   std::vector<std::pair<std::string, T>>& out) const {
  for (const auto& [name, value] : this->*member) out.emplace_back(prefix + "/" + name, value);
  std::vector<std::pair<std::string, Link*>> children;
  collect_children(children);
  for (const auto& [name, child] : children) child->collect(member, prefix + "/" + name, out);
}

std::vector<std::pair<std::string, Variable>> Link::namedparams() const {
  std::vector<std::pair<std::string, Variable>> out;
  collect(&Link::params_, "", out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::vector<std::pair<std::string, Variable>> Link::unique_namedparams() const {
  std::vector<std::pair<std::string, Variable>> out = namedparams();
  std::unordered_set<const VariableNode*> seen;
  std::erase_if(out, [&](const auto& named) { return !seen.insert(named.second.node_ptr().get()).second; });
  return out;
}

std::vector<Variable> Link::params() const {
  std::vector<Variable> out;
  for (auto& [name, p] : unique_namedparams()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Link::namedpersistents() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(&Link::persistents_, "", out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::vector<std::pair<std::string, Link*>> Link::namedlinks(bool skipself) {
  std::vector<std::pair<std::string, Link*>> out;
  if (!skipself) out.emplace_back("/", this);
  std::vector<std::pair<std::string, Link*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [prefix, link] = stack.back();
    stack.pop_back();
    std::vector<std::pair<std::string, Link*>> children;
    link->collect_children(children);
    for (auto& [name, child] : children) {
      out.emplace_back(prefix + "/" + name, child);
      stack.emplace_back(prefix + "/" + name, child);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

void Link::cleargrads() {
  for (auto& [name, p] : namedparams()) p.cleargrad();
}

int64_t Link::count_params() const {
  int64_t n = 0;
  for (const auto& [name, p] : namedparams())
    if (p.data().defined()) n += p.numel();
  return n;
}

bool Link::has_uninitialized_params() const {
  for (const auto& [name, p] : namedparams())
    if (!p.data().defined()) return true;
  return false;
}

// Each name of a tied parameter is loaded into the same memory, the last one winning: a snapshot
// whose names of it differ (edited, or written by a model without the tie) would load silently
// wrong, so it is refused before anything is loaded. Checked at every level, which also covers a
// link loaded on its own.
void Link::check_tied(const Serializer& s) const {
  // A parameter's first name found in S, and what S holds there (host tensors).
  std::unordered_map<const VariableNode*, std::pair<std::string, const Tensor*>> first;
  for (const auto& [name, p] : namedparams()) {
    const std::string key = s.prefix() + name.substr(1);
    const auto found = s.entries().find(key);
    if (found == s.entries().end()) continue;
    const auto [it, fresh] = first.try_emplace(p.node_ptr().get(), key, &found->second);
    if (fresh) continue;
    const Tensor a = it->second.second->contiguous(), b = found->second.contiguous();
    if (a.shape() != b.shape() || a.dtype() != b.dtype() || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0)
      throw Error(str("deserialize: '", it->second.first, "' and '", key,
                      "' name one tied parameter but hold different values in the snapshot"));
  }
}

void Link::serialize(Serializer& s) {
  if (s.is_reader()) check_tied(s);
  for (auto& [name, p] : params_) {
    if (!s.is_reader()) {
      // Not initialized yet: nothing to save. Chainer saves None, which an NPZ file holds only as
      // a pickle, so the file has no entry for it.
      if (p.data().defined()) s.tensor(name, p.data());
      continue;
    }
    // Strict for every parameter, initialized or not, as Chainer's NpzDeserializer: skipping a
    // missing entry of a lazily sized link would resume with a fresh random layer.
    if (!p.data().defined() && s.strict() && !s.contains(name))
      throw Error(str("deserialize: the entry '", s.prefix(), name, "' is missing (the parameter is not initialized "
                      "yet; a file saved before its first call has no entry for it: load with strict=false to leave it "
                      "uninitialized)"));
    // An uninitialized parameter takes the file's array, its shape from the file, as Chainer's
    // param.initialize(data.shape); one missing from a reader that is not strict stays as it is.
    s.tensor(name, p.data());
    if (p.data().defined() && p.data().device() != device_) p.set_data(p.data().to(device_));
  }
  for (auto& [name, t] : persistents_) {
    s.tensor(name, t);
    if (t.defined() && t.device() != device_) t = t.to(device_);
  }
}

Link& Link::to_device(Device device) {
  for (auto& [name, p] : params_) {
    if (p.data().defined()) p.set_data(p.data().to(device));
    if (p.grad().defined()) p.set_grad(p.grad().to(device));
  }
  for (auto& [name, t] : persistents_)
    if (t.defined()) t = t.to(device);
  std::vector<std::pair<std::string, Link*>> children;
  collect_children(children);
  for (auto& [name, child] : children) child->to_device(device);
  device_ = device;
  return *this;
}

Link& Link::to_gpu(int device) {
  return to_device(cuda::get_device(device < 0 ? cuda::current_device() : device).device());
}

void Chain::register_child(const std::string& name, std::shared_ptr<Link> child) {
  if (name.empty() || name.find('/') != std::string::npos)
    throw Error(str("add_link: '", name, "' is not a valid link name (non-empty, no '/')"));
  if (!child) throw Error(str("add_link: the link '", name, "' is null"));
  if (children_.count(name)) throw Error(str("add_link: '", name, "' is already registered"));
  children_.emplace(name, std::move(child));
}

void Chain::collect_children(std::vector<std::pair<std::string, Link*>>& out) const {
  for (const auto& [name, child] : children_) out.emplace_back(name, child.get());
}

void Chain::serialize(Serializer& s) {
  Link::serialize(s);
  for (auto& [name, child] : children_) {
    Serializer sub = s[name];
    child->serialize(sub);
  }
}

void save_npz(const std::string& path, Link& link) { serializers::save_npz(path, link); }

void load_npz(const std::string& path, Link& link, const std::string& entry_path, bool strict) {
  serializers::load_npz(path, link, entry_path, strict);
}

}  // namespace chainer
