#pragma once
/// \file What every dataset transformation shares: element types, the cardinality constants,
/// and the type-erased chain a dataset is made of (Note [dataset chain]).
///
/// Note [dataset chain]: a dataset is a shared, immutable node (impl::node<E>) holding its
/// parameters and the node it reads from; iterating it opens a cursor (impl::cursor<E>) per
/// pass, each cursor owning the cursor of its upstream node, so two passes never share state.
/// Both are virtual classes: a pipeline of ten transformations instantiates ten small classes,
/// once each, instead of one nested type whose size grows with the pipeline, and every
/// transformation compiles once per element type.
///
/// Note [row references]: cursors pass impl::item<E> along, not E. An item is either a value or
/// a reference to row i of a shared table of tensors (impl::table<E>: the tensors given to
/// from_tensor_slices, or one element that unbatch splits). Shuffle, repeat, take, skip, shard,
/// filter, cache and prefetch move references without copying a row; batch turns a run of rows
/// of one table into one fg::gather per tensor, written straight into the batch (Note [batch
/// assembly]). A row is copied out of its table only when something needs the element itself:
/// map, zip and enumerate, filter's predicate (the reference goes on), and the loop.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "../core/error.hpp"
#include "../eager/evaluate.hpp"
#include "../eager/indexing.hpp"

namespace fusegrad::data {

/// What cardinality() returns for a dataset without end (tf.data.INFINITE_CARDINALITY).
inline constexpr std::int64_t infinite_cardinality = -1;
/// What cardinality() returns when the count is known only by iterating (tf.data.UNKNOWN_CARDINALITY).
inline constexpr std::int64_t unknown_cardinality = -2;
/// For map's num_parallel_calls (one thread per core) and prefetch's buffer_size (tf.data.AUTOTUNE).
inline constexpr std::int64_t autotune = -1;

namespace impl {
template <class E>
struct is_structure : std::false_type {};
template <class T>
struct is_structure<tensor<T>> : std::true_type {};
template <class... S>
struct is_structure<std::tuple<S...>> : std::bool_constant<(sizeof...(S) > 0 && (is_structure<S>::value && ...))> {};
}  // namespace impl

/// A dataset element made of tensors: an fg::tensor, or a std::tuple of such elements (nested
/// tuples too). from_tensor_slices makes them; batch and unbatch need them.
template <class E>
concept tensor_structure = impl::is_structure<E>::value;

/// What a dataset may hold: any copyable object type (tensors, tuples of tensors, your own structs).
template <class E>
concept element = std::is_object_v<E> && !std::is_const_v<E> && std::copy_constructible<E> &&
                  std::is_move_assignable_v<E>;

template <class E>
  requires element<E>
class dataset;

namespace impl {

template <class E>
struct is_tensor : std::false_type {};
template <class T>
struct is_tensor<tensor<T>> : std::true_type {};
template <class E>
struct is_tuple : std::false_type {};
template <class... S>
struct is_tuple<std::tuple<S...>> : std::true_type {};
template <class E>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

/// A tensor structure whose leaves are f(leaf) (f maps a tensor<T> to a tensor<T>).
template <class E, class F>
E map_tensors(const E& e, const F& f) {
  if constexpr (is_tensor<E>::value) return f(e);
  else return std::apply([&](const auto&... s) { return E{impl::map_tensors(s, f)...}; }, e);
}

/// Calls f(leaf, number) on each tensor of a structure, numbering leaves from 0 in order.
template <class E, class F>
void each_tensor(const E& e, const F& f, std::size_t& number) {
  if constexpr (is_tensor<E>::value) f(e, number++);
  else std::apply([&](const auto&... s) { (impl::each_tensor(s, f, number), ...); }, e);
}
template <class E, class F>
void each_tensor(const E& e, const F& f) {
  std::size_t number = 0;
  impl::each_tensor(e, f, number);
}

/// Tensors sliced along their first axis: row i is the structure of each tensor's slice i.
template <class E>
struct table {
  E columns;
  std::size_t rows = 0;
  /// Row i, by fg::gather with a scalar index: the op batch uses too, so that a program that
  /// iterates rows and batches them compiles one op per element type instead of two.
  E row(std::size_t i) const {
    const tensor<std::int64_t> index(static_cast<std::int64_t>(i));
    return impl::map_tensors(columns, [&](const auto& t) { return fg::gather(t, index); });
  }
};

/// A table over a structure's tensors: every tensor defined and of rank 1 or more, and their
/// first dimensions equal; otherwise a shape_error naming `op` and the shapes.
template <class E>
std::shared_ptr<const table<E>> make_table(const E& columns, const char* op) {
  std::size_t rows = 0;
  fg::shape first;
  impl::each_tensor(columns, [&](const auto& t, std::size_t k) {
    FG_CHECK(t.defined(), value_error, "fg::data::", op, ": component ", k, " is an undefined tensor");
    FG_CHECK(t.rank() >= 1, shape_error, "fg::data::", op, ": component ", k, " has shape ", t.shape(),
             ", a scalar; slicing needs tensors of rank 1 or more (their first axis is the one sliced)");
    if (k == 0) {
      rows = t.shape()[0];
      first = t.shape();
    }
    FG_CHECK(t.shape()[0] == rows, shape_error, "fg::data::", op, ": the components' first dimensions differ: ",
             "component 0 has shape ", first, " and component ", k, " has shape ", t.shape(),
             "; every tensor must have the same number of rows");
  });
  return std::make_shared<const table<E>>(table<E>{columns, rows});
}

/// One element on its way through a pipeline: a value, or row `row` of a shared table
/// (Note [row references]).
template <class E>
struct item {
  std::optional<E> value;
  std::shared_ptr<const table<E>> rows;  // used for tensor structures only
  std::size_t row = 0;

  /// The element itself (a copy of the row for a reference).
  E get() const {
    if constexpr (is_structure<E>::value)
      if (!value) return rows->row(row);
    return *value;
  }
  /// The element, moved out of a value.
  E take() {
    if constexpr (is_structure<E>::value)
      if (!value) return rows->row(row);
    return std::move(*value);
  }
  /// Refers to row i of table t.
  void refer(const std::shared_ptr<const table<E>>& t, std::size_t i) {
    value.reset();
    rows = t;
    row = i;
  }
  /// Holds value v (and no reference).
  void set(E v) {
    value.emplace(std::move(v));
    rows.reset();
  }
};

/// One pass over a dataset: next() fills `out` wholly (its value or its reference) and returns
/// true, or returns false at the end, and false again if called after that. Exceptions from user
/// code reach the caller of next(). A cursor is used by one thread at a time.
template <class E>
class cursor {
 public:
  virtual ~cursor() = default;
  virtual bool next(item<E>& out) = 0;
};

/// A dataset's definition: immutable and shared by the copies of a dataset; open() starts an
/// independent pass (Note [dataset chain]).
template <class E>
class node {
 public:
  explicit node(std::int64_t cardinality) : cardinality_(cardinality) {}
  virtual ~node() = default;
  virtual std::unique_ptr<cursor<E>> open() const = 0;
  std::int64_t cardinality() const noexcept { return cardinality_; }

 private:
  std::int64_t cardinality_;
};

template <class E>
using node_ptr = std::shared_ptr<const node<E>>;

template <class X>
bool rebuilt(const std::exception& e, const std::string& context, std::exception_ptr& out) {
  if (typeid(e) != typeid(X)) return false;
  out = std::make_exception_ptr(X(context + e.what()));
  return true;
}

/// An exception with `context` before its message when it is one of fusegrad's error types
/// (the same type again, so that callers catch what they would catch without the dataset);
/// any other exception unchanged.
inline std::exception_ptr with_context(std::exception_ptr p, const std::string& context) {
  std::exception_ptr out = p;
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    rebuilt<shape_error>(e, context, out) || rebuilt<value_error>(e, context, out) ||
        rebuilt<index_error>(e, context, out) || rebuilt<tape_error>(e, context, out) ||
        rebuilt<device_error>(e, context, out);
  } catch (...) {
  }
  return out;
}

/// A function's result as a dataset element: a lazy expression becomes its tensor, a std::pair
/// a std::tuple, and tuples are normalized componentwise; anything else stays as it is.
template <class R>
auto normalize(R&& r) {
  using D = std::remove_cvref_t<R>;
  if constexpr (expression<D>) return tensor<typename D::value_type>(r);
  else if constexpr (is_pair<D>::value)
    return std::make_tuple(impl::normalize(std::forward<R>(r).first), impl::normalize(std::forward<R>(r).second));
  else if constexpr (is_tuple<D>::value)
    return std::apply([](auto&&... c) { return std::make_tuple(impl::normalize(std::forward<decltype(c)>(c))...); },
                      std::forward<R>(r));
  else return D(std::forward<R>(r));
}
template <class R>
using normalized_t = decltype(impl::normalize(std::declval<R>()));

template <class F, class E>
struct unpack_invocable : std::false_type {};
template <class F, class... S>
struct unpack_invocable<F, std::tuple<S...>> : std::bool_constant<std::invocable<F&, const S&...>> {};

/// Whether f can take an element: as one argument, or (a tuple) as its components.
template <class F, class E>
concept callable_on = std::invocable<F&, const E&> || unpack_invocable<F, E>::value;

/// f(e), or f(components of e) when f does not take the tuple itself (tf.data's unpacking).
template <class F, class E>
decltype(auto) call_on(F& f, const E& e) {
  if constexpr (std::invocable<F&, const E&>) return f(e);
  else return std::apply(f, e);
}
template <class F, class E>
using call_result_t = decltype(impl::call_on(std::declval<F&>(), std::declval<const E&>()));

}  // namespace impl
}  // namespace fusegrad::data
