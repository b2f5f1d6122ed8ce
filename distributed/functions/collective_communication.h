/// @file
/// Collective communication as differentiable functions, as ChainerMN's chainermn.functions
/// (bcast, gather, scatter, allgather, alltoall) plus allreduce, which ChainerMN lacks. Each
/// backward is the adjoint of its forward, itself a collective:
///
/// ```
///   bcast      y = x of the root               gx (root) = sum over ranks of gy
///   gather     ys[i] = x of rank i (root)      gx = gys[rank] of the root (a scatter)
///   scatter    y = xs[rank] of the root        gxs[i] (root) = gy of rank i (a gather)
///   allgather  ys[i] = x of rank i             gx = sum over ranks j of rank j's gys[rank]
///                                                   (an alltoall, then a sum)
///   alltoall   ys[i] = xs[rank] of rank i      gxs[i] = rank i's gys[rank] (an alltoall)
///   allreduce  y = sum over ranks of x         gx = sum over ranks of gy (an allreduce)
/// ```
///
/// Collective in backward too: every rank of the communicator must call these functions in the
/// same order, and must then run backward through each of them, in the same order (the engine
/// runs the latest-created ready function first, so the same graph on every rank suffices), as
/// in ChainerMN. A rank whose output of a collective does not reach its loss (gather off the
/// root returns only a delegate variable) must still backpropagate it: from the delegate itself
/// (delegate.backward()) or through pseudo_connect. Each function is recorded on every rank
/// whenever backprop is enabled, whatever its inputs need there (delegate_variable.h), so all
/// ranks' graphs have the same collectives. Shapes and dtypes may differ across ranks where the
/// collective allows it (gather, allgather, alltoall); bcast and scatter ignore their inputs off
/// the root, except to choose the device of the result.
///
/// GPU tensors are staged through host memory (communicator.h); every result and gradient is put
/// on the device of the corresponding input (off the root of bcast and scatter, where there is
/// none: see below).
#pragma once
#include <memory>
#include <vector>

#include "autograd/variable.h"
#include "distributed/communicators/communicator.h"

namespace chainermn::functions {

using chainer::Variable;

/// ROOT's x on every rank. Off the root x only says where the result goes (undefined: the CPU).
Variable bcast(const std::shared_ptr<Communicator>& comm, const Variable& x, int root = 0);

/// On ROOT: `comm->size()` variables, `ys[i]` being rank i's x. Elsewhere: one delegate variable
/// (delegate_variable.h), to backpropagate so that the scatter of backward runs.
std::vector<Variable> gather(const std::shared_ptr<Communicator>& comm, const Variable& x, int root = 0);

/// ROOT's `xs[rank]` on every rank; ROOT passes `comm->size()` variables. Off the root xs only says
/// where the result goes: the device of its first element (empty: the CPU).
Variable scatter(const std::shared_ptr<Communicator>& comm, const std::vector<Variable>& xs, int root = 0);

/// `comm->size()` variables, `ys[i]` being rank i's x.
std::vector<Variable> allgather(const std::shared_ptr<Communicator>& comm, const Variable& x);

/// XS holds `comm->size()` variables, `xs[i]` going to rank i; `ys[i]` came from rank i (on `xs[i]`'s device).
std::vector<Variable> alltoall(const std::shared_ptr<Communicator>& comm, const std::vector<Variable>& xs);

/// The elementwise sum of x over the ranks (the same dtype and shape everywhere, checked).
Variable allreduce(const std::shared_ptr<Communicator>& comm, const Variable& x);

}  // namespace chainermn::functions
