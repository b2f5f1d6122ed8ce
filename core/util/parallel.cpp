#include "core/util/parallel.h"

#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/util/error.h"
#include "core/util/parse.h"

namespace chainer {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

// The cores this process may run on (its affinity mask: a batch system's allotment, taskset).
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, int(std::thread::hardware_concurrency()));
}

// A fork-join team of NUM_THREADS - 1 workers; the thread that calls run() is the last member.
//
// Why not OpenMP: libgomp fixes its wait policy when it loads, and either policy fails one of
// two machines. Spinning workers (its default) made an epoch 13-15x slower beside other busy
// processes, because every parallel region ended at a barrier that waited a whole scheduler time
// slice for a member the kernel had descheduled; sleeping workers (OMP_WAIT_POLICY=passive)
// cost a futex wake per region on an idle machine. This team never waits for a member that has
// not started: work is claimed task by task from a shared counter, run() returns when every
// task is done and every member that joined has left, and a worker that wakes late finds the
// job closed and goes back to waiting. Between jobs a worker spins for kSpin (a training step's
// regions follow each other within microseconds), yielding the core as it does, then sleeps on
// the job ticket (a futex) until the next one.
class Team {
 public:
  explicit Team(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Team() {
    stop_.store(true);
    ticket_.fetch_add(2);
    wake();
    for (std::thread& w : workers_) w.join();
  }
  int size() const { return int(workers_.size()) + 1; }

  // Runs fn(i) for i in [0, count) on up to MEMBERS threads, the caller included.
  void run(int64_t count, int members, const std::function<void(int64_t)>& fn) {
    fn_ = &fn;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    helpers_.store(members - 1, std::memory_order_relaxed);
    error_ = nullptr;
    const uint32_t open = (ticket_.load(std::memory_order_relaxed) | 1u) + 2u;  // a new generation, open
    ticket_.store(open);
    wake();
    claim();
    ticket_.store(open & ~1u);  // closed: a worker that wakes from here on leaves the job alone
    // The members still inside run a task each at most; they are running, not descheduled
    // for long, so a short spin then yielding the core to them is enough.
    for (int spins = 0; active_.load() != 0; ++spins) {
      if (spins < 256) _mm_pause();
      else sched_yield();
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static constexpr auto kSpin = std::chrono::microseconds(50);

  void claim() {
    for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < count_;) {
      try {
        (*fn_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        next_.store(count_, std::memory_order_relaxed);  // the other members stop at their next claim
      }
    }
  }

  void work() {
    enable_flush_denormal();
    uint32_t seen = ticket_.load();
    for (;;) {
      // Also before waiting: the destructor may have moved the ticket before our first look.
      if (stop_.load()) return;
      const uint32_t t = wait_for_change(seen);
      if (stop_.load()) return;
      seen = t;
      if (!(t & 1u)) continue;  // closed before we looked
      // Join: count ourselves active, then check that the job is still open. run() closes the
      // ticket before it reads active_ (both sequentially consistent), so either it sees us and
      // waits, or we see the closed ticket and touch nothing of the job.
      active_.fetch_add(1);
      if (ticket_.load() == t && helpers_.fetch_sub(1, std::memory_order_relaxed) > 0) claim();
      active_.fetch_sub(1);
    }
  }

  // Spins (pausing, and yielding the core every so often in case others want it) for kSpin,
  // then sleeps until the ticket differs from SEEN; returns the new ticket.
  uint32_t wait_for_change(uint32_t seen) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1;; ++i) {
      const uint32_t t = ticket_.load(std::memory_order_acquire);
      if (t != seen) return t;
      _mm_pause();
      if (i % 64 == 0) {
        if (std::chrono::steady_clock::now() > until) break;
        sched_yield();
      }
    }
    // Sleep. Counted in sleepers_ before the last look at the ticket (both sequentially
    // consistent): run() stores the ticket before it reads sleepers_, so either it sees us and
    // wakes the futex, or we see its new ticket; FUTEX_WAIT itself returns at once when the
    // ticket no longer holds SEEN.
    sleepers_.fetch_add(1);
    uint32_t t;
    while ((t = ticket_.load()) == seen) futex(FUTEX_WAIT_PRIVATE, seen);
    sleepers_.fetch_sub(1);
    return t;
  }

  // libstdc++ 12's std::atomic::wait can miss a notify_all; the futex is called directly.
  long futex(int op, uint32_t value) {
    return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&ticket_), op, value, nullptr, nullptr, 0);
  }
  void wake() {
    if (sleepers_.load() > 0) futex(FUTEX_WAKE_PRIVATE, uint32_t(INT32_MAX));
  }

  std::vector<std::thread> workers_;
  std::atomic<uint32_t> ticket_{0};  // generation * 2 + open
  std::atomic<int> active_{0};       // workers inside the current job
  std::atomic<int> sleepers_{0};     // workers asleep on the ticket, or about to be
  std::atomic<bool> stop_{false};
  // The job, written by run() before it opens the ticket.
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> helpers_{0};  // workers still allowed to join
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Guards g_team: its creation and replacement, and each job run on it (a thread that finds it
// held by another thread's job runs its own tasks inline).
std::mutex g_team_mutex;
std::unique_ptr<Team> g_team;
std::atomic<int> g_threads{0};       // g_team's size, once made: read without the lock
thread_local bool t_in_job = false;  // this thread is running a task: nested calls run inline

void make_team(int n) {  // g_team_mutex held
  g_team.reset();
  g_team = std::make_unique<Team>(n);
  g_threads.store(n);
}
}  // namespace

void enable_flush_denormal() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

int default_num_threads() {
  if (const char* text = std::getenv("CHAINER_NUM_THREADS"); text && *text)
    return int(parse_integer(text, "CHAINER_NUM_THREADS", 1, kMaxThreads));
  // OpenMP's own syntax: a list of counts per nesting level ("4,2"), of which the first is ours.
  if (const char* text = std::getenv("OMP_NUM_THREADS"); text && *text) {
    const std::string first(text, std::strcspn(text, ","));
    return int(parse_integer(first, "OMP_NUM_THREADS", 1, kMaxThreads));
  }
  const int ranks = std::max({env_int("MPI_LOCALNRANKS"), env_int("OMPI_COMM_WORLD_LOCAL_SIZE"), 1});
  return std::max(1, usable_cores() / ranks);
}

int num_threads() {
  if (const int n = g_threads.load(std::memory_order_relaxed); n > 0) return n;
  std::lock_guard<std::mutex> lock(g_team_mutex);
  if (!g_team) {
    make_team(default_num_threads());
    enable_flush_denormal();  // the thread that computes first is the team's caller, too
  }
  return g_team->size();
}

void set_num_threads(int n) {
  if (n > kMaxThreads) throw Error(str("set_num_threads: ", n, " threads is too many (at most ", kMaxThreads, ")"));
  enable_flush_denormal();
  const int size = n > 0 ? n : default_num_threads();
  std::lock_guard<std::mutex> lock(g_team_mutex);  // after any job in flight
  make_team(size);
}

void parallel_tasks(int64_t count, int max_threads, const std::function<void(int64_t)>& fn) {
  if (count <= 0) return;
  const int members = int(std::min<int64_t>({count, int64_t(num_threads()), int64_t(std::max(max_threads, 1))}));
  // One thread, a nested call, or the team busy with another thread's job: run here, in order.
  std::unique_lock<std::mutex> lock(g_team_mutex, std::defer_lock);
  if (members <= 1 || t_in_job || !lock.try_lock()) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  Team& t = *g_team;
  t_in_job = true;
  struct Reset {
    ~Reset() { t_in_job = false; }
  } reset;
  t.run(count, members, [&fn](int64_t i) {
    const bool outer = t_in_job;
    t_in_job = true;
    fn(i);
    t_in_job = outer;
  });
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int threads = num_threads();
  // Four chunks per thread, taken first come first served: on a shared machine one core is
  // often slower than the other for a while, and equal static halves made the faster one wait.
  const int64_t chunks = std::min<int64_t>(int64_t(threads) * 4, std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1 || threads <= 1) {
    fn(0, n);
    return;
  }
  parallel_tasks(chunks, threads, [&](int64_t c) {
    // 16-element alignment of chunk edges keeps SIMD loops whole in every chunk.
    const int64_t b = (n * c / chunks) & ~int64_t(15), e = c + 1 == chunks ? n : (n * (c + 1) / chunks) & ~int64_t(15);
    if (e > b) fn(b, e);
  });
}

}  // namespace chainer
