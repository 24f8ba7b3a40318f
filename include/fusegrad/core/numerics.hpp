#pragma once
/// \file Whether a tensor holds NaN or infinities, and the switch that
/// fg::debugging::enable_check_numerics turns on (Note [numerics checks], eager/debugging.hpp).

#include <atomic>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "any_tensor.hpp"
#include "tensor.hpp"

namespace fusegrad::core {

/// On while fg::debugging::enable_check_numerics is in force; read once per evaluation.
inline std::atomic<bool> numerics_checks{false};
inline bool checking_numerics() noexcept { return numerics_checks.load(std::memory_order_relaxed); }

/// What non-finite values a tensor holds.
struct nonfinite {
  bool nan = false, inf = false;
  explicit operator bool() const noexcept { return nan || inf; }
  /// In TensorFlow's words: "NaN", "Inf", or "Inf and NaN".
  const char* words() const noexcept { return nan && inf ? "Inf and NaN" : nan ? "NaN" : "Inf"; }
};

/// The non-finite values among n elements at p (none for integer and bool T).
template <class T>
nonfinite find_nonfinite(const T* p, std::size_t n) noexcept {
  nonfinite f;
  if constexpr (std::is_floating_point_v<T>) {
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isfinite(p[i])) [[likely]] continue;
      if (std::isnan(p[i])) f.nan = true;
      else f.inf = true;
    }
  }
  return f;
}
/// The non-finite values of t (read through a host copy when t lives on a device).
template <class T>
nonfinite find_nonfinite(const tensor<T>& t) {
  if constexpr (!std::is_floating_point_v<T>) {
    return {};
  } else {
    if (!t.defined()) return {};
    const tensor<T> h = t.device().is_cpu() ? t : t.cpu();
    return find_nonfinite(h.data(), h.size());
  }
}
/// Throws the error of Note [numerics checks] when y, made by op `name` from operands of the
/// given shapes, holds NaN or Inf.
template <class T>
void check_result(const char* name, const tensor<T>& y, std::initializer_list<fg::shape> operands) {
  const nonfinite f = find_nonfinite(y);
  if (!f) return;
  std::string shapes;
  for (const fg::shape& s : operands) shapes += (shapes.empty() ? "" : ", ") + s.str();
  throw value_error(cat("fg::debugging: '", name, "' produced ", f.words(), " values from operands of shape ", shapes,
                        " (in a result of shape ", y.shape(), "; check_numerics)"));
}

/// The non-finite values of a type-erased tensor.
inline nonfinite find_nonfinite(const any_tensor& t) {
  if (const auto* a = std::get_if<tensor<float>>(&t)) return find_nonfinite(*a);
  if (const auto* b = std::get_if<tensor<double>>(&t)) return find_nonfinite(*b);
  return {};
}
}  // namespace fusegrad::core
