#pragma once
/// \file The CUDA runtime glue of the device backend: every call's status checked, device
/// memory, copies between memories, the number of GPUs, and a guard that selects a GPU.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include <cuda_runtime_api.h>

#include <fusegrad/core/config.hpp>
#include <fusegrad/core/device.hpp>
#include <fusegrad/core/error.hpp>

namespace fusegrad::cuda {

/// Throws fg::device_error naming the call, the device and CUDA's message unless `status`
/// is cudaSuccess; an allocation failure throws fg::out_of_memory instead.
inline void check(cudaError_t status, const char* call, fg::device d) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // reset the last-error state so later calls report their own status
  if (status == cudaErrorMemoryAllocation)
    throw out_of_memory(fg::core::cat("fusegrad: ", call, " on ", d.str(), " failed: ", cudaGetErrorString(status)));
  throw device_error(fg::core::cat("fusegrad: ", call, " on ", d.str(), " failed: ", cudaGetErrorName(status), " (",
                                   cudaGetErrorString(status), ")"));
}

/// Makes GPU d current for its lifetime (kernels and allocations go to the current GPU).
class device_guard {
 public:
  explicit device_guard(fg::device d) {
    check(cudaGetDevice(&saved_), "cudaGetDevice", d);
    if (saved_ != d.index) check(cudaSetDevice(d.index), "cudaSetDevice", d);
    else saved_ = -1;
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() {
    if (saved_ >= 0) cudaSetDevice(saved_);
  }

 private:
  int saved_ = -1;
};

/// Number of GPUs the CUDA runtime sees (0 without a GPU or driver), asked once.
inline int count() {
  static const int n = [] {
    int c = 0;
    const cudaError_t s = cudaGetDeviceCount(&c);
    if (s != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return c;
  }();
  return n;
}

inline constexpr int max_gpus = 64;

/// Threads per block of a grid-stride kernel.
inline constexpr unsigned grid_threads = 256;
/// Blocks of grid_threads for a grid-stride kernel over n elements on GPU d: enough to fill it
/// (32 blocks per multiprocessor), never more than the elements need.
inline unsigned grid_blocks(std::size_t n, fg::device d) {
  static std::array<std::atomic<int>, max_gpus> sms{};
  const auto i = static_cast<std::size_t>(d.index);
  int m = sms[i].load(std::memory_order_relaxed);
  if (m == 0) {
    check(cudaDeviceGetAttribute(&m, cudaDevAttrMultiProcessorCount, d.index), "cudaDeviceGetAttribute", d);
    sms[i].store(m, std::memory_order_relaxed);
  }
  const std::size_t wanted = (n + grid_threads - 1) / grid_threads, most = static_cast<std::size_t>(m) * 32;
  return static_cast<unsigned>(wanted < most ? (wanted > 0 ? wanted : 1) : most);
}

/// Whether GPU d allocates from CUDA's stream-ordered memory pool, set up on first use. Note
/// [device memory pool]: an eager program frees and allocates buffers of the same sizes in every
/// step. cudaMalloc and cudaFree are slow and cudaFree waits for the whole GPU; the pool reuses
/// freed memory in stream order without waiting. Its release threshold is raised so freed
/// memory stays in the pool; allocate trims the pool and retries before reporting out of memory.
struct pool_state {
  std::array<std::once_flag, max_gpus> once;
  std::array<bool, max_gpus> pooled{};
};
inline pool_state& pools() {
  static pool_state s;
  return s;
}
inline bool uses_pool(fg::device d) {
  FG_CHECK(d.index >= 0 && d.index < max_gpus, device_error, "fusegrad: ", d.str(), " is beyond the ", max_gpus,
           " GPUs fusegrad supports");
  pool_state& ps = pools();
  const auto i = static_cast<std::size_t>(d.index);
  std::call_once(ps.once[i], [&] {
    int supported = 0;
    check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, d.index), "cudaDeviceGetAttribute", d);
    if (!supported) return;
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, d.index), "cudaDeviceGetDefaultMemPool", d);
    std::uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute", d);
    ps.pooled[i] = true;
  });
  return ps.pooled[i];
}

/// `bytes` of memory on GPU d; fg::out_of_memory names the size and the device when it fails.
inline void* allocate(std::size_t bytes, fg::device d) {
  device_guard g(d);
  const bool pool = uses_pool(d);
  void* p = nullptr;
  cudaError_t s = pool ? cudaMallocAsync(&p, bytes, cudaStreamLegacy) : cudaMalloc(&p, bytes);
  if (s == cudaErrorMemoryAllocation && pool) {
    cudaGetLastError();
    cudaMemPool_t mp;
    check(cudaDeviceGetDefaultMemPool(&mp, d.index), "cudaDeviceGetDefaultMemPool", d);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", d);
    check(cudaMemPoolTrimTo(mp, 0), "cudaMemPoolTrimTo", d);
    s = cudaMallocAsync(&p, bytes, cudaStreamLegacy);
  }
  if (s != cudaSuccess) {
    cudaGetLastError();
    // Some sizes are refused as invalid rather than as out of memory; both mean "too big".
    std::size_t free_bytes = 0, total_bytes = 0;
    if (s == cudaErrorMemoryAllocation ||
        (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && bytes > free_bytes))
      throw out_of_memory(fg::core::cat("fusegrad: cannot allocate ", bytes, " bytes on ", d.str(),
                                        " (out of device memory); free tensors or use smaller batches"));
    check(s, pool ? "cudaMallocAsync" : "cudaMalloc", d);
  }
  return p;
}

/// Frees memory from allocate. Errors are ignored: this runs in destructors, possibly after
/// the CUDA runtime has shut down at program exit.
inline void release(void* p, fg::device d) noexcept {
  // allocate set the pool flag of d before any of its memory existed.
  if (pools().pooled[static_cast<std::size_t>(d.index)]) cudaFreeAsync(p, cudaStreamLegacy);
  else cudaFree(p);
}

/// Copies bytes between any two memories (host or GPU); unified addressing tells them apart.
inline void copy(void* dst, fg::device dd, const void* src, fg::device sd, std::size_t bytes) {
  const cudaError_t s = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  check(s, dd.is_gpu() ? "cudaMemcpy (to device)" : "cudaMemcpy (from device)", dd.is_gpu() ? dd : sd);
}
}  // namespace fusegrad::cuda
