#pragma once
/// \file Host memory for tensor buffers. Note [buffer cache]: an eager library frees and
/// allocates same-sized buffers in every step of a loop. Blocks of 1 MiB and more come from
/// mmap, and the kernel zeroes every page of a fresh mapping on first touch: at 1e7 floats that
/// costs more than the computation. So each thread keeps a few recently freed large blocks
/// (up to 16 and 1 GiB) and reuses one of the same size; fg::empty_cache() returns them.

#include <array>
#include <cstddef>
#include <new>

namespace fusegrad {
namespace detail {

inline constexpr std::size_t buffer_alignment = 64;
inline constexpr std::size_t cache_min_bytes = std::size_t{1} << 20;

class host_block_cache {
 public:
  static constexpr std::size_t slots = 16;
  static constexpr std::size_t max_bytes = std::size_t{1} << 30;

  void* take(std::size_t bytes) noexcept {
    for (auto& b : blocks_)
      if (b.ptr && b.bytes == bytes) {
        void* p = b.ptr;
        b.ptr = nullptr;
        held_ -= bytes;
        return p;
      }
    return nullptr;
  }
  /// Keeps p for reuse when there is room; false when the caller must free it.
  bool keep(void* p, std::size_t bytes) noexcept {
    if (held_ + bytes > max_bytes) return false;
    for (auto& b : blocks_)
      if (!b.ptr) {
        b = {p, bytes};
        held_ += bytes;
        return true;
      }
    return false;
  }
  void clear() noexcept {
    for (auto& b : blocks_)
      if (b.ptr) {
        ::operator delete(b.ptr, std::align_val_t{buffer_alignment});
        b.ptr = nullptr;
      }
    held_ = 0;
  }
  ~host_block_cache() {
    clear();
    alive() = false;
  }
  /// False once this thread's cache is destroyed (buffers freed later go straight back).
  static bool& alive() noexcept {
    thread_local bool a = true;
    return a;
  }

 private:
  struct block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };
  std::array<block, slots> blocks_{};
  std::size_t held_ = 0;
};

inline host_block_cache* block_cache() noexcept {
  if (!host_block_cache::alive()) return nullptr;
  thread_local host_block_cache c;
  return &c;
}

/// Allocates bytes aligned for SIMD, reusing a cached block of the same size when there is one.
inline void* host_allocate(std::size_t bytes) {
  if (bytes >= cache_min_bytes)
    if (host_block_cache* c = block_cache())
      if (void* p = c->take(bytes)) return p;
  return ::operator new(bytes, std::align_val_t{buffer_alignment});
}

/// Frees a block from host_allocate (or keeps it for reuse).
inline void host_release(void* p, std::size_t bytes) noexcept {
  if (bytes >= cache_min_bytes)
    if (host_block_cache* c = block_cache())
      if (c->keep(p, bytes)) return;
  ::operator delete(p, std::align_val_t{buffer_alignment});
}
/// A standard allocator over host_allocate, for the large, regrown arrays of gradient tapes
/// (Note [buffer cache]: a tape rebuilt in every step of a loop reuses the same blocks).
template <class T>
struct host_allocator {
  using value_type = T;
  host_allocator() = default;
  template <class U> host_allocator(const host_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(host_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { host_release(p, n * sizeof(T)); }
  template <class U> bool operator==(const host_allocator<U>&) const noexcept { return true; }
};
}  // namespace detail

/// Returns the large host blocks this thread keeps for reuse to the system.
inline void empty_cache() noexcept {
  if (detail::host_block_cache* c = detail::block_cache()) c->clear();
}
}  // namespace fusegrad
