#pragma once
/// \file Intra-op parallelism: the thread count host loops split across
/// (`fg::config::set_intra_op_parallelism_threads`, TensorFlow's name) and fusegrad's own
/// fork-join pool that runs them. Note [intra-op pool]: a loop over a large element count is
/// cut into as many contiguous ranges as there are threads (a static split, decided before any
/// thread starts); the calling thread runs ranges too, and the pool's workers, started on first
/// use and joined at exit, run the others. Ranges are claimed through one counter, so a range
/// whose worker the system has not scheduled yet is run by whoever is free: a loaded machine
/// runs no slower than one thread. How a loop is cut depends only on its shape, never on the
/// thread count, so results are the same bits on every count (elementwise loops cut at SIMD
/// boundaries; reductions fold fixed blocks, Note [parallel reductions], eval/host_reduce.hpp).
/// One region runs at a time: a loop that finds the pool busy (another user thread's loop), or
/// that is called from inside a region (nested), runs on its calling thread. An exception
/// thrown by a range reaches the caller once every range has finished. std::thread rather
/// than OpenMP: libgomp's barriers give ThreadSanitizer false reports, and header-only users
/// need no -fopenmp.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "error.hpp"
#include "storage.hpp"

// OpenBLAS follows the setting (Note [thread count followers]); declared here rather than
// through cblas.h, which the core floor does not include. fusegrad links OpenBLAS already.
extern "C" void openblas_set_num_threads(int num_threads);

namespace fusegrad::core {

/// Note [parallel threshold]: loops of fewer elements than this stay on the calling thread,
/// and a loop takes one thread per parallel_grain elements at most. Chosen from the cheapest
/// loop, z = x + y on float32, measured on the project's 2-core machine with both cores idle
/// (benchmarks/fork_join.cpp; docs/design.md, "Intra-op parallelism", has the command): a
/// fork-join region costs about 15 us more than its tasks (waking a sleeping worker and joining
/// it), and x + y costs 0.17 to 0.20 ns per element from cache, so a second thread saves about
/// n * 0.1 ns and pays from about 150000 elements. Split on two threads, x + y ran 0.57x as
/// fast as on one at 65536 elements, 0.83x at 131072, 1.17x at 262144, 1.53x at 524288 and 1.9x
/// at 1048576 (medians of 36 samples): 262144 is the smallest power of two at which the
/// cheapest loop gains. Loops that compute more per element would gain from fewer elements;
/// one threshold keeps the cheap ones from losing.
inline constexpr std::size_t parallel_threshold = std::size_t{1} << 18;
/// The fewest elements one thread of a split loop takes (half of parallel_threshold).
inline constexpr std::size_t parallel_grain = parallel_threshold / 2;

/// The intra-op setting: 0 for every core.
inline std::atomic<int> intra_op_setting{0};

/// The cores this process may run on (its affinity mask), at least 1.
inline int available_cores() {
  static const int n = [] {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      if (const int c = CPU_COUNT(&set); c > 0) return c;
#endif
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return n;
}

/// The number of threads host loops split across now: the setting, 0 resolved to every core.
/// The hook other libraries follow (Note [thread count followers]).
inline int intra_op_threads() {
  const int n = intra_op_setting.load(std::memory_order_relaxed);
  return n > 0 ? n : available_cores();
}

/// Whether this thread is running a range of a parallel region (a worker, or a caller inside
/// its own region): loops started there run on this thread.
inline bool& in_parallel_region() {
  thread_local bool inside = false;
  return inside;
}

/// The fork-join pool of Note [intra-op pool]; one per process (instance()).
class thread_pool {
 public:
  using task_fn = void (*)(void* context, std::size_t task);

  /// The process's pool, made on first use; its destructor, at exit, joins the workers.
  static thread_pool& instance() {
    static thread_pool pool;
    return pool;
  }
  /// True once the pool has shut down (at exit): later loops run on their calling thread.
  static std::atomic<bool>& stopped() {
    // Constant-initialised and trivially destructible: valid through the whole of exit.
    static constinit std::atomic<bool> s{false};
    return s;
  }

  /// Runs fn(context, t) for every t in [0, tasks), on up to `tasks` threads, the calling one
  /// among them; rethrows the first exception a task threw. False, having run nothing, when
  /// the pool is busy or shut down: the caller then runs the tasks itself.
  bool run(std::size_t tasks, task_fn fn, void* context) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    struct release {
      std::atomic<bool>& b;
      ~release() { b.store(false, std::memory_order_release); }
    } guard{busy_};
    {
      std::lock_guard lock(m_);
      if (stop_) return false;
      // Workers are started as regions need them and live for the process; a failed start
      // leaves fewer workers, and the caller claims their tasks.
      try {
        while (workers_.size() + 1 < tasks) workers_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
      }
      fn_ = fn;
      context_ = context;
      tasks_ = tasks;
      next_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      open_ = true;
      ++generation_;
    }
    wake_.notify_all();
    bool& inside = in_parallel_region();
    inside = true;
    claim(fn, context, tasks);
    inside = false;
    std::exception_ptr error;
    {
      // Every task is claimed now; those this thread did not run belong to active workers.
      std::unique_lock lock(m_);
      finished_.wait(lock, [&] { return active_ == 0; });
      open_ = false;
      error = std::exchange(error_, nullptr);
    }
    if (error) std::rethrow_exception(error);
    return true;
  }

  ~thread_pool() {
    stopped().store(true);
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  thread_pool() = default;

  /// Runs tasks claimed from the counter until none is left.
  void claim(task_fn fn, void* context, std::size_t tasks) {
    for (std::size_t t; (t = next_.fetch_add(1, std::memory_order_relaxed)) < tasks;) {
      try {
        fn(context, t);
      } catch (...) {
        std::lock_guard lock(m_);
        if (!error_) error_ = std::current_exception();
        // The other tasks are not worth running once the region has failed.
        next_.store(tasks, std::memory_order_relaxed);
      }
    }
  }

  void work() {
    in_parallel_region() = true;
    std::uint64_t seen = 0;
    std::unique_lock lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      // A worker that wakes after its region closed must not claim from the next one with
      // this one's function; while active_ counts it, the region stays open.
      if (!open_) continue;
      ++active_;
      const task_fn fn = fn_;
      void* const context = context_;
      const std::size_t tasks = tasks_;
      lock.unlock();
      claim(fn, context, tasks);
      lock.lock();
      if (--active_ == 0) finished_.notify_one();
    }
  }

  std::atomic<bool> busy_{false};
  std::atomic<std::size_t> next_{0};
  std::mutex m_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  std::uint64_t generation_ = 0;
  task_fn fn_ = nullptr;
  void* context_ = nullptr;
  std::size_t tasks_ = 0, active_ = 0;
  bool open_ = false, stop_ = false;
  std::exception_ptr error_;
};

/// Runs f(t) for every t in [0, tasks): on the pool (Note [intra-op pool]) when tasks > 1 and
/// the pool is free, else one after another on the calling thread. Exceptions reach the caller.
template <class F>
void run_tasks(std::size_t tasks, F&& f) {
  if (tasks > 1 && !in_parallel_region() && !thread_pool::stopped().load(std::memory_order_relaxed)) {
    auto thunk = [](void* context, std::size_t t) { (*static_cast<std::remove_reference_t<F>*>(context))(t); };
    if (thread_pool::instance().run(tasks, thunk, const_cast<void*>(static_cast<const void*>(&f)))) {
      ++counters().parallel_regions;
      return;
    }
  }
  for (std::size_t t = 0; t < tasks; ++t) f(t);
}

/// How many threads a loop over `elements` elements splits across: one per parallel_grain
/// elements, at most intra_op_threads(); 1 below parallel_threshold (Note [parallel threshold]).
inline std::size_t split_count(std::size_t elements) {
  return std::clamp<std::size_t>(elements / parallel_grain, 1, static_cast<std::size_t>(intra_op_threads()));
}

/// Calls f(begin, end) over a static split of [0, count) items, which hold `elements` elements
/// in all, into contiguous ranges, one per thread (Note [intra-op pool]). The split depends on
/// the thread count: f's results must not depend on where the items are cut.
template <class F>
void parallel_for(std::size_t count, std::size_t elements, F&& f) {
  const std::size_t ranges = std::min(count, split_count(elements));
  if (ranges <= 1) {
    if (count > 0) f(std::size_t{0}, count);
    return;
  }
  const std::size_t each = count / ranges, rest = count % ranges;
  auto begin = [&](std::size_t t) { return t * each + std::min(t, rest); };
  run_tasks(ranges, [&](std::size_t t) { f(begin(t), begin(t + 1)); });
}
}  // namespace fusegrad::core

namespace fusegrad::config {
/// Sets how many threads fusegrad's host loops and OpenBLAS use: n >= 1, or 0 for every core
/// (the default), as tf.config.threading.set_intra_op_parallelism_threads.
inline void set_intra_op_parallelism_threads(int n) {
  FG_CHECK(n >= 0, value_error, "fg::config::set_intra_op_parallelism_threads: the thread count is ", n,
           "; give a positive count, or 0 for every core");
  core::intra_op_setting.store(n, std::memory_order_relaxed);
  // Note [thread count followers]: libraries with threads of their own follow the setting:
  // OpenBLAS here, oneDNN (on OpenMP) before each execution (eval/host_dnnl.hpp). Their threads
  // and the pool's never run at once: each is called from a thread that waits for it.
  openblas_set_num_threads(core::intra_op_threads());
}
/// The intra-op setting: the thread count last set, 0 (the default) for every core.
inline int get_intra_op_parallelism_threads() { return core::intra_op_setting.load(std::memory_order_relaxed); }
}  // namespace fusegrad::config
