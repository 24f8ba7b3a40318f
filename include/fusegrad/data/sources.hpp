#pragma once
/// \file The nodes datasets start from: the rows of tensors (from_tensor_slices), a range of
/// integers, and a generator function. Their public functions are in data/dataset.hpp.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "pipeline.hpp"

namespace fusegrad::data::impl {

/// The rows of a table, as references (Note [row references]).
template <class E>
class slices_node final : public node<E> {
 public:
  explicit slices_node(std::shared_ptr<const table<E>> t)
      : node<E>(static_cast<std::int64_t>(t->rows)), table_(std::move(t)) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(table_); }

 private:
  class pass final : public cursor<E> {
   public:
    explicit pass(std::shared_ptr<const table<E>> t) : table_(std::move(t)) {}
    bool next(item<E>& out) override {
      if (i_ == table_->rows) return false;
      out.refer(table_, i_++);
      return true;
    }

   private:
    std::shared_ptr<const table<E>> table_;
    std::size_t i_ = 0;
  };
  std::shared_ptr<const table<E>> table_;
};

/// The number of values of start, start + step, ... before stop (step != 0).
inline std::int64_t range_count(std::int64_t start, std::int64_t stop, std::int64_t step) {
  if (step > 0 ? start >= stop : start <= stop) return 0;
  // In unsigned arithmetic: stop - start may not fit an int64 (a range over most of int64).
  const std::uint64_t span = step > 0 ? static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start)
                                      : static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop);
  const std::uint64_t mag = step > 0 ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
  const std::uint64_t n = (span - 1) / mag + 1;
  // Beyond int64 (start near the minimum, stop near the maximum): as good as without end.
  return n > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(n);
}

/// start, start + step, ... before stop, as int64 scalar tensors.
class range_node final : public node<tensor<std::int64_t>> {
 public:
  range_node(std::int64_t start, std::int64_t stop, std::int64_t step)
      : node(range_count(start, stop, step)), start_(start), step_(step) {}
  std::unique_ptr<cursor<tensor<std::int64_t>>> open() const override {
    return std::make_unique<pass>(start_, step_, cardinality());
  }

 private:
  class pass final : public cursor<tensor<std::int64_t>> {
   public:
    pass(std::int64_t start, std::int64_t step, std::int64_t count) : start_(start), step_(step), count_(count) {}
    bool next(item<tensor<std::int64_t>>& out) override {
      if (i_ == count_) return false;
      // Wrapping arithmetic: every value lies between start and stop, so the sum is exact.
      out.set(tensor<std::int64_t>(static_cast<std::int64_t>(
          static_cast<std::uint64_t>(start_) + static_cast<std::uint64_t>(i_++) * static_cast<std::uint64_t>(step_))));
      return true;
    }

   private:
    std::int64_t start_, step_, count_, i_ = 0;
  };
  std::int64_t start_, step_;
};

template <class O>
struct is_optional : std::false_type {
  using type = void;
};
template <class E>
struct is_optional<std::optional<E>> : std::true_type {
  using type = E;
};

/// The values a generator function returns until it returns std::nullopt; each pass calls its
/// own copy of the function.
template <class E, class G>
class generator_node final : public node<E> {
 public:
  explicit generator_node(G g) : node<E>(unknown_cardinality), g_(std::move(g)) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(g_); }

 private:
  class pass final : public cursor<E> {
   public:
    explicit pass(const G& g) : g_(g) {}
    bool next(item<E>& out) override {
      if (done_) return false;
      std::optional<E> v;
      try {
        v = g_();
      } catch (...) {
        done_ = true;
        std::rethrow_exception(with_context(std::current_exception(),
                                            "fg::data::from_generator: the generator failed on element " +
                                                std::to_string(i_) + ": "));
      }
      if (!v) {
        done_ = true;
        return false;
      }
      ++i_;
      out.set(std::move(*v));
      return true;
    }

   private:
    G g_;
    std::size_t i_ = 0;
    bool done_ = false;
  };
  G g_;
};

}  // namespace fusegrad::data::impl
