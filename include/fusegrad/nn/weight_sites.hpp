#pragma once
/// \file The walk that places a model's variables in a weights file (Note [weights layouts] in
/// train/weights.hpp): for fusegrad's layout each variable under its path, for Keras 3's each
/// layer's variables numbered under the group Keras gives the layer. In the nn floor so that fit
/// can hand it, type-erased, to callbacks of higher floors (model_checkpoint writes Keras'
/// layout through it: nn::callbacks::training_context::sites).

#include <algorithm>
#include <cctype>
#include <concepts>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "model.hpp"
#include "sequential.hpp"

namespace fusegrad::nn::impl {
/// Keras' snake-case name for a class name: "_" between a character and a capital that starts a
/// run of small letters, then between a small letter and a capital, all in small letters:
/// "Conv2D" -> "conv2d", "MaxPooling2D" -> "max_pooling2d", "BatchNormalization" ->
/// "batch_normalization".
inline std::string keras_snake_case(std::string_view class_name) {
  std::string word;
  for (char c : class_name)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') word += c;
  const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  std::string first;
  for (std::size_t p = 0; p < word.size();) {
    if (p + 2 < word.size() && upper(word[p + 1]) && lower(word[p + 2])) {
      std::size_t e = p + 3;
      while (e < word.size() && lower(word[e])) ++e;
      first += word[p];
      first += '_';
      first.append(word, p + 1, e - p - 1);
      p = e;
    } else {
      first += word[p++];
    }
  }
  std::string out;
  for (std::size_t p = 0; p < first.size();) {
    if (p + 1 < first.size() && lower(first[p]) && upper(first[p + 1])) {
      out += first[p];
      out += '_';
      out += first[p + 1];
      p += 2;
    } else {
      out += first[p++];
    }
  }
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// A layer of a model and where its variables go: fusegrad's layout, "<where>/<name>"; Keras',
/// "<where>/<index>" (`where` is then the layer's "vars" group).
struct layer_site {
  const nn::layer* layer = nullptr;
  std::string where = {};
};
/// A variable that is a model's member, and its name in the file.
struct variable_site {
  nn::any_variable var;
  std::string key = {};
};
/// What a model's walk finds for one layout (Note [weights layouts]).
struct model_sites {
  std::vector<layer_site> layers = {};
  std::vector<variable_site> variables = {};
  /// Keras: the groups to write, with their attributes (each "vars" group, with "name").
  std::map<std::string, std::map<std::string, std::string>> groups = {};
  /// Keras: what its layout has no name for, if anything (then save and load refuse).
  std::string problem = {};
};

inline std::string join_key(const std::string& a, const std::string& b) { return a.empty() ? b : a + "/" + b; }

/// The walk of Note [model walk], in either layout's order and naming (Note [weights layouts]).
struct site_walker {
  bool keras = false;
  model_sites out;
  std::unordered_set<const void*> seen_layers;  ///< by the name a layer's handles share
  std::unordered_set<tensor_id> seen_variables;

  /// A struct's own variables (Keras: its "vars"), in declaration order.
  using own_list = std::vector<nn::any_variable>;

  /// A layer at `path` (fusegrad: "" for the model itself; Keras: its group); `name` is the
  /// layer's name where it sits (a sequential's unique name for it).
  void add_layer(const nn::layer& l, const std::string& path, const std::string& name) {
    if (!seen_layers.insert(&l.name()).second) return;
    const auto* seq = dynamic_cast<const nn::sequential*>(&l);
    if (!keras) {
      const std::string p = path.empty() ? l.name() : path;
      if (!seq) {
        out.layers.push_back({&l, p});
        return;
      }
      for (std::size_t i = 0; i < seq->size(); ++i)
        add_layer((*seq)[i], join_key(p, seq->layer_name(i)), seq->layer_name(i));
      return;
    }
    out.groups[join_key(path, "vars")] = {{"name", name}};
    if (!seq) {
      out.layers.push_back({&l, join_key(path, "vars")});
      return;
    }
    std::map<std::string, int> used;
    for (std::size_t i = 0; i < seq->size(); ++i)
      add_layer((*seq)[i], join_key(join_key(path, "layers"), unique(keras_snake_case((*seq)[i].type_name()), used)),
                seq->layer_name(i));
  }

  /// Keras' name within a list: the first "dense", then "dense_1", "dense_2", ...
  static std::string unique(const std::string& name, std::map<std::string, int>& used) {
    const auto [it, fresh] = used.emplace(name, 0);
    return fresh ? name : name + "_" + std::to_string(++it->second);
  }

  /// A member of a list in Keras' walk: a layer, a struct (a Keras layer of its own class) or a
  /// nested list, and how to visit it at a path.
  struct list_entry {
    const void* id = nullptr;  ///< the layer's identity or the struct's address; null for a list
    bool is_layer = false;
    std::string class_name = {};  ///< Keras' snake-case name of its class; "" when unknown
    std::function<void(const std::string&)> visit = {};
  };
  std::unordered_set<const void*> seen_structs;

  /// A struct's Keras class name: its `keras_class` ("Block") if it declares one.
  template <class S>
  static std::string struct_class() {
    if constexpr (requires { S::keras_class; })
      return keras_snake_case(S::keras_class);
    else
      return {};
  }

  /// The layers and structs of x, lists flattened, in declaration order: what a Keras model's
  /// `layers` lists.
  template <class X>
  void collect(const X& x, std::vector<list_entry>& out_list) {
    if constexpr (std::derived_from<X, nn::layer>) {
      out_list.push_back({&x.name(), true, keras_snake_case(x.type_name()),
                          [this, &x](const std::string& p) { add_layer(x, p, x.name()); }});
    } else if constexpr (requires { typename X::model_struct; }) {
      collect(static_cast<const typename X::model_struct&>(x), out_list);
    } else if constexpr (nn::impl::is_vector<X>::value || nn::impl::is_array<X>::value) {
      for (const auto& e : x) collect(e, out_list);
    } else if constexpr (boost::hana::Struct<X>::value) {
      out_list.push_back(
          {&x, false, struct_class<X>(), [this, &x](const std::string& p) { keras_struct(x, p, false); }});
    }
  }

  /// Keras' walk of a list at `path`: each member not visited yet under its class's unique name.
  void keras_list(const std::vector<list_entry>& entries, const std::string& path) {
    std::map<std::string, int> used;
    for (const list_entry& e : entries) {
      const bool seen = e.id && (e.is_layer ? seen_layers.count(e.id) : seen_structs.count(e.id));
      const std::string name = e.class_name.empty() ? std::string() : unique(e.class_name, used);
      if (seen) continue;
      if (name.empty()) {
        if (out.problem.empty())
          out.problem = "a struct in '" + (path.empty() ? std::string("the model") : path) +
                        "' has no Keras class name, which Keras' layout names it by: declare "
                        "`static constexpr const char* keras_class = \"MyBlock\";` in it (Note [weights layouts])";
        continue;
      }
      e.visit(join_key(path, name));
    }
  }

  /// A struct in Keras' walk: a Keras model (the root) or layer whose attributes are its members.
  template <class S>
  void keras_struct(const S& m, const std::string& path, bool root) {
    if (!root && !seen_structs.insert(&m).second) return;
    struct member_visit {
      std::string key;  ///< Keras' order: the name, those starting with '_' after all others
      std::function<void(own_list*)> visit;
    };
    std::vector<member_visit> members;
    boost::hana::for_each(boost::hana::accessors<S>(), [&](const auto& member) {
      const std::string name = boost::hana::to<const char*>(boost::hana::first(member));
      const auto& value = boost::hana::second(member)(m);
      if (root && name == "layers" && out.problem.empty())
        out.problem = "the model has a member named 'layers', which Keras' layout keeps for the model's list of layers";
      members.push_back({name.starts_with('_') ? "~" + name : name,
                         [this, &value, p = join_key(path, name)](own_list* o) { (*this)(value, p, o); }});
    });
    std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    own_list mine;
    out.groups[join_key(path, "vars")];
    bool listed = !root;  // a model's `layers` comes in its place among the attributes
    const auto list_layers = [&] {
      std::vector<list_entry> entries;
      boost::hana::for_each(boost::hana::accessors<S>(),
                            [&](const auto& member) { collect(boost::hana::second(member)(m), entries); });
      keras_list(entries, join_key(path, "layers"));
      listed = true;
    };
    for (const member_visit& mv : members) {
      if (!listed && mv.key > "layers") list_layers();
      mv.visit(&mine);
    }
    if (!listed) list_layers();
    std::size_t k = 0;
    for (int trainable = 1; trainable >= 0; --trainable)
      for (const nn::any_variable& v : mine)
        if (std::visit([](const auto& x) { return x.trainable(); }, v) == (trainable == 1) &&
            seen_variables.insert(std::visit([](const auto& x) { return x.id(); }, v)).second)
          out.variables.push_back({v, join_key(path, "vars/" + std::to_string(k++))});
  }

  template <class M>
  void operator()(const M& m, const std::string& path, own_list* own) {
    if constexpr (std::derived_from<M, nn::layer>) {
      add_layer(m, path, m.name());
    } else if constexpr (nn::impl::is_variable<M>::value) {
      if constexpr (std::is_floating_point_v<typename M::value_type>) {
        if (keras) {
          if (own) own->push_back(m);
        } else if (seen_variables.insert(m.id()).second) {
          out.variables.push_back({m, path.empty() ? m.name() : path});
        }
      }
    } else if constexpr (requires { typename M::model_struct; }) {
      (*this)(static_cast<const typename M::model_struct&>(m), path, own);
    } else if constexpr (nn::impl::is_vector<M>::value || nn::impl::is_array<M>::value) {
      if (!keras) {
        for (std::size_t i = 0; i < m.size(); ++i) (*this)(m[i], join_key(path, std::to_string(i)), own);
        return;
      }
      // A Keras list: layers and structs by class, nested lists as "container", variables the
      // enclosing struct's own.
      std::vector<list_entry> entries;
      for (const auto& e : m) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (nn::impl::is_vector<E>::value || nn::impl::is_array<E>::value)
          entries.push_back({nullptr, false, "container", [this, &e, own](const std::string& p) { (*this)(e, p, own); }});
        else if constexpr (nn::impl::is_variable<E>::value)
          (*this)(e, path, own);
        else
          collect(e, entries);
      }
      keras_list(entries, path);
    } else if constexpr (boost::hana::Struct<M>::value) {
      if (keras) {
        keras_struct(m, path, false);
        return;
      }
      boost::hana::for_each(boost::hana::accessors<M>(), [&](const auto& member) {
        (*this)(boost::hana::second(member)(m),
                join_key(path, boost::hana::to<const char*>(boost::hana::first(member))), own);
      });
    }
  }
};

/// What model's walk finds for the layout of `path` (Note [weights layouts]).
template <class M>
model_sites sites_of(const M& model, bool keras) {
  site_walker w;
  w.keras = keras;
  if constexpr (nn::impl::is_variable<M>::value) {  // a lone variable: Keras' "vars/0"
    site_walker::own_list own;
    w(model, "", keras ? &own : nullptr);
    if (keras && !own.empty()) w.out.variables.push_back({own.front(), "vars/0"}), w.out.groups["vars"];
  } else if constexpr (requires { typename M::model_struct; }) {
    if (keras)
      w.keras_struct(static_cast<const typename M::model_struct&>(model), "", true);
    else
      w(model, "", nullptr);
  } else if constexpr (boost::hana::Struct<M>::value) {
    if (keras)
      w.keras_struct(model, "", true);
    else
      w(model, "", nullptr);
  } else {
    w(model, "", nullptr);
  }
  return std::move(w.out);
}

}  // namespace fusegrad::nn::impl
