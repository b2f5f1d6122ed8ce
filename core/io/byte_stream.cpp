#include "core/io/byte_stream.h"

#include <cstring>

namespace chainer {

namespace {
// What every decoding error adds: the usual cause.
constexpr const char* kLayoutHint = " (do the writer and the reader use the same type?)";
}  // namespace

void ByteWriter::write_string(const std::string& s) {
  write_size(s.size());
  write_raw(s.data(), s.size());
}

void ByteWriter::write_tensor(const Tensor& t) {
  const uint8_t defined = t.defined() ? 1 : 0;
  write_raw(&defined, 1);
  if (!defined) return;
  const uint8_t dtype = uint8_t(t.dtype());
  write_raw(&dtype, 1);
  write_size(t.shape().size());
  write_raw(t.shape().data(), t.shape().size() * sizeof(int64_t));
  const Tensor c = t.to(Device{}).contiguous();
  write_raw(c.raw_data(), c.nbytes());
}

void ByteReader::read_raw(void* data, size_t n) {
  if (n > in_.size() - pos_)
    throw Error(str("reading a message: it ends after ", in_.size(), " bytes but needs more", kLayoutHint));
  if (n) std::memcpy(data, in_.data() + pos_, n);
  pos_ += n;
}

uint64_t ByteReader::read_size(size_t item_bytes) {
  uint64_t n = 0;
  read_raw(&n, sizeof n);
  if (item_bytes && n > (in_.size() - pos_) / item_bytes)
    throw Error(str("reading a message: a length of ", n, " does not fit the message", kLayoutHint));
  return n;
}

std::string ByteReader::read_string() {
  std::string s(size_t(read_size(1)), '\0');
  read_raw(s.data(), s.size());
  return s;
}

Tensor ByteReader::read_tensor() {
  uint8_t defined = 0;
  read_raw(&defined, 1);
  if (!defined) return {};
  uint8_t dtype = 0;
  read_raw(&dtype, 1);
  if (dtype >= kDTypeCount) throw Error(str("reading a message: unknown dtype code ", int(dtype), " in a tensor"));
  Shape shape(size_t(read_size(sizeof(int64_t))));
  read_raw(shape.data(), shape.size() * sizeof(int64_t));
  for (int64_t e : shape)
    if (e < 0) throw Error("reading a message: negative extent in a tensor's shape");
  const size_t item = dtype_size(DType(dtype));
  const int64_t n = shape_numel(shape);
  if (n > 0 && size_t(n) > remaining() / item)
    throw Error(str("reading a message: a tensor of shape ", shape_str(shape), " does not fit the message"));
  Tensor t = Tensor::empty(shape, DType(dtype));
  read_raw(t.raw_data(), t.nbytes());
  return t;
}

}  // namespace chainer
