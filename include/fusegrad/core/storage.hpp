#pragma once
/// \file The shared, immutable buffer behind tensors, and the counters tests use to prove fusion.

#include <cstdint>
#include <memory>
#include <new>

#include "config.hpp"
#include "device.hpp"
#include "host_allocator.hpp"
#include "error.hpp"

namespace fusegrad {
namespace core {

/// Per-thread counters of buffer and evaluation events. Note [counters]: they are plain
/// thread_local integers so that counting costs nothing measurable on the scalar fast path;
/// tests read them on the thread that does the work.
struct event_counters {
  std::int64_t live_buffers = 0;   ///< buffers allocated and not yet freed
  std::int64_t allocations = 0;    ///< buffers allocated so far
  std::int64_t passes = 0;         ///< fused loops run by evaluators (elementwise, reductions)
  std::int64_t parallel_regions = 0;  ///< loops this thread split across the intra-op pool
};
inline event_counters& counters() {
  thread_local event_counters c;
  return c;
}

/// Releases a device allocation; installed by the device backend.
using device_free_fn = void (*)(void* p, device d) noexcept;

/// What the device backend provides for memory (see eval/device.hpp). Null when no device
/// backend is compiled in; then only the host exists.
struct device_runtime {
  void* (*allocate)(std::size_t bytes, device d);  ///< throws out_of_memory
  device_free_fn release;
  void (*copy)(void* dst, device dd, const void* src, device sd, std::size_t bytes);
  int (*count)();  ///< number of GPUs present
};
inline const device_runtime*& active_device_runtime() {
  static const device_runtime* r = nullptr;
  return r;
}
inline const device_runtime& require_device_runtime(device d) {
  const device_runtime* r = active_device_runtime();
  FG_CHECK(r != nullptr, device_error, "fusegrad: ", d.str(),
           " is not available: this program was built without the device backend "
           "(define FUSEGRAD_DEVICE and build with Thrust, see docs/device.md)");
  const int n = r->count();
  FG_CHECK(d.index >= 0 && d.index < n, device_error, "fusegrad: ", d.str(), " does not exist (", n,
           " GPU(s) present; valid: /gpu:0 to /gpu:", n - 1, ")");
  return *r;
}

/// A buffer of `bytes` bytes on d for a storage, other than a one-element host buffer (which
/// a storage holds itself); `device_free` is set for a device buffer. Compiled once for every
/// element type.
FG_NOINLINE inline void* allocate_buffer(std::size_t bytes, device d, device_free_fn& device_free) {
  if (d.is_gpu()) {
    const device_runtime& rt = require_device_runtime(d);
    void* data = rt.allocate(bytes, d);
    device_free = rt.release;
    return data;
  }
  try {
    return host_allocate(bytes);
  } catch (const std::bad_alloc&) {
    throw out_of_memory(cat("fusegrad: cannot allocate ", bytes, " bytes on ", d.str()));
  }
}

/// Copies `bytes` bytes from src on device `from` to dst on device `to`, one of them a GPU.
FG_NOINLINE inline void copy_between(void* dst, device to, const void* src, device from, std::size_t bytes) {
  const device_runtime& rt = require_device_runtime(to.is_gpu() ? to : from);
  if (bytes > 0) rt.copy(dst, to, src, from, bytes);
}

/// One allocation of `size` elements of T on a device. Buffers of one element on the host
/// live inside the control block, so a scalar tensor costs one allocation. `size * sizeof(T)`
/// fits: tensors count their bytes with core::checked_bytes first (Note [checked sizes]).
template <class T>
struct storage {
  T* data = nullptr;
  std::size_t size = 0;
  device dev = device::cpu();
  device_free_fn device_free = nullptr;
  T small{};

  storage(std::size_t n, device d) : size(n), dev(d) {
    // A one-element host buffer inline (scalar code makes one per op), any other out of line.
    data = d.is_cpu() && n <= 1 ? &small : static_cast<T*>(allocate_buffer(n * sizeof(T), d, device_free));
    ++counters().live_buffers;
    ++counters().allocations;
  }
  /// Adopts a device allocation made by the device backend.
  storage(T* p, std::size_t n, device d, device_free_fn f) : data(p), size(n), dev(d), device_free(f) {
    ++counters().live_buffers;
    ++counters().allocations;
  }
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;
  ~storage() {
    if (device_free) device_free(data, dev);
    else if (data != &small && data) host_release(data, size * sizeof(T));
    --counters().live_buffers;
  }
};

/// A new shared buffer of n elements on d; its control block (which holds a one-element host
/// buffer) comes from this thread's small blocks (Note [small blocks]).
template <class T>
std::shared_ptr<storage<T>> make_storage(std::size_t n, device d) {
  return std::allocate_shared<storage<T>>(small_allocator<storage<T>>{}, n, d);
}
}  // namespace core
}  // namespace fusegrad
