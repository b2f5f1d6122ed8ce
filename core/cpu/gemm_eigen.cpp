// The portable matrix product through Eigen: float64 (gradient checks) and every dtype on CPUs
// without AVX-512.
#include <Eigen/Core>

#include "core/cpu/kernels.h"

namespace chainer::cpu {

namespace {
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
void product(const Tensor& a, bool ta, const Tensor& b, bool tb, double alpha, double beta, Tensor& c) {
  Eigen::Map<const RowMat<T>> A(a.data<T>(), a.size(0), a.size(1));
  Eigen::Map<const RowMat<T>> B(b.data<T>(), b.size(0), b.size(1));
  Eigen::Map<RowMat<T>> C(c.data<T>(), c.size(0), c.size(1));
  if (beta == 0) C.setZero();
  else if (beta != 1) C *= T(beta);
  const T al = T(alpha);
  if (!ta && !tb) C.noalias() += al * A * B;
  else if (ta && !tb) C.noalias() += al * A.transpose() * B;
  else if (!ta && tb) C.noalias() += al * A * B.transpose();
  else C.noalias() += al * A.transpose() * B.transpose();
}
}  // namespace

void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
  CHAINER_DISPATCH_FLOATING(c.dtype(), "matmul", [&] { product<scalar_t>(a, trans_a, b, trans_b, alpha, beta, c); });
}

}  // namespace chainer::cpu
