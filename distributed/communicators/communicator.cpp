#include "distributed/communicators/communicator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <string_view>

#include "core/util/config.h"
#include "core/ops/ops.h"
#include "distributed/runtime/chunked_transfer.h"
#include "distributed/communicators/packing.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn {

using chainer::DType;
using chainer::Error;
using chainer::Shape;
using chainer::str;
using chainer::Variable;

namespace {

// First element of every header, so a receiver that expects a tensor and finds a byte string
// (or a data chunk: sender and receiver out of step) says so instead of misreading it.
constexpr int64_t kTensorMagic = 0x636d6e54;  // "cmnT"
constexpr int64_t kBytesMagic = 0x636d6e42;   // "cmnB"
constexpr int64_t kUndefined = -1;            // dtype code of an undefined tensor

// Tags of the collectives built on point-to-point messages; they only travel on coll_comm_.
constexpr int kGatherTag = 1, kAllgatherTag = 2, kScatterTag = 3, kAlltoallTag = 4, kGatherBytesTag = 5,
              kAllgatherBytesTag = 6;

std::string describe(const Tensor& t) {
  return t.defined() ? str(chainer::dtype_name(t.dtype()), " ", chainer::shape_str(t.shape())) : "undefined";
}

// A copy of T in host memory, where MPI reads and writes (GPU tensors are staged through it).
Tensor fresh(const Tensor& t) { return !t.defined() ? Tensor() : t.device().is_cpu() ? t.clone() : t.to(chainer::Device::cpu()); }


std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// Non-blocking sends in flight: their headers and data stay here until wait().
class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox() {
    if (requests_.empty()) return;
    // Unwinding from an error with sends still in flight: let MPI finish them on its own and
    // keep their buffers alive for good (the job is normally about to end anyway).
    for (MPI_Request& r : requests_) MPI_Request_free(&r);
    new Keep{std::move(headers_), std::move(tensors_)};
  }

  // TENSOR must be contiguous or undefined.
  void post_tensor(const Tensor& t, int dest, int tag, MPI_Comm comm) {
    std::vector<int64_t>& h = headers_.emplace_back();
    h = {kTensorMagic, t.defined() ? int64_t(t.dtype()) : kUndefined, t.ndim()};
    h.insert(h.end(), t.shape().begin(), t.shape().end());
    post_header(h, dest, tag, comm);
    if (!t.defined()) return;
    const Tensor& host = tensors_.emplace_back(t.to(chainer::Device::cpu()));
    detail::isend_chunked(host.raw_data(), host.nbytes(), dest, tag, comm, requests_);
  }
  // BYTES must outlive wait().
  void post_bytes(const std::string& bytes, int dest, int tag, MPI_Comm comm) {
    std::vector<int64_t>& h = headers_.emplace_back();
    h = {kBytesMagic, int64_t(bytes.size())};
    post_header(h, dest, tag, comm);
    detail::isend_chunked(bytes.data(), bytes.size(), dest, tag, comm, requests_);
  }
  void wait() { detail::wait_all(requests_); }

 private:
  struct Keep {
    std::deque<std::vector<int64_t>> headers;
    std::vector<Tensor> tensors;
  };
  void post_header(const std::vector<int64_t>& h, int dest, int tag, MPI_Comm comm) {
    MPI_Request req;
    // As bytes, like the data chunks: the receiver probes its length in bytes.
    CHAINERMN_MPI_CHECK(MPI_Isend(h.data(), int(h.size() * sizeof(int64_t)), MPI_BYTE, dest, tag, comm, &req));
    requests_.push_back(req);
  }
  std::deque<std::vector<int64_t>> headers_;  // a deque: posted headers never move
  std::vector<Tensor> tensors_;
  std::vector<MPI_Request> requests_;
};

// Receives the next header from SOURCE (MPI_ANY_SOURCE allowed) with TAG (MPI_ANY_TAG allowed),
// checks that it starts with MAGIC, and fills STATUS with the actual source and tag.
std::vector<int64_t> recv_header(int source, int tag, MPI_Comm comm, int64_t magic, const char* what,
                                 MPI_Status& status) {
  MPI_Message msg;
  CHAINERMN_MPI_CHECK(mpi::mprobe(source, tag, comm, &msg, &status));
  int bytes = 0;
  CHAINERMN_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &bytes));
  std::vector<int64_t> h(size_t(bytes) / sizeof(int64_t) + 1, 0);
  CHAINERMN_MPI_CHECK(MPI_Mrecv(h.data(), bytes, MPI_BYTE, &msg, &status));
  const bool ok = bytes % int(sizeof(int64_t)) == 0 && bytes >= int(2 * sizeof(int64_t)) && h[0] == magic;
  if (!ok)
    throw Error(str(what, ": the message from rank ", status.MPI_SOURCE, " with tag ", status.MPI_TAG, " is not a ",
                    magic == kTensorMagic ? "tensor" : "byte string",
                    " (the sender sent something else: are sender and receiver out of step?)"));
  h.resize(size_t(bytes) / sizeof(int64_t));
  return h;
}

Tensor recv_tensor(int source, int tag, MPI_Comm comm, const char* what) {
  MPI_Status status;
  const std::vector<int64_t> h = recv_header(source, tag, comm, kTensorMagic, what, status);
  const int64_t dtype = h[1];
  if (h.size() < 3 || int64_t(h.size()) != 3 + h[2] || dtype < kUndefined || dtype >= chainer::kDTypeCount)
    throw Error(str(what, ": malformed tensor header from rank ", status.MPI_SOURCE));
  if (dtype == kUndefined) return {};
  const Shape shape(h.begin() + 3, h.end());
  Tensor t = Tensor::empty(shape, DType(dtype));
  detail::recv_chunked(t.raw_data(), t.nbytes(), status.MPI_SOURCE, status.MPI_TAG, comm);
  return t;
}

std::string recv_byte_string(int source, int tag, MPI_Comm comm, const char* what) {
  MPI_Status status;
  const std::vector<int64_t> h = recv_header(source, tag, comm, kBytesMagic, what, status);
  if (h.size() != 2 || h[1] < 0) throw Error(str(what, ": malformed byte-string header from rank ", status.MPI_SOURCE));
  std::string out(size_t(h[1]), '\0');
  detail::recv_chunked(out.data(), out.size(), status.MPI_SOURCE, status.MPI_TAG, comm);
  return out;
}

// FNV-1a over the extents: a cheap fingerprint of a shape for the consistency check.
int64_t shape_fingerprint(const Shape& shape) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t e : shape) {
    h ^= uint64_t(e);
    h *= 1099511628211ull;
  }
  return int64_t(h >> 1);
}

// What a rank says about one parameter, for comparisons across ranks: {dtype, extents...} of
// what it holds, or {-1} for nothing.
std::vector<int64_t> signature(const Tensor& t) {
  if (!t.defined()) return {kUndefined};
  std::vector<int64_t> s{int64_t(t.dtype())};
  s.insert(s.end(), t.shape().begin(), t.shape().end());
  return s;
}

std::string signature_text(const std::vector<int64_t>& s, const char* nothing) {
  if (s.empty() || s[0] < 0) return nothing;
  return str(chainer::dtype_name(DType(s[0])), " ", chainer::shape_str(Shape(s.begin() + 1, s.end())));
}

// Throws naming OP when WIRE cannot carry gradients.
void check_wire_dtype(std::optional<DType> wire, const char* op) {
  if (wire && !chainer::is_floating(*wire))
    throw Error(str(op, ": allreduce_grad_dtype ", chainer::dtype_name(*wire),
                    " cannot carry gradients (valid: float16, bfloat16, float32, float64, or unset for each "
                    "gradient's own dtype)"));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Communicator::Communicator(std::string name, MPI_Comm comm, CommunicatorOptions options)
    : name_(std::move(name)), options_(std::move(options)), debug_(chainer::config::env_flag("CHAINERMN_DEBUG", false)) {
  if (!mpi_is_running()) init_mpi();
  if (comm == MPI_COMM_NULL) throw Error("create_communicator: the MPI communicator is MPI_COMM_NULL");
  check_wire_dtype(options_.allreduce_grad_dtype, "create_communicator");
  try {
    CHAINERMN_MPI_CHECK(mpi::comm_dup(comm, &comm_));
    CHAINERMN_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    CHAINERMN_MPI_CHECK(mpi::comm_dup(comm_, &coll_comm_));
    CHAINERMN_MPI_CHECK(MPI_Comm_set_errhandler(coll_comm_, MPI_ERRORS_RETURN));
    CHAINERMN_MPI_CHECK(mpi::comm_dup(comm_, &functions_comm_));
    CHAINERMN_MPI_CHECK(MPI_Comm_set_errhandler(functions_comm_, MPI_ERRORS_RETURN));
    CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    CHAINERMN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    host_names_ = allgather_host_names(comm_);
    topology_ = compute_topology(host_names_, rank_);
  } catch (...) {
    finalize();
    throw;
  }
}

Communicator::~Communicator() {
  if (mpi_is_running()) finalize();
}

void Communicator::finalize() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (coll_comm_ != MPI_COMM_NULL) MPI_Comm_free(&coll_comm_);
  if (sum_comm_ != MPI_COMM_NULL) MPI_Comm_free(&sum_comm_);
  if (functions_comm_ != MPI_COMM_NULL) MPI_Comm_free(&functions_comm_);
  comm_ = coll_comm_ = sum_comm_ = functions_comm_ = MPI_COMM_NULL;
}

MPI_Comm Communicator::comm() const {
  if (comm_ == MPI_COMM_NULL) throw Error(str("communicator '", name_, "' used after finalize()"));
  return comm_;
}

MPI_Comm Communicator::coll() const {
  comm();
  return coll_comm_;
}

MPI_Comm Communicator::functions_comm() const {
  comm();
  return functions_comm_;
}

std::unique_ptr<PendingSum> Communicator::start_sum(Tensor& buf) const {
  if (sum_comm_ == MPI_COMM_NULL) {
    CHAINERMN_MPI_CHECK(mpi::comm_dup(comm(), &sum_comm_));
    CHAINERMN_MPI_CHECK(MPI_Comm_set_errhandler(sum_comm_, MPI_ERRORS_RETURN));
  }
  return start_mpi_sum(buf, sum_comm_);
}

// ---- Settings ----

namespace {
const char* kind_of(const ConfigValue& v) {
  return std::holds_alternative<bool>(v) ? "a bool" : std::holds_alternative<DType>(v) ? "a dtype" : "none";
}
std::string known_configs() {
  std::string out;
  for (const std::string& n : Communicator::config_names()) out += str(out.empty() ? "" : ", ", n);
  return out;
}
}  // namespace

std::vector<std::string> Communicator::config_names() { return {"allreduce_grad_dtype", "batched_copy"}; }

void Communicator::set_config(const std::string& name, const ConfigValue& value) {
  if (name == "allreduce_grad_dtype") {
    if (std::holds_alternative<bool>(value))
      throw Error(str("set_config: 'allreduce_grad_dtype' takes a floating dtype or none, got a bool"));
    const std::optional<DType> wire =
        std::holds_alternative<DType>(value) ? std::optional<DType>(std::get<DType>(value)) : std::nullopt;
    check_wire_dtype(wire, "set_config");
    options_.allreduce_grad_dtype = wire;
  } else if (name == "batched_copy") {
    if (!std::holds_alternative<bool>(value))
      throw Error(str("set_config: 'batched_copy' takes a bool, got ", kind_of(value)));
    options_.batched_copy = std::get<bool>(value);
  } else {
    throw Error(str("set_config: unknown config '", name, "'; known: ", known_configs()));
  }
}

ConfigValue Communicator::get_config(const std::string& name) const {
  if (name == "allreduce_grad_dtype")
    return options_.allreduce_grad_dtype ? ConfigValue(*options_.allreduce_grad_dtype) : ConfigValue();
  if (name == "batched_copy") return options_.batched_copy;
  throw Error(str("get_config: unknown config '", name, "'; known: ", known_configs()));
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) const {
  MPI_Comm sub = MPI_COMM_NULL;
  CHAINERMN_MPI_CHECK(MPI_Comm_split(comm(), color, key, &sub));
  if (sub == MPI_COMM_NULL) return nullptr;
  std::shared_ptr<Communicator> c;
  try {
    c = create_communicator(name_, sub, options_);
  } catch (...) {
    MPI_Comm_free(&sub);
    throw;
  }
  MPI_Comm_free(&sub);
  c->set_debug(debug_);
  return c;
}

// ---- Tensors ----

void Communicator::send(const Tensor& x, int dest, int tag) const {
  Outbox box;
  box.post_tensor(x.defined() ? x.contiguous() : x, dest, tag, comm());
  box.wait();
}

Tensor Communicator::recv(int source, int tag) const { return recv_tensor(source, tag, comm(), "recv"); }

Tensor Communicator::bcast(const Tensor& x, int root) const {
  const MPI_Comm c = comm();
  const bool is_root = rank_ == root;
  int64_t meta[2] = {kUndefined, 0};
  if (is_root && x.defined()) {
    meta[0] = int64_t(x.dtype());
    meta[1] = x.ndim();
  }
  CHAINERMN_MPI_CHECK(mpi::bcast(meta, 2, MPI_INT64_T, root, c));
  if (meta[0] == kUndefined) return {};
  Shape shape = is_root ? x.shape() : Shape(size_t(meta[1]), 0);
  if (meta[1] > 0) CHAINERMN_MPI_CHECK(mpi::bcast(shape.data(), int(meta[1]), MPI_INT64_T, root, c));
  Tensor out = is_root ? fresh(x) : Tensor::empty(shape, DType(meta[0]));
  detail::bcast_chunked(out.raw_data(), out.nbytes(), root, c);
  return out;
}

std::vector<Tensor> Communicator::gather(const Tensor& x, int root) const {
  const MPI_Comm c = coll();
  std::vector<Tensor> out;
  if (rank_ != root) {
    Outbox box;
    box.post_tensor(x.defined() ? x.contiguous() : x, root, kGatherTag, c);
    box.wait();
    return out;
  }
  out.resize(size_t(size_));
  for (int r = 0; r < size_; ++r) out[size_t(r)] = r == root ? fresh(x) : recv_tensor(r, kGatherTag, c, "gather");
  return out;
}

std::vector<Tensor> Communicator::allgather(const Tensor& x) const {
  const MPI_Comm c = coll();
  const Tensor mine = x.defined() ? x.contiguous() : x;
  Outbox box;
  for (int r = 0; r < size_; ++r)
    if (r != rank_) box.post_tensor(mine, r, kAllgatherTag, c);
  std::vector<Tensor> out(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) out[size_t(r)] = r == rank_ ? fresh(x) : recv_tensor(r, kAllgatherTag, c, "allgather");
  box.wait();
  return out;
}

Tensor Communicator::allreduce(const Tensor& x) const {
  const MPI_Comm c = comm();
  // Every rank must pass the same dtype and shape: compare fingerprints (max of v and of -v).
  const int64_t local[4] = {x.defined() ? int64_t(x.dtype()) : kUndefined, x.defined() ? x.ndim() : 0,
                            x.defined() ? x.numel() : 0, x.defined() ? shape_fingerprint(x.shape()) : 0};
  int64_t both[8];
  for (int i = 0; i < 4; ++i) both[i] = local[i], both[i + 4] = -local[i];
  CHAINERMN_MPI_CHECK(mpi::allreduce(MPI_IN_PLACE, both, 8, MPI_INT64_T, MPI_MAX, c));
  bool same = true;
  for (int i = 0; i < 4; ++i) same = same && both[i] == -both[i + 4];
  if (!same) {
    const std::vector<std::string> all = allgather_obj(describe(x));
    std::string msg = "allreduce: every rank must pass the same dtype and shape, but";
    for (int r = 0; r < size_; ++r) msg += str(r ? "," : "", " rank ", r, " has ", all[size_t(r)]);
    throw Error(msg);
  }
  if (!x.defined()) return {};
  if (x.dtype() == DType::UInt8)
    throw Error("allreduce: dtype uint8 cannot be summed (use float32, float64, int32 or int64)");
  Tensor out = fresh(x);
  detail::allreduce_sum_chunked(out.raw_data(), out.numel(), out.dtype(), c);
  return out;
}

Tensor Communicator::scatter(const std::vector<Tensor>& xs, int root) const {
  const MPI_Comm c = comm();
  int64_t count = rank_ == root ? int64_t(xs.size()) : 0;
  CHAINERMN_MPI_CHECK(mpi::bcast(&count, 1, MPI_INT64_T, root, c));
  if (count != size_)
    throw Error(str("scatter: the root (rank ", root, ") passed ", count, " tensors for ", size_,
                    " ranks (one per rank is needed)"));
  const MPI_Comm c2 = coll();
  if (rank_ != root) return recv_tensor(root, kScatterTag, c2, "scatter");
  Outbox box;
  for (int r = 0; r < size_; ++r) {
    const Tensor& t = xs[size_t(r)];
    if (r != root) box.post_tensor(t.defined() ? t.contiguous() : t, r, kScatterTag, coll_comm_);
  }
  Tensor mine = fresh(xs[size_t(root)]);
  box.wait();
  return mine;
}

std::vector<Tensor> Communicator::alltoall(const std::vector<Tensor>& xs) const {
  const MPI_Comm c = coll();
  if (int64_t(xs.size()) != size_)
    throw Error(str("alltoall: rank ", rank_, " passed ", xs.size(), " tensors for ", size_, " ranks (one per rank is needed)"));
  Outbox box;
  for (int r = 0; r < size_; ++r) {
    const Tensor& t = xs[size_t(r)];
    if (r != rank_) box.post_tensor(t.defined() ? t.contiguous() : t, r, kAlltoallTag, c);
  }
  std::vector<Tensor> out(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r)
    out[size_t(r)] = r == rank_ ? fresh(xs[size_t(r)]) : recv_tensor(r, kAlltoallTag, c, "alltoall");
  box.wait();
  return out;
}

// ---- Byte strings ----

void Communicator::send_bytes(const std::string& bytes, int dest, int tag) const {
  Outbox box;
  box.post_bytes(bytes, dest, tag, comm());
  box.wait();
}

std::string Communicator::recv_bytes(int source, int tag) const {
  return recv_byte_string(source, tag, comm(), "recv_bytes");
}

std::string Communicator::bcast_bytes(const std::string& bytes, int root) const {
  const MPI_Comm c = comm();
  int64_t n = rank_ == root ? int64_t(bytes.size()) : 0;
  CHAINERMN_MPI_CHECK(mpi::bcast(&n, 1, MPI_INT64_T, root, c));
  std::string out = rank_ == root ? bytes : std::string(size_t(n), '\0');
  detail::bcast_chunked(out.data(), out.size(), root, c);
  return out;
}

std::vector<std::string> Communicator::gather_bytes(const std::string& bytes, int root) const {
  const MPI_Comm c = coll();
  std::vector<std::string> out;
  if (rank_ != root) {
    Outbox box;
    box.post_bytes(bytes, root, kGatherBytesTag, c);
    box.wait();
    return out;
  }
  out.resize(size_t(size_));
  for (int r = 0; r < size_; ++r)
    out[size_t(r)] = r == root ? bytes : recv_byte_string(r, kGatherBytesTag, c, "gather_bytes");
  return out;
}

std::vector<std::string> Communicator::allgather_bytes(const std::string& bytes) const {
  const MPI_Comm c = coll();
  Outbox box;
  for (int r = 0; r < size_; ++r)
    if (r != rank_) box.post_bytes(bytes, r, kAllgatherBytesTag, c);
  std::vector<std::string> out(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r)
    out[size_t(r)] = r == rank_ ? bytes : recv_byte_string(r, kAllgatherBytesTag, c, "allgather_bytes");
  box.wait();
  return out;
}

// ---- Models ----

void Communicator::bcast_data(chainer::Link& model) const {
  const MPI_Comm c = comm();
  const auto params = model.namedparams();
  using Entry = std::pair<std::string, std::vector<int64_t>>;  // name, signature of the data
  std::vector<Entry> mine;
  std::map<std::string, Variable> by_name;
  for (const auto& [n, p] : params) {
    mine.emplace_back(n, signature(p.data()));
    by_name.emplace(n, p);
  }
  const std::vector<Entry> root = bcast_obj(mine, 0);

  // Every rank compares its model with rank 0's; then all ranks learn every rank's findings, so
  // they all throw the same error (or none).
  std::string problems;
  auto note = [&](const std::string& s) { problems += (problems.empty() ? "" : "; ") + s; };
  if (rank_ != 0) {
    std::map<std::string, std::vector<int64_t>> root_by_name(root.begin(), root.end());
    for (const auto& [n, sig] : root)
      if (!by_name.count(n)) note(str("parameter ", n, " exists on rank 0 but not here"));
    for (const auto& [n, sig] : mine) {
      auto it = root_by_name.find(n);
      if (it == root_by_name.end()) {
        note(str("parameter ", n, " exists here but not on rank 0"));
      } else if ((it->second[0] == kUndefined) != (sig[0] == kUndefined)) {
        note(str("parameter ", n, " is initialized ", sig[0] == kUndefined ? "on rank 0 but not here" : "here but not on rank 0",
                 " (run a forward pass, or give the link its input size, on every rank before bcast_data)"));
      } else if (sig != it->second) {
        note(str("parameter ", n, " is ", signature_text(sig, ""), " here but ", signature_text(it->second, ""),
                 " on rank 0"));
      }
    }
  }
  const std::vector<std::string> all = allgather_obj(problems);
  std::string msg;
  for (int r = 0; r < size_; ++r)
    if (!all[size_t(r)].empty()) msg += str("\n  rank ", r, ": ", all[size_t(r)]);
  if (!msg.empty()) throw Error("bcast_data: the model differs across ranks:" + msg);

  for (const auto& [n, sig] : root) {
    if (sig[0] == kUndefined) continue;
    Tensor data = by_name.at(n).data();
    // In place where MPI can reach the values (contiguous, in host memory or CUDA-aware MPI);
    // otherwise through a copy, written back on the receivers.
    Tensor t = mpi_accessible(data.contiguous());
    detail::bcast_chunked(t.raw_data(), t.nbytes(), 0, c);
    if (rank_ != 0 && t.storage() != data.storage()) data.copy_(t);
  }
}

void Communicator::multi_node_mean_grad(chainer::Link& model, bool zero_fill) const {
  comm();
  if (debug_) check_grads_consistent(model, zero_fill, "multi_node_mean_grad");
  GradList grads;
  for (const auto& [n, p] : model.unique_namedparams()) {  // a tied parameter once
    const Tensor& data = p.data();
    if (!data.defined()) continue;
    Variable v = p;
    Tensor g = p.grad();
    if (!g.defined()) {
      if (!zero_fill) continue;
      v.set_grad(Tensor::zeros(data.shape(), data.dtype(), data.device()));
    } else {
      if (g.shape() != data.shape())
        throw Error(str("multi_node_mean_grad: the gradient of ", n, " has shape ", chainer::shape_str(g.shape()),
                        " but the parameter has shape ", chainer::shape_str(data.shape())));
      if (!chainer::is_floating(g.dtype()))
        throw Error(str("multi_node_mean_grad: the gradient of ", n, " is ", chainer::dtype_name(g.dtype()),
                        "; only float16, bfloat16, float32 and float64 gradients can be averaged"));
      if (!g.is_contiguous()) v.set_grad(g.contiguous());
    }
    grads.emplace_back(n, v);
  }
  mean_grads(grads);
  if (debug_) check_grads_finite(grads, "multi_node_mean_grad");
}

void Communicator::check_grads_consistent(const chainer::Link& model, bool zero_fill, const char* op) const {
  // What each rank is about to reduce: the gradient's dtype and shape, or nothing.
  using Entry = std::pair<std::string, std::vector<int64_t>>;
  std::vector<Entry> mine;
  for (const auto& [n, p] : model.namedparams()) {
    const Tensor& data = p.data();
    const Tensor& g = p.grad();
    mine.emplace_back(n, !data.defined() ? signature(Tensor()) : g.defined() ? signature(g)
                                                         : zero_fill ? signature(data) : signature(Tensor()));
  }
  const std::vector<std::vector<Entry>> all = allgather_obj(mine);
  // name -> per rank: what it reduces ("absent" when it has no such parameter)
  std::map<std::string, std::vector<std::string>> table;
  for (int r = 0; r < size_; ++r)
    for (const auto& [n, sig] : all[size_t(r)]) {
      auto& row = table.try_emplace(n, std::vector<std::string>(size_t(size_), "no such parameter")).first->second;
      row[size_t(r)] = signature_text(sig, "no gradient");
    }
  std::string msg;
  for (const auto& [n, row] : table) {
    std::vector<std::pair<std::string, std::vector<int>>> groups;  // in order of first rank
    for (int r = 0; r < size_; ++r) {
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == row[size_t(r)]; });
      if (it == groups.end())
        groups.push_back({row[size_t(r)], {r}});
      else
        it->second.push_back(r);
    }
    if (groups.size() < 2) continue;
    msg += str("\n  parameter ", n, " differs across ranks:");
    for (size_t i = 0; i < groups.size(); ++i)
      msg += str(i ? ";" : "", " ", groups[i].first, " on ", rank_list(groups[i].second));
  }
  if (!msg.empty())
    throw Error(str(op, " (debug mode): the gradients to average differ across ranks "
                    "(use zero_fill, or make every rank compute the same gradients):", msg));
}

void Communicator::check_grads_finite(const chainer::Link& model, const char* op) {
  GradList grads;
  for (const auto& [n, p] : model.namedparams())
    if (p.grad().defined()) grads.emplace_back(n, p);
  check_grads_finite(grads, op);
}

void Communicator::check_params_consistent(const chainer::Link& model, const std::string& op, int64_t group) const {
  check_params_consistent(model.namedparams(), op, group);
}

void Communicator::check_params_consistent(const std::vector<std::pair<std::string, chainer::Variable>>& params,
                                           const std::string& op, int64_t group) const {
  // What each rank holds: per parameter its signature and, when initialized, a hash of its
  // bytes (equal values have equal bytes: the ranks of one job run one build).
  using Entry = std::pair<std::string, std::vector<int64_t>>;
  std::pair<int64_t, std::vector<Entry>> mine{group, {}};
  for (const auto& [n, p] : params) {
    std::vector<int64_t> sig = signature(p.data());
    if (p.data().defined()) {
      const Tensor host = p.data().device().is_cpu() ? p.data().contiguous() : p.data().to(chainer::Device::cpu());
      const std::string_view bytes(static_cast<const char*>(host.raw_data()), size_t(host.nbytes()));
      sig.push_back(int64_t(std::hash<std::string_view>{}(bytes)));
    }
    mine.second.emplace_back(n, std::move(sig));
  }
  const auto all = allgather_obj(mine);
  auto text = [](const std::vector<int64_t>& sig) {
    if (sig[0] == kUndefined) return std::string("not initialized");
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(sig.back()));
    return str(signature_text(std::vector<int64_t>(sig.begin(), sig.end() - 1), ""), " with values #", hash);
  };
  // Per group of ranks, in order of the group's first rank: name -> per rank what it holds.
  std::vector<std::string> lines;
  std::vector<bool> done(size_t(size_), false);
  for (int first = 0; first < size_; ++first) {
    if (done[size_t(first)]) continue;
    std::vector<int> ranks;
    for (int r = first; r < size_; ++r)
      if (all[size_t(r)].first == all[size_t(first)].first) ranks.push_back(r), done[size_t(r)] = true;
    std::map<std::string, std::map<int, std::string>> table;
    for (int r : ranks)
      for (const auto& [n, sig] : all[size_t(r)].second) table[n][r] = text(sig);
    for (auto& [n, row] : table) {
      for (int r : ranks) row.try_emplace(r, "no such parameter");
      std::vector<std::pair<std::string, std::vector<int>>> holders;  // what, and the ranks holding it, by first rank
      for (int r : ranks) {
        auto it = std::find_if(holders.begin(), holders.end(), [&](const auto& h) { return h.first == row[r]; });
        if (it == holders.end()) holders.push_back({row[r], {r}});
        else it->second.push_back(r);
      }
      if (holders.size() < 2) continue;
      std::string line = str("parameter ", n, ":");
      for (size_t i = 0; i < holders.size(); ++i)
        line += str(i ? ";" : "", " ", holders[i].first, " on ", rank_list(holders[i].second));
      lines.push_back(std::move(line));
    }
  }
  if (lines.empty()) return;
  // The first few name the problem; a whole model listed would bury it.
  constexpr size_t kShown = 8;
  std::string msg;
  for (size_t i = 0; i < std::min(lines.size(), kShown); ++i) msg += "\n  " + lines[i];
  if (lines.size() > kShown) msg += str("\n  and ", lines.size() - kShown, " more parameters");
  throw Error(str(op, " (debug mode): the parameters differ across ranks after the load (files of other runs or "
                      "iterations, or a parameter that the load does not set):", msg));
}

void Communicator::check_grads_finite(const GradList& grads, const char* op) {
  for (const auto& [n, p] : grads)
    if (!packing::all_finite(p.grad()))
      throw Error(str(op, ": parameters diverged: the averaged gradient of ", n,
                      " holds a non-finite value (NaN or infinity)"));
}

// ---------------------------------------------------------------------------------------------

}  // namespace chainermn

namespace chainermn {

std::string rank_suffix(const Communicator& comm) {
  return comm.size() == 1 ? std::string() : chainer::str(".rank", comm.rank(), "-of-", comm.size());
}

}  // namespace chainermn
