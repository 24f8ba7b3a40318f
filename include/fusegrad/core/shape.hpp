#pragma once
/// \file fg::shape: a tensor's dimensions, stored inline (no allocation), rank <= fg::max_rank.

#include <algorithm>
#include <array>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <span>
#include <string>

#include "config.hpp"
#include "error.hpp"

namespace fusegrad {

/// The dimensions of a tensor, outermost first; rank 0 is a scalar.
class shape {
 public:
  using value_type = std::size_t;

  shape() = default;
  shape(std::initializer_list<std::size_t> dims) { assign(dims.begin(), dims.end()); }
  explicit shape(std::span<const std::size_t> dims) { assign(dims.begin(), dims.end()); }
  template <class It>
  shape(It first, It last) { assign(first, last); }

  /// Number of dimensions.
  std::size_t rank() const noexcept { return rank_; }
  /// Number of dimensions (container spelling).
  std::size_t size() const noexcept { return rank_; }
  /// Product of the dimensions (1 for a scalar), unchecked: exact for the shape of a tensor
  /// that exists (Note [checked sizes]); a shape made from numbers goes through
  /// core::checked_elements first.
  std::size_t elements() const noexcept {
    std::size_t n = 1;
    for (std::size_t i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  bool empty() const noexcept { return rank_ == 0; }
  std::size_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  std::size_t& operator[](std::size_t i) noexcept { return dims_[i]; }
  /// Dimension i with bounds checking.
  std::size_t at(std::size_t i) const {
    FG_CHECK(i < rank_, index_error, "shape::at: index ", i, " out of range for rank ", rank_);
    return dims_[i];
  }
  const std::size_t* begin() const noexcept { return dims_.data(); }
  const std::size_t* end() const noexcept { return dims_.data() + rank_; }
  std::size_t* begin() noexcept { return dims_.data(); }
  std::size_t* end() noexcept { return dims_.data() + rank_; }
  const std::size_t* data() const noexcept { return dims_.data(); }
  std::size_t back() const noexcept { return dims_[rank_ - 1]; }

  void push_back(std::size_t d) {
    FG_CHECK(rank_ < max_rank, shape_error, "fusegrad supports tensors up to rank ", max_rank);
    dims_[rank_++] = d;
  }
  void insert(std::size_t pos, std::size_t d) {
    FG_CHECK(rank_ < max_rank, shape_error, "fusegrad supports tensors up to rank ", max_rank);
    std::copy_backward(dims_.begin() + pos, dims_.begin() + rank_, dims_.begin() + rank_ + 1);
    dims_[pos] = d;
    ++rank_;
  }
  void erase(std::size_t pos) {
    std::copy(dims_.begin() + pos + 1, dims_.begin() + rank_, dims_.begin() + pos);
    --rank_;
  }

  friend bool operator==(const shape& a, const shape& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

  /// "(2, 4)", "()", "(3,)" like Python tuples.
  std::string str() const {
    std::string s = "(";
    for (std::size_t i = 0; i < rank_; ++i) {
      if (i) s += ", ";
      s += std::to_string(dims_[i]);
    }
    if (rank_ == 1) s += ",";
    return s + ")";
  }
  friend std::ostream& operator<<(std::ostream& os, const shape& s) { return os << s.str(); }

 private:
  template <class It>
  void assign(It first, It last) {
    rank_ = 0;
    for (; first != last; ++first) {
      FG_CHECK(*first >= 0, shape_error, "fusegrad: negative dimension ", *first, " in a shape");
      push_back(static_cast<std::size_t>(*first));
    }
  }
  std::array<std::size_t, max_rank> dims_{};
  std::size_t rank_ = 0;
};

namespace core {
/// Note [checked sizes]: a size is a product of numbers users give (dimensions, depths,
/// counts, multiples), and a product that wraps around makes a buffer smaller than its shape:
/// (2^62 + 1) * 4 is 4 in 64 bits. So the element count, the byte count and the stride
/// products of every new shape are computed here, with overflow checks, and nowhere else:
/// - the product of the nonzero dimensions must not exceed max_elements, so every offset and
///   stride fits index_t, also when another dimension is 0 and the tensor is empty (numpy's
///   rule); otherwise the op throws value_error naming itself and the shape;
/// - the byte count must not exceed max_elements either; otherwise out_of_memory, naming the op,
///   the shape and the element size (a count that fits but that memory cannot hold still
///   reaches the allocator, whose error names the bytes and the device).
/// The tensor constructor that allocates checks its shape (tensor.hpp), so no buffer is ever
/// smaller than its shape; ops that make shapes from numbers check them first, naming
/// themselves. A shape of an existing tensor is valid, so shape::elements() and
/// contiguous_strides() need no check: the hot paths pay one checked product per new buffer.

/// The most elements a tensor may have, and the most bytes its buffer may take: index_t's maximum.
inline constexpr std::size_t max_elements = static_cast<std::size_t>(std::numeric_limits<index_t>::max());

/// The product of dims; throws value_error "fg::<op>: <what()> has more elements than memory
/// can address" when the product of the nonzero ones exceeds max_elements.
template <class What>
std::size_t checked_product(std::span<const std::size_t> dims, const char* op, What&& what) {
  std::size_t n = 1;
  bool zero = false, overflow = false;
  for (std::size_t d : dims) {
    if (d == 0) zero = true;
    else overflow |= __builtin_mul_overflow(n, d, &n);
  }
  FG_CHECK(!overflow && n <= max_elements, value_error, "fg::", op, ": ", what(),
           " has more elements than memory can address (the product of its dimensions exceeds ", max_elements,
           "); give a smaller shape");
  return zero ? 0 : n;
}
/// The number of elements of s, a shape that op makes; value_error naming op and s when it
/// has too many (Note [checked sizes]).
inline std::size_t checked_elements(const shape& s, const char* op) {
  if (s.rank() == 0) return 1;
  return checked_product(std::span<const std::size_t>(s.begin(), s.end()), op, [&] { return cat("shape ", s); });
}
/// The bytes a buffer of shape s with elements of `element_bytes` takes; value_error or
/// out_of_memory naming op and s when they cannot be counted (Note [checked sizes]).
inline std::size_t checked_bytes(const shape& s, std::size_t element_bytes, const char* op) {
  const std::size_t n = checked_elements(s, op);
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(n, element_bytes, &bytes) || bytes > max_elements) [[unlikely]]
    throw out_of_memory(cat("fg::", op, ": cannot allocate a tensor of shape ", s, " with ", element_bytes,
                            "-byte elements: it needs more than ", max_elements, " bytes"));
  return bytes;
}
/// a + b for a dimension that op makes by adding (concat's axis); value_error when it overflows.
template <class What>
std::size_t checked_sum(std::size_t a, std::size_t b, const char* op, What&& what) {
  std::size_t r = 0;
  FG_CHECK(!__builtin_add_overflow(a, b, &r) && r <= max_elements, value_error, "fg::", op, ": ", what(),
           " has a dimension larger than memory can address; give smaller tensors");
  return r;
}
/// A count computed in floating point (fg::range's) as a dimension; value_error naming op
/// when it is not a number from 0 to max_elements (negative counts are 0).
template <class What>
std::size_t checked_count(double n, const char* op, What&& what) {
  FG_CHECK(n == n && n < static_cast<double>(max_elements), value_error, "fg::", op, ": ", what(), " gives ", n,
           " elements, more than memory can address");
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

/// Row-major strides (in elements) of a contiguous tensor of shape s.
inline std::array<index_t, max_rank> contiguous_strides(const shape& s) {
  std::array<index_t, max_rank> st{};
  index_t acc = 1;
  for (std::size_t i = s.rank(); i-- > 0;) {
    st[i] = acc;
    acc *= static_cast<index_t>(s[i]);
  }
  return st;
}

/// The shape of `rank` dimensions of size 1.
inline shape ones_shape(std::size_t rank) {
  shape s;
  for (std::size_t d = 0; d < rank; ++d) s.push_back(1);
  return s;
}

/// target (a shape that broadcasts to a shape of `rank` dimensions) with leading 1s up to
/// `rank`: the kept dimensions of a sum over the axes it was broadcast along.
inline shape padded_to_rank(const shape& target, std::size_t rank) {
  shape keep;
  const std::size_t off = rank - target.rank();
  for (std::size_t d = 0; d < rank; ++d) keep.push_back(d < off ? 1 : target[d - off]);
  return keep;
}
/// Numpy broadcasting of two shapes; throws shape_error naming `op` and both shapes.
inline shape broadcast_shapes(const shape& a, const shape& b, const char* op) {
  if (b.rank() == 0 || a == b) return a;
  if (a.rank() == 0) return b;
  const std::size_t r = std::max(a.rank(), b.rank());
  shape out = ones_shape(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::size_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    const std::size_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    FG_CHECK(da == db || da == 1 || db == 1, shape_error, "fg::", op, ": shapes ", a, " and ", b,
             " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  checked_elements(out, op);  // (2^32, 1) and (1, 2^32) broadcast to 2^64 elements
  return out;
}

/// Normalises a possibly negative axis against `rank`; throws index_error naming `op`.
inline std::size_t normalize_axis(long axis, std::size_t rank, const char* op) {
  const long r = static_cast<long>(rank);
  FG_CHECK(axis >= -r && axis < r, index_error, "fg::", op, ": axis ", axis,
           " is out of range for a tensor of rank ", rank, " (valid: ", -r, " to ", r - 1, ")");
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}
}  // namespace core
}  // namespace fusegrad
