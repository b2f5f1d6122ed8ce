// Gradient averaging time and bandwidth against model size, measured as nccl-tests measures
// collectives (src/common.cu there): for every communicator kind that can be made here
// (communicator_kinds(); a kind this build lacks, or whose constructor refuses the placement,
// is a row "n/a" with the reason) and for the multi-node optimizer's bucketed reducer
// (distributed/reducer/gradient_reducer.h: "bucketed", through shared memory when every rank shares a
// host, and "bucketed-mpi" with GradientReducerOptions::shared_memory = false), over a model
// holding B bytes of float32 gradients (8 parameters of B/8 bytes, or "mlp": the tutorial's
// MLP 784-1000-1000-10, 1,796,010 parameters = 7,184,040 bytes).
//
// Per case: warm-up steps; the step count calibrated so that the timed loop takes about
// --seconds (agreed by all ranks before timing); the timed loop alone (no check, no flag
// exchanged inside it), its time per step averaged over the ranks; then an untimed check: each
// rank's gradients set to (rank + 1) * g(parameter, index), averaged, and compared with the
// closed form (n + 1) / 2 * g; #wrong is the number of elements off by more than the wire
// dtype's tolerance, summed over the ranks. algbw = bytes / time and busbw = algbw * 2 (n-1) / n
// (the all-reduce factor, comparable with a link's peak whatever n is); bytes are those the
// all-reduce carries: the gradients' elements in --grad-dtype for the communicators
// (CommunicatorOptions::allreduce_grad_dtype), in float32 for the reducer, which keeps the
// gradients' dtype. With --link RATE, each row also shows the time a ring all-reduce needs on
// links of that rate, 2 (h-1) / h * bytes / rate for h hosts, and time / that limit.
//
// Each step hands the communicator the same gradient tensors again (set_grad, no copy): the
// reducer leaves views of its own buffers as gradients, which a real backward replaces with
// fresh ones (keeping them would make every step fall back from shared memory).
//
//   mpiexec -n 4 build/bench/bench_allreduce [--sizes 64K,1M,mlp,64M] [--seconds 0.5]
//       [--comms naive,flat,bucketed,...] [--link 1gbit] [--grad-dtype float16|bfloat16|float32]
// bench/allreduce_hosts.sh runs it on one host and on simulated hosts (scripts/simcluster).
#include <chainermn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using chainer::DType;
using chainer::Error;
using chainer::str;
using chainer::Tensor;

constexpr const char* kUsage =
    "usage: bench_allreduce [--sizes LIST] [--seconds S] [--comms LIST] [--link RATE] [--grad-dtype DTYPE]\n"
    "  --sizes LIST       model sizes, comma-separated: bytes of float32 gradients with an optional K, M or G\n"
    "                     (binary multiples), or mlp for the tutorial's MLP (default 64K,256K,1M,4M,mlp,16M,64M)\n"
    "  --seconds S        time each case's timed loop takes, about (default 0.5)\n"
    "  --comms LIST       which to measure, comma-separated: communicator kinds (naive, flat, hierarchical,\n"
    "                     two_dimensional, single_node, ...) and bucketed, bucketed-mpi (default: all but\n"
    "                     dummy, which averages nothing)\n"
    "  --link RATE        a link rate in tc's units (1gbit, 100mbit, 10gbit) to compare with: prints the\n"
    "                     ring all-reduce's time on such links between the hosts, and time / that\n"
    "  --grad-dtype DTYPE the dtype gradients travel in (CommunicatorOptions::allreduce_grad_dtype):\n"
    "                     float16, bfloat16 or float32 (default: their own, float32)\n";

// ---- Options ----

struct Size {
  std::string name;      // as given ("64K", "mlp")
  int64_t bytes = 0;     // float32 gradient bytes of the model
  bool mlp = false;
};

struct Options {
  std::vector<Size> sizes;
  double seconds = 0.5;
  std::vector<std::string> comms;  // empty: all
  double link_bytes_per_s = 0;     // 0: no --link
  std::string link_text;
  std::optional<DType> grad_dtype;
};

constexpr int64_t kMlpParams = 784 * 1000 + 1000 + 1000 * 1000 + 1000 + 1000 * 10 + 10;  // 1,796,010

// TEXT as a leading number and the unit after it; the number is 0 when TEXT has none.
std::pair<double, std::string> number_and_unit(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return {0.0, text};
  }
  return {value, text.substr(used)};
}

Size parse_size(const std::string& text) {
  if (text == "mlp") return {text, kMlpParams * 4, true};
  const auto [value, unit] = number_and_unit(text);
  const double scale = unit.empty() ? 1 : unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : 0;
  if (scale == 0 || !(value > 0))
    throw Error(str("bench_allreduce: --sizes: '", text, "' is not a size (bytes with an optional K, M or G, or mlp)"));
  return {text, std::max<int64_t>(32, int64_t(value * scale)), false};
}

// tc's rate units: bit, kbit, mbit, gbit, tbit (SI multiples of bits per second).
double parse_rate(const std::string& text) {
  const auto [value, unit] = number_and_unit(text);
  const double bits = unit == "bit" ? 1 : unit == "kbit" ? 1e3 : unit == "mbit" ? 1e6 : unit == "gbit" ? 1e9 : unit == "tbit" ? 1e12 : 0;
  if (bits == 0 || !(value > 0))
    throw Error(str("bench_allreduce: --link: '", text, "' is not a rate (a number and bit, kbit, mbit, gbit or tbit)"));
  return value * bits / 8;
}

DType parse_dtype(const std::string& text) {
  if (text == "float32") return DType::Float32;
  if (text == "float16") return DType::Float16;
  if (text == "bfloat16") return DType::BFloat16;
  throw Error(str("bench_allreduce: --grad-dtype: '", text, "' is not float16, bfloat16 or float32"));
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  std::string sizes = "64K,256K,1M,4M,mlp,16M,64M";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      if (chainermn::world_rank() == 0) std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw Error(str("bench_allreduce: ", a, " needs a value or is unknown\n", kUsage));
    const std::string v = argv[++i];
    if (a == "--sizes") sizes = v;
    else if (a == "--seconds") o.seconds = std::atof(v.c_str());
    else if (a == "--comms") o.comms = split(v);
    else if (a == "--link") {
      o.link_bytes_per_s = parse_rate(v);
      o.link_text = v;
    }
    else if (a == "--grad-dtype") o.grad_dtype = parse_dtype(v);
    else throw Error(str("bench_allreduce: unknown option '", a, "'\n", kUsage));
  }
  for (const std::string& s : split(sizes)) o.sizes.push_back(parse_size(s));
  if (o.sizes.empty()) throw Error("bench_allreduce: --sizes lists no size");
  if (!(o.seconds > 0)) throw Error("bench_allreduce: --seconds must be a positive number of seconds");
  return o;
}

// ---- The model ----

// A link holding gradients of the given size: 8 equal float32 parameters, or the MLP's six.
struct Grads : chainer::Link {
  std::vector<chainer::Variable> vars;  // params(), listed once
  std::vector<Tensor> grads;            // what each step hands over again (set_grad)

  explicit Grads(const Size& size) {
    std::vector<std::pair<std::string, chainer::Shape>> shapes;
    if (size.mlp) {
      shapes = {{"l1_W", {1000, 784}}, {"l1_b", {1000}}, {"l2_W", {1000, 1000}},
                {"l2_b", {1000}},      {"l3_W", {10, 1000}}, {"l3_b", {10}}};
    } else {
      const int64_t each = std::max<int64_t>(1, size.bytes / 4 / 8);
      for (int i = 0; i < 8; ++i) shapes.push_back({"p" + std::to_string(i), {each}});
    }
    for (const auto& [name, shape] : shapes) add_param(name, Tensor::zeros(shape));
    vars = params();
    for (const chainer::Variable& p : vars) grads.push_back(Tensor::full(p.shape(), 0.5));
    restore();
  }
  void restore() {
    for (size_t i = 0; i < vars.size(); ++i) vars[i].set_grad(grads[i]);
  }
  int64_t numel() const { return count_params(); }
};

// The check's values: g(p, i) in [-1, 1], multiples of 1/8 (exact in float16 and bfloat16), so the
// only rounding is the averaging's.
float g(size_t param, int64_t i) { return float((i * 7 + int64_t(param) * 3) % 17 - 8) / 8.0f; }

// Relative to max(1, |mean|): each of the N additions of the sum rounds once in the wire's dtype
// (unit roundoff 2^-24, 2^-11, 2^-8), on partial sums up to (N + 1) / 2.
double tolerance(DType wire, int n) {
  const double u = wire == DType::Float16 ? std::ldexp(1.0, -11) : wire == DType::BFloat16 ? std::ldexp(1.0, -8)
                                                                                         : std::ldexp(1.0, -24);
  return 4.0 * n * u;
}

// ---- Collectives on plain numbers (outside the timed loops) ----

double reduce_double(double v, MPI_Op op, MPI_Comm comm) {
  double out = 0;
  CHAINERMN_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, comm));
  return out;
}

int64_t sum_int64(int64_t v, MPI_Comm comm) {
  int64_t out = 0;
  CHAINERMN_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, comm));
  return out;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// ---- One case ----

struct Result {
  int64_t iters = 0;
  double seconds = 0;  // per step, averaged over ranks
  int64_t wrong = 0;   // summed over ranks
};

template <class Step>
Result measure(Grads& model, Step&& step, double target_seconds, int rank, int size, DType wire, MPI_Comm world) {
  auto run = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      model.restore();
      step();
    }
  };
  run(3);  // warm-up: buffers, segments, connections
  // Calibrate: double the count until a run takes 1/10 of the target on the slowest rank.
  int64_t n = 1;
  for (;;) {
    CHAINERMN_MPI_CHECK(MPI_Barrier(world));
    const double t0 = now();
    run(n);
    const double took = reduce_double(now() - t0, MPI_MAX, world);
    if (took >= target_seconds / 10 || n >= (int64_t(1) << 20)) {
      n = std::clamp<int64_t>(int64_t(std::ceil(target_seconds / (took / double(n)))), 1, int64_t(1) << 24);
      break;
    }
    n *= 2;
  }
  Result r;
  r.iters = n;
  CHAINERMN_MPI_CHECK(MPI_Barrier(world));
  const double t0 = now();
  run(n);  // the timed loop: nothing else inside
  const double per_step = (now() - t0) / double(n);
  r.seconds = reduce_double(per_step, MPI_SUM, world) / size;

  // The check, untimed.
  const std::vector<chainer::Variable>& ps = model.vars;
  for (size_t p = 0; p < ps.size(); ++p) {
    std::vector<float> v(size_t(model.grads[p].numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(rank + 1) * g(p, int64_t(i));
    model.grads[p] = Tensor::from_vector(v, ps[p].shape());
  }
  model.restore();
  step();
  const double tol = tolerance(wire, size), factor = (size + 1) / 2.0;
  int64_t wrong = 0;
  for (size_t p = 0; p < ps.size(); ++p) {
    const std::vector<double> got = ps[p].grad().to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = factor * g(p, int64_t(i));
      if (!(std::abs(got[i] - want) <= tol * std::max(1.0, std::abs(want)))) ++wrong;
    }
  }
  r.wrong = sum_int64(wrong, world);
  for (Tensor& t : model.grads) t = Tensor::full(t.shape(), 0.5);  // back to timing values
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) -> int {
    const Options o = parse(argc, argv);
    chainermn::CommunicatorOptions comm_options;
    comm_options.allreduce_grad_dtype = o.grad_dtype;

    // What to measure: every kind, then the reducer's two variants, filtered by --comms.
    struct Case {
      std::string name;
      std::shared_ptr<chainermn::Communicator> comm;  // the communicator rows
      std::shared_ptr<chainermn::GradientReducer> reducer;
      std::string na;  // why it cannot run here
    };
    std::vector<std::string> valid;
    for (const auto& k : chainermn::communicator_kinds()) valid.push_back(k.name);
    valid.push_back("bucketed");
    valid.push_back("bucketed-mpi");
    for (const std::string& c : o.comms)
      if (std::find(valid.begin(), valid.end(), c) == valid.end()) {
        std::string list;
        for (const std::string& v : valid) list += (list.empty() ? "" : ", ") + v;
        throw Error(str("bench_allreduce: --comms: unknown '", c, "'; valid: ", list));
      }
    auto wanted = [&](const std::string& name) {
      return o.comms.empty() || std::find(o.comms.begin(), o.comms.end(), name) != o.comms.end();
    };

    auto base = chainermn::create_communicator("naive", MPI_COMM_WORLD, comm_options);
    const MPI_Comm world = base->mpi_comm();
    const int rank = base->rank(), n = base->size(), hosts = base->inter_size();
    std::vector<Case> cases;
    for (const auto& k : chainermn::communicator_kinds()) {
      // The dummy (no reduction, so #wrong is all) only when asked for by name.
      if (!wanted(k.name) || (!k.averages && o.comms.empty())) continue;
      Case c{k.name, nullptr, nullptr, ""};
      if (!k.available) {
        c.na = "needs " + k.requirement;
      } else {
        try {
          c.comm = chainermn::create_communicator(k.name, MPI_COMM_WORLD, comm_options);
        } catch (const chainermn::MpiError&) {
          throw;  // not a refusal: MPI itself failed
        } catch (const Error& e) {
          c.na = e.what();  // the constructor refused this placement (on every rank alike)
        }
      }
      cases.push_back(std::move(c));
    }
    for (const char* name : {"bucketed", "bucketed-mpi"}) {
      if (!wanted(name)) continue;
      chainermn::GradientReducerOptions ro;
      ro.shared_memory = std::strcmp(name, "bucketed") == 0;
      cases.push_back({name, nullptr, std::make_shared<chainermn::GradientReducer>(base, ro), ""});
    }

    // Messages carry the gradients in --grad-dtype (the bucketed reducer's too, over `base`);
    // shared memory ("bucketed") has no wire and sums float32.
    const DType comm_wire = o.grad_dtype.value_or(DType::Float32);
    if (rank == 0) {
      std::printf("# bench_allreduce: %d processes on %d host%s (%d on this one); float32 gradients, sent as %s "
                  "(bucketed through shared memory: summed in float32); %.2f s per case\n",
                  n, hosts, hosts == 1 ? "" : "s", base->intra_size(), chainer::dtype_name(comm_wire), o.seconds);
      std::printf("# algbw = bytes / time, busbw = algbw * 2(n-1)/n, n = %d%s\n", n,
                  o.link_bytes_per_s > 0
                      ? str("; limit = 2(h-1)/h * bytes / ", o.link_text, " for h = ", hosts, " hosts (ring all-reduce)").c_str()
                      : "");
      std::printf("%-6s %10s %-16s %8s %10s %11s %11s %7s", "size", "bytes", "comm", "iters", "time(ms)", "algbw(GB/s)",
                  "busbw(GB/s)", "#wrong");
      if (o.link_bytes_per_s > 0) std::printf(" %10s %10s", "limit(ms)", "time/limit");
      std::printf("\n");
    }
    for (const Size& size : o.sizes) {
      Grads model(size);
      for (Case& c : cases) {
        const DType wire = c.reducer ? DType::Float32 : comm_wire;
        const int64_t bytes = model.numel() * int64_t(chainer::dtype_size(wire));
        if (!c.na.empty()) {
          if (rank == 0) std::printf("%-6s %10lld %-16s n/a: %s\n", size.name.c_str(), (long long)bytes, c.name.c_str(), c.na.c_str());
          continue;
        }
        Result r;
        if (c.reducer) {
          c.reducer->attach(model);
          r = measure(model, [&] { c.reducer->finalize(); }, o.seconds, rank, n, wire, world);
          c.reducer->detach();
        } else {
          r = measure(model, [&] { c.comm->multi_node_mean_grad(model); }, o.seconds, rank, n, wire, world);
        }
        if (rank != 0) continue;
        const double algbw = double(bytes) / r.seconds / 1e9;
        std::printf("%-6s %10lld %-16s %8lld %10.3f %11.3f %11.3f %7lld", size.name.c_str(), (long long)bytes,
                    c.name.c_str(), (long long)r.iters, r.seconds * 1e3, algbw, algbw * 2.0 * (n - 1) / n,
                    (long long)r.wrong);
        if (o.link_bytes_per_s > 0) {
          if (hosts > 1) {
            const double limit = 2.0 * (hosts - 1) / hosts * double(bytes) / o.link_bytes_per_s;
            std::printf(" %10.3f %10.2f", limit * 1e3, r.seconds / limit);
          } else {
            std::printf(" %10s %10s", "-", "-");
          }
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
    return 0;
  });
}
