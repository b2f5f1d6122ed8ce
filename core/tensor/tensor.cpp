#include "core/tensor/tensor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "core/cuda/runtime.h"
#include "core/ops/kernels.h"

namespace chainer {

Tensor::Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, std::vector<int64_t> strides,
               DType dtype)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)), strides_(std::move(strides)),
      dtype_(dtype) {}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) throw Error(str("empty: shape ", shape_str(shape), " has a negative extent"));
  const int64_t numel = shape_numel(shape);
  const size_t bytes = size_t(numel) * dtype_size(dtype);
  std::shared_ptr<Storage> storage;
  try {
    if (bytes / dtype_size(dtype) != size_t(numel)) throw std::bad_alloc();  // the byte count overflowed
    storage = std::make_shared<Storage>(bytes, device);
  } catch (const std::bad_alloc&) {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.1f", double(numel) * double(dtype_size(dtype)) / double(1 << 30));
    throw Error(str("out of memory: a ", dtype_name(dtype), " tensor of shape ", shape_str(shape), " needs ", gib,
                    " GiB on ", device.str()));
  }  // (the CUDA allocator throws its own Error, naming what is in use and cached)
  return Tensor(std::move(storage), 0, shape, contiguous_strides(shape), dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device.is_cpu()) std::memset(t.raw_data(), 0, t.nbytes());
  else t.fill_(0.0);
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if (int64_t(values.size()) != shape_numel(shape))
    throw Error(str("from_vector: ", values.size(), " values do not fill shape ", shape_str(shape), " (",
                    shape_numel(shape), " elements)"));
  Tensor t = empty(shape, dtype_of<T>());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<uint8_t>&, const Shape&);

Tensor Tensor::arange(int64_t n, DType dtype) {
  Tensor t = empty({n}, dtype);
  CHAINER_DISPATCH_ALL_AND_16BIT(dtype, "arange", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = scalar_t(i);
  });
  return t;
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype, int64_t offset) {
  if (!storage) throw Error("Tensor::from_storage: the storage is null");
  const int64_t n = shape_numel(shape);
  if (offset < 0 || size_t(offset + n) * dtype_size(dtype) > storage->bytes())
    throw Error(str("Tensor::from_storage: ", n, " ", dtype_name(dtype), " elements at offset ", offset,
                    " do not fit in a storage of ", storage->bytes(), " bytes"));
  return Tensor(std::move(storage), offset, shape, contiguous_strides(shape), dtype);
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device{}; }

int64_t Tensor::size(int64_t axis) const { return shape_[normalize_axis(axis, ndim(), "size")]; }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t d = ndim() - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

void Tensor::check_dtype(DType expected, const char* what) const {
  if (!storage_) throw Error(str(what, ": the tensor is undefined"));
  if (dtype_ != expected)
    throw Error(str(what, ": tensor has dtype ", dtype_name(dtype_), " but ", dtype_name(expected),
                    " was requested"));
}

void* Tensor::raw_data() {
  if (!storage_) throw Error("raw_data: the tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * int64_t(itemsize());
}
const void* Tensor::raw_data() const { return const_cast<Tensor*>(this)->raw_data(); }

Tensor Tensor::contiguous() const {
  if (!defined() || is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor out = empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape resolved = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < resolved.size(); ++i) {
    if (resolved[i] == -1) {
      if (infer >= 0) throw Error(str("reshape: shape ", shape_str(shape), " has more than one -1"));
      infer = int64_t(i);
    } else if (resolved[i] < 0) {
      throw Error(str("reshape: shape ", shape_str(shape), " has a negative extent"));
    } else {
      known *= resolved[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw Error(str("reshape: cannot reshape an array of shape ", shape_str(shape_), " into ", shape_str(shape)));
    resolved[infer] = numel() / known;
  }
  if (shape_numel(resolved) != numel())
    throw Error(str("reshape: cannot reshape an array of shape ", shape_str(shape_), " (", numel(),
                    " elements) into ", shape_str(shape)));
  Tensor base = contiguous();
  return Tensor(base.storage_, base.offset_, resolved, contiguous_strides(resolved), dtype_);
}

Tensor Tensor::transpose(std::vector<int64_t> axes) const {
  const int64_t nd = ndim();
  if (axes.empty()) {
    axes.resize(nd);
    for (int64_t i = 0; i < nd; ++i) axes[i] = nd - 1 - i;
  }
  if (int64_t(axes.size()) != nd)
    throw Error(str("transpose: axes ", shape_str(axes), " has ", axes.size(), axes.size() == 1 ? " entry" : " entries",
                    " but the array has ", nd, " dimensions; give a permutation of all of them"));
  std::vector<bool> seen(nd, false);
  Shape shape(nd);
  std::vector<int64_t> strides(nd);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t a = normalize_axis(axes[i], nd, "transpose");
    if (seen[a])
      throw Error(str("transpose: axes ", shape_str(axes), " name axis ", a, " twice; give a permutation of 0..", nd - 1));
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return Tensor(storage_, offset_, shape, strides, dtype_);
}

Tensor Tensor::narrow(int64_t axis, int64_t start, int64_t length) const {
  int64_t a = normalize_axis(axis, ndim(), "narrow");
  if (start < 0 || length < 0 || start + length > shape_[a])
    throw Error(str("narrow: range [", start, ", ", start + length, ") is outside axis ", axis, " of extent ",
                    shape_[a]));
  Shape shape = shape_;
  shape[a] = length;
  return Tensor(storage_, offset_ + start * strides_[a], shape, strides_, dtype_);
}

Tensor Tensor::operator[](int64_t index) const {
  if (ndim() == 0) throw Error("index: cannot index a 0-dimensional array");
  if (index < 0) index += shape_[0];
  if (index < 0 || index >= shape_[0])
    throw Error(str("index: index ", index, " is out of range for axis 0 of extent ", shape_[0]));
  Shape shape(shape_.begin() + 1, shape_.end());
  std::vector<int64_t> strides(strides_.begin() + 1, strides_.end());
  return Tensor(storage_, offset_ + index * strides_[0], shape, strides, dtype_);
}

Tensor Tensor::as_strided(const Shape& shape, const std::vector<int64_t>& strides, int64_t offset) const {
  if (!defined()) throw Error("as_strided: the tensor is undefined");
  if (shape.size() != strides.size())
    throw Error(str("as_strided: shape ", shape_str(shape), " and strides ", shape_str(strides),
                    " have different lengths"));
  for (int64_t d : shape)
    if (d < 0) throw Error(str("as_strided: shape ", shape_str(shape), " has a negative extent"));
  int64_t lo = offset, hi = offset;  // the lowest and highest element reached
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t span = (shape[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  const int64_t elements = int64_t(storage_->bytes() / itemsize());
  if (shape_numel(shape) > 0 && (lo < 0 || hi >= elements))
    throw Error(str("as_strided: shape ", shape_str(shape), " with strides ", shape_str(strides), " from offset ",
                    offset, " reaches elements [", lo, ", ", hi, "] outside the storage of ", elements, " elements"));
  return Tensor(storage_, offset, shape, strides, dtype_);
}

Tensor Tensor::astype(DType dtype) const {
  Tensor out = empty(shape_, dtype, device());
  out.copy_(*this);
  return out;
}

Tensor& Tensor::fill_(double value) {
  if (!defined()) throw Error("fill: the tensor is undefined");
  if (numel() > 0) kernels_for(device()).fill(*this, value);
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  if (!defined() || !src.defined()) throw Error("copy: a tensor is undefined");
  if (src.shape_ != shape_)
    throw Error(str("copy: source shape ", shape_str(src.shape_), " differs from destination shape ",
                    shape_str(shape_)));
  if (numel() == 0) return *this;
  const Device from = src.device(), to = device();
  if (from == to) {
    kernels_for(to).copy(src, *this);
    return *this;
  }
  // Across devices the bytes move as one contiguous block of the destination's dtype: convert
  // and pack on the source's side, land in a packed buffer on this side, then lay it out here.
  const Tensor packed = src.dtype_ == dtype_ && src.is_contiguous() ? src : src.astype(dtype_);
  const bool direct = is_contiguous();
  Tensor landing = direct ? *this : empty(shape_, dtype_, to);
  if (to.is_cpu()) {
    cuda::detail::runtime(from.index).copy_to_host(from.index, landing.raw_data(), packed.raw_data(), nbytes());
  } else if (from.is_cpu()) {
    cuda::detail::runtime(to.index).copy_from_host(to.index, landing.raw_data(), packed.raw_data(), nbytes());
  } else {
    cuda::detail::runtime(to.index).copy_between(to.index, landing.raw_data(), from.index, packed.raw_data(), nbytes());
  }
  if (!direct) kernels_for(to).copy(landing, *this);
  return *this;
}

Tensor Tensor::to(Device device) const {
  if (!defined() || this->device() == device) return *this;
  Tensor out = empty(shape_, dtype_, device);
  out.copy_(*this);
  return out;
}

template <class T>
T Tensor::item() const {
  if (numel() != 1) throw Error(str("item: tensor of shape ", shape_str(shape_), " has ", numel(), " elements, not 1"));
  if (!device().is_cpu()) return to(Device::cpu()).item<T>();
  return CHAINER_DISPATCH_ALL_AND_16BIT(dtype_, "item", [&]() -> T {
    return T(static_cast<const scalar_t*>(storage_->data())[offset_]);
  });
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int32_t Tensor::item<int32_t>() const;
template int64_t Tensor::item<int64_t>() const;
template uint8_t Tensor::item<uint8_t>() const;

double Tensor::item_double() const { return item<double>(); }

template <class T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out;
  if (!defined()) return out;
  if (!device().is_cpu()) return to(Device::cpu()).to_vector<T>();
  out.reserve(size_t(numel()));
  CHAINER_DISPATCH_ALL_AND_16BIT(dtype_, "to_vector", [&] {
    const scalar_t* p = static_cast<const scalar_t*>(storage_->data()) + offset_;
    for_each_offset(shape_, strides_, [&](int64_t o) { out.push_back(T(p[o])); });
  });
  return out;
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;
template std::vector<uint8_t> Tensor::to_vector() const;

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  std::vector<double> v = to_vector<double>();
  std::ostringstream os;
  os << std::setprecision(6);
  const int64_t nd = ndim();
  if (nd == 0) {
    os << v[0];
    return os.str();
  }
  std::vector<int64_t> idx(nd, 0);
  const int64_t n = int64_t(v.size());
  for (int64_t k = 0; k < n; ++k) {
    int64_t opened = 0;
    for (int64_t d = nd - 1; d >= 0 && idx[d] == 0; --d) ++opened;
    if (k > 0) os << (opened ? std::string(size_t(opened), '\n') + std::string(size_t(nd - opened), ' ') : " ");
    os << std::string(size_t(opened), '[') << v[k];
    int64_t closed = 0;
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape_[d]) break;
      idx[d] = 0;
      ++closed;
    }
    os << std::string(size_t(closed), ']');
  }
  if (n == 0) os << std::string(size_t(nd), '[') << std::string(size_t(nd), ']');
  return os.str();
}

}  // namespace chainer
