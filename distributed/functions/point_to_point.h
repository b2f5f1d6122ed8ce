/// @file
/// Point-to-point communication as differentiable functions, ChainerMN's chainermn.functions.send
/// and recv: the pieces of a model split over processes (stage i on rank i).
///
/// ```
///   rank 0:  Variable phi = send(h, comm, 1);  // h goes to rank 1; phi is a delegate variable
///            phi.backward();                   // receives dL/dh from rank 1, goes on into h's graph
///   rank 1:  Variable h = recv(comm, 0);       // h from rank 0
///            Variable loss = f(h);
///            loss.backward();                  // sends dL/dh back to rank 0
/// ```
///
/// Several variables travel as one message, as a tuple does in ChainerMN:
///
/// ```
///   rank 0:  Variable phi = send({h, c}, comm, 1);                   // one delegate for both
///   rank 1:  std::vector<Variable> hc = recv(comm, 0, {}, 0, force_tuple);  // {h, c}
/// ```
///
/// Their backward sends all their gradients back in one message too; a member the receiver did
/// not use sends zeros (the engine's gradient of an output nobody used), so the sender's member
/// gets a gradient of zeros from this path (ChainerMN 7 would have a None there, which its send of
/// a tuple refuses).
///
/// A rank that sends and then goes on computing (the middle of a pipeline, or a round trip
/// `0 -> 1 -> 0`) joins the delegate to what follows with recv(comm, peer, phi) or pseudo_connect
/// (pseudo_connect.h), so one backward from its loss covers both.
///
/// The messages travel on a channel of their own (function_channel.h), apart from the
/// communicator's own send/recv. Between two ranks they are received in the order they were
/// sent, whatever their tags, and each recv checks that the next message from its peer has the
/// tag it expects (and the shape and dtype, when given): a pipeline's sends and recvs pair up in
/// order, and a mismatch is an error naming both sides instead of a wait for a message that
/// never comes. Both functions are recorded whenever backprop is enabled (NoBackpropMode: no
/// graph, no gradient traffic), whether or not x needs a gradient, so a send's backward always
/// receives what the matching recv's backward sends; a rank must therefore run backward through
/// every recorded send and recv, or its peer waits for ever (the watchdog of mpi_runtime.h,
/// CHAINERMN_TIMEOUT, then ends the job naming the wait).
///
/// A send (and a recv's backward, which sends) returns once MPI is done with the buffer: at once
/// for a small tensor, only when the peer receives it for a large one, as MPI_Send; so two ranks
/// must not both send to each other before either receives.
///
/// GPU tensors are staged through host memory (communicator.h); a result or gradient is put on
/// the device of the corresponding input.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "autograd/variable.h"
#include "distributed/communicators/communicator.h"

namespace chainermn::functions {

using chainer::Variable;

/// Sends x's values to RANK of COMM and returns a delegate variable (a float32 scalar on x's
/// device, delegate_variable.h) whose backward receives the gradient of x from RANK (checked: of
/// x's shape and dtype) and goes on backward into x's graph. RANK must be another rank of COMM.
Variable send(const Variable& x, const std::shared_ptr<Communicator>& comm, int rank, int tag = 0);
/// Sends the values of XS (at least one; dtypes and shapes may differ) to RANK as one message, as
/// ChainerMN's send of a tuple; the delegate's backward receives the gradients of all of them at
/// once and goes on into their graphs. `recv(..., force_tuple)` receives them.
Variable send(const std::vector<Variable>& xs, const std::shared_ptr<Communicator>& comm, int rank, int tag = 0);

/// Options of recv: where the result goes, and the shape, dtype and number of tensors to expect.
struct RecvOptions {
  /// Where the result goes; unset: the delegate's device, or the CPU without a delegate.
  std::optional<chainer::Device> device;
  /// When set, a tensor of another shape is an error naming both.
  std::optional<chainer::Shape> shape;
  /// When set, a tensor of another dtype is an error naming both.
  std::optional<chainer::DType> dtype;
  /// With force_tuple: when set, a message of another number of tensors is an error naming both.
  /// (The recv of one variable expects one; several are an error that points to force_tuple.)
  std::optional<size_t> count;
};

/// Chainer's `force_tuple=True`: recv returns the received variables as a vector, one or several.
struct ForceTuple {};
/// The value to pass: `recv(comm, rank, delegate, tag, force_tuple)`.
inline constexpr ForceTuple force_tuple{};

/// Receives a tensor (its shape and dtype come with it) that `send(..., TAG)` on RANK sent; its
/// backward sends the gradient of the result back to RANK. With DELEGATE (what an earlier send
/// returned), the result's graph includes the delegate, so one backward runs through both.
Variable recv(const std::shared_ptr<Communicator>& comm, int rank, const Variable& delegate = {}, int tag = 0,
              const RecvOptions& options = {});
/// The same for a message of one or several tensors (what `send(xs, ...)`, or the send of one
/// variable, sent): every tensor as a variable, in the order sent; the backward sends all their
/// gradients back at once. OPTIONS' shape and dtype apply to every tensor.
std::vector<Variable> recv(const std::shared_ptr<Communicator>& comm, int rank, const Variable& delegate, int tag,
                           ForceTuple, const RecvOptions& options = {});

}  // namespace chainermn::functions
