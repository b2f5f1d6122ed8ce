// Link and Chain, as Chainer's: a Link owns named parameters (Variables that require grads) and
// persistent values; a Chain also owns named child links. Names are kept sorted, so
// namedparams() lists "/predictor/l1/W", ... in the same order on every rank and every run;
// checkpoints, parameter broadcast and gradient buckets rely on it.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "core/serializer.h"

namespace chainer {

class Link {
 public:
  virtual ~Link() = default;

  // The computation. Single-input links override forward(x); links taking several inputs (a
  // Classifier takes x and t) override forward_args. The updater calls forward_args with the
  // arrays of a batch.
  virtual Variable forward(const Variable& x);
  virtual std::vector<Variable> forward_args(const std::vector<Variable>& args);
  Variable operator()(const Variable& x) { return forward(x); }

  // Parameters of this link and its descendants, with absolute names ("/l1/W"), sorted.
  std::vector<std::pair<std::string, Variable>> namedparams() const;
  std::vector<Variable> params() const;
  // This link and its descendants with absolute names ("/" for this one), sorted.
  std::vector<std::pair<std::string, Link*>> namedlinks(bool skipself = false);
  void cleargrads();
  int64_t count_params() const;  // elements of all initialized parameters

  // Saves/loads parameters and persistent values (recursively, children under their names).
  virtual void serialize(Serializer& s);

  // Where the parameters, their gradients and the persistent values live (Chainer's
  // link.device); parameters created later, such as a Linear's W at its first call, are created
  // there. to_device moves this link and its descendants and returns it; to_gpu(-1) uses the
  // current device (chainer::cuda::get_device(id).use()). An optimizer moves its state to its
  // parameters' device at the next update.
  Device device() const { return device_; }
  virtual Link& to_device(Device device);
  Link& to_gpu(int device = -1);
  Link& to_cpu() { return to_device(Device::cpu()); }

  // Parameters may be created uninitialized (an undefined tensor) and filled at the first call
  // when the input size becomes known.
  Variable& add_param(const std::string& name, Tensor initial = {});
  void add_persistent(const std::string& name, Tensor value);
  Variable& param(const std::string& name);
  Tensor& persistent(const std::string& name);
  bool has_uninitialized_params() const;

 protected:
  virtual void collect_children(std::vector<std::pair<std::string, Link*>>& out) const {}

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Variable>>& out) const;
  std::map<std::string, Variable> params_;
  std::map<std::string, Tensor> persistents_;
  Device device_;
};

class Chain : public Link {
 public:
  // Registers CHILD under NAME and returns it, so `l1 = add_link("l1", make_shared<Linear>(..))`.
  template <class L>
  std::shared_ptr<L> add_link(const std::string& name, std::shared_ptr<L> child) {
    register_child(name, child);
    return child;
  }
  void serialize(Serializer& s) override;

 protected:
  void collect_children(std::vector<std::pair<std::string, Link*>>& out) const override;

 private:
  void register_child(const std::string& name, std::shared_ptr<Link> child);
  std::map<std::string, std::shared_ptr<Link>> children_;
};

// Saves/loads the parameters and persistents of LINK as NPZ (numpy.load reads it). Keys are
// the names without the leading slash ("l1/W"), as chainer.serializers.save_npz writes them.
void save_npz(const std::string& path, Link& link);
void load_npz(const std::string& path, Link& link);

}  // namespace chainer
