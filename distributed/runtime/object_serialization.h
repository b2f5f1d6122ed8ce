/// @file
/// A small binary serialization for the objects chainermn's object collectives move (send_obj,
/// bcast_obj, gather_obj, allreduce_obj): arithmetic types, std::string, std::vector, std::map,
/// std::pair, chainer::Tensor and any nesting of them. The encoding is the machine's own byte
/// order and sizes, like mpi4py's pickles between identical interpreters: every rank of a job
/// runs the same build on the same kind of machine. Reading checks lengths, so a type mismatch
/// between sender and receiver fails with an Error instead of reading past the message.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/io/byte_stream.h"
#include "core/util/error.h"
#include "core/tensor/tensor.h"
#include "nn/reporter.h"

namespace chainermn {

using chainer::ByteReader;
using chainer::ByteWriter;

/// `Codec<T>::write(ByteWriter&, const T&)` and `Codec<T>::read(ByteReader&) -> T`. Specialize it to
/// make another type serialisable.
template <class T, class Enable = void>
struct Codec {
  static_assert(sizeof(T) == 0,
                "chainermn: no Codec for this type (supported: arithmetic, std::string, std::vector, std::map, "
                "std::pair, chainer::Tensor, chainer::ReportValue, and nestings of them)");
};

/// A number travels as its bytes.
template <class T>
struct Codec<T, std::enable_if_t<std::is_arithmetic_v<T>>> {
  static void write(ByteWriter& w, const T& v) { w.write_raw(&v, sizeof v); }  ///< Writes V's bytes.
  /// Reads a T.
  static T read(ByteReader& r) {
    T v{};
    r.read_raw(&v, sizeof v);
    return v;
  }
};

/// A string travels as its length and its bytes.
template <>
struct Codec<std::string> {
  /// Writes S's length and bytes.
  static void write(ByteWriter& w, const std::string& s) { w.write_string(s); }
  /// Reads a string.
  static std::string read(ByteReader& r) { return r.read_string(); }
};

/// A reported value travels as its number (a device value is read on the host first).
template <>
struct Codec<chainer::ReportValue> {
  /// Writes V's value as a double.
  static void write(ByteWriter& w, const chainer::ReportValue& v) { Codec<double>::write(w, v.value()); }
  /// Reads a value written as a double.
  static chainer::ReportValue read(ByteReader& r) { return Codec<double>::read(r); }
};

/// A vector travels as its length and its elements (numbers other than bool in one block).
template <class T, class A>
struct Codec<std::vector<T, A>> {
  /// Whether the elements travel as one block of bytes (numbers other than bool).
  static constexpr bool kFlat = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
  /// Writes V's length and elements.
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
  /// Reads a vector.
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

/// A pair travels as its first and its second.
template <class A, class B>
struct Codec<std::pair<A, B>> {
  /// Writes P's first, then its second.
  static void write(ByteWriter& w, const std::pair<A, B>& p) {
    Codec<std::remove_const_t<A>>::write(w, p.first);
    Codec<B>::write(w, p.second);
  }
  /// Reads a pair.
  static std::pair<A, B> read(ByteReader& r) {
    auto a = Codec<std::remove_const_t<A>>::read(r);
    auto b = Codec<B>::read(r);
    return {std::move(a), std::move(b)};
  }
};

/// A map travels as its size and its (key, value) entries in key order.
template <class K, class V, class C, class A>
struct Codec<std::map<K, V, C, A>> {
  /// Writes M's size and entries.
  static void write(ByteWriter& w, const std::map<K, V, C, A>& m) {
    w.write_size(m.size());
    for (const auto& [k, v] : m) {
      Codec<K>::write(w, k);
      Codec<V>::write(w, v);
    }
  }
  /// Reads a map.
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

/// A tensor travels as its dtype, shape and the row-major values; an undefined tensor stays undefined.
template <>
struct Codec<chainer::Tensor> {
  static void write(ByteWriter& w, const chainer::Tensor& t) { w.write_tensor(t); }  ///< Writes T.
  static chainer::Tensor read(ByteReader& r) { return r.read_tensor(); }  ///< Reads a tensor (a fresh CPU tensor).
};

/// OBJ encoded by its Codec.
template <class T>
std::string serialize_object(const T& obj) {
  ByteWriter w;
  Codec<std::remove_cv_t<T>>::write(w, obj);
  return w.take();
}

/// The T that BYTES encodes. Throws chainer::Error when BYTES is not exactly one encoded T.
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
