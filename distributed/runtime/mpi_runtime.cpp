#include "distributed/runtime/mpi_runtime.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <typeinfo>
#include <vector>

#include <cxxabi.h>

#include "core/util/error.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"
#include "distributed/runtime/shared_segment.h"
#include "distributed/runtime/topology.h"

namespace chainermn {

namespace {

std::atomic<bool> g_aborting{false};      // abort_job has started: never MPI_Finalize after it
std::atomic<bool> g_in_terminate{false};  // guards the terminate handler against re-entry
std::once_flag g_handlers_once;
std::atomic<double> g_timeout{kDefaultMpiTimeout};  // the watchdog's limit in seconds; 0: off

void write_stderr(const std::string& text) {
  // One write(2), so lines from several ranks do not interleave mid-line.
  std::fflush(stdout);
  std::fflush(stderr);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(2, p, left);
    if (n <= 0) break;
    p += n;
    left -= size_t(n);
  }
}

[[noreturn]] void terminate_handler() {
  if (g_in_terminate.exchange(true)) std::abort();  // failed while ending the job: give up
  std::string message = "terminate called without an active exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      message = chainer::str("uncaught exception: ", describe_exception(ex));
    } catch (...) {
      message = "uncaught exception of unknown type";
    }
  }
  abort_job(message, 1);
}

void finalize_at_exit() { finalize_mpi(); }

double timeout_from_environment() {
  const char* text = std::getenv("CHAINERMN_TIMEOUT");
  if (!text || !*text) return g_timeout.load();
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds < 0)
    throw chainer::Error(chainer::str("init_mpi: CHAINERMN_TIMEOUT must be a number of seconds >= 0 (0 turns the ",
                                      "watchdog off), not '", text, "'"));
  return seconds;
}

// "mpi::allreduce (FILE:LINE)": SITE's call up to its arguments, and where it is made.
std::string site_text(const MpiCallSite& site) {
  const std::string call(site.call, std::find(site.call, site.call + std::strlen(site.call), '('));
  return chainer::str(call, " (", site.file, ":", site.line, ")");
}

uint64_t now_ns() {
  // steady_clock is CLOCK_MONOTONIC on Linux: one clock for every process of a machine, so one
  // rank's watchdog can read how long ago another's wrote a time.
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// The watchdogs' board (mpi_runtime.h): one slot per rank of a host in a shared-memory segment
// of that host's ranks. Each slot is written only by its rank's watchdog thread, every tick, so
// the MPI thread pays nothing beyond the mark of mpi_check.h; a watchdog that times out reads
// the others. Everything in it is a lock-free atomic, which is address-free: the processes map
// the segment at different addresses. TEXT, IN_CALL and SINCE change together under VERSION
// (a sequence lock: odd while they are rewritten); HEARTBEAT alone, every tick.
constexpr size_t kTextWords = 30;  // 240 bytes of "call (file:line)", NUL-padded
struct alignas(64) PeerSlot {
  std::atomic<int32_t> rank_plus_one;  // the slot's world rank + 1; 0 until its watchdog first ran
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> heartbeat_ns;  // when its watchdog last ran
  std::atomic<uint32_t> version;
  std::atomic<uint32_t> in_call;       // 1: in the call TEXT names; 0: outside MPI, TEXT its last call
  std::atomic<uint64_t> since_ns;      // when its watchdog first saw it in that state
  std::atomic<uint64_t> text[kTextWords];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);

struct Board {
  std::shared_ptr<SharedSegment> segment;  // null: no other rank on this host, or no shared memory
  int slot = 0;                            // this rank's slot: its rank among its host's
  int slots = 1;
  std::vector<std::string> hosts;          // every world rank's host name
  PeerSlot* at(int i) const { return reinterpret_cast<PeerSlot*>(segment->data()) + i; }
};
// Made by init_mpi before the watchdog starts, then read by the watchdog only; never freed, since
// the detached watchdog runs until the process ends, static destructors included.
const Board* g_board = nullptr;

// Collective over MPI_COMM_WORLD: every rank's host name, and the board of this rank's host.
Board make_board() {
  Board board;
  board.hosts = allgather_host_names(MPI_COMM_WORLD);
  const int rank = world_rank();
  const int color = int(std::find(board.hosts.begin(), board.hosts.end(), board.hosts[size_t(rank)]) -
                        board.hosts.begin());  // the host's smallest rank
  MPI_Comm host = MPI_COMM_NULL;
  CHAINERMN_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &host));
  CHAINERMN_MPI_CHECK(MPI_Comm_rank(host, &board.slot));
  CHAINERMN_MPI_CHECK(MPI_Comm_size(host, &board.slots));
  // Every rank of a host takes part, alone or not, so that a failure is the same on all of them.
  board.segment = SharedSegment::create(host, sizeof(PeerSlot) * size_t(board.slots));
  CHAINERMN_MPI_CHECK(MPI_Comm_free(&host));
  if (board.segment) new (board.at(board.slot)) PeerSlot{};  // the others' slots stay zero until theirs start
  return board;
}

void store_text(PeerSlot& slot, const std::string& text) {
  char bytes[kTextWords * 8] = {};
  std::memcpy(bytes, text.data(), std::min(text.size(), sizeof bytes - 1));
  for (size_t i = 0; i < kTextWords; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes + 8 * i, 8);
    slot.text[i].store(word, std::memory_order_relaxed);
  }
}

// Publishes this rank's state: IN_CALL (the call TEXT) or outside MPI (after TEXT), since SINCE.
void publish_state(PeerSlot& slot, bool in_call, const std::string& text, uint64_t since) {
  const uint32_t v = slot.version.load(std::memory_order_relaxed);
  slot.version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.in_call.store(in_call, std::memory_order_relaxed);
  slot.since_ns.store(since, std::memory_order_relaxed);
  store_text(slot, text);
  slot.version.store(v + 2, std::memory_order_release);
}

// What a peer's watchdog last published; CONSISTENT false when it stopped halfway through.
struct PeerState {
  int rank = -1;  // -1: its watchdog has not run yet
  int pid = 0;
  uint64_t heartbeat = 0, since = 0;
  bool in_call = false, consistent = false;
  std::string text;
};

PeerState read_peer(const PeerSlot& slot) {
  PeerState peer;
  peer.rank = slot.rank_plus_one.load(std::memory_order_acquire) - 1;
  peer.pid = slot.pid.load(std::memory_order_relaxed);
  peer.heartbeat = slot.heartbeat_ns.load(std::memory_order_relaxed);
  for (int attempt = 0; attempt < 100 && !peer.consistent; ++attempt) {
    const uint32_t v1 = slot.version.load(std::memory_order_acquire);
    char bytes[kTextWords * 8];
    for (size_t i = 0; i < kTextWords; ++i) {
      const uint64_t word = slot.text[i].load(std::memory_order_relaxed);
      std::memcpy(bytes + 8 * i, &word, 8);
    }
    peer.in_call = slot.in_call.load(std::memory_order_relaxed) != 0;
    peer.since = slot.since_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    peer.consistent = v1 % 2 == 0 && slot.version.load(std::memory_order_relaxed) == v1;
    peer.text.assign(bytes, strnlen(bytes, sizeof bytes - 1));
    if (!peer.consistent) std::this_thread::yield();
  }
  return peer;
}

// "2-3, 5" for {2, 3, 5}.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += chainer::str(out.empty() ? "" : ", ", ranks[i], j > i ? chainer::str("-", ranks[j]) : std::string());
    i = j + 1;
  }
  return out;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

// What the other ranks are doing, as far as this rank can see, for the message of a call (MINE)
// that has not completed: the ranks of this host from the board, a watchdog not heard from for
// STALE seconds taken as a stopped process (counted in STOPPED); the ranks of other hosts only
// by name.
std::string describe_peers(const std::string& mine, double stale, int rank, int& stopped) {
  static const Board none;
  const Board& board = g_board ? *g_board : none;
  std::string out;
  const uint64_t now = now_ns();
  auto ago = [now](uint64_t t) { return double(now > t ? now - t : 0) / 1e9; };
  std::vector<int> same_call;
  std::vector<std::string> others;
  int silent = 0;
  if (board.segment) {
    for (int i = 0; i < board.slots; ++i) {
      if (i == board.slot) continue;
      const PeerState peer = read_peer(*board.at(i));
      if (peer.rank < 0) {
        ++silent;
        continue;
      }
      const std::string who = chainer::str("rank ", peer.rank, " (pid ", peer.pid, ")");
      const std::string doing = !peer.consistent    ? std::string("doing what it did not finish publishing")
                                : peer.in_call      ? "in " + peer.text
                                : peer.text.empty() ? std::string("outside MPI, before any watched call")
                                                    : "outside MPI, after " + peer.text;
      if (ago(peer.heartbeat) > stale && ++stopped)
        others.push_back(chainer::str(who, " has not run for ", seconds(ago(peer.heartbeat)),
                                      ": it is stopped or frozen (SIGSTOP, a debugger, a stalled machine); it was last "
                                      "seen ",
                                      doing));
      else if (peer.consistent && peer.in_call && peer.text == mine)
        same_call.push_back(peer.rank);
      else if (peer.consistent && peer.in_call)
        others.push_back(chainer::str(who, " has been in another call for ", seconds(ago(peer.since)), ": ", peer.text));
      else if (peer.consistent)
        others.push_back(chainer::str(who, " has been running outside MPI for ", seconds(ago(peer.since)),
                                      peer.text.empty() ? std::string() : ", since " + peer.text + " returned",
                                      " (busy on its own: computing, reading, writing)"));
      else
        others.push_back(chainer::str(who, " is running, ", doing));
    }
  }
  const std::string host = size_t(rank) < board.hosts.size() ? board.hosts[size_t(rank)] : std::string();
  if (board.slots > 1) {
    std::string here;
    for (const std::string& o : others) here += (here.empty() ? "" : "; ") + o;
    if (!same_call.empty())
      here += chainer::str(here.empty() ? "" : "; ", same_call.size() == 1 ? "rank " : "ranks ", rank_ranges(same_call),
                           same_call.size() == 1 ? " waits" : " wait", " in the same call");
    if (silent > 0)
      here += chainer::str(here.empty() ? "" : "; ", silent, silent == 1 ? " rank has" : " ranks have",
                           " not started its watchdog");
    if (!board.segment) here = "not visible (no shared memory for the watchdogs' board)";
    out += chainer::str(" On this host (", host, "): ", here, ".");
  }
  // The ranks of other hosts, by host in the order of their smallest rank.
  std::vector<std::string> seen;
  std::string remote;
  for (size_t r = 0; r < board.hosts.size(); ++r) {
    const std::string& h = board.hosts[r];
    if (h == host || std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    std::vector<int> ranks;
    for (size_t q = r; q < board.hosts.size(); ++q)
      if (board.hosts[q] == h) ranks.push_back(int(q));
    remote += chainer::str(seen.size() == 1 ? "" : "; ", ranks.size() == 1 ? "rank " : "ranks ", rank_ranges(ranks),
                           " on ", h);
  }
  if (seen.empty()) return out;
  // Every rank of this host in this very call: the one that has not come is elsewhere.
  const bool all_here = board.segment ? others.empty() && silent == 0 : board.slots == 1;
  if (all_here)
    return out + chainer::str(board.slots == 1 ? chainer::str(" This rank is the only one on its host (", host, "), so")
                                               : std::string(" So"),
                              " the peer that has not reached the call is among ", remote,
                              ", which a watchdog on this host cannot see.");
  return out + chainer::str(" ", char(std::toupper(remote[0])), remote.substr(1),
                            ": not visible from here (a watchdog sees the ranks of its own host only).");
}

// Ends this rank because SITE has been blocked for LIMIT seconds (see mpi_runtime.h).
[[noreturn]] void end_blocked_rank(const MpiCallSite& site, double limit, double stale, int rank, int size) {
  const std::string mine = site_text(site);
  int stopped = 0;
  const std::string peers = describe_peers(mine, stale, rank, stopped);
  // Two causes look alike from the call alone, so both are named unless the board shows a peer
  // that is not running: a healthy peer busy alone for longer than a small limit (rank 0 reading
  // the data while the others wait in the scatter), and a peer that will never come.
  std::string message =
      chainer::str(mine, " has not completed in ", limit, " s (CHAINERMN_TIMEOUT; default ", kDefaultMpiTimeout,
                   "): a peer has not reached it.", peers,
                   stopped > 0 ? std::string()
                               : std::string(" Either the peer is still busy on its own (reading or scattering a "
                                             "dataset, evaluating, writing a snapshot): raise CHAINERMN_TIMEOUT above "
                                             "the longest such stretch (seconds; 0 turns this off); or the peer "
                                             "process or its host is unreachable (a cut link, a frozen host or "
                                             "process)"));
  if (message.back() == '.') message.pop_back();  // end_rank_from_watchdog adds ". Ending the job"
  detail::end_rank_from_watchdog(message, rank, size);
}

// Samples the call in progress (mpi_check.h) every tick: a call seen in progress, with no other
// call started since, for LIMIT seconds ends the rank. Timing starts when the call is first seen,
// so it never fires early, and fires at most a tick late. Every tick it also publishes what it
// sees on the board, with a heartbeat: a peer whose heartbeat stops is not running at all.
void watchdog(int rank, int size) {
  const detail::MpiCallWatch& watch = detail::g_mpi_call_watch;
  PeerSlot* slot = g_board && g_board->segment ? g_board->at(g_board->slot) : nullptr;
  uint64_t seen = 0;
  bool watching = false;
  const MpiCallSite* shown = nullptr;  // the call on the board
  bool shown_in_call = false;
  uint64_t shown_started = 0;
  auto since = std::chrono::steady_clock::now();
  if (slot) {
    slot->pid.store(int32_t(::getpid()), std::memory_order_relaxed);
    slot->heartbeat_ns.store(now_ns(), std::memory_order_relaxed);
    publish_state(*slot, false, "", now_ns());
    slot->rank_plus_one.store(rank + 1, std::memory_order_release);
  }
  for (;;) {
    const double limit = g_timeout.load(std::memory_order_relaxed);
    const double tick = limit > 0 ? std::clamp(limit / 20, 0.01, 1.0) : 1.0;
    std::this_thread::sleep_for(std::chrono::duration<double>(tick));
    const MpiCallSite* site = watch.site.load(std::memory_order_acquire);
    const uint64_t started = watch.started.load(std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    const bool changed = !site || !watching || started != seen;
    if (changed) {
      watching = site != nullptr;
      seen = started;
      since = now;
    } else if (limit > 0 && std::chrono::duration<double>(now - since).count() >= limit) {
      // A peer is stale when its watchdog has missed several ticks: at least a second, so that a
      // loaded machine's scheduling delays do not count.
      end_blocked_rank(*site, limit, std::max(5 * tick, 1.0), rank, size);
    }
    if (slot) {
      const MpiCallSite* last = site ? site : watch.last.load(std::memory_order_relaxed);
      // Any call started since the last tick starts a new state, also at the same site.
      if (last != shown || bool(site) != shown_in_call || started != shown_started) {
        shown = last;
        shown_in_call = site != nullptr;
        shown_started = started;
        publish_state(*slot, shown_in_call, last ? site_text(*last) : std::string(), now_ns());
      }
      slot->heartbeat_ns.store(now_ns(), std::memory_order_relaxed);
    }
  }
}

}  // namespace

std::string exception_type_name(const std::exception& e) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : typeid(e).name();
  std::free(demangled);
  // libstdc++'s inline namespaces say nothing to a reader: std::__cxx11::... is std::...
  for (const std::string hidden : {"__cxx11::", "[abi:cxx11]"})
    for (size_t at; (at = name.find(hidden)) != std::string::npos;) name.erase(at, hidden.size());
  return name;
}

std::string describe_exception(const std::exception& e) {
  if (dynamic_cast<const chainer::Error*>(&e)) return e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory (std::bad_alloc)";
  return chainer::str(exception_type_name(e), ": ", e.what());
}

bool mpi_is_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void init_mpi(int* argc, char*** argv) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw chainer::Error("init_mpi: MPI was already finalized in this process and cannot start again");
  bool started_here = false;
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    CHAINERMN_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    started_here = true;
  }
  std::call_once(g_handlers_once, [started_here] {
    g_timeout = timeout_from_environment();
    detail::decide_wait_policy();
    std::set_terminate(terminate_handler);
    if (started_here) std::atexit(finalize_at_exit);
    // Only where there are peers to wait for; detached, it touches nothing but atomics until it
    // fires. The board first (a collective), so that the thread only reads g_board.
    if (world_size() > 1) {
      g_board = new Board(make_board());
      std::thread(watchdog, world_rank(), world_size()).detach();
    }
  });
}

double mpi_timeout() { return g_timeout.load(); }

void set_mpi_timeout(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    throw chainer::Error(chainer::str("set_mpi_timeout: the limit must be a number of seconds >= 0 (0: no limit), not ",
                                      seconds));
  g_timeout = seconds;
}

void finalize_mpi() {
  if (g_aborting.load() || !mpi_is_running()) return;
  static constexpr MpiCallSite site{"MPI_Finalize()", __FILE__, __LINE__};
  const detail::WatchedMpiCall watch(&site);  // it waits for the peers too
  MPI_Finalize();
}

int world_rank() {
  if (!mpi_is_running()) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  if (!mpi_is_running()) return 1;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void abort_job(const std::string& message, int code) {
  const int rank = world_rank(), size = world_size();
  std::string text = chainer::str("[rank ", rank, "/", size, "] ", message);
  if (text.empty() || text.back() != '\n') text += '\n';
  write_stderr(text);
  if (code == 0) code = 1;  // an aborted job never reports success
  if (size > 1) {
    g_aborting = true;
    // mpiexec's proxy forwards our stderr asynchronously, and MPI_Abort has it kill every
    // process at once: on a loaded machine the message was sometimes lost on the way. A moment
    // to forward it costs nothing next to a hang.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return
  }
  std::exit(code);  // one process: a plain exit (MPI_Finalize runs at exit)
}

namespace detail {

// The message, a moment for hydra's proxy to forward it (as in abort_job), then SIGKILL, which
// hydra treats as a bad termination of the job (a plain exit code would leave mpiexec waiting
// for the proxies it cannot reach).
void end_rank_from_watchdog(const std::string& message, int rank, int size) {
  write_stderr(chainer::str("[rank ", rank, "/", size, "] chainermn: ", message, ". Ending the job\n"));
  g_aborting = true;
  if (size > 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(::getpid(), SIGKILL);
  }
  std::_Exit(1);
}

int run_main_impl(int& argc, char**& argv, const std::function<int(int&, char**&)>& fn) {
  try {
    init_mpi(&argc, &argv);
    return fn(argc, argv);
  } catch (const std::exception& e) {
    abort_job(describe_exception(e), 1);
  } catch (...) {
    abort_job("unknown exception (not derived from std::exception)", 1);
  }
}

}  // namespace detail

}  // namespace chainermn
