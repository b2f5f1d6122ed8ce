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
constexpr size_t kHeaderFixed = 4;      // magic, kind, tag, count; then dtype, ndim and the extents of each tensor

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
  std::vector<Tensor> host;
  std::vector<MPI_Request> requests;
  ~InFlight() {
    if (requests.empty()) return;
    for (MPI_Request& r : requests)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    new std::pair<std::vector<int64_t>, std::vector<Tensor>>(std::move(header), std::move(host));
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

void send_message(const Communicator& comm, int peer, MessageKind kind, int tag, const std::vector<Tensor>& ts) {
  CHAINER_ASSERT(!ts.empty(), sender(kind), " sends at least one tensor");
  const MPI_Comm c = comm.functions_comm();
  InFlight out;
  out.header = {kMagic, int64_t(kind), tag, int64_t(ts.size())};
  for (const Tensor& t : ts) {
    CHAINER_ASSERT(t.defined(), sender(kind), " sends defined tensors");
    out.host.push_back(t.to(chainer::Device::cpu()).contiguous());
    out.header.push_back(int64_t(t.dtype()));
    out.header.push_back(t.ndim());
    out.header.insert(out.header.end(), t.shape().begin(), t.shape().end());
  }
  MPI_Request req;
  // As bytes, like the data chunks: the receiver probes its length in bytes.
  CHAINERMN_MPI_CHECK(MPI_Isend(out.header.data(), int(out.header.size() * sizeof(int64_t)), MPI_BYTE, peer, kMpiTag,
                                c, &req));
  out.requests.push_back(req);
  for (const Tensor& host : out.host)
    chainermn::detail::isend_chunked(host.raw_data(), host.nbytes(), peer, kMpiTag, c, out.requests);
  const std::string what = ts.size() == 1 ? str("the ", noun(kind)) : str("the ", ts.size(), " ", noun(kind), "s");
  check_waiting("MPI_Waitall", str("MPI_Waitall for rank ", peer, " of ", comm.size(), " to receive ", what, " that ",
                                   sender(kind), " sends with tag ", tag),
                __LINE__, [&] { return mpi::wait_all(int(out.requests.size()), out.requests.data(), MPI_STATUSES_IGNORE); });
  out.requests.clear();
}

std::vector<Tensor> recv_message(const Communicator& comm, int peer, const ExpectedMessage& expected) {
  const MPI_Comm c = comm.functions_comm();
  const MessageKind kind = expected.kind;
  const std::optional<size_t> want_count = expected.each.empty() ? expected.count : std::optional(expected.each.size());
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
  const auto malformed = [&] { return str(receiver(kind), ": malformed header of ", bytes, " bytes from rank ", peer); };
  CHAINER_ASSERT(bytes % int(sizeof(int64_t)) == 0 && h.size() >= kHeaderFixed && h[0] == kMagic &&
                     (h[1] == int64_t(MessageKind::Value) || h[1] == int64_t(MessageKind::Gradient)) && h[3] >= 1,
                 malformed());
  const MessageKind got_kind = MessageKind(h[1]);
  const int64_t got_tag = h[2];
  const size_t got_count = size_t(h[3]);
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (size_t at = kHeaderFixed; dtypes.size() < got_count;) {
    CHAINER_ASSERT(at + 2 <= h.size() && h[at] >= 0 && h[at] < chainer::kDTypeCount && h[at + 1] >= 0 &&
                       at + 2 + size_t(h[at + 1]) <= h.size(),
                   malformed());
    dtypes.push_back(DType(h[at]));
    shapes.emplace_back(h.begin() + int64_t(at) + 2, h.begin() + int64_t(at) + 2 + h[at + 1]);
    at += 2 + size_t(h[at + 1]);
    CHAINER_ASSERT(dtypes.size() < got_count || at == h.size(), malformed());
  }
  // Received whole before any check, so that a message found wrong leaves the channel in step.
  std::vector<Tensor> ts;
  for (size_t i = 0; i < got_count; ++i) {
    ts.push_back(Tensor::empty(shapes[i], dtypes[i]));
    chainermn::detail::recv_chunked(ts.back().raw_data(), ts.back().nbytes(), peer, kMpiTag, c);
  }

  const bool single = want_count == size_t(1);
  std::string subject = single ? "the gradient of x" : "the gradients of xs";
  if (kind == MessageKind::Value) subject = single ? "a tensor" : want_count ? str(*want_count, " tensors") : "tensors";
  const std::string here = str(receiver(kind), ": rank ", comm.rank(), " expected ", subject);
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
  if (want_count && *want_count != got_count)
    throw Error(str(here, " from rank ", peer, " with tag ", expected.tag, ", but rank ", peer, " sent ", got_count,
                    got_count == 1 ? " tensor" : " tensors",
                    single && kind == MessageKind::Value ? " (several variables sent at once: receive them with "
                                                           "recv(..., force_tuple))"
                                                         : ""));
  for (size_t i = 0; i < got_count; ++i) {
    const ExpectedTensor& want = expected.each.empty() ? expected.all : expected.each[i];
    const bool shape_ok = !want.shape || *want.shape == shapes[i];
    const bool dtype_ok = !want.dtype || *want.dtype == dtypes[i];
    if (shape_ok && dtype_ok) continue;
    const std::string wanted = want.shape && want.dtype ? signature(*want.dtype, *want.shape)
                               : want.shape             ? str("shape ", chainer::shape_str(*want.shape))
                                                        : str("dtype ", chainer::dtype_name(*want.dtype));
    if (got_count == 1)
      throw Error(str(here, " of ", wanted, " from rank ", peer, " with tag ", expected.tag, ", but rank ", peer,
                      " sent ", signature(dtypes[i], shapes[i])));
    throw Error(str(here, " from rank ", peer, " with tag ", expected.tag, ", member ", i, " of ", wanted, ", but rank ",
                    peer, " sent ", signature(dtypes[i], shapes[i]), " as member ", i, " of ", got_count));
  }
  return ts;
}

}  // namespace chainermn::functions::detail
