/// @file
/// Link and Chain, as Chainer's: a Link owns named parameters (Variables that require grads) and
/// persistent values; a Chain also owns named child links. Names are kept sorted, so
/// namedparams() lists "/predictor/l1/W", ... in the same order on every rank and every run;
/// checkpoints, parameter broadcast and gradient buckets rely on it.
///
/// Weight tying: one parameter may be registered under several names (one link added as two
/// children, or `dec->param("W") = enc->param("W")`). namedparams() and snapshots keep every name;
/// whatever steps or reduces parameters goes through unique_namedparams() or params(), which list
/// each parameter once (two steps of one memory would be two updates on the CPU and a race on a
/// GPU), as PyTorch's named_parameters. Loading a snapshot whose tied names disagree is an error.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "core/io/serializer.h"
#include "nn/autocast.h"

namespace chainer {

/// A building block of models (Chainer's `chainer.Link`): named parameters and persistent values.
class Link {
 public:
  virtual ~Link() = default;

  /// The computation. Single-input links override forward(x); links taking several inputs (a
  /// Classifier takes x and t) override forward_args. The updater calls forward_args with the
  /// arrays of a batch.
  virtual Variable forward(const Variable& x);
  /// The computation on several inputs; the default calls forward() on the single one.
  virtual std::vector<Variable> forward_args(const std::vector<Variable>& args);
  /// Calls forward(x), as Chainer's `link(x)`.
  Variable operator()(const Variable& x) { return forward(x); }

  /// Parameters of this link and its descendants, with absolute names ("/l1/W"), sorted.
  std::vector<std::pair<std::string, Variable>> namedparams() const;
  /// namedparams() with each parameter once, under its first name: what an optimizer steps and a
  /// gradient reducer reduces when parameters are tied.
  std::vector<std::pair<std::string, Variable>> unique_namedparams() const;
  /// The parameters of unique_namedparams(), in the same order, without their names.
  std::vector<Variable> params() const;
  /// Persistent values of this link and its descendants, with absolute names ("/bn/avg_mean"), sorted.
  std::vector<std::pair<std::string, Tensor>> namedpersistents() const;
  /// This link and its descendants with absolute names ("/" for this one), sorted.
  std::vector<std::pair<std::string, Link*>> namedlinks(bool skipself = false);
  /// Clears the gradients of all parameters (Chainer's `cleargrads`).
  void cleargrads();
  int64_t count_params() const;  ///< Elements of all initialized parameters.

  /// Saves/loads parameters and persistent values (recursively, children under their names).
  /// A parameter not yet initialized is not saved (Chainer saves None; an NPZ file holds None
  /// only as a pickle). Loading, as Chainer's: a strict reader needs an entry for every
  /// parameter, initialized or not, and throws naming the missing entry; an uninitialized
  /// parameter takes the loaded array and its shape. Loading throws, naming them, when names of
  /// one tied parameter hold different values.
  virtual void serialize(Serializer& s);

  /// Where the parameters, their gradients and the persistent values live (Chainer's
  /// link.device); parameters created later, such as a Linear's W at its first call, are created
  /// there.
  Device device() const { return device_; }
  /// Moves this link and its descendants to DEVICE and returns it. An optimizer moves its state
  /// to its parameters' device at the next update.
  virtual Link& to_device(Device device);
  /// Moves this link to GPU DEVICE; to_gpu(-1) uses the current device
  /// (`chainer::cuda::get_device(id).use()`).
  Link& to_gpu(int device = -1);
  /// Moves this link to the CPU.
  Link& to_cpu() { return to_device(Device::cpu()); }

  /// Registers parameter NAME and returns it. Parameters may be created uninitialized (an
  /// undefined tensor) and filled at the first call when the input size becomes known. Under a
  /// config::dtype of float64, float16 or bfloat16, floating values are converted to param_dtype().
  Variable& add_param(const std::string& name, Tensor initial = {});
  /// The dtype of this link's floating parameters: chainer::param_dtype() when the link was made
  /// (float32 unless config::dtype was float64, float16 or bfloat16; nn/autocast.h).
  DType param_dtype() const { return param_dtype_; }
  /// VALUES, a parameter's first values, on this link's device and, when config::dtype asked for
  /// float64, float16 or bfloat16 parameters, in param_dtype(): what a link sets a parameter
  /// created at its first call to.
  Tensor initial_value(Tensor values) const;
  /// Registers persistent value NAME: saved and loaded with the link, but not a parameter.
  void add_persistent(const std::string& name, Tensor value);
  /// This link's own parameter NAME.
  Variable& param(const std::string& name);
  /// This link's own persistent value NAME.
  Tensor& persistent(const std::string& name);
  /// Whether some parameter of this link or a descendant is not yet initialized.
  bool has_uninitialized_params() const;

 protected:
  /// Appends the child links, with their names, to OUT; a plain Link has none.
  virtual void collect_children(std::vector<std::pair<std::string, Link*>>& /*out*/) const {}

 private:
  // Appends every entry of MEMBER (params_ or persistents_) of this link and its descendants to
  // OUT, named by their paths under PREFIX.
  template <class T>
  void collect(std::map<std::string, T> Link::*member, const std::string& prefix,
               std::vector<std::pair<std::string, T>>& out) const;
  void check_tied(const Serializer& s) const;
  std::map<std::string, Variable> params_;
  std::map<std::string, Tensor> persistents_;
  Device device_;
  DType param_dtype_ = chainer::param_dtype();
};

/// A link with named child links (Chainer's `chainer.Chain`).
class Chain : public Link {
 public:
  /// Registers CHILD under NAME and returns it, so `l1 = add_link("l1", make_shared<Linear>(..))`.
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

/// Saves the parameters and persistents of LINK as NPZ (numpy.load reads it). Keys are
/// the names without the leading slash ("l1/W"), as chainer.serializers.save_npz writes them;
/// serializers::save_npz (core/io/serializers.h) does the same for any serializable object.
void save_npz(const std::string& path, Link& link);
/// Loads the parameters and persistents of LINK from an NPZ file written by save_npz (or
/// Chainer): serializers::load_npz(path, link, entry_path, strict), as Chainer's
/// `load_npz(file, obj, path='', strict=True)`. ENTRY_PATH is where LINK's entries lie in the file
/// ("updater/model:main/" in a trainer snapshot). STRICT: every parameter and persistent value
/// needs its entry, initialized or not, and a missing one throws chainer::Error naming the file
/// and the entry; otherwise missing entries are skipped and those values left as they are. A
/// parameter not yet initialized (a lazily sized Linear's W) takes the file's array and shape.
void load_npz(const std::string& path, Link& link, const std::string& entry_path = "", bool strict = true);

}  // namespace chainer
