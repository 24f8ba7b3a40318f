#pragma once
/// \file Element types fusegrad supports, their names and the concepts that restrict ops to them.

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace fusegrad {

/// The element types a tensor may hold.
template <class T>
concept element_type = std::same_as<T, float> || std::same_as<T, double> ||
                       std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t> ||
                       std::same_as<T, bool>;

/// Element types that carry gradients.
template <class T>
concept floating_element = std::same_as<T, float> || std::same_as<T, double>;

/// Run-time tag of an element type.
enum class dtype { float32, float64, int32, int64, boolean };

/// The dtype tag of T.
template <element_type T>
constexpr dtype dtype_of() {
  if constexpr (std::same_as<T, float>) return dtype::float32;
  else if constexpr (std::same_as<T, double>) return dtype::float64;
  else if constexpr (std::same_as<T, std::int32_t>) return dtype::int32;
  else if constexpr (std::same_as<T, std::int64_t>) return dtype::int64;
  else return dtype::boolean;
}

/// TensorFlow's name for a dtype: "float32", "int32", "bool", ...
constexpr std::string_view name(dtype d) {
  switch (d) {
    case dtype::float32: return "float32";
    case dtype::float64: return "float64";
    case dtype::int32: return "int32";
    case dtype::int64: return "int64";
    case dtype::boolean: return "bool";
  }
  return "?";
}
}  // namespace fusegrad
