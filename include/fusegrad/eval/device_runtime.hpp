#pragma once
/// \file The device runtime for the active Thrust system: memory, copies and the GPU count
/// that storage uses (core/storage.hpp), the execution policies, and a guard selecting a GPU.
/// Note [device systems]: under CUDA, "/gpu:N" is GPU N and its memory comes from the CUDA
/// runtime (cuda/include/fusegrad/cuda/runtime.hpp). Under a host Thrust system (OpenMP, TBB or
/// C++), there is one "/gpu:0" whose memory is ordinary host memory allocated through this
/// runtime, so the whole device path (functors, Thrust algorithms, copies, placement, errors)
/// runs, and is tested, on a machine without a GPU.

#include <cstddef>
#include <cstring>
#include <new>

// Thrust compiles each algorithm for 32- and 64-bit offsets and picks one by size at run time;
// one offset type halves the kernels every fused expression instantiates.
#if !defined(THRUST_FORCE_32_BIT_OFFSET_TYPE) && !defined(THRUST_FORCE_64_BIT_OFFSET_TYPE)
#define THRUST_FORCE_64_BIT_OFFSET_TYPE
#endif
#include <thrust/execution_policy.h>
#include <thrust/system_error.h>

#include "../core/config.hpp"
#include "../core/storage.hpp"

#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
#include <fusegrad/cuda/runtime.hpp>
#endif

namespace fusegrad::device_eval {

#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
/// True when "/gpu:N" is a real GPU (Note [device systems]).
inline constexpr bool native_gpu = true;
using cuda::device_guard;

/// The policy for algorithms whose result stays on the device: no synchronisation. Every
/// device operation runs on the default stream, which orders it before any later copy, kernel
/// or free, so the host never sees a result before it is written.
inline auto launch_policy() { return thrust::cuda::par_nosync; }
/// The policy for algorithms that return a value to the host (they synchronise anyway).
inline auto sync_policy() { return thrust::cuda::par; }

inline void* allocate(std::size_t bytes, fg::device d) { return cuda::allocate(bytes, d); }
inline void release(void* p, fg::device d) noexcept { cuda::release(p, d); }
inline void copy(void* dst, fg::device dd, const void* src, fg::device sd, std::size_t bytes) {
  cuda::copy(dst, dd, src, sd, bytes);
}
inline int count() { return cuda::count(); }
#else
inline constexpr bool native_gpu = false;

/// One memory space: nothing to select.
struct device_guard {
  explicit device_guard(fg::device) noexcept {}
};
inline auto launch_policy() { return thrust::device; }
inline auto sync_policy() { return thrust::device; }

inline void* allocate(std::size_t bytes, fg::device d) {
  void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{64}, std::nothrow);
  FG_CHECK(p != nullptr, out_of_memory, "fusegrad: cannot allocate ", bytes, " bytes on ", d.str(),
           " (out of memory); free tensors or use smaller batches");
  return p;
}
inline void release(void* p, fg::device) noexcept { ::operator delete(p, std::align_val_t{64}); }
inline void copy(void* dst, fg::device, const void* src, fg::device, std::size_t bytes) { std::memcpy(dst, src, bytes); }
inline int count() { return 1; }
#endif

/// Runs f, a Thrust algorithm on device d, turning the errors Thrust reports into fusegrad's:
/// fg::out_of_memory for a failed allocation of temporary storage, fg::device_error naming
/// `what` and the device for any other failure.
template <class F>
void checked(const char* what, fg::device d, F&& f) {
  try {
    f();
  } catch (const out_of_memory&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw out_of_memory(fg::detail::cat("fusegrad: ", what, " on ", d.str(), " could not allocate temporary storage"));
  } catch (const thrust::system_error& e) {
    throw device_error(fg::detail::cat("fusegrad: ", what, " on ", d.str(), " failed: ", e.what()));
  }
}

/// The runtime table storage allocates device buffers through.
inline const fg::detail::device_runtime& system_runtime() {
  static const fg::detail::device_runtime r{&allocate, &release, &copy, &count};
  return r;
}

namespace detail {
// Installed during static initialisation of any program that includes the backend, before
// main runs, so storage finds it when the first device tensor is made.
inline const bool runtime_installed = (fg::detail::active_device_runtime() = &system_runtime(), true);
}  // namespace detail
}  // namespace fusegrad::device_eval
