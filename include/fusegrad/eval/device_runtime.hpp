#pragma once
/// \file The device runtime for the active Thrust system: memory, copies and the GPU count
/// that storage uses (core/storage.hpp), and a guard selecting a GPU. The execution policies
/// and Thrust's error handling are in eval/device_kernels.hpp.
/// Note [device systems]: under CUDA, "/gpu:N" is GPU N and its memory comes from the CUDA
/// runtime (cuda/include/fusegrad/cuda/runtime.hpp). Under a host Thrust system (OpenMP, TBB or
/// C++), there is one "/gpu:0" whose memory is ordinary host memory allocated through this
/// runtime, so the whole device path (functors, Thrust algorithms, copies, placement, errors)
/// runs, and is tested, on a machine without a GPU. A translation unit built with
/// FUSEGRAD_SEPARATE_KERNELS (Note [separate kernels], eval/device.hpp) is a CUDA program's host
/// code: it reads no Thrust header and uses the CUDA runtime.

#include <cstddef>
#include <cstring>
#include <new>

#include "../core/config.hpp"
#include "../core/storage.hpp"

#if defined(FUSEGRAD_SEPARATE_KERNELS)
#define FUSEGRAD_CUDA_SYSTEM 1
#else
// Thrust compiles each algorithm for 32- and 64-bit offsets and picks one by size at run time;
// one offset type halves the kernels every fused expression instantiates.
#if !defined(THRUST_FORCE_32_BIT_OFFSET_TYPE) && !defined(THRUST_FORCE_64_BIT_OFFSET_TYPE)
#define THRUST_FORCE_64_BIT_OFFSET_TYPE
#endif
#include <thrust/execution_policy.h>
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
#define FUSEGRAD_CUDA_SYSTEM 1
#else
#define FUSEGRAD_CUDA_SYSTEM 0
#endif
#endif

#if FUSEGRAD_CUDA_SYSTEM
#include <fusegrad/cuda/runtime.hpp>
#endif

namespace fusegrad::device_eval {

#if FUSEGRAD_CUDA_SYSTEM
/// True when "/gpu:N" is a real GPU (Note [device systems]).
inline constexpr bool native_gpu = true;
using cuda::device_guard;

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

/// The runtime table storage allocates device buffers through.
inline const fg::core::device_runtime& system_runtime() {
  static const fg::core::device_runtime r{&allocate, &release, &copy, &count};
  return r;
}

namespace detail {
// Installed during static initialisation of any program that includes the backend, before
// main runs, so storage finds it when the first device tensor is made.
inline const bool runtime_installed = (fg::core::active_device_runtime() = &system_runtime(), true);
}  // namespace detail
}  // namespace fusegrad::device_eval
