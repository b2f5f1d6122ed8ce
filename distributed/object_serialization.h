// A small binary serialization for the objects chainermn's object collectives move (send_obj,
// bcast_obj, gather_obj, allreduce_obj): arithmetic types, std::string, std::vector, std::map,
// std::pair, chainer::Tensor and any nesting of them. The encoding is the machine's own byte
// order and sizes, like mpi4py's pickles between identical interpreters: every rank of a job
// runs the same build on the same kind of machine. Reading checks lengths, so a type mismatch
// between sender and receiver fails with an Error instead of reading past the message.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "nn/reporter.h"

namespace chainermn {

class ByteWriter {
 public:
  void write_raw(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }
  void write_size(uint64_t n) { write_raw(&n, sizeof n); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}
  void read_raw(void* data, size_t n) {
    if (n > in_.size() - pos_)
      throw chainer::Error(chainer::str("deserialize_object: the message ends after ", in_.size(),
                                        " bytes but needs more (do sender and receiver use the same type?)"));
    if (n) std::memcpy(data, in_.data() + pos_, n);
    pos_ += n;
  }
  // A count of N items of at least ITEM_BYTES each, checked against the bytes left.
  uint64_t read_size(size_t item_bytes = 0) {
    uint64_t n = 0;
    read_raw(&n, sizeof n);
    if (item_bytes && n > (in_.size() - pos_) / item_bytes)
      throw chainer::Error(chainer::str("deserialize_object: a length of ", n,
                                        " does not fit the message (do sender and receiver use the same type?)"));
    return n;
  }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

// Codec<T>::write(ByteWriter&, const T&) and Codec<T>::read(ByteReader&) -> T. Specialize it to
// make another type serialisable.
template <class T, class Enable = void>
struct Codec {
  static_assert(sizeof(T) == 0,
                "chainermn: no Codec for this type (supported: arithmetic, std::string, std::vector, std::map, "
                "std::pair, chainer::Tensor, chainer::ReportValue, and nestings of them)");
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_arithmetic_v<T>>> {
  static void write(ByteWriter& w, const T& v) { w.write_raw(&v, sizeof v); }
  static T read(ByteReader& r) {
    T v{};
    r.read_raw(&v, sizeof v);
    return v;
  }
};

template <>
struct Codec<std::string> {
  static void write(ByteWriter& w, const std::string& s) {
    w.write_size(s.size());
    w.write_raw(s.data(), s.size());
  }
  static std::string read(ByteReader& r) {
    std::string s(size_t(r.read_size(1)), '\0');
    r.read_raw(s.data(), s.size());
    return s;
  }
};

// A reported value travels as its number (a device value is read on the host first).
template <>
struct Codec<chainer::ReportValue> {
  static void write(ByteWriter& w, const chainer::ReportValue& v) { Codec<double>::write(w, v.value()); }
  static chainer::ReportValue read(ByteReader& r) { return Codec<double>::read(r); }
};

template <class T, class A>
struct Codec<std::vector<T, A>> {
  static constexpr bool kFlat = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
  static void write(ByteWriter& w, const std::vector<T, A>& v) {
    w.write_size(v.size());
    if constexpr (kFlat) {
      w.write_raw(v.data(), v.size() * sizeof(T));
    } else {
      for (const auto& e : v) {
        if constexpr (std::is_same_v<T, bool>)
          Codec<bool>::write(w, bool(e));  // std::vector<bool> hands out proxies
        else
          Codec<T>::write(w, e);
      }
    }
  }
  static std::vector<T, A> read(ByteReader& r) {
    const uint64_t n = r.read_size(kFlat ? sizeof(T) : 1);
    std::vector<T, A> v;
    if constexpr (kFlat) {
      v.resize(size_t(n));
      r.read_raw(v.data(), v.size() * sizeof(T));
    } else {
      v.reserve(size_t(n));
      for (uint64_t i = 0; i < n; ++i) v.push_back(Codec<T>::read(r));
    }
    return v;
  }
};

template <class A, class B>
struct Codec<std::pair<A, B>> {
  static void write(ByteWriter& w, const std::pair<A, B>& p) {
    Codec<std::remove_const_t<A>>::write(w, p.first);
    Codec<B>::write(w, p.second);
  }
  static std::pair<A, B> read(ByteReader& r) {
    auto a = Codec<std::remove_const_t<A>>::read(r);
    auto b = Codec<B>::read(r);
    return {std::move(a), std::move(b)};
  }
};

template <class K, class V, class C, class A>
struct Codec<std::map<K, V, C, A>> {
  static void write(ByteWriter& w, const std::map<K, V, C, A>& m) {
    w.write_size(m.size());
    for (const auto& [k, v] : m) {
      Codec<K>::write(w, k);
      Codec<V>::write(w, v);
    }
  }
  static std::map<K, V, C, A> read(ByteReader& r) {
    const uint64_t n = r.read_size(1);
    std::map<K, V, C, A> m;
    for (uint64_t i = 0; i < n; ++i) {
      K k = Codec<K>::read(r);
      m.insert_or_assign(std::move(k), Codec<V>::read(r));
    }
    return m;
  }
};

// dtype, shape and the row-major values; an undefined tensor stays undefined.
template <>
struct Codec<chainer::Tensor> {
  static void write(ByteWriter& w, const chainer::Tensor& t);
  static chainer::Tensor read(ByteReader& r);
};

template <class T>
std::string serialize_object(const T& obj) {
  ByteWriter w;
  Codec<std::remove_cv_t<T>>::write(w, obj);
  return w.take();
}

// Throws chainer::Error when BYTES is not exactly one encoded T.
template <class T>
T deserialize_object(const std::string& bytes) {
  ByteReader r(bytes);
  T obj = Codec<std::remove_cv_t<T>>::read(r);
  if (r.remaining() != 0)
    throw chainer::Error(chainer::str("deserialize_object: ", r.remaining(),
                                      " bytes left over after the object (do sender and receiver use the same type?)"));
  return obj;
}

}  // namespace chainermn
