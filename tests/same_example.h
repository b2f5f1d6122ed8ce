// Whether two examples hold the same tensors (shapes, dtypes and values): the ragged-data tests,
// single-process and under MPI, compare examples of any shapes with it. Header-only.
#pragma once
#include <cstddef>

#include "datasets/dataset.h"

namespace chainer::testing {

inline bool same_example(const datasets::Example& a, const datasets::Example& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].shape() != b[k].shape() || a[k].dtype() != b[k].dtype() ||
        a[k].to_vector<double>() != b[k].to_vector<double>())
      return false;
  return true;
}

}  // namespace chainer::testing
