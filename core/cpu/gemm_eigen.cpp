// The portable matrix product through Eigen. Eigen runs single-threaded (its own threads would
// be OpenMP's); the rows of C are shared out over our team instead, each block one Eigen product.
// One copy for every family: Eigen's templates compiled three times would be one symbol with
// three bodies, of which the linker keeps any one.
#include "core/cpu/gemm_eigen.h"

#include <Eigen/Core>

#include "core/tensor/dtype.h"
#include "core/util/parallel.h"

namespace chainer::cpu {

namespace {
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
void product(const Tensor& a, bool ta, const Tensor& b, bool tb, double alpha, double beta, Tensor& c) {
  Eigen::Map<const RowMat<T>> A(a.data<T>(), a.size(0), a.size(1));
  Eigen::Map<const RowMat<T>> B(b.data<T>(), b.size(0), b.size(1));
  Eigen::Map<RowMat<T>> C(c.data<T>(), c.size(0), c.size(1));
  const int64_t m = C.rows(), n = C.cols(), k = ta ? A.rows() : A.cols();
  const T al = T(alpha);
  // Row blocks of about 64K multiply-adds each.
  parallel_for(m, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, n * k)), [&](int64_t b, int64_t e) {
    auto Cb = C.middleRows(b, e - b);
    if (beta == 0) Cb.setZero();
    else if (beta != 1) Cb *= T(beta);
    if (!ta && !tb) Cb.noalias() += al * A.middleRows(b, e - b) * B;
    else if (ta && !tb) Cb.noalias() += al * A.middleCols(b, e - b).transpose() * B;
    else if (!ta && tb) Cb.noalias() += al * A.middleRows(b, e - b) * B.transpose();
    else Cb.noalias() += al * A.middleCols(b, e - b).transpose() * B.transpose();
  });
}
}  // namespace

void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
  CHAINER_DISPATCH_FLOATING(c.dtype(), "matmul", [&] { product<scalar_t>(a, trans_a, b, trans_b, alpha, beta, c); });
}

}  // namespace chainer::cpu
