#pragma once
/// \file Host memory for tensor buffers. Note [buffer cache]: an eager library frees and
/// allocates same-sized buffers in every step of a loop. glibc serves blocks of 128 KiB and
/// more from mmap (its threshold starts there and moves with what the program frees) and may
/// trim freed memory back to the system, and the kernel zeroes every page of a fresh mapping
/// on first touch: at 1e5 floats that costs twice the computation, at 1e7 more than it. Below
/// that, each request of a kilobyte or more makes malloc consolidate its free lists. So each
/// thread keeps recently freed blocks of 1 KiB and more, up to 64 blocks and 1 GiB, and reuses
/// the one of the same size it kept last; when full, it frees the blocks it kept longest ago.
/// A training step frees its activations and gradients in about the reverse order it made
/// them, so the blocks freed last are the first the next step asks for. Seed 000's CNN (batch
/// 64) uses more than 16 large buffers a step: kept in 16 blocks, 100 steps on one thread
/// faulted in 1.9 million fresh pages and took 24.7 to 27.7 s; in 64, 0.21 million (loading
/// the data, mostly) and 18.3 to 19.8 s. fg::empty_cache() returns the blocks.

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

namespace fusegrad {
namespace core {

inline constexpr std::size_t buffer_alignment = 64;
inline constexpr std::size_t cache_min_bytes = std::size_t{1} << 10;

class host_block_cache {
 public:
  static constexpr std::size_t slots = 64;
  static constexpr std::size_t max_bytes = std::size_t{1} << 30;

  /// A kept block of exactly `bytes`, the one kept last, or null.
  void* take(std::size_t bytes) noexcept {
    block* best = nullptr;
    for (auto& b : blocks_)
      if (b.ptr && b.bytes == bytes && (!best || b.kept > best->kept)) best = &b;
    if (!best) return nullptr;
    held_ -= bytes;
    return std::exchange(best->ptr, nullptr);
  }
  /// Keeps p for reuse, freeing the blocks kept longest ago while there is no room; false when
  /// the caller must free p (a block larger than the whole cache).
  bool keep(void* p, std::size_t bytes) noexcept {
    if (bytes > max_bytes) return false;
    for (;;) {
      block* empty = nullptr;
      block* oldest = nullptr;
      for (auto& b : blocks_) {
        if (!b.ptr) empty = &b;
        else if (!oldest || b.kept < oldest->kept) oldest = &b;
      }
      if (empty && held_ + bytes <= max_bytes) {
        *empty = {p, bytes, ++clock_};
        held_ += bytes;
        return true;
      }
      held_ -= oldest->bytes;  // full, in slots or bytes: some block is kept
      ::operator delete(std::exchange(oldest->ptr, nullptr), std::align_val_t{buffer_alignment});
    }
  }
  void clear() noexcept {
    for (auto& b : blocks_)
      if (b.ptr) {
        ::operator delete(b.ptr, std::align_val_t{buffer_alignment});
        b.ptr = nullptr;
      }
    held_ = 0;
  }
  ~host_block_cache() { clear(); }

 private:
  struct block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    std::uint64_t kept = 0;  ///< when it was kept: clock_'s value then
  };
  std::array<block, slots> blocks_{};
  std::size_t held_ = 0;
  std::uint64_t clock_ = 0;
};

/// This thread's C, or null once the thread has destroyed it: memory freed later (by other
/// thread-locals' destructors at thread exit) goes straight back to the system.
template <class C>
C* this_thread_cache() noexcept {
  thread_local bool alive = true;
  struct holder {
    C cache;
    ~holder() { alive = false; }
  };
  if (!alive) return nullptr;
  thread_local holder h;
  return &h.cache;
}

inline host_block_cache* block_cache() noexcept { return this_thread_cache<host_block_cache>(); }

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
/// Note [small blocks]: eager scalar code makes and drops a tensor per op, and a one-element
/// host tensor is one allocation of under 128 bytes (its buffer lives in the shared_ptr's
/// control block: core::storage). Each thread keeps freed small blocks
/// in free lists per size (16, 32, ... 128 bytes; up to 256 blocks each) and reuses them: a
/// few instructions instead of the allocator's hundred and fifty for malloc and free. Blocks
/// may be freed by another thread than the one that made them; they join that thread's lists.
/// Under AddressSanitizer the lists are off, so that use after free is still caught.
class small_block_pool {
 public:
  static constexpr std::size_t granule = 16, classes = 8, max_kept = 256;

  void* take(std::size_t cls) noexcept {
    free_block* b = heads_[cls];
    if (!b) return nullptr;
    heads_[cls] = b->next;
    --counts_[cls];
    return b;
  }
  /// Keeps p for reuse when its list has room; false when the caller must free it.
  bool keep(void* p, std::size_t cls) noexcept {
    if (counts_[cls] >= max_kept) return false;
    heads_[cls] = new (p) free_block{heads_[cls]};
    ++counts_[cls];
    return true;
  }
  ~small_block_pool() {
    for (free_block*& h : heads_)
      while (h) ::operator delete(std::exchange(h, h->next));
  }

 private:
  struct free_block {
    free_block* next;
  };
  std::array<free_block*, classes> heads_{};
  std::array<std::size_t, classes> counts_{};
};

inline small_block_pool* small_pool() noexcept {
#if defined(__SANITIZE_ADDRESS__)
  return nullptr;
#else
  return this_thread_cache<small_block_pool>();
#endif
}

/// A block of `bytes` (> 0) for a small object, from this thread's free lists when it can.
inline void* small_allocate(std::size_t bytes) {
  const std::size_t cls = (bytes - 1) / small_block_pool::granule;
  if (cls >= small_block_pool::classes) return ::operator new(bytes);
  if (small_block_pool* p = small_pool())
    if (void* b = p->take(cls)) return b;
  return ::operator new((cls + 1) * small_block_pool::granule);
}
inline void small_release(void* p, std::size_t bytes) noexcept {
  const std::size_t cls = (bytes - 1) / small_block_pool::granule;
  if (cls < small_block_pool::classes)
    if (small_block_pool* pool = small_pool())
      if (pool->keep(p, cls)) return;
  ::operator delete(p);
}

/// A standard allocator over a pair of allocation functions.
template <class T, void* (*Allocate)(std::size_t), void (*Release)(void*, std::size_t) noexcept>
struct function_allocator {
  using value_type = T;
  template <class U> struct rebind {
    using other = function_allocator<U, Allocate, Release>;
  };
  function_allocator() = default;
  template <class U> function_allocator(const function_allocator<U, Allocate, Release>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(Allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { Release(p, n * sizeof(T)); }
  template <class U> bool operator==(const function_allocator<U, Allocate, Release>&) const noexcept { return true; }
};

/// For the shared tensor buffers (Note [small blocks]).
template <class T> using small_allocator = function_allocator<T, small_allocate, small_release>;
/// For the large, regrown arrays of gradient tapes and for fused tape entries (Note [buffer
/// cache]: a tape rebuilt in every step of a loop reuses the same blocks).
template <class T> using host_allocator = function_allocator<T, host_allocate, host_release>;
}  // namespace core

/// Returns the large host blocks this thread keeps for reuse to the system.
inline void empty_cache() noexcept {
  if (core::host_block_cache* c = core::block_cache()) c->clear();
}
}  // namespace fusegrad
