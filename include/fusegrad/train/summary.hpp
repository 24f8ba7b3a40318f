#pragma once
/// \file fg::summary: TensorBoard logs, as tf.summary writes them. create_file_writer(logdir)
/// makes a directory and an event file in it (io/events.hpp); inside `auto s =
/// writer.as_default();` the free functions fg::summary::scalar(name, value, step) and
/// histogram(name, tensor, step) write to it, and return false when no writer is the default,
/// as tf.summary's do. Records are buffered and written out as TensorFlow's writer does (Note
/// [summary flushing]). `tensorboard --logdir <logdir>` shows them.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../io/events.hpp"

namespace fusegrad::summary {

/// create_file_writer's options, tf.summary.create_file_writer's.
struct file_writer_options {
  /// Records held in memory before they are written: a write that makes more than this many
  /// pending writes them all (Note [summary flushing]).
  std::int64_t max_queue = 10;
  /// The longest time records wait in memory: a write this long after the last flush writes.
  std::int64_t flush_millis = 120000;
  /// The end of the event file's name.
  std::string filename_suffix = ".v2";
};

// Note [summary flushing]: like TensorFlow's summary file writer, a writer keeps the records it
// is given in memory and writes them to its file together: when a write leaves more than
// max_queue records pending (so max_queue = 10 writes on the 11th), when a write comes
// flush_millis or more after the last flush (checked on each write: no thread wakes up to
// flush, so a writer given nothing keeps its last records in memory until flush(), close() or
// its last handle goes), on flush(), and on close(), which also syncs the file to disk. The file
// and its file_version record are written at once when the writer is made, so that TensorBoard
// sees the run from the start. A process killed between flushes loses the pending records
// only; the file holds whole records, and a record cut short by a kill ends a reader's read
// cleanly (Note [tfrecord reading]).

namespace impl {
/// One event file and its pending records; shared by the copies of a file_writer.
class writer_state {
 public:
  writer_state(std::string logdir, const file_writer_options& o) : logdir_(std::move(logdir)), o_(o) {
    namespace fs = std::filesystem;
    const char* op = "fg::summary::create_file_writer";
    FG_CHECK(!logdir_.empty(), value_error, op, ": the log directory is empty (give one, e.g. \"logs\")");
    FG_CHECK(o_.max_queue >= 0, value_error, op, ": '", logdir_, "': max_queue must be 0 or more, got ", o_.max_queue);
    FG_CHECK(o_.flush_millis >= 0, value_error, op, ": '", logdir_, "': flush_millis must be 0 or more, got ",
             o_.flush_millis);
    FG_CHECK(o_.filename_suffix.find('/') == std::string::npos, value_error, op, ": '", logdir_,
             "': filename_suffix \"", o_.filename_suffix, "\" holds a '/'");
    std::error_code ec;
    fs::create_directories(logdir_, ec);
    FG_CHECK(!ec && fs::is_directory(logdir_), value_error, op, ": '", logdir_, "': cannot make the directory: ",
             ec ? ec.message() : std::string("a file of that name is in the way"));
    // Note [event file name]: TensorFlow names a writer's file
    // events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.<n><suffix>, n counting the writers
    // the process made from 0, so that writers made in the same second into the same directory
    // (Keras' train/ and validation/ writers, a restarted run) get files of their own.
    // TensorBoard reads every file whose name contains "tfevents", in name order.
    static std::atomic<std::uint64_t> counter{0};
    const auto now = std::chrono::system_clock::now();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(seconds));
    path_ = (fs::path(logdir_) / (std::string("events.out.tfevents.") + stamp + "." + host + "." +
                                  std::to_string(::getpid()) + "." + std::to_string(counter++) + o_.filename_suffix))
                .string();
    file_ = io::record_file(path_);
    // The first record: the format's version, stamped with the whole second of the name.
    file_.append(io::frame_record(io::encode_event(
        {.wall_time = static_cast<double>(seconds), .file_version = io::event_file_version})));
    last_flush_ = std::chrono::steady_clock::now();
  }
  writer_state(const writer_state&) = delete;
  writer_state& operator=(const writer_state&) = delete;
  ~writer_state() {
    try {
      close();
    } catch (const std::exception& e) {  // a destructor cannot throw; say what was lost
      std::cerr << "fg::summary::file_writer: " << e.what() << "\n";
    }
  }

  const std::string& logdir() const noexcept { return logdir_; }
  const std::string& path() const noexcept { return path_; }
  bool closed() const {
    const std::lock_guard lock(mu_);
    return closed_;
  }
  /// Queues one event, flushing as Note [summary flushing] says.
  void write(const io::event& e, std::string_view op, std::string_view name) {
    const std::lock_guard lock(mu_);
    FG_CHECK(!closed_, value_error, op, ": '", name, "': the writer of '", logdir_,
             "' is closed (make another with fg::summary::create_file_writer)");
    pending_ += io::frame_record(io::encode_event(e));
    ++pending_records_;
    const auto now = std::chrono::steady_clock::now();
    if (pending_records_ > o_.max_queue || now - last_flush_ >= std::chrono::milliseconds(o_.flush_millis))
      flush_locked(now);
  }
  void flush() {
    const std::lock_guard lock(mu_);
    if (!closed_) flush_locked(std::chrono::steady_clock::now());
  }
  /// Flushes, syncs and closes the file; later writes are errors, a second close does nothing.
  void close() {
    const std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    flush_locked(std::chrono::steady_clock::now());
    file_.close();
  }

 private:
  void flush_locked(std::chrono::steady_clock::time_point now) {
    last_flush_ = now;
    if (pending_.empty()) return;
    // Cleared first: a failed write is not tried again with records that may be half written.
    const std::string bytes = std::exchange(pending_, std::string());
    pending_records_ = 0;
    file_.append(bytes);
  }

  std::string logdir_, path_;
  file_writer_options o_;
  mutable std::mutex mu_;
  io::record_file file_;
  std::string pending_;
  std::int64_t pending_records_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
  bool closed_ = false;
};

/// The thread's default writer and default step (tf.summary keeps both per thread).
struct thread_state {
  std::shared_ptr<writer_state> writer;
  std::optional<std::int64_t> step;
};
inline thread_state& state() {
  static thread_local thread_state s;
  return s;
}

/// The step of a summary: the one given, else the default step, else an error naming it.
inline std::int64_t step_of(std::optional<std::int64_t> step, std::string_view op, std::string_view name) {
  if (step) return *step;
  const std::optional<std::int64_t>& d = state().step;
  FG_CHECK(d.has_value(), value_error, op, ": '", name,
           "': no step given and no default step set; pass the step, call "
           "fg::summary::experimental::set_step(step), or give writer.as_default(step)");
  return *d;
}
inline double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace impl

namespace experimental {
/// Sets the thread's default step for summaries written without one (tf.summary.experimental
/// .set_step); nullopt unsets it.
inline void set_step(std::optional<std::int64_t> step) { impl::state().step = step; }
/// The thread's default step, if one is set.
inline std::optional<std::int64_t> get_step() { return impl::state().step; }
}  // namespace experimental

/// The values a summary scalar takes: a number (not a bool) or a 0-d float tensor.
template <class V>
concept scalar_value = (std::is_arithmetic_v<V> && !std::same_as<V, bool>) ||
                       std::same_as<V, tensor<float>> || std::same_as<V, tensor<double>>;

/// A histogram of `data`'s values as tf.summary.histogram computes it (TensorFlow 2's
/// TensorBoard), as a HistogramProto (Note [summary histogram]).
template <floating_element T>
io::histogram_proto make_histogram(const tensor<T>& data, int buckets = 30, std::string_view name = "data") {
  FG_CHECK(buckets >= 0, value_error, "fg::summary::histogram: '", name, "': buckets must be 0 or more, got ", buckets);
  const tensor<T> host = data.device().is_cpu() ? data : data.cpu();
  const T* v = host.data();
  const std::size_t n = host.size();
  io::histogram_proto h;
  h.num = static_cast<double>(n);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += !std::isfinite(static_cast<double>(v[i]));
  FG_CHECK(bad == 0, value_error, "fg::summary::histogram: '", name, "': ", bad, " of the ", n,
           " values are NaN or infinite (a histogram needs finite values; fg::debugging::check_numerics finds them)");
  if (n > 0) {
    h.min = h.max = static_cast<double>(v[0]);
    for (std::size_t i = 0; i < n; ++i) {
      const auto x = static_cast<double>(v[i]);
      h.min = std::min(h.min, x);
      h.max = std::max(h.max, x);
      h.sum += x;
      h.sum_squares += x * x;
    }
  }
  const auto k = static_cast<std::size_t>(buckets);
  h.bucket_limit.assign(k, h.max);
  h.bucket.assign(k, 0.0);
  if (k == 0 || n == 0) return h;
  const double range = h.max - h.min;
  if (range == 0) {
    h.bucket.back() = static_cast<double>(n);
    return h;
  }
  const double width = range / static_cast<double>(k);
  for (std::size_t i = 0; i < n; ++i) {
    const double at = std::floor((static_cast<double>(v[i]) - h.min) / width);
    h.bucket[static_cast<std::size_t>(std::min(at, static_cast<double>(k - 1)))] += 1;
  }
  for (std::size_t i = 0; i + 1 < k; ++i) h.bucket_limit[i] = h.min + static_cast<double>(i + 1) * width;
  return h;
}

// Note [summary histogram]: tf.summary.histogram (TensorBoard 2's summary_v2) flattens the data
// to float64 and makes `buckets` buckets of equal width w = (max - min) / buckets: a value x
// goes to bucket floor((x - min) / w), the maximum (and any value rounding past the last edge)
// to the last one; the edges are min + i * w, the last one exactly max. Two edge cases keep the
// count: empty data gives `buckets` empty buckets with every edge 0, and data of one value v
// gives `buckets` buckets with every edge v, all of them empty but the last, which holds
// everything. buckets = 0 gives none. fusegrad stores them in a HistogramProto: bucket_limit[i]
// is bucket i's right edge and bucket[i] its count; min is the first left edge, so TensorBoard
// recovers TensorFlow's [left, right, count] triples from it. NaN and infinite values, which
// make TensorFlow's buckets meaningless, are an error.

/// A handle to a summary writer (tf.summary.SummaryWriter): copies share one writer and its
/// file; the file is flushed and closed when the last copy goes, or by close().
class file_writer {
 public:
  /// An empty handle, to assign a writer to later.
  file_writer() = default;

  /// While the returned guard lives, this is the thread's default writer (and `step`, when
  /// given, the default step); its destruction restores the previous ones, so scopes nest.
  class [[nodiscard]] default_scope {
   public:
    default_scope(const default_scope&) = delete;
    default_scope& operator=(const default_scope&) = delete;
    ~default_scope() {
      impl::thread_state& s = impl::state();
      s.writer = std::move(prev_writer_);
      if (set_step_) s.step = prev_step_;
    }

   private:
    friend class file_writer;
    default_scope(std::shared_ptr<impl::writer_state> w, std::optional<std::int64_t> step) {
      impl::thread_state& s = impl::state();
      prev_writer_ = std::exchange(s.writer, std::move(w));
      prev_step_ = s.step;
      set_step_ = step.has_value();
      if (set_step_) s.step = step;
    }
    std::shared_ptr<impl::writer_state> prev_writer_;
    std::optional<std::int64_t> prev_step_;
    bool set_step_ = false;
  };

  /// Makes this the thread's default writer for the guard's life (`with writer.as_default():`).
  default_scope as_default(std::optional<std::int64_t> step = std::nullopt) const {
    FG_CHECK(!get("fg::summary::file_writer::as_default").closed(), value_error,
             "fg::summary::file_writer::as_default: the writer of '",
             s_->logdir(), "' is closed");
    return default_scope(s_, step);
  }

  /// Writes the pending records to the file.
  void flush() const { get("fg::summary::file_writer::flush").flush(); }
  /// Flushes and closes the file; writing afterwards is an error.
  void close() const { get("fg::summary::file_writer::close").close(); }
  /// Whether close() was called.
  bool closed() const { return get("fg::summary::file_writer::closed").closed(); }
  /// The log directory, and the event file in it.
  const std::string& logdir() const { return get("fg::summary::file_writer::logdir").logdir(); }
  const std::string& path() const { return get("fg::summary::file_writer::path").path(); }

  /// Writes a scalar (`step` defaulting to the default step); true, as tf.summary.scalar.
  template <scalar_value V>
  bool scalar(std::string_view name, const V& value, std::optional<std::int64_t> step = std::nullopt,
              std::string_view description = {}) const {
    constexpr const char* op = "fg::summary::scalar";
    impl::writer_state& w = get(op);
    check_name(op, name);
    double x = 0;
    if constexpr (std::is_arithmetic_v<V>) {
      x = static_cast<double>(value);
    } else {
      FG_CHECK(value.shape().rank() == 0, value_error, op, ": '", name, "': the value must be a scalar (a 0-d tensor), got shape ",
               value.shape());
      x = static_cast<double>((value.device().is_cpu() ? value : value.cpu()).data()[0]);
    }
    io::summary_value v{.tag = std::string(name), .simple_value = static_cast<float>(x)};
    if (!description.empty()) v.metadata = io::summary_metadata{.plugin_name = "scalars", .description = std::string(description)};
    write(w, std::move(v), impl::step_of(step, op, name), op, name);
    return true;
  }

  /// Writes a histogram of `data`'s values in `buckets` buckets (Note [summary histogram]).
  template <floating_element T>
  bool histogram(std::string_view name, const tensor<T>& data, std::optional<std::int64_t> step = std::nullopt,
                 int buckets = 30, std::string_view description = {}) const {
    constexpr const char* op = "fg::summary::histogram";
    impl::writer_state& w = get(op);
    check_name(op, name);
    const std::int64_t s = impl::step_of(step, op, name);
    io::summary_value v{.tag = std::string(name), .histo = make_histogram(data, buckets, name)};
    if (!description.empty())
      v.metadata = io::summary_metadata{.plugin_name = "histograms", .description = std::string(description)};
    write(w, std::move(v), s, op, name);
    return true;
  }

  /// Whether the handle holds a writer (a default-made one does not).
  explicit operator bool() const noexcept { return s_ != nullptr; }
  /// Whether two handles share one writer.
  friend bool operator==(const file_writer& a, const file_writer& b) noexcept { return a.s_ == b.s_; }

 private:
  friend file_writer create_file_writer(const std::string&, const file_writer_options&);
  friend file_writer default_writer();
  explicit file_writer(std::shared_ptr<impl::writer_state> s) : s_(std::move(s)) {}

  impl::writer_state& get(std::string_view op) const {
    FG_CHECK(s_ != nullptr, value_error, op,
             ": an empty fg::summary::file_writer (make one with fg::summary::create_file_writer(logdir))");
    return *s_;
  }
  static void check_name(std::string_view op, std::string_view name) {
    FG_CHECK(!name.empty(), value_error, op, ": the summary's name is empty");
  }
  static void write(impl::writer_state& w, io::summary_value v, std::int64_t step, std::string_view op,
                    std::string_view name) {
    io::event e{.wall_time = impl::wall_time(), .step = step};
    e.summary.emplace().push_back(std::move(v));
    w.write(e, op, name);
  }

  std::shared_ptr<impl::writer_state> s_;
};

/// A writer of a new event file in `logdir`, made with its parents if absent
/// (tf.summary.create_file_writer); the file's name is TensorFlow's (Note [event file name]).
inline file_writer create_file_writer(const std::string& logdir, const file_writer_options& o = {}) {
  return file_writer(std::make_shared<impl::writer_state>(logdir, o));
}

/// The thread's default writer: an empty handle when there is none.
inline file_writer default_writer() { return file_writer(impl::state().writer); }

/// Writes a scalar to the default writer; false (and nothing written) when there is none.
template <scalar_value V>
bool scalar(std::string_view name, const V& value, std::optional<std::int64_t> step = std::nullopt,
            std::string_view description = {}) {
  if (!impl::state().writer) return false;
  return default_writer().scalar(name, value, step, description);
}
/// Writes a scalar to `writer`.
template <scalar_value V>
bool scalar(const file_writer& writer, std::string_view name, const V& value,
            std::optional<std::int64_t> step = std::nullopt, std::string_view description = {}) {
  return writer.scalar(name, value, step, description);
}

/// Writes a histogram of `data` to the default writer; false when there is none.
template <floating_element T>
bool histogram(std::string_view name, const tensor<T>& data, std::optional<std::int64_t> step = std::nullopt,
               int buckets = 30, std::string_view description = {}) {
  if (!impl::state().writer) return false;
  return default_writer().histogram(name, data, step, buckets, description);
}
/// Writes a histogram of `data` to `writer`.
template <floating_element T>
bool histogram(const file_writer& writer, std::string_view name, const tensor<T>& data,
               std::optional<std::int64_t> step = std::nullopt, int buckets = 30, std::string_view description = {}) {
  return writer.histogram(name, data, step, buckets, description);
}

/// Flushes the default writer, if there is one (tf.summary.flush).
inline void flush() {
  if (impl::state().writer) impl::state().writer->flush();
}
}  // namespace fusegrad::summary
