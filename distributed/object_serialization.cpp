#include "distributed/object_serialization.h"

namespace chainermn {

void Codec<chainer::Tensor>::write(ByteWriter& w, const chainer::Tensor& t) {
  const uint8_t defined = t.defined() ? 1 : 0;
  w.write_raw(&defined, 1);
  if (!defined) return;
  const uint8_t dtype = uint8_t(t.dtype());
  w.write_raw(&dtype, 1);
  Codec<std::vector<int64_t>>::write(w, t.shape());
  const chainer::Tensor c = t.contiguous();
  w.write_raw(c.raw_data(), c.nbytes());
}

chainer::Tensor Codec<chainer::Tensor>::read(ByteReader& r) {
  uint8_t defined = 0;
  r.read_raw(&defined, 1);
  if (!defined) return {};
  uint8_t dtype = 0;
  r.read_raw(&dtype, 1);
  if (dtype >= chainer::kDTypeCount)
    throw chainer::Error(chainer::str("deserialize_object: unknown dtype code ", int(dtype), " in a tensor"));
  const chainer::Shape shape = Codec<std::vector<int64_t>>::read(r);
  for (int64_t e : shape)
    if (e < 0) throw chainer::Error("deserialize_object: negative extent in a tensor's shape");
  const size_t item = chainer::dtype_size(chainer::DType(dtype));
  const int64_t n = chainer::shape_numel(shape);
  if (n > 0 && size_t(n) > r.remaining() / item)
    throw chainer::Error(chainer::str("deserialize_object: a tensor of shape ", chainer::shape_str(shape),
                                      " does not fit the message"));
  chainer::Tensor t = chainer::Tensor::empty(shape, chainer::DType(dtype));
  r.read_raw(t.raw_data(), t.nbytes());
  return t;
}

}  // namespace chainermn
