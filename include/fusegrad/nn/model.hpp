#pragma once
/// \file The walk over a model's members, once (Note [model walk]): nn::named_variables,
/// trainable_variables, non_trainable_variables and variables of any model, and its
/// regularization_losses (Keras' model.losses).
/// Note [model walk]: a model is a layer, an fg::variable, a struct adapted to Boost.Hana
/// (BOOST_HANA_ADAPT_STRUCT or BOOST_HANA_DEFINE_STRUCT; no registration call), or a
/// std::vector or std::array of models, nested to any depth. One recursive walk visits them in
/// declaration order and names each variable by its path: a struct member by its name, an
/// element of a vector or array by its index, a layer's variables by their names within the
/// layer ("dense1/kernel", "blocks/0/bias"). A variable reached twice (a layer held by two
/// members) is listed once, under its first path. Numbers, strings and tensors in a struct are
/// not models and are passed over; any other member type is a compile-time error that names it.

#include <array>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/core/to.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include "layer.hpp"

namespace fusegrad::nn {
namespace impl {
template <class M>
struct is_vector : std::false_type {};
template <class M, class A>
struct is_vector<std::vector<M, A>> : std::true_type {};
template <class M>
struct is_array : std::false_type {};
template <class M, std::size_t N>
struct is_array<std::array<M, N>> : std::true_type {};
template <class M>
struct is_variable : std::false_type {};
template <class T>
struct is_variable<variable<T>> : std::true_type {};
template <class M>
struct is_tensor : std::false_type {};
template <class T>
struct is_tensor<tensor<T>> : std::true_type {};

/// What the walk passes over: numbers, strings, tensors (a model's constants).
template <class M>
constexpr bool passed_over = std::is_arithmetic_v<M> || std::is_enum_v<M> || std::is_same_v<M, std::string> ||
                             is_tensor<M>::value;

inline std::string join(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "/" + std::string(name);
}

struct walker {
  std::vector<named_variable> out;
  std::unordered_set<tensor_id> seen;
  std::vector<std::pair<std::string, const layer*>> layers;  ///< each layer once, under its first path
  std::unordered_set<const void*> seen_layers;  ///< by the name a layer's handles share: its identity

  void add(const std::string& name, const any_variable& v, const regularizers::regularizer& reg = {}) {
    const tensor_id id = std::visit([](const auto& x) { return x.id(); }, v);
    if (seen.insert(id).second) out.push_back({name, v, reg});
  }

  template <class M>
  void operator()(const M& m, const std::string& path) {
    if constexpr (std::derived_from<M, layer>) {
      if (seen_layers.insert(&m.name()).second) layers.emplace_back(path.empty() ? m.name() : path, &m);
      for (const named_variable& w : m.weights())
        add(join(path.empty() ? m.name() : path, w.name), w.value, w.regularizer);
    } else if constexpr (is_variable<M>::value) {
      if constexpr (std::is_floating_point_v<typename M::value_type>) add(path.empty() ? m.name() : path, m);
    } else if constexpr (requires { typename M::model_struct; }) {  // nn::model<S>: S's members
      (*this)(static_cast<const typename M::model_struct&>(m), path);
    } else if constexpr (is_vector<M>::value || is_array<M>::value) {
      for (std::size_t i = 0; i < m.size(); ++i) (*this)(m[i], join(path, std::to_string(i)));
    } else if constexpr (boost::hana::Struct<M>::value) {
      boost::hana::for_each(boost::hana::accessors<M>(), [&](const auto& member) {
        (*this)(boost::hana::second(member)(m), join(path, boost::hana::to<const char*>(boost::hana::first(member))));
      });
    } else if constexpr (!passed_over<M>) {
      static_assert(passed_over<M>,
                    "fg::nn: a model member is neither a layer, an fg::variable, a std::vector or std::array of "
                    "them, nor a struct adapted with BOOST_HANA_ADAPT_STRUCT (or BOOST_HANA_DEFINE_STRUCT); adapt "
                    "the struct that holds it, or hold it elsewhere");
    }
  }
};

/// The regularization term of each trainable variable of element type T that has a regularizer,
/// in order, from the variables' current values.
template <class T>
std::vector<tensor<T>> regularization_terms(const std::vector<named_variable>& all) {
  std::vector<tensor<T>> out;
  for (const named_variable& v : all)
    if (v.regularizer && v.trainable())
      if (const auto* x = std::get_if<variable<T>>(&v.value)) out.push_back(v.regularizer(*x));
  return out;
}

template <class T>
std::vector<variable<T>> of_type(const std::vector<named_variable>& all, int trainable) {
  std::vector<variable<T>> out;
  for (const named_variable& v : all)
    if (const auto* x = std::get_if<variable<T>>(&v.value))
      if (trainable < 0 || x->trainable() == (trainable == 1)) out.push_back(*x);
  return out;
}

/// The layers of model m, each once, with its path name, in the walk's order (Note [model
/// walk]); the pointers are into m.
template <class M>
std::vector<std::pair<std::string, const layer*>> named_layers(const M& m) {
  walker w;
  w(m, "");
  return std::move(w.layers);
}
}  // namespace impl

/// Every variable of model m with its path name, in the walk's order (Note [model walk]).
template <class M>
std::vector<named_variable> named_variables(const M& m) {
  impl::walker w;
  w(m, "");
  return std::move(w.out);
}
/// m's trainable variables of element type T, in the walk's order: what a tape differentiates
/// and an optimizer moves.
template <class T = float, class M>
std::vector<variable<T>> trainable_variables(const M& m) {
  return impl::of_type<T>(named_variables(m), 1);
}
/// m's variables that no optimizer moves (batch normalization's moving statistics).
template <class T = float, class M>
std::vector<variable<T>> non_trainable_variables(const M& m) {
  return impl::of_type<T>(named_variables(m), 0);
}
/// All of m's variables of element type T.
template <class T = float, class M>
std::vector<variable<T>> variables(const M& m) {
  return impl::of_type<T>(named_variables(m), -1);
}
/// Keras' model.losses for the weight regularizers: one scalar per trainable variable of element
/// type T that has a regularizer (nn/regularizers.hpp), in the walk's order, computed from the
/// variables' current values each time it is called, so that under a tape their gradients flow.
template <class T = float, class M>
std::vector<tensor<T>> regularization_losses(const M& m) {
  return impl::regularization_terms<T>(named_variables(m));
}
}  // namespace fusegrad::nn
