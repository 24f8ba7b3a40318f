#pragma once
/// \file fusegrad's exception types and the always-on check.

#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

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

namespace detail {
/// Streams every argument into one string; used to build error messages only on failure.
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}
}  // namespace detail
}  // namespace fusegrad

/// Always-on check: throws `error_type` with the streamed message when `cond` is false.
/// The message arguments are evaluated only on failure.
#define FG_CHECK(cond, error_type, ...)                              \
  do {                                                               \
    if (!(cond)) [[unlikely]]                                        \
      throw error_type(::fusegrad::detail::cat(__VA_ARGS__));        \
  } while (false)
