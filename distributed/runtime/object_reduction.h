/// @file
/// The sum that Communicator::allreduce_obj applies, defined per type: numbers add; maps add per
/// key (a key missing on one rank counts as absent there, so the result holds the union of the
/// keys: ChainerMN's usual "sum the observations of every rank" on reports); vectors and pairs
/// add elementwise; tensors add elementwise. Every rank folds the values in rank order, so all
/// ranks get bit-identical results.
#pragma once
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/util/error.h"
#include "core/ops/ops.h"
#include "core/tensor/tensor.h"

namespace chainermn {

/// The sum of two values of type T that allreduce_obj applies; a type without a specialization
/// cannot be reduced (a compile-time error).
template <class T, class Enable = void>
struct ObjectSum {
  static_assert(sizeof(T) == 0,
                "chainermn: allreduce_obj cannot add this type (supported: arithmetic types, and std::map, "
                "std::vector, std::pair and chainer::Tensor of them)");
};

/// Numbers add.
template <class T>
struct ObjectSum<T, std::enable_if_t<std::is_arithmetic_v<T>>> {
  static T add(const T& a, const T& b) { return T(a + b); }  ///< `a + b`, in T.
};

/// Maps add per key, over the union of the keys.
template <class K, class V, class C, class A>
struct ObjectSum<std::map<K, V, C, A>> {
  /// A with each of B's values added to A's value of the same key, or inserted where A has none.
  static std::map<K, V, C, A> add(std::map<K, V, C, A> a, const std::map<K, V, C, A>& b) {
    for (const auto& [k, v] : b) {
      auto it = a.find(k);
      if (it == a.end())
        a.emplace(k, v);
      else
        it->second = ObjectSum<V>::add(it->second, v);
    }
    return a;
  }
};

/// Vectors add elementwise.
template <class T, class A>
struct ObjectSum<std::vector<T, A>> {
  /// The elementwise sum; throws chainer::Error when the lengths differ.
  static std::vector<T, A> add(std::vector<T, A> a, const std::vector<T, A>& b) {
    if (a.size() != b.size())
      throw chainer::Error(chainer::str("allreduce_obj: vectors of different lengths (", a.size(), " and ", b.size(),
                                        ") on different ranks cannot be added"));
    for (size_t i = 0; i < a.size(); ++i) a[i] = ObjectSum<T>::add(a[i], b[i]);
    return a;
  }
};

/// Pairs add elementwise.
template <class X, class Y>
struct ObjectSum<std::pair<X, Y>> {
  /// The sums of the firsts and of the seconds.
  static std::pair<X, Y> add(const std::pair<X, Y>& a, const std::pair<X, Y>& b) {
    return {ObjectSum<X>::add(a.first, b.first), ObjectSum<Y>::add(a.second, b.second)};
  }
};

/// Tensors add elementwise.
template <>
struct ObjectSum<chainer::Tensor> {
  /// `a + b`; throws chainer::Error when the shapes or dtypes differ.
  static chainer::Tensor add(const chainer::Tensor& a, const chainer::Tensor& b) {
    if (a.shape() != b.shape() || a.dtype() != b.dtype())
      throw chainer::Error(chainer::str("allreduce_obj: tensors ", chainer::dtype_name(a.dtype()), " ",
                                        chainer::shape_str(a.shape()), " and ", chainer::dtype_name(b.dtype()), " ",
                                        chainer::shape_str(b.shape()), " on different ranks cannot be added"));
    return chainer::ops::add(a, b);
  }
};

}  // namespace chainermn
