#pragma once
/// \file Kernels: the evaluation-time twins of expression nodes, holding raw pointers and
/// broadcast strides instead of tensors. They are trivially copyable and marked FG_HD, so the
/// same kernel type runs in the host loops and inside a Thrust functor on the device.

#include <array>
#include <utility>

#include "node.hpp"

namespace fusegrad { inline namespace expr {

/// Elements of a leaf's splat buffer: enough for the widest SIMD batch (AVX-512 float).
inline constexpr std::size_t splat_width = 16;

/// A leaf's view of its buffer for one output shape.
template <class T>
struct leaf_kernel {
  const T* data;                        ///< first element of the tensor
  const T* ptr;                         ///< current base for flat/row access
  index_t step;                         ///< 1 when walking with the output, 0 when broadcast
  std::array<index_t, max_rank> strides;  ///< per output dimension, 0 where broadcast
  std::array<T, splat_width> splat;     ///< broadcast value repeated, so SIMD loads need no branch
  template <class A> FG_HD auto eval(const A& a) const { return a.load(*this); }
};

/// A leaf that reads the one buffer all aliased leaves of its kernel read, through the access's
/// alias pointer (Note [saved derivative], eager/saved_derivative.hpp): every such leaf loads
/// the same address, so the compiler merges the loads and the computations repeated on them.
template <class T>
struct alias_kernel {
  template <class A> FG_HD auto eval(const A& a) const { return a.template load_alias<T>(); }
};

/// A slot leaf (expr/node.hpp): reads buffer J of the access's slots.
template <class T, std::size_t J>
struct slot_kernel {
  template <class A> FG_HD auto eval(const A& a) const { return a.template load_slot<T, J>(); }
};

template <class T>
struct literal_kernel {
  T value;
  template <class A> FG_HD auto eval(const A& a) const { return a.template broadcast<T>(value); }
};

/// A pooled literal (expr/node.hpp): reads slot J of the access's pool.
template <class T, std::size_t J>
struct pooled_literal_kernel {
  template <class A> FG_HD auto eval(const A& a) const { return a.template pooled<T, J>(); }
};

/// A unit literal (expr/node.hpp): the constant 1.
template <class T>
struct unit_kernel {
  template <class A> FG_HD auto eval(const A& a) const { return a.template broadcast<T>(T(1)); }
};

namespace kdetail {
template <std::size_t I, class K> struct kslot { K k; };
template <class Seq, class... K> struct kpack;
template <std::size_t... I, class... K>
struct kpack<std::index_sequence<I...>, K...> : kslot<I, K>... {};
template <std::size_t I, class K> FG_HD const K& kget(const kslot<I, K>& s) { return s.k; }
template <std::size_t I, class K> FG_HD K& kget(kslot<I, K>& s) { return s.k; }

/// True for accesses that hold the values of some kernels (memo_access, eager/saved_derivative.hpp).
template <class A> inline constexpr bool is_memo_access = false;
/// True when access A holds the value of kernel K already.
template <class A, class K>
constexpr bool memoized() {
  if constexpr (is_memo_access<A>) return A::template holds<K>;
  else return false;
}
}  // namespace kdetail

template <class Op, class... K>
struct node_kernel {
  [[no_unique_address]] Op op;
  kdetail::kpack<std::index_sequence_for<K...>, K...> kids;
  template <class A> FG_HD auto eval(const A& a) const {
    if constexpr (kdetail::is_memo_access<A>) {
      if constexpr (kdetail::memoized<A, node_kernel>()) return a.template memo<node_kernel>();
      else return compute(a);
    } else {
      return compute(a);
    }
  }
  /// This node's op applied to its operands' values (never its own memoized value).
  template <class A> FG_HD auto compute(const A& a) const { return compute_(a, std::index_sequence_for<K...>{}); }

 private:
  template <class A, std::size_t... I>
  FG_HD auto compute_(const A& a, std::index_sequence<I...>) const { return op(kdetail::kget<I>(kids).eval(a)...); }
};

/// Builds the kernel of e for output shape `out` (strides right-aligned to out's rank).
template <class T>
leaf_kernel<T> make_kernel(const leaf<T>& l, const fg::shape& out) {
  leaf_kernel<T> k{};
  k.data = l.value.data();
  const fg::shape& s = l.shape();
  const auto cs = fg::core::contiguous_strides(s);
  const std::size_t off = out.rank() - s.rank();
  for (std::size_t d = 0; d < out.rank(); ++d)
    k.strides[d] = d < off || s[d - off] == 1 ? 0 : cs[d - off];
  k.step = l.value.size() == out.elements() ? 1 : 0;
  k.ptr = k.data;
  return k;
}
template <class T>
literal_kernel<T> make_kernel(const literal<T>& c, const fg::shape&) { return {c.value}; }
template <class T, std::size_t J>
pooled_literal_kernel<T, J> make_kernel(const pooled_literal<T, J>&, const fg::shape&) { return {}; }
template <class T>
alias_kernel<T> make_kernel(const alias_leaf<T>&, const fg::shape&) { return {}; }
template <class T>
unit_kernel<T> make_kernel(const unit_literal<T>&, const fg::shape&) { return {}; }
template <class T, std::size_t J>
slot_kernel<T, J> make_kernel(const slot_leaf<T, J>&, const fg::shape&) { return {}; }
template <class Op, class... A>
auto make_kernel(const node<Op, A...>& n, const fg::shape& out) {
  return fg::core::apply(
      [&](const auto&... a) {
        return node_kernel<Op, decltype(make_kernel(a, out))...>{n.op, {{make_kernel(a, out)}...}};
      },
      n.args);
}

/// Applies f to every leaf kernel inside k (used to set up flat and row access).
template <class T, class F> void for_each_leaf_kernel(leaf_kernel<T>& k, F&& f) { f(k); }
template <class T, class F> void for_each_leaf_kernel(literal_kernel<T>&, F&&) {}
template <class T, class F> void for_each_leaf_kernel(alias_kernel<T>&, F&&) {}
template <class T, std::size_t J, class F> void for_each_leaf_kernel(pooled_literal_kernel<T, J>&, F&&) {}
template <class T, class F> void for_each_leaf_kernel(unit_kernel<T>&, F&&) {}
template <class T, std::size_t J, class F> void for_each_leaf_kernel(slot_kernel<T, J>&, F&&) {}
template <class Op, class... K, class F>
void for_each_leaf_kernel(node_kernel<Op, K...>& k, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (for_each_leaf_kernel(kdetail::kget<I>(k.kids), f), ...);
  }(std::index_sequence_for<K...>{});
}

/// The value of a one-element host expression: what its kernel gives at flat element 0 (the
/// same op calls), without building the kernel.
template <class E>
auto point_value(const E& e) {
  if constexpr (is_leaf<E>::value) return *e.value.data();
  else if constexpr (is_literal<E>::value) return e.value;
  else return fg::core::apply([&](const auto&... a) { return e.op(point_value(a)...); }, e.args);
}

/// Scalar access at flat element i (every leaf walks with the output or is broadcast whole).
struct flat_access {
  index_t i;
  const void* alias = nullptr;  ///< the buffer alias_kernel leaves read
  const void* pool = nullptr;   ///< the values of pooled literals
  const void* const* slots = nullptr;  ///< the buffers slot_kernel leaves read
  template <class T> FG_HD T load(const leaf_kernel<T>& k) const { return k.ptr[i * k.step]; }
  template <class T, std::size_t J> FG_HD T load_slot() const { return static_cast<const T*>(slots[J])[i]; }
  template <class T> FG_HD T load_alias() const { return static_cast<const T*>(alias)[i]; }
  template <class T, std::size_t J> FG_HD T pooled() const { return static_cast<const T*>(pool)[J]; }
  template <class T> FG_HD T broadcast(T v) const { return v; }
};

/// Access by multi-index: the general broadcast path, and what device functors use.
struct index_access {
  const index_t* idx;
  std::size_t rank;
  template <class T> FG_HD T load(const leaf_kernel<T>& k) const {
    index_t off = 0;
    FG_UNROLL for (std::size_t d = 0; d < max_rank; ++d) {  // Note [device parameters]
      if (d == rank) break;
      off += idx[d] * k.strides[d];
    }
    return k.data[off];
  }
  template <class T> FG_HD T broadcast(T v) const { return v; }
};
}  // namespace expr
}  // namespace fusegrad
