#pragma once
/// \file fusegrad's exception types and the always-on check.

#include <cstdio>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace fusegrad {

/// Shapes that do not fit an op (broadcasting, matmul, reshape, axes).
struct shape_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// An argument with a bad value that is not a shape (dtype misuse at run time, bad option).
struct value_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// An index outside a dimension.
struct index_error : std::out_of_range {
  using std::out_of_range::out_of_range;
};
/// Misuse of a gradient tape, variable or custom gradient.
struct tape_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Tensors on different devices, or a device that does not exist.
struct device_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A device allocation that could not be satisfied.
class out_of_memory : public std::bad_alloc {
 public:
  explicit out_of_memory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

namespace core {
inline void append_signed(std::string& s, long long v) { s += std::to_string(v); }
inline void append_unsigned(std::string& s, unsigned long long v) { s += std::to_string(v); }
/// As a default std::ostream writes it (six significant digits).
inline void append_float(std::string& s, double v) {
  char b[32];
  const int n = std::snprintf(b, sizeof b, "%g", v);
  s.append(b, n > 0 ? static_cast<std::size_t>(n) : 0);
}
/// Appends a as text: strings and numbers directly, anything else through its operator<<.
template <class A>
void append_piece(std::string& s, const A& a) {
  if constexpr (std::is_pointer_v<A> && std::is_convertible_v<A, const char*>) s += a ? a : "(null)";
  else if constexpr (std::is_convertible_v<const A&, std::string_view>) s += std::string_view(a);
  else if constexpr (std::is_same_v<A, char>) s += a;
  else if constexpr (std::is_same_v<A, bool>) s += a ? '1' : '0';
  else if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) append_signed(s, a);
  else if constexpr (std::is_integral_v<A>) append_unsigned(s, a);
  else if constexpr (std::is_floating_point_v<A>) append_float(s, a);
  else {
    std::ostringstream os;
    os << a;
    s += os.str();
  }
}
/// A character array as a pointer, so that one append_piece serves string literals of every length.
template <class A>
decltype(auto) as_piece(const A& a) {
  if constexpr (std::is_array_v<A>) return static_cast<const std::remove_extent_t<A>*>(a);
  else return (a);
}
/// Every argument as text, in one string; builds error messages, only on failure (each call
/// site's instance is a few calls: the text of strings and numbers is made by functions
/// compiled once).
template <class... A>
[[gnu::cold, gnu::noinline]] std::string cat(const A&... a) {
  std::string s;
  (append_piece(s, as_piece(a)), ...);
  return s;
}
}  // namespace core
}  // namespace fusegrad

/// Always-on check: throws `error_type` with the streamed message when `cond` is false.
/// The message arguments are evaluated only on failure.
#define FG_CHECK(cond, error_type, ...)                              \
  do {                                                               \
    if (!(cond)) [[unlikely]]                                        \
      throw error_type(::fusegrad::core::cat(__VA_ARGS__));        \
  } while (false)
