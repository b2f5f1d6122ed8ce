#include "datasets/converter.h"

namespace chainer::dataset {

ConvertedBatch::ConvertedBatch(std::vector<Tensor> arrays) {
  fields_.reserve(arrays.size());
  for (Tensor& a : arrays) fields_.emplace_back(std::move(a));
}

ConvertedBatch::ConvertedBatch(std::vector<Field> fields) : fields_(std::move(fields)) {}

ConvertedBatch::ConvertedBatch(std::vector<std::pair<std::string, Field>> named) {
  for (auto& [name, field] : named) {
    for (const std::string& n : names_)
      if (n == name) throw Error(str("ConvertedBatch: the field name '", name, "' is given twice"));
    names_.push_back(name);
    fields_.push_back(std::move(field));
  }
}

bool ConvertedBatch::is_list(size_t k) const {
  return k < fields_.size() && std::holds_alternative<std::vector<Tensor>>(fields_[k]);
}

std::string ConvertedBatch::describe(size_t k) const {
  return names_.empty() ? str("field ", k) : str("field ", k, " ('", names_[k], "')");
}

const Tensor& ConvertedBatch::tensor(size_t k) const {
  if (k >= fields_.size()) throw Error(str("ConvertedBatch: no field ", k, "; the batch has ", fields_.size()));
  if (const auto* t = std::get_if<Tensor>(&fields_[k])) return *t;
  throw Error(str("ConvertedBatch: ", describe(k), " is a list of ", std::get<std::vector<Tensor>>(fields_[k]).size(),
                  " tensors, not one tensor; read it with list()"));
}

const std::vector<Tensor>& ConvertedBatch::list(size_t k) const {
  if (k >= fields_.size()) throw Error(str("ConvertedBatch: no field ", k, "; the batch has ", fields_.size()));
  if (const auto* l = std::get_if<std::vector<Tensor>>(&fields_[k])) return *l;
  throw Error(str("ConvertedBatch: ", describe(k), " is one tensor of shape ",
                  shape_str(std::get<Tensor>(fields_[k]).shape()), ", not a list; read it with tensor()"));
}

size_t ConvertedBatch::index_of(const std::string& name) const {
  for (size_t k = 0; k < names_.size(); ++k)
    if (names_[k] == name) return k;
  std::string known;
  for (const std::string& n : names_) known += (known.empty() ? "'" : ", '") + n + "'";
  throw Error(str("ConvertedBatch: no field named '", name, "' (the fields are ",
                  names_.empty() ? std::string("unnamed") : known, ")"));
}

const Tensor& ConvertedBatch::tensor(const std::string& name) const { return tensor(index_of(name)); }
const std::vector<Tensor>& ConvertedBatch::list(const std::string& name) const { return list(index_of(name)); }

std::vector<Tensor> ConvertedBatch::tensors(const std::string& who) const {
  std::vector<Tensor> out;
  out.reserve(fields_.size());
  for (size_t k = 0; k < fields_.size(); ++k) {
    if (is_list(k))
      throw Error(str(who, ": ", describe(k), " of the converted batch is a list of tensors, which the target's "
                      "forward_args cannot take; give a loss function that reads the ConvertedBatch"));
    out.push_back(std::get<Tensor>(fields_[k]));
  }
  return out;
}

std::vector<Tensor> to_device(std::optional<Device> device, const std::vector<Tensor>& xs) {
  if (!device) return xs;
  bool one_copy = xs.size() > 1 && !device->is_cpu();
  for (const Tensor& x : xs) {
    if (!x.defined()) throw Error("to_device: a tensor of the list is undefined");
    one_copy = one_copy && x.device().is_cpu() && x.dtype() == xs.front().dtype();
  }
  std::vector<Tensor> out;
  out.reserve(xs.size());
  if (!one_copy) {
    for (const Tensor& x : xs) out.push_back(x.to(*device));
    return out;
  }
  int64_t total = 0;
  for (const Tensor& x : xs) total += x.numel();
  Tensor flat = Tensor::empty({total}, xs.front().dtype());
  int64_t at = 0;
  for (const Tensor& x : xs) {
    flat.narrow(0, at, x.numel()).copy_(x.contiguous().reshape({x.numel()}));
    at += x.numel();
  }
  const Tensor moved = flat.to(*device);
  at = 0;
  for (const Tensor& x : xs) {
    out.push_back(moved.narrow(0, at, x.numel()).reshape(x.shape()));
    at += x.numel();
  }
  return out;
}

}  // namespace chainer::dataset
