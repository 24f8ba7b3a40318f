#pragma once
/// \file A vector that keeps its first N elements inline: tape entries list one or two ids, and
/// recording should not allocate for them.

#include <array>
#include <cstddef>
#include <vector>

namespace fusegrad::core {

/// Inline storage for N elements of a default-constructible T, the heap beyond.
template <class T, std::size_t N>
class small_vector {
 public:
  small_vector() = default;
  template <class It>
  small_vector(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  void push_back(const T& v) {
    if (n_ < N) [[likely]] {
      inline_[n_++] = v;
      return;
    }
    grow(v);
  }
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  T* data() noexcept { return n_ <= N ? inline_.data() : heap_.data(); }
  const T* data() const noexcept { return n_ <= N ? inline_.data() : heap_.data(); }
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + n_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + n_; }

 private:
  void grow(const T& v) {
    if (n_ == N) heap_.assign(inline_.begin(), inline_.end());
    heap_.push_back(v);
    ++n_;
  }
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  std::size_t n_ = 0;
};
}  // namespace fusegrad::core
