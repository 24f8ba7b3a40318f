#pragma once
/// \file The nodes of dataset::batch and dataset::unbatch. A batch is assembled once, into its
/// final tensors (Note [batch assembly]).
///
/// Note [batch assembly]: a batch's elements arrive as references to rows of tables or as
/// values (Note [row references]). For each tensor of the element structure, each run of
/// consecutive references to one table becomes one fg::gather of those rows (a copy of each
/// row, straight into the result), and each value a reshape to a leading axis of 1 (no copy);
/// when there is more than one such piece, fg::concat joins them. So the batches of
/// from_tensor_slices(x) (shuffled, repeated, sharded or filtered) are one gather each, the
/// values of a map are copied once (by concat), and a batch that is a whole table in order is
/// the table's tensor itself. Elements are checked to have one shape before anything is copied.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../eval/creation.hpp"
#include "../eager/reshape.hpp"
#include "../eager/shape_ops.hpp"
#include "pipeline.hpp"

namespace fusegrad::data {

/// padded_batch's options, by the position of each tensor in the element (one tensor: index 0;
/// a tuple: its tensors in order, nested tuples flattened).
struct padded_batch_options {
  /// Each tensor's padded shape (an element's shape without the batch axis); -1 or a missing
  /// entry: the longest in the batch. Empty: every dimension padded to the batch's longest.
  std::vector<std::vector<std::int64_t>> padded_shapes = {};
  /// The value each tensor is padded with, converted to its type; missing: 0.
  std::vector<double> padding_values = {};
  bool drop_remainder = false;
};

}  // namespace fusegrad::data

namespace fusegrad::data::impl {

/// One element of a batch as the assembly sees it: a value, or row `row` of `columns`.
template <class E>
struct batch_view {
  const E* value = nullptr;
  const E* columns = nullptr;
  std::size_t row = 0;
  const void* table = nullptr;  // identifies the table the row belongs to
};

/// The shape of one element: the value's, or a table column's without its first axis.
template <class T>
fg::shape element_shape(const batch_view<tensor<T>>& v) {
  if (v.value) return v.value->shape();
  const fg::shape& c = v.columns->shape();
  fg::shape s;
  for (std::size_t d = 1; d < c.rank(); ++d) s.push_back(c[d]);
  return s;
}

/// The elements of one tensor of the structure stacked on a new first axis (Note [batch assembly]).
template <class T>
tensor<T> stack_leaf(const std::vector<batch_view<tensor<T>>>& vs, std::size_t leaf, bool in_tuple) {
  const fg::shape s0 = impl::element_shape(vs[0]);
  const void* checked = nullptr;  // the table whose rows were last checked (they share a shape)
  for (std::size_t k = 1; k < vs.size(); ++k) {
    if (!vs[k].value && vs[k].table == checked) continue;
    checked = vs[k].value ? nullptr : vs[k].table;
    const fg::shape sk = impl::element_shape(vs[k]);
    FG_CHECK(sk == s0, shape_error, "fg::data::batch: element ", k, " of the batch has shape ", sk,
             " but element 0 has shape ", s0,
             in_tuple ? " (component " + std::to_string(leaf) + " of the elements)" : std::string(),
             "; batch stacks elements of one shape: map them to one shape first");
  }
  std::vector<tensor<T>> pieces;
  std::vector<std::int64_t> rows;
  const batch_view<tensor<T>>* run = nullptr;  // the first reference of the current run
  auto flush = [&] {
    if (rows.empty()) return;
    const tensor<T>& c = *run->columns;
    bool whole = rows.size() == c.shape()[0];
    for (std::size_t i = 0; whole && i < rows.size(); ++i) whole = rows[i] == static_cast<std::int64_t>(i);
    if (whole) pieces.push_back(c);
    else pieces.push_back(fg::gather(c, tensor<std::int64_t>(fg::shape{rows.size()}, rows)));
    rows.clear();
  };
  for (const batch_view<tensor<T>>& v : vs) {
    if (v.value) {
      flush();
      fg::shape one{1};
      for (std::size_t d : v.value->shape()) one.push_back(d);
      pieces.push_back(fusegrad::reshape(*v.value, one));
      continue;
    }
    if (!run || run->table != v.table) {
      flush();
      run = &v;
    }
    rows.push_back(static_cast<std::int64_t>(v.row));
  }
  flush();
  return pieces.size() == 1 ? pieces[0] : fg::concat(pieces, 0);
}

/// The views of component K of tuple elements.
template <std::size_t K, class E>
std::vector<batch_view<std::tuple_element_t<K, E>>> component(const std::vector<batch_view<E>>& vs) {
  std::vector<batch_view<std::tuple_element_t<K, E>>> out;
  out.reserve(vs.size());
  for (const batch_view<E>& v : vs)
    out.push_back({v.value ? &std::get<K>(*v.value) : nullptr, v.columns ? &std::get<K>(*v.columns) : nullptr, v.row,
                   v.table});
  return out;
}

/// The batch of a structure, each tensor through stack_leaf, leaves numbered in order.
template <class E>
E assemble(const std::vector<batch_view<E>>& vs, std::size_t& leaf, bool in_tuple) {
  if constexpr (is_tensor<E>::value) {
    return impl::stack_leaf(vs, leaf++, in_tuple);
  } else {
    // A braced list evaluates left to right, so the leaves are numbered in order.
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return E{impl::assemble(impl::component<K>(vs), leaf, true)...};
    }(std::make_index_sequence<std::tuple_size_v<E>>{});
  }
}

template <class E>
E assemble(const std::vector<item<E>>& items) {
  std::vector<batch_view<E>> vs;
  vs.reserve(items.size());
  for (const item<E>& x : items) {
    if (x.value) vs.push_back({&*x.value, nullptr, 0, nullptr});
    else vs.push_back({nullptr, &x.rows->columns, x.row, x.rows.get()});
  }
  std::size_t leaf = 0;
  return impl::assemble(vs, leaf, false);
}

/// The cardinality of batches of n from c elements.
inline std::int64_t batch_cardinality(std::int64_t c, std::int64_t n, bool drop_remainder) {
  if (c < 0) return c;
  return drop_remainder ? c / n : c / n + (c % n != 0);
}

template <class E>
class batch_node final : public node<E> {
 public:
  batch_node(node_ptr<E> up, std::int64_t n, bool drop_remainder)
      : node<E>(batch_cardinality(up->cardinality(), n, drop_remainder)),
        up_(std::move(up)),
        n_(static_cast<std::size_t>(n)),
        drop_(drop_remainder) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), n_, drop_); }

 private:
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::size_t n, bool drop) : up_(std::move(up)), n_(n), drop_(drop) {}
    bool next(item<E>& out) override {
      items_.clear();
      while (!up_done_ && items_.size() < n_) {
        items_.emplace_back();
        if (!up_->next(items_.back())) {
          items_.pop_back();
          up_done_ = true;
        }
      }
      if (items_.empty() || (drop_ && items_.size() < n_)) return false;
      out.set(impl::assemble(items_));
      items_.clear();  // releases the rows' tables as soon as the batch is made
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::size_t n_;
    bool drop_;
    bool up_done_ = false;
    std::vector<item<E>> items_;
  };
  node_ptr<E> up_;
  std::size_t n_;
  bool drop_;
};

/// The elements of one tensor of the structure, each padded to one shape and stacked on a new
/// first axis (Note [padded batch]).
///
/// Note [padded batch]: padded_batch stacks elements whose shapes differ, as tf.data's does:
/// the elements of each tensor must share a rank, each dimension is padded at its end to the
/// given size (or to the batch's longest), and the result is made once, filled with the padding
/// value, with each element copied into its corner row by row. A given size smaller than an
/// element's is an error naming the element, the dimension and both sizes.
template <class T>
tensor<T> pad_stack(const std::vector<tensor<T>>& xs, std::size_t leaf, bool in_tuple, const padded_batch_options& o) {
  const std::string where = in_tuple ? " (component " + std::to_string(leaf) + " of the elements)" : std::string();
  const std::size_t r = xs[0].rank();
  fg::shape target = xs[0].shape();
  for (std::size_t k = 1; k < xs.size(); ++k) {
    FG_CHECK(xs[k].rank() == r, shape_error, "fg::data::padded_batch: element ", k, " has shape ", xs[k].shape(),
             " but element 0 has shape ", xs[0].shape(), where, "; padding keeps the rank: reshape them to one rank first");
    for (std::size_t d = 0; d < r; ++d) target[d] = std::max(target[d], xs[k].shape()[d]);
  }
  if (leaf < o.padded_shapes.size() && !o.padded_shapes[leaf].empty()) {
    const std::vector<std::int64_t>& want = o.padded_shapes[leaf];
    FG_CHECK(want.size() == r, shape_error, "fg::data::padded_batch: padded_shapes[", leaf, "] has ", want.size(),
             " dimensions but the elements", where, " have rank ", r, " (shape ", xs[0].shape(), ")");
    for (std::size_t d = 0; d < r; ++d) {
      if (want[d] < 0) continue;
      const auto size = static_cast<std::size_t>(want[d]);
      for (std::size_t k = 0; k < xs.size(); ++k)
        FG_CHECK(xs[k].shape()[d] <= size, shape_error, "fg::data::padded_batch: element ", k, where, " has shape ",
                 xs[k].shape(), ", longer in dimension ", d, " than padded_shapes[", leaf, "] allows (", size, ")");
      target[d] = size;
    }
  }
  const T pad = leaf < o.padding_values.size() ? static_cast<T>(o.padding_values[leaf]) : T{};
  fg::shape out_shape{xs.size()};
  for (std::size_t d : target) out_shape.push_back(d);
  tensor<T> out = fg::fill<T>(out_shape, pad, fg::device::cpu());
  T* const base = out.buffer()->data;
  const std::size_t per_element = target.elements();
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const tensor<T> x = xs[k].cpu();
    if (x.size() == 0) continue;
    T* const dst = base + k * per_element;
    if (r == 0) {
      *dst = *x.data();
      continue;
    }
    // Row by row along the last axis: the row's offset in the target from its index in x.
    const std::size_t row = x.shape()[r - 1], rows = x.size() / row;
    for (std::size_t i = 0; i < rows; ++i) {
      std::size_t rest = i, offset = 0, stride = target[r - 1];
      for (std::size_t d = r - 1; d-- > 0;) {
        offset += (rest % x.shape()[d]) * stride;
        rest /= x.shape()[d];
        stride *= target[d];
      }
      std::copy_n(x.data() + i * row, row, dst + offset);
    }
  }
  return out;
}

/// The padded batch of a structure, each tensor through pad_stack, leaves numbered in order.
template <class E>
E pad_assemble(const std::vector<E>& xs, std::size_t& leaf, bool in_tuple, const padded_batch_options& o) {
  if constexpr (is_tensor<E>::value) {
    return impl::pad_stack(xs, leaf++, in_tuple, o);
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      const auto part = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
        std::vector<std::tuple_element_t<J, E>> c;
        c.reserve(xs.size());
        for (const E& x : xs) c.push_back(std::get<J>(x));
        return impl::pad_assemble(c, leaf, true, o);
      };
      return E{part(std::integral_constant<std::size_t, K>{})...};  // left to right, as assemble
    }(std::make_index_sequence<std::tuple_size_v<E>>{});
  }
}

template <class E>
class padded_batch_node final : public node<E> {
 public:
  padded_batch_node(node_ptr<E> up, std::int64_t n, padded_batch_options o)
      : node<E>(batch_cardinality(up->cardinality(), n, o.drop_remainder)),
        up_(std::move(up)),
        n_(static_cast<std::size_t>(n)),
        o_(std::move(o)) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), n_, o_); }

 private:
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::size_t n, const padded_batch_options& o) : up_(std::move(up)), n_(n), o_(o) {}
    bool next(item<E>& out) override {
      std::vector<E> xs;
      while (!up_done_ && xs.size() < n_) {
        item<E> x;
        if (up_->next(x)) xs.push_back(x.take());
        else up_done_ = true;
      }
      if (xs.empty() || (o_.drop_remainder && xs.size() < n_)) return false;
      std::size_t leaf = 0;
      out.set(impl::pad_assemble(xs, leaf, false, o_));
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::size_t n_;
    padded_batch_options o_;  // a copy: a pass may outlive its dataset
    bool up_done_ = false;
  };
  node_ptr<E> up_;
  std::size_t n_;
  padded_batch_options o_;
};

template <class E>
class unbatch_node final : public node<E> {
 public:
  explicit unbatch_node(node_ptr<E> up)
      : node<E>(up->cardinality() == infinite_cardinality ? infinite_cardinality : unknown_cardinality),
        up_(std::move(up)) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open()); }

 private:
  class pass final : public cursor<E> {
   public:
    explicit pass(std::unique_ptr<cursor<E>> up) : up_(std::move(up)) {}
    bool next(item<E>& out) override {
      while (!table_ || i_ == table_->rows) {
        item<E> x;
        if (!up_->next(x)) {
          table_.reset();
          return false;
        }
        table_ = impl::make_table(x.take(), "unbatch");
        i_ = 0;
      }
      out.refer(table_, i_++);
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::shared_ptr<const table<E>> table_;
    std::size_t i_ = 0;
  };
  node_ptr<E> up_;
};

}  // namespace fusegrad::data::impl
