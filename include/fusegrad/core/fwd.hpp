#pragma once
/// \file Forward declarations shared by the storage, expression and autodiff layers.

#include <atomic>
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"

namespace fusegrad {
template <class T> class tensor;
template <class T> class variable;

inline namespace expr {
/// Base of every lazy expression node (never of leaves' tensors themselves).
struct node_base {};
}  // namespace expr

/// A lazy elementwise expression built by fusegrad's ops (not yet evaluated).
template <class E>
concept expression = std::derived_from<std::remove_cvref_t<E>, expr::node_base>;

namespace core {
/// std::apply without its noexcept specification: computing that instantiates the callee's
/// is_nothrow_invocable test for every expression type, a large share of the compile time of
/// an expression (and more so in nvcc's front end).
template <class F, class Tuple>
constexpr decltype(auto) apply(F&& f, Tuple&& t) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return static_cast<F&&>(f)(std::get<I>(static_cast<Tuple&&>(t))...);
  }(std::make_index_sequence<std::tuple_size_v<std::remove_reference_t<Tuple>>>{});
}

/// A fresh tensor identity. Note [tensor ids]: ids are what tapes watch; copies of a tensor
/// share its id, every evaluation makes a new one, and a variable keeps one id for all its values.
/// Each thread takes ids in blocks, so making a tensor costs no atomic operation.
inline tensor_id next_id() noexcept {
  static std::atomic<tensor_id> counter{1};
  constexpr tensor_id block = 4096;
  thread_local tensor_id next = 0, end = 0;
  if (next == end) [[unlikely]] {
    next = counter.fetch_add(block, std::memory_order_relaxed);
    end = next + block;
  }
  return next++;
}
}  // namespace core
}  // namespace fusegrad
