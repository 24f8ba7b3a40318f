#pragma once
/// \file fg::data::dataset<E>: tf.data's Dataset. A dataset is an immutable value describing a
/// pipeline: sources (from_tensor_slices, range, from_generator, zip) and transformations
/// (shuffle, batch, map, filter, repeat, take, skip, shard, cache, prefetch, enumerate,
/// concatenate, unbatch) each return a new dataset; copies share the pipeline and the tensors it
/// holds, so copying is cheap. Iterating it (a range-for loop, or make_iterator()) runs one
/// independent pass. Elements are C++ values: an fg::tensor, a std::tuple of tensors (`for (auto
/// [x, y] : ds)`), or whatever a map function returns. Arguments are checked when a dataset is
/// made, errors of elements (shapes batch cannot stack, a function that throws) when the pass
/// reaches them, on the thread that iterates even when a map or prefetch thread ran the code.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/random.hpp"
#include "batch.hpp"
#include "map.hpp"
#include "pipeline.hpp"
#include "prefetch.hpp"
#include "shuffle.hpp"
#include "sources.hpp"
#include "transforms.hpp"

namespace fusegrad::data {

template <class E>
  requires element<E>
class one_shot_iterator;

/// A tf.data Dataset of elements of type E (see the file comment).
template <class E>
  requires element<E>
class dataset {
 public:
  using element_type = E;

  /// The range-for iterator of one pass: an input iterator over const E, ending at
  /// std::default_sentinel. Exceptions of the pipeline come out of begin() and operator++.
  class iterator {
   public:
    using value_type = E;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::input_iterator_tag;
    iterator() = default;
    const E& operator*() const { return *current_; }
    const E* operator->() const { return &*current_; }
    iterator& operator++() {
      advance();
      return *this;
    }
    void operator++(int) { advance(); }
    friend bool operator==(const iterator& i, std::default_sentinel_t) noexcept { return !i.current_; }

   private:
    friend class dataset;
    explicit iterator(std::unique_ptr<impl::cursor<E>> c) : cursor_(std::move(c)) { advance(); }
    void advance() {
      current_.reset();
      if (!cursor_) return;
      impl::item<E> x;
      if (cursor_->next(x)) current_.emplace(x.take());
      else cursor_.reset();  // stops the pass's threads as soon as it ends
    }
    std::unique_ptr<impl::cursor<E>> cursor_;
    std::optional<E> current_;
  };

  /// A dataset over a node of the pipeline (data/pipeline.hpp: a source or transformation of
  /// your own derives from impl::node<E>).
  explicit dataset(impl::node_ptr<E> n) : node_(std::move(n)) {
    FG_CHECK(node_ != nullptr, value_error, "fg::data::dataset: the node is null");
  }

  /// Starts a pass (for a range-for loop).
  iterator begin() const { return iterator(node_->open()); }
  std::default_sentinel_t end() const noexcept { return {}; }
  /// Starts a pass read by next() (TensorFlow's iter(ds), make_one_shot_iterator()).
  one_shot_iterator<E> make_iterator() const { return one_shot_iterator<E>(node_->open()); }

  /// The number of elements, or infinite_cardinality (-1), or unknown_cardinality (-2), as
  /// tf.data computes it without iterating (filter's count is unknown, for instance).
  std::int64_t cardinality() const noexcept { return node_->cardinality(); }

  /// Elements in random order from a buffer of buffer_size (Note [shuffle buffer]): a seed
  /// makes the order repeat; reshuffle_each_iteration gives each pass (epoch) a new order.
  dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const {
    FG_CHECK(buffer_size >= 1, value_error, "fg::data::shuffle: buffer_size must be at least 1, got ", buffer_size);
    const std::uint64_t s = seed ? *seed : draw_seed();
    return make<impl::shuffle_node<E>>(node_, static_cast<std::size_t>(buffer_size), s, reshuffle_each_iteration);
  }

  /// batch_size consecutive elements stacked along a new first axis, tensor by tensor for
  /// tuples (Note [batch assembly]); the last batch may be smaller unless drop_remainder.
  dataset batch(std::int64_t batch_size, bool drop_remainder = false) const {
    static_assert(tensor_structure<E>, "fg::data::dataset::batch: elements must be fg::tensor or std::tuple of "
                                       "tensors to be stacked; map them to tensors first");
    FG_CHECK(batch_size >= 1, value_error, "fg::data::batch: batch_size must be at least 1, got ", batch_size);
    return make<impl::batch_node<E>>(node_, batch_size, drop_remainder);
  }

  /// batch_size consecutive elements of differing shapes, each padded at the end of each
  /// dimension to the batch's longest (or to o.padded_shapes) with o.padding_values (0 when
  /// absent), then stacked (Note [padded batch]); tf.data's padded_batch.
  dataset padded_batch(std::int64_t batch_size, padded_batch_options o = {}) const {
    static_assert(tensor_structure<E>, "fg::data::dataset::padded_batch: elements must be fg::tensor or std::tuple of "
                                       "tensors to be padded; map them to tensors first");
    FG_CHECK(batch_size >= 1, value_error, "fg::data::padded_batch: batch_size must be at least 1, got ", batch_size);
    return make<impl::padded_batch_node<E>>(node_, batch_size, std::move(o));
  }

  /// The rows of each element, as separate elements (the inverse of batch).
  dataset unbatch() const {
    static_assert(tensor_structure<E>, "fg::data::dataset::unbatch: elements must be fg::tensor or std::tuple of "
                                       "tensors to be split into rows");
    return make<impl::unbatch_node<E>>(node_);
  }

  /// The elements count times over, each time a new pass of this dataset; -1: without end.
  dataset repeat(std::int64_t count = -1) const {
    FG_CHECK(count >= -1, value_error, "fg::data::repeat: count must be -1 (without end) or at least 0, got ", count);
    return make<impl::repeat_node<E>>(node_, count);
  }

  /// f(element), or f(components...) for a tuple element that f does not take whole. f may
  /// return any copyable value; a lazy expression becomes its tensor and a std::pair a std::tuple.
  /// num_parallel_calls > 1 (or autotune: one per core) runs f on that many threads, keeping
  /// the order (Note [parallel map]); f must then be safe to call from several threads at once.
  template <class F>
  auto map(F f, std::int64_t num_parallel_calls = 1) const {
    static_assert(impl::callable_on<F, E>, "fg::data::dataset::map: the function must take the element, or the "
                                           "components of a tuple element as separate arguments");
    using R = impl::normalized_t<impl::call_result_t<F, E>>;
    static_assert(element<R>, "fg::data::dataset::map: the function must return a copyable value");
    FG_CHECK(num_parallel_calls >= 1 || num_parallel_calls == autotune, value_error,
             "fg::data::map: num_parallel_calls must be at least 1 or fg::data::autotune, got ", num_parallel_calls);
    const std::size_t threads = num_parallel_calls == autotune ? std::max(1u, std::thread::hardware_concurrency())
                                                               : static_cast<std::size_t>(num_parallel_calls);
    if constexpr (!impl::callable_on<const F, E>)
      FG_CHECK(threads == 1, value_error, "fg::data::map: num_parallel_calls = ", num_parallel_calls,
               " calls the function from several threads at once, which a function that changes its own state (a "
               "mutable lambda) does not allow; make its call operator const or use num_parallel_calls = 1");
    return dataset<R>(std::make_shared<const impl::map_node<E, R, F>>(node_, std::move(f), threads));
  }

  /// The elements for which predicate(element) (or predicate(components...)) is true; it
  /// returns bool or a scalar bool tensor.
  template <class P>
  dataset filter(P predicate) const {
    static_assert(impl::callable_on<P, E>, "fg::data::dataset::filter: the predicate must take the element, or the "
                                           "components of a tuple element as separate arguments");
    return make<impl::filter_node<E, P>>(node_, std::move(predicate));
  }

  /// The first count elements (-1: all).
  dataset take(std::int64_t count) const {
    FG_CHECK(count >= -1, value_error, "fg::data::take: count must be -1 (all) or at least 0, got ", count);
    return make<impl::take_node<E>>(node_, count);
  }
  /// All but the first count elements (-1: none).
  dataset skip(std::int64_t count) const {
    FG_CHECK(count >= -1, value_error, "fg::data::skip: count must be -1 (all) or at least 0, got ", count);
    return make<impl::skip_node<E>>(node_, count);
  }
  /// Elements index, index + num_shards, ...: worker `index` of num_shards' part.
  dataset shard(std::int64_t num_shards, std::int64_t index) const {
    FG_CHECK(num_shards >= 1, value_error, "fg::data::shard: num_shards must be at least 1, got ", num_shards);
    FG_CHECK(index >= 0 && index < num_shards, index_error, "fg::data::shard: index ", index,
             " is out of range for ", num_shards, " shards (valid: 0 to ", num_shards - 1, ")");
    return make<impl::shard_node<E>>(node_, num_shards, index);
  }
  /// The elements of the first complete pass, kept in memory and replayed by later passes.
  dataset cache() const { return make<impl::cache_node<E>>(node_); }
  /// The same elements, computed ahead by a background thread into a queue of buffer_size
  /// (autotune: 2) (Note [prefetch thread]).
  dataset prefetch(std::int64_t buffer_size) const {
    FG_CHECK(buffer_size >= 1 || buffer_size == autotune, value_error,
             "fg::data::prefetch: buffer_size must be at least 1 or fg::data::autotune, got ", buffer_size);
    return make<impl::prefetch_node<E>>(node_, static_cast<std::size_t>(buffer_size == autotune ? 2 : buffer_size));
  }
  /// (start + i, element i), the count an int64 scalar tensor.
  dataset<std::tuple<tensor<std::int64_t>, E>> enumerate(std::int64_t start = 0) const {
    using R = std::tuple<tensor<std::int64_t>, E>;
    return dataset<R>(std::make_shared<const impl::enumerate_node<E>>(node_, start));
  }
  /// This dataset's elements, then other's.
  dataset concatenate(const dataset& other) const { return make<impl::concatenate_node<E>>(node_, other.node_); }

  /// The pipeline's last node (Note [dataset chain]).
  const impl::node_ptr<E>& node() const noexcept { return node_; }

 private:
  template <class N, class... A>
  static dataset make(A&&... a) {
    return dataset(std::make_shared<const N>(std::forward<A>(a)...));
  }
  /// A seed from fg::random's generator of this thread (Note [shuffle buffer]).
  static std::uint64_t draw_seed() {
    const auto t = fg::random::uniform<std::int64_t>(
        fg::shape{}, {.minval = 0, .maxval = std::numeric_limits<std::int64_t>::max()});
    return static_cast<std::uint64_t>(t.item());
  }
  impl::node_ptr<E> node_;
};

/// One pass over a dataset read element by element (TensorFlow's iterator): next() returns the
/// next element and throws fg::index_error ("End of sequence", TensorFlow's OutOfRangeError) at
/// the end; get_next_as_optional() returns std::nullopt there instead.
template <class E>
  requires element<E>
class one_shot_iterator {
 public:
  /// The next element; fg::index_error past the end.
  E next() {
    std::optional<E> e = get_next_as_optional();
    FG_CHECK(e.has_value(), index_error, "fg::data::one_shot_iterator::next: End of sequence");
    return std::move(*e);
  }
  /// The next element, or std::nullopt past the end.
  std::optional<E> get_next_as_optional() {
    if (!cursor_) return std::nullopt;
    impl::item<E> x;
    if (cursor_->next(x)) return x.take();
    cursor_.reset();  // stops the pass's threads
    return std::nullopt;
  }

 private:
  friend class dataset<E>;
  explicit one_shot_iterator(std::unique_ptr<impl::cursor<E>> c) : cursor_(std::move(c)) {}
  std::unique_ptr<impl::cursor<E>> cursor_;
};

/// The slices of t along its first axis (tf.data.Dataset.from_tensor_slices): element i is t[i].
/// A rank-0 tensor is a shape_error.
template <class T>
dataset<tensor<T>> from_tensor_slices(const tensor<T>& t) {
  return dataset<tensor<T>>(std::make_shared<const impl::slices_node<tensor<T>>>(impl::make_table(t, "from_tensor_slices")));
}
/// Tuples of slices of the tensors of a tuple (nested tuples too), which must agree in their
/// first dimension: element i is (x[i], y[i], ...).
template <class... S>
  requires(tensor_structure<S> && ...)
dataset<std::tuple<S...>> from_tensor_slices(const std::tuple<S...>& t) {
  using E = std::tuple<S...>;
  return dataset<E>(std::make_shared<const impl::slices_node<E>>(impl::make_table(t, "from_tensor_slices")));
}
/// from_tensor_slices(std::tuple(x, y, ...)).
template <class S0, class S1, class... S>
  requires(tensor_structure<S0> && tensor_structure<S1> && (tensor_structure<S> && ...))
dataset<std::tuple<S0, S1, S...>> from_tensor_slices(const S0& x, const S1& y, const S&... more) {
  return from_tensor_slices(std::tuple<S0, S1, S...>(x, y, more...));
}

/// The int64 scalars start, start + step, ... before stop (tf.data.Dataset.range).
inline dataset<tensor<std::int64_t>> range(std::int64_t start, std::int64_t stop, std::int64_t step = 1) {
  FG_CHECK(step != 0, value_error, "fg::data::range: step must not be 0");
  return dataset<tensor<std::int64_t>>(std::make_shared<const impl::range_node>(start, stop, step));
}
/// 0, 1, ..., stop - 1.
inline dataset<tensor<std::int64_t>> range(std::int64_t stop) { return range(0, stop, 1); }

/// The values generator() returns, as a std::optional<E>, until it returns std::nullopt
/// (tf.data.Dataset.from_generator). Each pass calls a fresh copy of the generator, so a lambda
/// counting in a mutable capture starts again on every pass. The cardinality is unknown.
template <class G>
auto from_generator(G generator) {
  static_assert(std::invocable<G&>, "fg::data::from_generator: the generator must be callable without arguments");
  using O = std::remove_cvref_t<std::invoke_result_t<G&>>;
  static_assert(impl::is_optional<O>::value,
                "fg::data::from_generator: the generator must return std::optional<E> (std::nullopt ends the data)");
  using E = typename impl::is_optional<O>::type;
  return dataset<E>(std::make_shared<const impl::generator_node<E, G>>(std::move(generator)));
}

/// Tuples of the elements of each dataset, up to the end of the shortest (tf.data.Dataset.zip).
template <class... E>
  requires(sizeof...(E) >= 1)
dataset<std::tuple<E...>> zip(const dataset<E>&... ds) {
  return dataset<std::tuple<E...>>(std::make_shared<const impl::zip_node<E...>>(ds.node()...));
}

}  // namespace fusegrad::data
