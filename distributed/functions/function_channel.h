// The wire of chainermn::functions' point-to-point messages: send's forward sends values, recv's
// backward sends gradients back. A message carries one tensor or several (ChainerMN's tuples: a
// send of several variables is one message, so its members cannot be taken apart or reordered on
// the way). Each message is a header {magic, kind, tag, count, then per tensor dtype, ndim,
// extents} and then the values of each tensor in turn, on the communicator's functions_comm()
// (an MPI communicator no other traffic uses) under one MPI tag. So the messages from one rank to
// another are received in the order they were sent, whatever their tags, as a pipeline sends and
// receives them; the tag travels in the header, and a receiver that finds another kind, tag,
// count, shape or dtype than it expects throws an error naming both, where matching by MPI tag
// would wait forever or take the wrong message. A message found wrong is still received whole,
// so the channel stays in step.
//
// Blocking waits are watched by the job's watchdog (distributed/runtime/mpi_runtime.h, CHAINERMN_TIMEOUT)
// under a description of what they wait for: a peer that never sends or never receives ends the
// job with "MPI_Mprobe for the gradient that chainermn::functions::send's backward expects from
// rank 1 of 2 with tag 0 (...) has not completed in T s".
#pragma once
#include <optional>
#include <vector>

#include "core/tensor/tensor.h"
#include "distributed/communicators/communicator.h"

namespace chainermn::functions::detail {

// Value: sent by send, received by recv. Gradient: sent by recv's backward, received by send's
// backward.
enum class MessageKind { Value = 1, Gradient = 2 };

// What a receiver expects of one tensor; a shape or dtype left unset accepts any.
struct ExpectedTensor {
  std::optional<chainer::Shape> shape;
  std::optional<chainer::DType> dtype;
};

// What a receiver expects of a message.
struct ExpectedMessage {
  MessageKind kind = MessageKind::Value;
  int tag = 0;
  // The number of tensors; unset: any (then `each` is empty).
  std::optional<size_t> count;
  // What every tensor must be.
  ExpectedTensor all;
  // When not empty, what each tensor must be, one per tensor (count is then set to its size).
  std::vector<ExpectedTensor> each;
};

// Throws chainer::Error naming OP unless COMM is set and PEER is another of its ranks (talking
// to oneself would wait forever in backward).
void check_peer(const std::shared_ptr<Communicator>& comm, int peer, const char* op);

// Sends TS (at least one, each defined; on any device: staged through host memory) to PEER as one
// message. Returns once MPI is done with the buffers: at once for small tensors, when PEER has
// received them for large ones.
void send_message(const Communicator& comm, int peer, MessageKind kind, int tag, const std::vector<chainer::Tensor>& ts);

// Receives the next message from PEER (fresh CPU tensors, as many as were sent) and checks it
// against EXPECTED.
std::vector<chainer::Tensor> recv_message(const Communicator& comm, int peer, const ExpectedMessage& expected);

}  // namespace chainermn::functions::detail
