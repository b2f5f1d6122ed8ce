#include "core/io/serializer.h"

#include <cstring>

namespace chainer {

Serializer::Serializer(Mode mode, std::shared_ptr<TensorMap> entries, std::string prefix, bool strict)
    : mode_(mode), entries_(std::move(entries)), prefix_(std::move(prefix)), strict_(strict) {}

Serializer Serializer::writer() { return Serializer(Mode::Write, std::make_shared<TensorMap>(), ""); }

Serializer Serializer::reader(TensorMap entries) {
  return Serializer(Mode::Read, std::make_shared<TensorMap>(std::move(entries)), "");
}

Serializer Serializer::reader(TensorMap entries, const std::string& path, bool strict) {
  const size_t start = path.find_first_not_of('/');  // keys have no leading '/', as Chainer strips it
  std::string prefix = start == std::string::npos ? "" : path.substr(start);
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return Serializer(Mode::Read, std::make_shared<TensorMap>(std::move(entries)), std::move(prefix), strict);
}

Serializer Serializer::operator[](const std::string& name) const {
  return Serializer(mode_, entries_, prefix_ + name + "/", strict_);
}

bool Serializer::contains(const std::string& key) const { return entries_->count(prefix_ + key) != 0; }

const Tensor* Serializer::find(const std::string& key) const {
  auto it = entries_->find(prefix_ + key);
  if (it != entries_->end()) return &it->second;
  if (!strict_) return nullptr;
  throw Error(str("deserialize: the entry '", prefix_ + key, "' is missing"));
}

void Serializer::tensor(const std::string& key, Tensor& value) {
  if (!is_reader()) {
    if (!value.defined()) throw Error(str("serialize: the entry '", prefix_ + key, "' is undefined"));
    // Entries live on the host, so snapshots and NPZ files do not depend on the device. bfloat16
    // is kept as float32 (exactly: numpy, and so NPZ, has no bfloat16); reading converts it back
    // into the bfloat16 value it is loaded into.
    if (value.dtype() == DType::BFloat16) (*entries_)[prefix_ + key] = value.astype(DType::Float32).to(Device::cpu());
    else (*entries_)[prefix_ + key] = value.device().is_cpu() ? value.clone() : value.to(Device::cpu());
    return;
  }
  const Tensor* found = find(key);
  if (!found) return;
  const Tensor& stored = *found;
  if (value.defined()) {
    if (value.shape() != stored.shape())
      throw Error(str("deserialize: '", prefix_ + key, "' has shape ", shape_str(stored.shape()), " but ",
                      shape_str(value.shape()), " was expected"));
    value.copy_(stored);
  } else {
    value = stored.clone();
  }
}

namespace {
template <class T>
void scalar_entry(Serializer& s, TensorMap& entries, const std::string& full, const Tensor* found, T& v, DType dtype) {
  if (!s.is_reader()) {
    entries[full] = Tensor::scalar(double(v), dtype);
    if constexpr (std::is_same_v<T, int64_t>) *entries[full].template data<int64_t>() = v;  // exact beyond 2^53
    return;
  }
  if (!found) return;  // missing, and the reader is not strict
  if (found->numel() != 1) throw Error(str("deserialize: '", full, "' should hold one value"));
  if constexpr (std::is_same_v<T, int64_t>) {
    v = found->dtype() == DType::Int64 ? *found->template data<int64_t>() : int64_t(found->item_double());
  } else {
    v = T(found->item_double());
  }
}
}  // namespace

void Serializer::value(const std::string& key, int64_t& v) {
  scalar_entry(*this, *entries_, prefix_ + key, is_reader() ? find(key) : nullptr, v, DType::Int64);
}
void Serializer::value(const std::string& key, double& v) {
  scalar_entry(*this, *entries_, prefix_ + key, is_reader() ? find(key) : nullptr, v, DType::Float64);
}
void Serializer::value(const std::string& key, std::optional<double>& v) {
  if (is_reader()) {
    v.reset();
    if (!contains(key)) return;
    double d = 0;
    value(key, d);
    v = d;
  } else if (v) {
    double d = *v;
    value(key, d);
  }
}
void Serializer::value(const std::string& key, bool& v) {
  int64_t i = v;  // left as it is when missing from a reader that is not strict
  value(key, i);
  v = i != 0;
}

void Serializer::value(const std::string& key, std::string& v) {
  if (!is_reader()) {
    Tensor t = Tensor::empty({int64_t(v.size())}, DType::UInt8);
    if (!v.empty()) std::memcpy(t.raw_data(), v.data(), v.size());
    (*entries_)[prefix_ + key] = t;
    return;
  }
  const Tensor* found = find(key);
  if (!found) return;
  const Tensor& t = *found;
  if (t.dtype() != DType::UInt8) throw Error(str("deserialize: '", prefix_ + key, "' is not a string"));
  Tensor c = t.contiguous();
  v.assign(static_cast<const char*>(c.raw_data()), size_t(c.numel()));
}

void Serializer::value(const std::string& key, std::vector<uint64_t>& v) {
  if (!is_reader()) {
    std::vector<int64_t> w(v.begin(), v.end());
    (*entries_)[prefix_ + key] = Tensor::from_vector(w);
    return;
  }
  const Tensor* found = find(key);
  if (!found) return;
  const Tensor& t = *found;
  if (t.dtype() != DType::Int64) throw Error(str("deserialize: '", prefix_ + key, "' is not an int64 array"));
  std::vector<int64_t> w = t.to_vector<int64_t>();
  v.assign(w.begin(), w.end());
}

void Serializer::value(const std::string& key, std::vector<int64_t>& v) {
  if (!is_reader()) {
    (*entries_)[prefix_ + key] = Tensor::from_vector(v);
    return;
  }
  const Tensor* found = find(key);
  if (!found) return;
  const Tensor& t = *found;
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    throw Error(str("deserialize: '", prefix_ + key, "' is not an integer array"));
  v = t.to_vector<int64_t>();
}

}  // namespace chainer
