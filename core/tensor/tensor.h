/// @file
/// Tensor: an n-d array (shape, strides in elements, dtype, device) over a shared Storage.
/// Views (reshape of a contiguous tensor, transpose, narrow, operator[]) share the storage;
/// kernels mostly require contiguous inputs and call contiguous(), which copies only if needed.
/// Math on tensors lives in core/ops/ops.h; this class only describes and moves memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/tensor/dtype.h"
#include "core/util/error.h"
#include "core/tensor/shape.h"
#include "core/tensor/storage.h"

namespace chainer {

/// An n-d array of one dtype on one device, viewing a shared Storage (numpy's ndarray; cupy's on a GPU).
class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor: defined() is false

  /// An uninitialized tensor of SHAPE.
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = {});
  /// A tensor of SHAPE filled with 0.
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = {});
  /// A tensor of SHAPE filled with 1.
  static Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = {});
  /// A tensor of SHAPE filled with VALUE.
  static Tensor full(const Shape& shape, double value, DType dtype = DType::Float32, Device device = {});
  /// A 0-d tensor holding VALUE, on the CPU.
  static Tensor scalar(double value, DType dtype = DType::Float32);
  /// Copies VALUES into a new tensor of SHAPE (numel must match).
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  /// Copies VALUES into a new 1-d tensor.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values) { return from_vector(values, {int64_t(values.size())}); }
  /// 0, 1, ..., N-1 as a 1-d tensor on the CPU (numpy.arange).
  static Tensor arange(int64_t n, DType dtype = DType::Float32);
  /// A contiguous tensor over STORAGE starting OFFSET elements in (no copy); throws when it does
  /// not fit.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype, int64_t offset = 0);

  bool defined() const { return storage_ != nullptr; }  ///< false for a default-constructed tensor
  DType dtype() const { return dtype_; }  ///< the element type
  Device device() const;  ///< where the memory lives
  const Shape& shape() const { return shape_; }  ///< the extents
  const std::vector<int64_t>& strides() const { return strides_; }  ///< per axis, in elements
  int64_t ndim() const { return int64_t(shape_.size()); }  ///< the number of axes
  int64_t numel() const { return shape_numel(shape_); }  ///< the number of elements
  int64_t size(int64_t axis) const;  ///< the extent of AXIS; negative axes count from the end
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }  ///< numel() * itemsize()
  size_t itemsize() const { return dtype_size(dtype_); }  ///< bytes per element
  bool is_contiguous() const;  ///< whether the elements are packed in row-major order
  const std::shared_ptr<Storage>& storage() const { return storage_; }  ///< the memory viewed
  int64_t offset() const { return offset_; }  ///< the first element's place in the storage, in elements
  /// Whether both tensors view the same storage (defined tensors only).
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

  /// Typed pointer to the first element (a device pointer for a GPU tensor); throws if T does not
  /// match dtype().
  template <class T> T* data();
  /// Typed pointer to the first element (a device pointer for a GPU tensor); throws if T does not
  /// match dtype().
  template <class T> const T* data() const;
  void* raw_data();  ///< untyped pointer to the first element (a device pointer for a GPU tensor)
  const void* raw_data() const;  ///< untyped pointer to the first element (a device pointer for a GPU tensor)

  Tensor contiguous() const;  ///< *this if already contiguous, else a packed copy
  Tensor clone() const;       ///< always a fresh contiguous copy
  Tensor reshape(const Shape& shape) const;  ///< the elements as SHAPE: one extent may be -1; a view when contiguous
  Tensor transpose(std::vector<int64_t> axes = {}) const;  ///< axes permuted by AXES: view; default reverses the axes
  Tensor narrow(int64_t axis, int64_t start, int64_t length) const;  ///< view of LENGTH entries of AXIS from START
  Tensor operator[](int64_t index) const;  ///< view of one slice along axis 0, that axis dropped
  /// A view of this tensor's storage with SHAPE and STRIDES (in elements, negative ones walk
  /// backward) from element OFFSET of the storage (as offset()): numpy's as_strided, what basic
  /// indexing builds (steps, newaxis). Throws when some element it reaches lies outside the storage.
  Tensor as_strided(const Shape& shape, const std::vector<int64_t>& strides, int64_t offset) const;
  Tensor astype(DType dtype) const;        ///< a converted copy (a copy even for the same dtype)
  /// The tensor on DEVICE: *this when it is there already, else a contiguous copy.
  Tensor to(Device device) const;

  Tensor& fill_(double value);  ///< sets every element to VALUE, in place
  Tensor& copy_(const Tensor& src);  ///< copies SRC's values in: same shape, any layout and device; converts dtype

  // Host reads: on a GPU these wait for the device (and report its recorded errors).
  template <class T> T item() const;  ///< the value of a one-element tensor (a host read)
  double item_double() const;  ///< the value of a one-element tensor as a double (a host read)
  template <class T> std::vector<T> to_vector() const;  ///< row-major values, converted to T (a host read)

  std::string to_string() const;  ///< numpy-like text

 private:
  Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, std::vector<int64_t> strides,
         DType dtype);
  void check_dtype(DType expected, const char* what) const;

  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  std::vector<int64_t> strides_;
  DType dtype_ = DType::Float32;
};

/// Calls fn(offset) for the element offset of every index of SHAPE/STRIDES in row-major order.
template <class Fn>
void for_each_offset(const Shape& shape, const std::vector<int64_t>& strides, Fn&& fn) {
  const int64_t nd = int64_t(shape.size());
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    fn(off);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) { off += strides[d]; break; }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

template <class T>
T* Tensor::data() {
  check_dtype(dtype_of<T>(), "data");
  return static_cast<T*>(storage_->data()) + offset_;
}
template <class T>
const T* Tensor::data() const {
  check_dtype(dtype_of<T>(), "data");
  return static_cast<const T*>(storage_->data()) + offset_;
}

}  // namespace chainer
