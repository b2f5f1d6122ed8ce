#include "distributed/functions/function_channel.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "distributed/runtime/chunked_transfer.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn::functions::detail {

using chainer::DType;
using chainer::Error;
using chainer::Shape;
using chainer::str;
using chainer::Tensor;

namespace {

constexpr int64_t kMagic = 0x636d6e46;  // "cmnF": first element of every header
constexpr int kMpiTag = 0;              // the only MPI tag on functions_comm(): one ordered stream per pair of ranks
constexpr size_t kHeaderFixed = 5;      // magic, kind, tag, dtype, ndim; then the extents

const char* sender(MessageKind kind) {
  return kind == MessageKind::Value ? "chainermn::functions::send" : "chainermn::functions::recv's backward";
}
const char* receiver(MessageKind kind) {
  return kind == MessageKind::Value ? "chainermn::functions::recv" : "chainermn::functions::send's backward";
}
const char* noun(MessageKind kind) { return kind == MessageKind::Value ? "tensor" : "gradient"; }

std::string signature(DType dtype, const Shape& shape) {
  return str(chainer::dtype_name(dtype), " ", chainer::shape_str(shape));
}

// The watchdog (mpi_runtime.h) names a blocked call by its MpiCallSite; the sites made here say
// what the call waits for, with the peer and the tag, so they are made at run time. The watchdog
// may read a site while its call returns, so each lives for good, one per distinct text (a
// program has few: function x peer x tag). Only the MPI thread inserts, and map nodes never move.
const MpiCallSite* wait_site(const std::string& text, int line) {
  CHAINER_ASSERT(text.find('(') == std::string::npos, "the watchdog cuts a call's text at '(': ", text);
  static std::map<std::string, MpiCallSite> sites;
  auto [it, fresh] = sites.try_emplace(text);
  if (fresh) it->second = {it->first.c_str(), __FILE__, line};
  return &it->second;
}

// CHAINERMN_MPI_CHECK(call) for a call that waits on a peer, watched under TEXT (see wait_site).
template <class Call>
void check_waiting(const char* call_name, const std::string& text, int line, Call&& call) {
  int rc;
  {
    const chainermn::detail::WatchedMpiCall watch(wait_site(text, line));
    rc = call();
  }
  if (rc != MPI_SUCCESS) throw_mpi_error(rc, call_name, __FILE__, line);
}

// Non-blocking sends in flight and the buffers they read. Unwinding from an error before they
// complete, MPI finishes them on its own and the buffers are kept for good (as Communicator's
// Outbox does; the job is normally about to end anyway).
struct InFlight {
  std::vector<int64_t> header;
  Tensor host;
  std::vector<MPI_Request> requests;
  ~InFlight() {
    if (requests.empty()) return;
    for (MPI_Request& r : requests)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    new std::pair<std::vector<int64_t>, Tensor>(std::move(header), std::move(host));
  }
};

}  // namespace

void check_peer(const std::shared_ptr<Communicator>& comm, int peer, const char* op) {
  if (!comm) throw Error(str(op, ": the communicator is null"));
  if (peer < 0 || peer >= comm->size())
    throw Error(str(op, ": rank ", peer, " is outside [0, ", comm->size(), ") (the communicator has ", comm->size(),
                    " processes)"));
  if (peer == comm->rank())
    throw Error(str(op, ": rank ", peer, " is this process's own rank; the peer must be another rank (a process "
                    "talking to itself would wait forever in backward)"));
}

void send_message(const Communicator& comm, int peer, MessageKind kind, int tag, const Tensor& t) {
  CHAINER_ASSERT(t.defined(), sender(kind), " sends a defined tensor");
  const MPI_Comm c = comm.functions_comm();
  InFlight out;
  out.host = t.to(chainer::Device::cpu()).contiguous();
  out.header = {kMagic, int64_t(kind), tag, int64_t(t.dtype()), t.ndim()};
  out.header.insert(out.header.end(), t.shape().begin(), t.shape().end());
  MPI_Request req;
  // As bytes, like the data chunks: the receiver probes its length in bytes.
  CHAINERMN_MPI_CHECK(MPI_Isend(out.header.data(), int(out.header.size() * sizeof(int64_t)), MPI_BYTE, peer, kMpiTag,
                                c, &req));
  out.requests.push_back(req);
  chainermn::detail::isend_chunked(out.host.raw_data(), out.host.nbytes(), peer, kMpiTag, c, out.requests);
  check_waiting("MPI_Waitall", str("MPI_Waitall for rank ", peer, " of ", comm.size(), " to receive the ", noun(kind),
                                   " that ", sender(kind), " sends with tag ", tag),
                __LINE__, [&] { return mpi::wait_all(int(out.requests.size()), out.requests.data(), MPI_STATUSES_IGNORE); });
  out.requests.clear();
}

Tensor recv_message(const Communicator& comm, int peer, const ExpectedMessage& expected) {
  const MPI_Comm c = comm.functions_comm();
  const MessageKind kind = expected.kind;
  MPI_Message msg;
  MPI_Status status;
  check_waiting("MPI_Mprobe", str("MPI_Mprobe for the ", noun(kind), " that ", receiver(kind), " expects from rank ",
                                  peer, " of ", comm.size(), " with tag ", expected.tag),
                __LINE__, [&] { return mpi::mprobe(peer, kMpiTag, c, &msg, &status); });
  int bytes = 0;
  CHAINERMN_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &bytes));
  std::vector<int64_t> h(size_t(bytes) / sizeof(int64_t) + 1, 0);
  CHAINERMN_MPI_CHECK(MPI_Mrecv(h.data(), bytes, MPI_BYTE, &msg, &status));
  h.resize(size_t(bytes) / sizeof(int64_t));
  // Only this file writes on functions_comm(), so a malformed header is our bug, not the user's.
  CHAINER_ASSERT(bytes % int(sizeof(int64_t)) == 0 && h.size() >= kHeaderFixed && h[0] == kMagic &&
                     (h[1] == int64_t(MessageKind::Value) || h[1] == int64_t(MessageKind::Gradient)) && h[3] >= 0 &&
                     h[3] < chainer::kDTypeCount && int64_t(h.size()) == int64_t(kHeaderFixed) + h[4],
                 receiver(kind), ": malformed header of ", bytes, " bytes from rank ", peer);
  const MessageKind got_kind = MessageKind(h[1]);
  const int64_t got_tag = h[2];
  const DType dtype = DType(h[3]);
  const Shape shape(h.begin() + kHeaderFixed, h.end());
  // Received whole before any check, so that a message found wrong leaves the channel in step.
  Tensor t = Tensor::empty(shape, dtype);
  chainermn::detail::recv_chunked(t.raw_data(), t.nbytes(), peer, kMpiTag, c);

  const std::string here = str(receiver(kind), ": rank ", comm.rank(), " expected ",
                               kind == MessageKind::Value ? "a tensor" : "the gradient of x");
  const std::string out_of_step = str(" (the messages between two ranks are received in the order they were sent, "
                                      "whatever their tags: the sends and recvs of ranks ", peer, " and ", comm.rank(),
                                      " are out of step: does every stage run the same steps, its Evaluator "
                                      "included?)");
  if (got_kind != kind)
    throw Error(str(here, " from rank ", peer, " with tag ", expected.tag, ", but the next message from rank ", peer,
                    " is the ", noun(got_kind), " that ", sender(got_kind), " sent with tag ", got_tag, out_of_step));
  if (got_tag != expected.tag)
    throw Error(str(here, " with tag ", expected.tag, " from rank ", peer, ", but the next message from rank ", peer,
                    " has tag ", got_tag, out_of_step));
  const bool shape_ok = !expected.shape || *expected.shape == shape;
  const bool dtype_ok = !expected.dtype || *expected.dtype == dtype;
  if (!shape_ok || !dtype_ok) {
    const std::string want = expected.shape && expected.dtype ? signature(*expected.dtype, *expected.shape)
                             : expected.shape                 ? str("shape ", chainer::shape_str(*expected.shape))
                                                              : str("dtype ", chainer::dtype_name(*expected.dtype));
    throw Error(str(here, " of ", want, " from rank ", peer, " with tag ", expected.tag, ", but rank ", peer, " sent ",
                    signature(dtype, shape)));
  }
  return t;
}

}  // namespace chainermn::functions::detail
