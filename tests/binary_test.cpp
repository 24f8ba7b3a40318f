// Elementwise binary ops, comparisons, logical ops, where, cast and truediv against numpy, on
// float, double, int32 and int64 (edge values, SIMD and scalar paths, C++ scalars on either
// side); integer floor semantics and division by zero; C++ operators and scalar mixing.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using namespace fg_test;
/// numpy's results of one op, element by element.
template <class T>
struct expected_row {
  std::string name;
  std::vector<T> want;
};

/// The reference row of op `name`.
template <class T>
const std::vector<T>& expected_for(const std::vector<expected_row<T>>& table, const std::string& name) {
  for (const auto& row : table)
    if (row.name == name) return row.want;
  FAIL("no reference row for " << name);
  static const std::vector<T> none;
  return none;
}

/// One op bound to element type T, in the three operand forms: tensor-tensor, tensor-scalar, scalar-tensor.
template <class T, class R>
struct typed_op {
  std::function<fg::tensor<R>(const fg::tensor<T>&, const fg::tensor<T>&)> tt;
  std::function<fg::tensor<R>(const fg::tensor<T>&, T)> ts;
  std::function<fg::tensor<R>(T, const fg::tensor<T>&)> st;
};

/// Binds a generic binary op to element type T in its three operand forms.
template <class T, class R, class F>
typed_op<T, R> bind(F f) {
  return {[f](const fg::tensor<T>& a, const fg::tensor<T>& b) -> fg::tensor<R> { return f(a, b); },
          [f](const fg::tensor<T>& a, T b) -> fg::tensor<R> { return f(a, b); },
          [f](T a, const fg::tensor<T>& b) -> fg::tensor<R> { return f(a, b); }};
}

/// Applies op to pairs (a[i], b[i]) in every form and checks each result against want:
/// whole tensors (SIMD batches and a scalar tail), each pair repeated 16 times (whole SIMD
/// batches), rank-0 tensors, and a C++ scalar on either side.
template <class T, class R>
void check_pairs(const std::string& name, const typed_op<T, R>& op, const std::vector<T>& a, const std::vector<T>& b,
                 const std::vector<R>& want, tolerance tol, const std::vector<std::size_t>& skip = {}) {
  REQUIRE(a.size() == want.size());
  REQUIRE(b.size() == want.size());
  const std::size_t n = a.size();
  const fg::tensor<R> whole = op.tt(fg::tensor<T>(fg::shape{n}, a), fg::tensor<T>(fg::shape{n}, b));
  REQUIRE(whole.shape() == fg::shape{n});
  constexpr std::size_t lanes = 16;
  std::vector<T> ra, rb;
  for (std::size_t i = 0; i < n; ++i) {
    ra.insert(ra.end(), lanes, a[i]);
    rb.insert(rb.end(), lanes, b[i]);
  }
  const fg::tensor<R> batches = op.tt(fg::tensor<T>(fg::shape{n, lanes}, ra), fg::tensor<T>(fg::shape{n, lanes}, rb));
  for (std::size_t i = 0; i < n; ++i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
    INFO(name << "(" << a[i] << ", " << b[i] << "): want " << want[i]);
    const fg::tensor<R> scalar = op.tt(fg::tensor<T>(a[i]), fg::tensor<T>(b[i]));
    const fg::tensor<R> right = op.ts(fg::tensor<T>(fg::shape{lanes}, std::vector<T>(lanes, a[i])), b[i]);
    const fg::tensor<R> left = op.st(a[i], fg::tensor<T>(fg::shape{lanes}, std::vector<T>(lanes, b[i])));
    CHECK(scalar.shape() == fg::shape{});
    INFO("whole tensor " << whole.data()[i] << ", rank 0 " << scalar.item() << ", tensor-scalar " << right.data()[0]
                         << ", scalar-tensor " << left.data()[0]);
    CHECK(matches(whole.data()[i], want[i], tol));
    CHECK(matches(scalar.item(), want[i], tol));
    std::size_t bad = 0;
    for (std::size_t l = 0; l < lanes; ++l) {
      bad += !matches(batches.data()[i * lanes + l], want[i], tol);
      bad += !matches(right.data()[l], want[i], tol);
      bad += !matches(left.data()[l], want[i], tol);
    }
    INFO("lanes of full batches that differ: " << bad);
    CHECK(bad == 0);
  }
}

/// An arithmetic op under test on every element type it takes.
struct arith_case {
  std::string name;
  typed_op<float, float> f32;
  typed_op<double, double> f64;
  typed_op<std::int32_t, std::int32_t> i32;
  typed_op<std::int64_t, std::int64_t> i64;
  bool exact;      ///< correctly rounded by definition
  bool zero_sign;  ///< checks the sign bit of zero results
  bool ints;       ///< has integer forms
};

/// Binds a generic arithmetic op to every element type it takes.
template <class F>
arith_case make_arith(std::string name, F f, bool exact, bool zero_sign, bool ints) {
  arith_case c{std::move(name), bind<float, float>(f), bind<double, double>(f), {}, {}, exact, zero_sign, ints};
  if (ints) {
    c.i32 = bind<std::int32_t, std::int32_t>(f);
    c.i64 = bind<std::int64_t, std::int64_t>(f);
  }
  return c;
}

/// The arithmetic ops, named as in the reference tables.
const std::vector<arith_case>& arith_cases() {
  static const std::vector<arith_case> cases = {
      make_arith("add", [](const auto& a, const auto& b) { return a + b; }, true, true, true),
      make_arith("subtract", [](const auto& a, const auto& b) { return a - b; }, true, true, true),
      make_arith("multiply", [](const auto& a, const auto& b) { return a * b; }, true, true, true),
      make_arith("divide", [](const auto& a, const auto& b) { return a / b; }, true, true, true),
      make_arith("floordiv", [](const auto& a, const auto& b) { return fg::floordiv(a, b); }, true, true, true),
      // Floor modulo's zero takes no sign in TensorFlow (fmod based) and the divisor's in numpy.
      make_arith("mod", [](const auto& a, const auto& b) { return a % b; }, false, false, true),
      make_arith("pow", [](const auto& a, const auto& b) { return fg::pow(a, b); }, false, true, false),
      make_arith("maximum", [](const auto& a, const auto& b) { return fg::maximum(a, b); }, true, true, true),
      make_arith("minimum", [](const auto& a, const auto& b) { return fg::minimum(a, b); }, true, true, true),
  };
  return cases;
}

/// A comparison under test on every element type.
struct compare_case {
  std::string name;
  typed_op<float, bool> f32;
  typed_op<double, bool> f64;
  typed_op<std::int32_t, bool> i32;
  typed_op<std::int64_t, bool> i64;
};

/// Binds a generic comparison to every element type.
template <class F>
compare_case make_compare(std::string name, F f) {
  return {std::move(name), bind<float, bool>(f), bind<double, bool>(f), bind<std::int32_t, bool>(f),
          bind<std::int64_t, bool>(f)};
}

/// The comparisons, named as in the reference tables.
const std::vector<compare_case>& compare_cases() {
  static const std::vector<compare_case> cases = {
      make_compare("equal", [](const auto& a, const auto& b) { return a == b; }),
      make_compare("not_equal", [](const auto& a, const auto& b) { return a != b; }),
      make_compare("less", [](const auto& a, const auto& b) { return a < b; }),
      make_compare("less_equal", [](const auto& a, const auto& b) { return a <= b; }),
      make_compare("greater", [](const auto& a, const auto& b) { return a > b; }),
      make_compare("greater_equal", [](const auto& a, const auto& b) { return a >= b; }),
  };
  return cases;
}

// References computed with numpy 2 (np.seterr(all='ignore')).
// a, b = pairs of float values (dmin = denorm_min), as np.float32 arrays
const std::vector<float> float_a = {
    1.0f, -1.0f, 7.5f, -7.5f, 7.5f, -7.5f, 0.0f, -0.0f, 3.0f, -3.0f, 0.0f, inf_f, -inf_f, inf_f, inf_f, nan_f,
    1.0f, 2.0f, -2.0f, -2.0f, 0.0f, 10.0f, 1.5f, 6.0f, dmin_f, dmin_f, dmin_f};
const std::vector<float> float_b = {
    2.0f, 2.0f, 2.0f, 2.0f, -2.0f, -2.0f, 3.0f, 3.0f, 0.0f, 0.0f, 0.0f, 2.0f, 2.0f, inf_f, -inf_f, 1.0f,
    nan_f, 0.5f, 3.0f, 0.5f, -1.0f, -2.0f, -0.0f, 3.0f, 2.0f, 0.5f, dmin_f};
const std::vector<expected_row<float>> float_expected = {
    // np.add(a, b)
    {"add",
     {3.0f, 1.0f, 9.5f, -5.5f, 5.5f, -9.5f, 3.0f, 3.0f, 3.0f, -3.0f, 0.0f, inf_f, -inf_f, inf_f, nan_f, nan_f,
      nan_f, 2.5f, 1.0f, -1.5f, -1.0f, 8.0f, 1.5f, 9.0f, 2.0f, 0.5f, 0x1p-148f}},
    // np.subtract(a, b)
    {"subtract",
     {-1.0f, -3.0f, 5.5f, -9.5f, 9.5f, -5.5f, -3.0f, -3.0f, 3.0f, -3.0f, 0.0f, inf_f, -inf_f, nan_f, inf_f,
      nan_f, nan_f, 1.5f, -5.0f, -2.5f, 1.0f, 12.0f, 1.5f, 3.0f, -2.0f, -0.5f, 0.0f}},
    // np.multiply(a, b)
    {"multiply",
     {2.0f, -2.0f, 15.0f, -15.0f, -15.0f, 15.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, inf_f, -inf_f, inf_f, -inf_f,
      nan_f, nan_f, 1.0f, -6.0f, -1.0f, -0.0f, -20.0f, -0.0f, 18.0f, 0x1p-148f, 0.0f, 0.0f}},
    // np.divide(a, b)
    {"divide",
     {0.5f, -0.5f, 3.75f, -3.75f, -3.75f, 3.75f, 0.0f, -0.0f, inf_f, -inf_f, nan_f, inf_f, -inf_f, nan_f,
      nan_f, nan_f, nan_f, 4.0f, -0.666666687f, -4.0f, -0.0f, -5.0f, -inf_f, 2.0f, 0.0f, 0x1p-148f, 1.0f}},
    // np.floor(np.divide(a, b))
    {"floordiv",
     {0.0f, -1.0f, 3.0f, -4.0f, -4.0f, 3.0f, 0.0f, -0.0f, inf_f, -inf_f, nan_f, inf_f, -inf_f, nan_f, nan_f,
      nan_f, nan_f, 4.0f, -1.0f, -4.0f, -0.0f, -5.0f, -inf_f, 2.0f, 0.0f, 0.0f, 1.0f}},
    // np.mod(a, b)
    {"mod",
     {1.0f, 1.0f, 1.5f, 0.5f, -0.5f, -1.5f, 0.0f, 0.0f, nan_f, nan_f, nan_f, nan_f, nan_f, nan_f, nan_f,
      nan_f, nan_f, 0.0f, 1.0f, 0.0f, -0.0f, -0.0f, nan_f, 0.0f, dmin_f, dmin_f, 0.0f}},
    // np.power(a, b)
    {"pow",
     {1.0f, 1.0f, 56.25f, 56.25f, 0.0177777782f, 0.0177777782f, 0.0f, -0.0f, 1.0f, 1.0f, 1.0f, inf_f, inf_f,
      inf_f, 0.0f, nan_f, 1.0f, 1.41421354f, -8.0f, nan_f, inf_f, 0.00999999978f, 1.0f, 216.0f, 0.0f,
      3.74339207e-23f, 1.0f}},
    // np.maximum(a, b)
    {"maximum",
     {2.0f, 2.0f, 7.5f, 2.0f, 7.5f, -2.0f, 3.0f, 3.0f, 3.0f, 0.0f, 0.0f, inf_f, 2.0f, inf_f, inf_f, nan_f,
      nan_f, 2.0f, 3.0f, 0.5f, 0.0f, 10.0f, 1.5f, 6.0f, 2.0f, 0.5f, dmin_f}},
    // np.minimum(a, b)
    {"minimum",
     {1.0f, -1.0f, 2.0f, -7.5f, -2.0f, -7.5f, 0.0f, -0.0f, 0.0f, -3.0f, 0.0f, 2.0f, -inf_f, inf_f, -inf_f,
      nan_f, nan_f, 0.5f, -2.0f, -2.0f, -1.0f, -2.0f, -0.0f, 3.0f, dmin_f, dmin_f, dmin_f}},
};
// The comparisons of a and b, as np.float32 and as np.float64 arrays: the same for both (every
// pair is the same numbers in both, dmin each type's own).
const std::vector<expected_row<bool>> floating_compare_expected = {
    // a == b
    {"equal",
     {false, false, false, false, false, false, false, false, false, false, true, false, false, true, false,
      false, false, false, false, false, false, false, false, false, false, false, true}},
    // a != b
    {"not_equal",
     {true, true, true, true, true, true, true, true, true, true, false, true, true, false, true, true, true,
      true, true, true, true, true, true, true, true, true, false}},
    // a < b
    {"less",
     {true, true, false, true, false, true, true, true, false, true, false, false, true, false, false, false,
      false, false, true, true, false, false, false, false, true, true, false}},
    // a <= b
    {"less_equal",
     {true, true, false, true, false, true, true, true, false, true, true, false, true, true, false, false,
      false, false, true, true, false, false, false, false, true, true, true}},
    // a > b
    {"greater",
     {false, false, true, false, true, false, false, false, true, false, false, true, false, false, true,
      false, false, true, false, false, true, true, true, true, false, false, false}},
    // a >= b
    {"greater_equal",
     {false, false, true, false, true, false, false, false, true, false, true, true, false, true, true, false,
      false, true, false, false, true, true, true, true, false, false, true}},
};
// a, b = pairs of float values (dmin = denorm_min), as np.float64 arrays
const std::vector<double> double_a = {
    1.0, -1.0, 7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 3.0, -3.0, 0.0, inf_d, -inf_d, inf_d, inf_d, nan_d, 1.0, 2.0,
    -2.0, -2.0, 0.0, 10.0, 1.5, 6.0, dmin_d, dmin_d, dmin_d};
const std::vector<double> double_b = {
    2.0, 2.0, 2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 0.0, 2.0, 2.0, inf_d, -inf_d, 1.0, nan_d, 0.5, 3.0,
    0.5, -1.0, -2.0, -0.0, 3.0, 2.0, 0.5, dmin_d};
const std::vector<expected_row<double>> double_expected = {
    // np.add(a, b)
    {"add",
     {3.0, 1.0, 9.5, -5.5, 5.5, -9.5, 3.0, 3.0, 3.0, -3.0, 0.0, inf_d, -inf_d, inf_d, nan_d, nan_d, nan_d,
      2.5, 1.0, -1.5, -1.0, 8.0, 1.5, 9.0, 2.0, 0.5, 0x0.0000000000002p-1022}},
    // np.subtract(a, b)
    {"subtract",
     {-1.0, -3.0, 5.5, -9.5, 9.5, -5.5, -3.0, -3.0, 3.0, -3.0, 0.0, inf_d, -inf_d, nan_d, inf_d, nan_d, nan_d,
      1.5, -5.0, -2.5, 1.0, 12.0, 1.5, 3.0, -2.0, -0.5, 0.0}},
    // np.multiply(a, b)
    {"multiply",
     {2.0, -2.0, 15.0, -15.0, -15.0, 15.0, 0.0, -0.0, 0.0, -0.0, 0.0, inf_d, -inf_d, inf_d, -inf_d, nan_d,
      nan_d, 1.0, -6.0, -1.0, -0.0, -20.0, -0.0, 18.0, 0x0.0000000000002p-1022, 0.0, 0.0}},
    // np.divide(a, b)
    {"divide",
     {0.5, -0.5, 3.75, -3.75, -3.75, 3.75, 0.0, -0.0, inf_d, -inf_d, nan_d, inf_d, -inf_d, nan_d, nan_d,
      nan_d, nan_d, 4.0, -0.66666666666666663, -4.0, -0.0, -5.0, -inf_d, 2.0, 0.0, 0x0.0000000000002p-1022,
      1.0}},
    // np.floor(np.divide(a, b))
    {"floordiv",
     {0.0, -1.0, 3.0, -4.0, -4.0, 3.0, 0.0, -0.0, inf_d, -inf_d, nan_d, inf_d, -inf_d, nan_d, nan_d, nan_d,
      nan_d, 4.0, -1.0, -4.0, -0.0, -5.0, -inf_d, 2.0, 0.0, 0.0, 1.0}},
    // np.mod(a, b)
    {"mod",
     {1.0, 1.0, 1.5, 0.5, -0.5, -1.5, 0.0, 0.0, nan_d, nan_d, nan_d, nan_d, nan_d, nan_d, nan_d, nan_d, nan_d,
      0.0, 1.0, 0.0, -0.0, -0.0, nan_d, 0.0, dmin_d, dmin_d, 0.0}},
    // np.power(a, b)
    {"pow",
     {1.0, 1.0, 56.25, 56.25, 0.017777777777777778, 0.017777777777777778, 0.0, -0.0, 1.0, 1.0, 1.0, inf_d,
      inf_d, inf_d, 0.0, nan_d, 1.0, 1.4142135623730951, -8.0, nan_d, inf_d, 0.01, 1.0, 216.0, 0.0,
      2.2227587494850775e-162, 1.0}},
    // np.maximum(a, b)
    {"maximum",
     {2.0, 2.0, 7.5, 2.0, 7.5, -2.0, 3.0, 3.0, 3.0, 0.0, 0.0, inf_d, 2.0, inf_d, inf_d, nan_d, nan_d, 2.0,
      3.0, 0.5, 0.0, 10.0, 1.5, 6.0, 2.0, 0.5, dmin_d}},
    // np.minimum(a, b)
    {"minimum",
     {1.0, -1.0, 2.0, -7.5, -2.0, -7.5, 0.0, -0.0, 0.0, -3.0, 0.0, 2.0, -inf_d, inf_d, -inf_d, nan_d, nan_d,
      0.5, -2.0, -2.0, -1.0, -2.0, -0.0, 3.0, dmin_d, dmin_d, dmin_d}},
};
// a, b = pairs of integers, as np.int32 and as np.int64 arrays: numpy gives the same results for both
// (all fit in 32 bits; 0 for // 0 and % 0, with a warning)
const std::vector<std::int64_t> int_a = {
    7, -7, 7, -7, 0, 6, -6, -6, 1, -1, 5, -5, 0, 2, -3, 4, 9, -9, 100000, -100000, 3};
const std::vector<std::int64_t> int_b = {
    3, 3, -3, -3, 3, 3, 3, -3, -1, 1, 0, 0, 0, 10, 3, 1, 2, 2, 7, 7, 3};
const std::vector<expected_row<std::int64_t>> int_expected = {
    // np.add(a, b)
    {"add",
     {10, -4, 4, -10, 3, 9, -3, -9, 0, 0, 5, -5, 0, 12, 0, 5, 11, -7, 100007, -99993, 6}},
    // np.subtract(a, b)
    {"subtract",
     {4, -10, 10, -4, -3, 3, -9, -3, 2, -2, 5, -5, 0, -8, -6, 3, 7, -11, 99993, -100007, 0}},
    // np.multiply(a, b)
    {"multiply",
     {21, -21, -21, 21, 0, 18, -18, 18, -1, -1, 0, 0, 0, 20, -9, 4, 18, -18, 700000, -700000, 9}},
    // np.floor_divide(a, b)
    {"divide",
     {2, -3, -3, 2, 0, 2, -2, 2, -1, -1, 0, 0, 0, 0, -1, 4, 4, -5, 14285, -14286, 1}},
    // np.floor_divide(a, b)
    {"floordiv",
     {2, -3, -3, 2, 0, 2, -2, 2, -1, -1, 0, 0, 0, 0, -1, 4, 4, -5, 14285, -14286, 1}},
    // np.mod(a, b)
    {"mod",
     {1, 2, -2, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 1, 5, 2, 0}},
    // np.maximum(a, b)
    {"maximum",
     {7, 3, 7, -3, 3, 6, 3, -3, 1, 1, 5, 0, 0, 10, 3, 4, 9, 2, 100000, 7, 3}},
    // np.minimum(a, b)
    {"minimum",
     {3, -7, -3, -7, 0, 3, -6, -6, -1, -1, 0, -5, 0, 2, -3, 1, 2, -9, 7, -100000, 3}},
};
const std::vector<expected_row<bool>> int_compare_expected = {
    // a == b
    {"equal",
     {false, false, false, false, false, false, false, false, false, false, false, false, true, false, false,
      false, false, false, false, false, true}},
    // a != b
    {"not_equal",
     {true, true, true, true, true, true, true, true, true, true, true, true, false, true, true, true, true,
      true, true, true, false}},
    // a < b
    {"less",
     {false, true, false, true, true, false, true, true, false, true, false, true, false, true, true, false,
      false, true, false, true, false}},
    // a <= b
    {"less_equal",
     {false, true, false, true, true, false, true, true, false, true, false, true, true, true, true, false,
      false, true, false, true, true}},
    // a > b
    {"greater",
     {true, false, true, false, false, true, false, false, true, false, true, false, false, false, false,
      true, true, false, true, false, false}},
    // a >= b
    {"greater_equal",
     {true, false, true, false, false, true, false, false, true, false, true, false, true, false, false, true,
      true, false, true, false, true}},
};
/// v's values as element type T (the integer tables' values fit every integer type).
template <class T>
std::vector<T> as(const std::vector<std::int64_t>& v) {
  return {v.begin(), v.end()};
}
}  // namespace

TEST_CASE("float and double arithmetic ops match numpy on ordinary and edge pairs, in every operand form",
          "[binary]") {
  for (const arith_case& c : arith_cases()) {
    // These pairs are checked by the special-case tests at the end: NaN operands of maximum and
    // minimum; pow(-0.0, 3), pow(0, 0), pow(1, nan), pow(0, -1) and a denormal base.
    std::vector<std::size_t> skip_f, skip_d;
    if (c.name == "maximum" || c.name == "minimum") skip_f = skip_d = {15, 16};
    if (c.name == "pow") {
      skip_f = {7, 10, 16, 20};
      skip_d = {7, 10, 16, 20, 25};
    }
    check_pairs(c.name, c.f32, float_a, float_b, expected_for(float_expected, c.name),
                {c.exact ? 0.0 : 1e-6, c.zero_sign}, skip_f);
    check_pairs(c.name, c.f64, double_a, double_b, expected_for(double_expected, c.name),
                {c.exact ? 0.0 : 1e-15, c.zero_sign}, skip_d);
  }
}

TEST_CASE("int32 and int64 arithmetic ops match numpy, with floor semantics and division by zero giving 0",
          "[binary][int]") {
  for (const arith_case& c : arith_cases()) {
    if (!c.ints) continue;
    check_pairs(c.name, c.i32, as<std::int32_t>(int_a), as<std::int32_t>(int_b),
                as<std::int32_t>(expected_for(int_expected, c.name)), {});
    check_pairs(c.name, c.i64, int_a, int_b, expected_for(int_expected, c.name), {});
  }
}

TEST_CASE("comparisons match numpy on every element type, NaN comparing unequal and -0.0 equal to 0.0",
          "[binary][compare]") {
  for (const compare_case& c : compare_cases()) {
    check_pairs(c.name, c.f32, float_a, float_b, expected_for(floating_compare_expected, c.name), {});
    check_pairs(c.name, c.f64, double_a, double_b, expected_for(floating_compare_expected, c.name), {});
    check_pairs(c.name, c.i32, as<std::int32_t>(int_a), as<std::int32_t>(int_b),
                expected_for(int_compare_expected, c.name), {});
    check_pairs(c.name, c.i64, int_a, int_b, expected_for(int_compare_expected, c.name), {});
  }
}

TEST_CASE("integer floor division and modulo follow the divisor's sign, as TensorFlow and Python do",
          "[binary][int]") {
  fg::tensor<int> a = {-7, 7, -7, 7, -1, 0, 8};
  fg::tensor<int> b = {3, 3, -3, -3, 3, 3, 3};
  // np.floor_divide(a, b), np.mod(a, b)
  CHECK(values(fg::tensor<int>(fg::floordiv(a, b))) == std::vector<int>{-3, 2, 2, -3, -1, 0, 2});
  CHECK(values(fg::tensor<int>(a / b)) == std::vector<int>{-3, 2, 2, -3, -1, 0, 2});
  CHECK(values(fg::tensor<int>(a % b)) == std::vector<int>{2, 1, -1, -2, 2, 0, 2});
  // a == (a / b) * b + a % b holds exactly (Note [division] in ops/binary.hpp).
  CHECK(values(fg::tensor<int>((a / b) * b + a % b)) == values(a));
  // The smallest int32 divided by -1 wraps, as numpy does; its remainder is 0.
  const std::int32_t imin = std::numeric_limits<std::int32_t>::min();
  CHECK(fg::tensor<std::int32_t>(fg::floordiv(fg::tensor<std::int32_t>(imin), -1)).item() == imin);
  CHECK(fg::tensor<std::int32_t>(fg::tensor<std::int32_t>(imin) % -1).item() == 0);
}

TEST_CASE("integer division and modulo by zero give 0 instead of trapping", "[binary][int]") {
  fg::tensor<int> a = {5, -5, 0};
  CHECK(values(fg::tensor<int>(a / 0)) == std::vector<int>{0, 0, 0});
  CHECK(values(fg::tensor<int>(a % 0)) == std::vector<int>{0, 0, 0});
  CHECK(values(fg::tensor<int>(fg::floordiv(a, 0))) == std::vector<int>{0, 0, 0});
  const fg::tensor<std::int64_t> c = {std::int64_t{1} << 40, std::int64_t{-3}};
  CHECK(values(fg::tensor<std::int64_t>(c / std::int64_t{0})) == std::vector<std::int64_t>{0, 0});
  CHECK(values(fg::tensor<std::int64_t>(c % std::int64_t{0})) == std::vector<std::int64_t>{0, 0});
}

TEST_CASE("integer pow with non-negative exponents matches numpy", "[binary][int]") {
  fg::tensor<std::int32_t> a = {2, -3, 5, 0, 7, 2};
  fg::tensor<std::int32_t> b = {10, 3, 0, 0, 1, 30};
  // np.power(a, b) on int32
  CHECK(values(fg::tensor<std::int32_t>(fg::pow(a, b))) == std::vector<std::int32_t>{1024, -27, 1, 1, 7, 1073741824});
  // np.power(np.int64(3), np.int64(39))
  CHECK(fg::tensor<std::int64_t>(fg::pow(fg::tensor<std::int64_t>(3), std::int64_t{39})).item() ==
        4052555153018976267LL);
  CHECK(values(fg::tensor<std::int32_t>(fg::pow(a, 2))) == std::vector<std::int32_t>{4, 9, 25, 0, 49, 4});
}

namespace {
/// Requires that f() throws fg::value_error with fg::pow's refusal of a negative integer
/// exponent (TensorFlow's "Integers to negative integer powers are not allowed") and `detail`.
template <class F>
void check_refused(F&& f, const char* detail = "") {
  try {
    f();
    FAIL("no error: expected fg::pow to refuse a negative integer exponent");
  } catch (const fg::value_error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("fg::pow"));
    CHECK_THAT(m, Catch::Contains("negative integer powers are not allowed"));
    CHECK_THAT(m, Catch::Contains(detail));
  }
}
}  // namespace

TEST_CASE("integer pow refuses negative exponents as TensorFlow does, tensor and scalar, fused or op by op",
          "[binary][int][pow][errors]") {
  // tf.pow(tf.constant([2, 1, -1, 0]), -1) raises InvalidArgumentError "Integers to negative
  // integer powers are not allowed", whatever the base; so does a tensor exponent holding one.
  const fg::tensor<std::int32_t> a = {2, 1, -1, 0};
  check_refused([&] { return fg::pow(a, -1); }, "exponent -1");
  check_refused([&] { return fg::pow(fg::tensor<std::int32_t>{1}, -2); });
  check_refused([&] { return fg::pow(a, fg::tensor<std::int32_t>{1, 0, -2, 3}); }, "exponent -2 at element 2");
  check_refused([&] { return fg::pow(a, fg::tensor<std::int32_t>{1, 0, -2, 3}); }, "(4,)");
  check_refused([&] { return fg::pow(2, fg::tensor<std::int32_t>{3, -1}); });
  const fg::tensor<std::int64_t> a64 = {3, 1};
  check_refused([&] { return fg::pow(a64, std::int64_t{-5}); });
  check_refused([&] { return fg::pow(a64, fg::tensor<std::int64_t>{{0, -1}}); });
  // A broadcast exponent, and an exponent expression, checked by value.
  check_refused([&] { return fg::pow(fg::tensor<std::int32_t>{{1, 2}, {3, 4}}, fg::tensor<std::int32_t>{0, -3}); });
  const fg::tensor<std::int32_t> b = {3, 4, 2, 5};
  check_refused([&] { return fg::pow(a, b - 3); }, "exponent -1 at element 2");
  // The fused and the op-by-op evaluation of a chain holding the pow refuse it alike (when it is built).
  check_refused([&] { return fg::tensor<std::int32_t>(fg::pow(a + 1, b - 4) * 2); });
  check_refused([&] { return fg::eager::evaluate_unfused(fg::pow(a + 1, b - 4) * 2); });
  // Non-negative exponents still work on every path (np.power): (a + 1) ** (b - 2) * 2.
  const std::vector<std::int32_t> want = {6, 8, 2, 2};
  CHECK(values(fg::tensor<std::int32_t>(fg::pow(a + 1, b - 2) * 2)) == want);
  CHECK(values(fg::eager::evaluate_unfused(fg::pow(a + 1, b - 2) * 2)) == want);
  CHECK(values(fg::tensor<std::int32_t>(fg::pow(a, 0))) == std::vector<std::int32_t>{1, 1, 1, 1});
  CHECK(fg::tensor<std::int32_t>(fg::pow(0, fg::tensor<std::int32_t>(0))).item() == 1);
  // Floating-point pow takes negative exponents: np.power(np.float32(-4), -1) = -0.25.
  CHECK(fg::tensor<float>(fg::pow(fg::tensor<float>{2.f, -4.f}, -1.f)).data()[1] == -0.25f);
  CHECK(fg::tensor<double>(fg::pow(fg::tensor<double>{2.0}, fg::tensor<double>{-2.0})).item() == 0.25);
}

TEST_CASE("int32 / int32 is floor division, while fg::truediv gives float64 as TensorFlow's / does", "[binary][int]") {
  fg::tensor<int> num = 12;
  fg::tensor<int> q = num / 2;
  CHECK(q.item() == 6);
  const auto half = fg::truediv(num, 2);
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(half)>, double>);
  // Collatz seed: the next term of 12 prints as a float64.
  CHECK(str(half) == "tensor(6.0, shape=(), dtype=float64)");
  fg::tensor<int> a = {7, -7, 1, 0};
  fg::tensor<int> b = {2, 2, 0, 0};
  // np.array([7, -7, 1, 0], dtype=np.int32) / np.array([2, 2, 0, 0], dtype=np.int32)
  const fg::tensor<double> t = fg::truediv(a, b);
  CHECK(t.data()[0] == 3.5);
  CHECK(t.data()[1] == -3.5);
  CHECK(t.data()[2] == inf_d);
  CHECK(std::isnan(t.data()[3]));
  CHECK(values(fg::tensor<int>(a / b)) == std::vector<int>{3, -4, 0, 0});
  // A C++ integer on either side, and int64 operands, also give float64.
  CHECK(fg::tensor<double>(fg::truediv(1, fg::tensor<std::int64_t>(4))).item() == 0.25);
  CHECK(fg::tensor<double>(fg::truediv(fg::tensor<std::int64_t>(-9), std::int64_t{4})).item() == -2.25);
  // Floating operands keep their type: truediv is divide.
  const auto f = fg::truediv(fg::tensor<float>(1.f), 4.f);
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(f)>, float>);
  CHECK(fg::tensor<float>(f).item() == 0.25f);
}

TEST_CASE("C++ scalars mix with tensors on either side and take the tensor's element type", "[binary][scalar]") {
  fg::tensor<float> x = {1.f, -2.f, 0.5f};
  CHECK(values(fg::tensor<float>(3 * x * x)) == std::vector<float>{3.f, 12.f, 0.75f});
  CHECK(values(fg::tensor<float>(2.5 * x)) == std::vector<float>{2.5f, -5.f, 1.25f});
  CHECK(values(fg::tensor<float>(x + 2.5)) == std::vector<float>{3.5f, 0.5f, 3.f});
  CHECK(values(fg::tensor<float>(1 - x)) == std::vector<float>{0.f, 3.f, 0.5f});
  CHECK(values(fg::tensor<float>(1 / x)) == std::vector<float>{1.f, -0.5f, 2.f});
  CHECK(values(fg::tensor<float>(x / 2)) == std::vector<float>{0.5f, -1.f, 0.25f});
  CHECK(values(fg::tensor<float>(-x)) == std::vector<float>{-1.f, 2.f, -0.5f});
  // A double literal meeting a float tensor converts to float first: 0.1 becomes 0.1f.
  CHECK(fg::tensor<float>(fg::tensor<float>(0.f) + 0.1).item() == 0.1f);
  fg::tensor<double> d = {1.0, -2.0};
  CHECK(values(fg::tensor<double>(2.5 * d + 0.1f)) == std::vector<double>{2.5 + double(0.1f), -5.0 + double(0.1f)});

  fg::tensor<int> i = {-7, 7, -1, 0, 8};
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(i + 2)>, int>);
  CHECK(values(fg::tensor<int>(i + 2)) == std::vector<int>{-5, 9, 1, 2, 10});
  // np.array([-7, 7, -1, 0, 8]) % 3 and 10 % np.array([3, -3, 4, 0])
  CHECK(values(fg::tensor<int>(i % 3)) == std::vector<int>{2, 1, 2, 0, 2});
  CHECK(values(fg::tensor<int>(10 % fg::tensor<int>{3, -3, 4, 0})) == std::vector<int>{1, -2, 2, 0});
  CHECK(values(fg::tensor<int>(i / 2)) == std::vector<int>{-4, 3, -1, 0, 4});
  CHECK(values(fg::tensor<int>(-i)) == std::vector<int>{7, -7, 1, 0, -8});
  CHECK(values(fg::tensor<int>(3 * i * i)) == std::vector<int>{147, 147, 3, 0, 192});
  fg::tensor<std::int64_t> l = {1};
  CHECK(fg::tensor<std::int64_t>(l + 3000000000LL).item() == 3000000001LL);
  CHECK(fg::tensor<std::int64_t>(l * 2).item() == 2);
}

TEST_CASE("comparisons give tensor<bool>, also against C++ scalars on either side", "[binary][compare]") {
  fg::tensor<float> x = {-1.f, 0.f, 2.f};
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(x > 0)>, bool>);
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(fg::equal(x, x))>, bool>);
  const fg::tensor<bool> gt = x > 0;
  CHECK(gt.dtype() == fg::dtype::boolean);
  CHECK(values(gt) == std::vector<bool>{false, false, true});
  CHECK(values(fg::tensor<bool>(0 < x)) == std::vector<bool>{false, false, true});
  CHECK(values(fg::tensor<bool>(x <= 0)) == std::vector<bool>{true, true, false});
  CHECK(values(fg::tensor<bool>(x == -1)) == std::vector<bool>{true, false, false});
  CHECK(values(fg::tensor<bool>(2.f != x)) == std::vector<bool>{true, true, false});
  CHECK(values(fg::tensor<bool>(x >= 0.f)) == std::vector<bool>{false, true, true});
  fg::tensor<int> i = {3, 4};
  CHECK(values(fg::tensor<bool>(i > 3)) == std::vector<bool>{false, true});
  CHECK(str(fg::tensor<bool>(i == 4)) == "tensor([False  True], shape=(2,), dtype=bool)");
}

TEST_CASE("logical ops and their operators follow the truth tables on bool tensors and scalars", "[binary][logical]") {
  fg::tensor<bool> p = {false, false, true, true};
  fg::tensor<bool> q = {false, true, false, true};
  CHECK(values(fg::tensor<bool>(p & q)) == std::vector<bool>{false, false, false, true});
  CHECK(values(fg::tensor<bool>(p | q)) == std::vector<bool>{false, true, true, true});
  CHECK(values(fg::tensor<bool>(p ^ q)) == std::vector<bool>{false, true, true, false});
  CHECK(values(fg::tensor<bool>(fg::logical_and(p, q))) == std::vector<bool>{false, false, false, true});
  CHECK(values(fg::tensor<bool>(fg::logical_or(p, q))) == std::vector<bool>{false, true, true, true});
  CHECK(values(fg::tensor<bool>(fg::logical_xor(p, q))) == std::vector<bool>{false, true, true, false});
  CHECK(values(fg::tensor<bool>(!p)) == std::vector<bool>{true, true, false, false});
  CHECK(values(fg::tensor<bool>(fg::logical_not(q))) == std::vector<bool>{true, false, true, false});
  CHECK(values(fg::tensor<bool>(p & true)) == values(p));
  CHECK(values(fg::tensor<bool>(false | q)) == values(q));
  // Comparisons combine with logical ops inside one expression, also feeding where.
  fg::tensor<float> x = {-1.f, 0.5f, 2.f, 0.f};
  CHECK(values(fg::tensor<bool>((x > 0) & (x < 1))) == std::vector<bool>{false, true, false, false});
  CHECK(values(fg::tensor<bool>(!(x > 0) | (x == 2))) == std::vector<bool>{true, false, true, true});
}

TEST_CASE("where picks elementwise, broadcasts its three operands and takes scalars as branches", "[binary][where]") {
  fg::tensor<bool> c = {true, false, true};
  fg::tensor<float> a = {1.f, 2.f, 3.f};
  fg::tensor<float> b = {-1.f, -2.f, -3.f};
  CHECK(values(fg::tensor<float>(fg::where(c, a, b))) == std::vector<float>{1.f, -2.f, 3.f});
  CHECK(values(fg::tensor<float>(fg::where(c, a, 0))) == std::vector<float>{1.f, 0.f, 3.f});
  CHECK(values(fg::tensor<float>(fg::where(c, 9.5, b))) == std::vector<float>{9.5f, -2.f, 9.5f});
  // The unselected branch's NaN does not leak: replace NaNs by 0.
  fg::tensor<float> n = {nan_f, 1.f, -inf_f};
  CHECK(values(fg::tensor<float>(fg::where(n != n, 0.f, n))) == std::vector<float>{0.f, 1.f, -inf_f});
  // Condition (3, 1), branches (1, 4) and a scalar: result (3, 4).
  const fg::tensor<bool> rows = {{true}, {false}, {true}};
  fg::tensor<int> cols = {{1, 2, 3, 4}};
  const fg::tensor<int> w = fg::where(rows, cols, -1);
  CHECK(w.shape() == fg::shape{3, 4});
  CHECK(values(w) == std::vector<int>{1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4});
  // On the SIMD path (a long float chain) the same selection as element by element.
  std::vector<double> ref;
  std::vector<float> xs;
  for (int k = 0; k < 37; ++k) {
    xs.push_back(static_cast<float>(k % 7) - 3.f);
    ref.push_back(xs.back() > 0 ? double(xs.back()) * 2 : -double(xs.back()));
  }
  fg::tensor<float> x(fg::shape{37}, xs);
  const fg::tensor<float> y = fg::where(x > 0, x * 2, -x);
  for (std::size_t k = 0; k < 37; ++k) CHECK(y.data()[k] == ref[k]);
  fg::tensor<bool> t = {true, false};
  CHECK(values(fg::tensor<bool>(fg::where(t, fg::tensor<bool>{false, false}, fg::tensor<bool>{true, true}))) ==
        std::vector<bool>{false, true});
}

TEST_CASE("cast converts element types as numpy's astype does", "[binary][cast]") {
  fg::tensor<float> f = {-2.7f, 2.7f, -0.5f, 1e9f, -3.99f};
  // np.array([-2.7, 2.7, -0.5, 1e9, -3.99], dtype=np.float32).astype(np.int32): truncation toward zero
  const fg::tensor<std::int32_t> i = fg::cast<std::int32_t>(f);
  CHECK(values(i) == std::vector<std::int32_t>{-2, 2, 0, 1000000000, -3});
  CHECK(values(fg::tensor<std::int64_t>(fg::cast<std::int64_t>(f))) ==
        std::vector<std::int64_t>{-2, 2, 0, 1000000000, -3});
  // np.array([1, -2, 16777217], dtype=np.int32).astype(np.float32): 2^24 + 1 rounds to even
  CHECK(values(fg::tensor<float>(fg::cast<float>(fg::tensor<std::int32_t>{1, -2, 16777217}))) ==
        std::vector<float>{1.f, -2.f, 16777216.f});
  // np.array([0, -0.0, 0.5, nan, inf, 1e-45], dtype=np.float32).astype(bool)
  CHECK(values(fg::tensor<bool>(fg::cast<bool>(fg::tensor<float>{0.f, -0.f, 0.5f, nan_f, inf_f, dmin_f}))) ==
        std::vector<bool>{false, false, true, true, true, true});
  CHECK(values(fg::tensor<float>(fg::cast<float>(fg::tensor<bool>{true, false}))) == std::vector<float>{1.f, 0.f});
  // np.array([4294967301, -4294967297], dtype=np.int64).astype(np.int32): wraps modulo 2^32
  const fg::tensor<std::int64_t> wide = {4294967301LL, -4294967297LL};
  CHECK(values(fg::tensor<std::int32_t>(fg::cast<std::int32_t>(wide))) == std::vector<std::int32_t>{5, -1});
  // np.float64(np.float32(0.1)), np.float32(1e300), np.float32(0.1)
  CHECK(fg::tensor<double>(fg::cast<double>(fg::tensor<float>(0.1f))).item() == 0.10000000149011612);
  CHECK(fg::tensor<float>(fg::cast<float>(fg::tensor<double>(1e300))).item() == inf_f);
  CHECK(fg::tensor<float>(fg::cast<float>(fg::tensor<double>(0.1))).item() == 0.1f);
  // Inside an expression: a cast comparison as a 0/1 mask.
  fg::tensor<float> x = {-1.f, 2.f, 3.f};
  CHECK(values(fg::tensor<float>(fg::cast<float>(x > 0) * x)) == std::vector<float>{0.f, 2.f, 3.f});
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(fg::cast<double>(x))>, double>);
}

TEST_CASE("clip_by_value bounds every element", "[binary]") {
  fg::tensor<float> x = {-5.f, 0.25f, 7.f, -inf_f};
  CHECK(values(fg::tensor<float>(fg::clip_by_value(x, -1.f, 1.f))) == std::vector<float>{-1.f, 0.25f, 1.f, -1.f});
  fg::tensor<int> i = {-5, 0, 7};
  CHECK(values(fg::tensor<int>(fg::clip_by_value(i, 0, 3))) == std::vector<int>{0, 0, 3});
}

TEST_CASE("operators compose over expressions: (x + y) * (x - y) equals x*x - y*y exactly on integers", "[binary]") {
  fg::tensor<std::int64_t> x = {3, -4, 10, 0};
  fg::tensor<std::int64_t> y = {1, 5, -10, 7};
  CHECK(values(fg::tensor<std::int64_t>((x + y) * (x - y))) == std::vector<std::int64_t>{8, -9, 0, -49});
  CHECK(values(fg::tensor<std::int64_t>(x * x - y * y)) == std::vector<std::int64_t>{8, -9, 0, -49});
  CHECK(values(fg::tensor<std::int64_t>(fg::add(fg::multiply(x, 2), fg::subtract(y, 1)))) ==
        std::vector<std::int64_t>{6, -4, 9, 6});
  CHECK(values(fg::tensor<std::int64_t>(fg::divide(x, y))) == std::vector<std::int64_t>{3, -1, -1, 0});
  CHECK(values(fg::tensor<std::int64_t>(fg::mod(x, y))) == std::vector<std::int64_t>{0, 1, 0, 0});
}

TEST_CASE("binary ops on empty tensors give empty results of the broadcast shape", "[binary][empty]") {
  const fg::tensor<float> e0(fg::shape{0}, std::vector<float>{});
  const fg::tensor<float> e20(fg::shape{2, 0}, std::vector<float>{});
  CHECK(fg::tensor<float>(e0 + e0).shape() == fg::shape{0});
  CHECK(fg::tensor<float>(e0 * fg::tensor<float>{2.f}).shape() == fg::shape{0});
  CHECK(fg::tensor<float>(e20 - 1.f).shape() == fg::shape{2, 0});
  CHECK(fg::tensor<float>(e20 + fg::tensor<float>{{1.f}, {2.f}}).shape() == fg::shape{2, 0});
  CHECK(fg::tensor<float>(e20 / e0).shape() == fg::shape{2, 0});
  const fg::tensor<bool> c = e20 > e0;
  CHECK(c.shape() == fg::shape{2, 0});
  CHECK(c.size() == 0);
  const fg::tensor<int> ei(fg::shape{0}, std::vector<int>{});
  CHECK(fg::tensor<int>(ei % 3).shape() == fg::shape{0});
  CHECK_THROWS_AS(e0 + fg::tensor<float>({1.f, 2.f, 3.f}), fg::shape_error);
}

TEST_CASE("binary ops on rank-0 and rank-5 tensors keep the rank", "[binary]") {
  const fg::tensor<double> s = fg::tensor<double>(2.0) * fg::tensor<double>(3.5);
  CHECK(s.shape() == fg::shape{});
  CHECK(s.item() == 7.0);
  fg::tensor<int> a = {{{{{1, 2}, {3, 4}}}, {{{5, 6}, {7, 8}}}}};
  fg::tensor<int> b = {{{{{10, 20}, {30, 40}}}, {{{50, 60}, {70, 80}}}}};
  REQUIRE(a.shape() == fg::shape{1, 2, 1, 2, 2});
  const fg::tensor<int> r = b - a * 2 + b % 7;
  CHECK(r.shape() == a.shape());
  for (std::size_t k = 0; k < r.size(); ++k) {
    const int av = a.data()[k], bv = b.data()[k];
    CHECK(r.data()[k] == bv - av * 2 + bv % 7);
  }
}

// Special cases of NaN, pow and mod, on the SIMD and the scalar path alike.

TEST_CASE("maximum, minimum and relu propagate NaN on the SIMD and the scalar path", "[binary][nan]") {
  // np.maximum / np.minimum propagate NaN from either operand.
  std::vector<float> v(37, 1.f);
  v[0] = v[20] = v[36] = nan_f;  // two lanes of full SIMD batches and one in the scalar tail
  const fg::tensor<float> x(fg::shape{37}, v);
  const fg::tensor<float> r = fg::relu(x);
  const fg::tensor<float> m1 = fg::maximum(x, 2.f);
  const fg::tensor<float> m2 = fg::maximum(2.f, x);
  const fg::tensor<float> n1 = fg::minimum(x, 0.f);
  const fg::tensor<float> n2 = fg::minimum(0.f, x);
  for (std::size_t k : {0u, 20u, 36u}) {
    INFO("element " << k);
    CHECK(std::isnan(r.data()[k]));
    CHECK(std::isnan(m1.data()[k]));
    CHECK(std::isnan(m2.data()[k]));
    CHECK(std::isnan(n1.data()[k]));
    CHECK(std::isnan(n2.data()[k]));
  }
}

TEST_CASE("NaN != NaN is true on the SIMD path, so where(x != x, 0, x) replaces NaNs", "[binary][nan]") {
  std::vector<float> v(37, 1.f);
  v[3] = v[35] = nan_f;  // one lane of a full SIMD batch, one in the scalar tail
  const fg::tensor<float> x(fg::shape{37}, v);
  const fg::tensor<float> y = fg::where(x != x, 0.f, x);
  CHECK(y.data()[3] == 0.f);
  CHECK(y.data()[35] == 0.f);
  const fg::tensor<float> z = fg::where(fg::not_equal(x, x), fg::tensor<float>(-1.f), 1.f);
  CHECK(z.data()[3] == -1.f);
  std::vector<double> d(16, 2.0);
  d[0] = nan_d;
  const fg::tensor<double> xd(fg::shape{16}, d);
  CHECK(fg::tensor<double>(fg::where(xd != xd, 0.0, xd)).data()[0] == 0.0);
}

TEST_CASE("pow keeps IEEE special cases on the SIMD path", "[binary][pow]") {
  // np.power on float32: pow(0, 0) = 1, pow(-0.0, 3) = -0.0, pow(1, nan) = 1, pow(0, -1) = inf
  const std::vector<float> a = {0.f, -0.f, 1.f, 0.f};
  const std::vector<float> b = {0.f, 3.f, nan_f, -1.f};
  const std::vector<float> want = {1.f, -0.f, 1.f, inf_f};
  for (std::size_t k = 0; k < a.size(); ++k) {
    INFO("pow(" << a[k] << ", " << b[k] << ")");
    const fg::tensor<float> y = fg::pow(fg::tensor<float>(fg::shape{16}, std::vector<float>(16, a[k])), b[k]);
    CHECK(matches(y.data()[0], want[k], {}));
  }
  // np.power(np.float64(5e-324), 0.5) = 2.2227587494850775e-162 (a full batch of 8 doubles)
  const fg::tensor<double> d = fg::pow(fg::tensor<double>(fg::shape{8}, std::vector<double>(8, dmin_d)), 0.5);
  CHECK(d.data()[0] == 2.2227587494850775e-162);
}

TEST_CASE("float mod is exact for large quotients and infinite divisors, as TensorFlow's floormod",
          "[binary][mod]") {
  // np.mod(np.float32(-1e10), np.float32(3)) = 2; np.mod(2, inf) = 2; np.mod(-2, inf) = inf
  CHECK(fg::tensor<float>(fg::tensor<float>(-1e10f) % 3.f).item() == 2.f);
  CHECK(fg::tensor<float>(fg::tensor<float>(2.f) % inf_f).item() == 2.f);
  CHECK(fg::tensor<float>(fg::tensor<float>(-2.f) % inf_f).item() == inf_f);
  // np.mod(np.float32(12345678), np.float32(0.1)) = 0.016035065
  CHECK(fg::tensor<float>(fg::tensor<float>(12345678.f) % 0.1f).item() == Approx(0.016035065f));
}

TEST_CASE("division's gradients stay nan at a zero divisor under a zero upstream, as TensorFlow's do",
          "[binary][gradient]") {
  // tests/reference/where_mask_grads.py: for sum(where(b != 0, a / b, 0)) at a = [1, 1],
  // b = [0, 2], TensorFlow 2.21 gives da = [nan, 0.5] and db = [nan, -0.25] (Note [zero
  // upstream], ops/unary.hpp: only sqrt, rsqrt and reciprocal mask a zero upstream).
  fg::tensor<double> a = {1.0, 1.0}, b = {0.0, 2.0};
  fg::gradient_tape tape({.persistent = true});
  tape.watch(a);
  tape.watch(b);
  const fg::tensor<double> y = fg::reduce_sum(fg::where(b != 0, a / b, 0));
  const fg::tensor<double> da = tape.gradient(y, a), db = tape.gradient(y, b);
  CHECK(std::isnan(da.data()[0]));
  CHECK(da.data()[1] == 0.5);
  CHECK(std::isnan(db.data()[0]));
  CHECK(db.data()[1] == -0.25);
}

TEST_CASE("signed integer +, - and * wrap around as two's complement, as in TensorFlow and numpy", "[binary][integer]") {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  constexpr i32 imax = std::numeric_limits<i32>::max(), imin = std::numeric_limits<i32>::min();
  constexpr i64 lmax = std::numeric_limits<i64>::max(), lmin = std::numeric_limits<i64>::min();
  const fg::tensor<i32> a = {imax, imin, imax, 65536};
  check_values(fg::tensor<i32>(a + fg::tensor<i32>{1, -1, imax, 0}), {4}, std::vector<i32>{imin, imax, -2, 65536});
  check_values(fg::tensor<i32>(a - fg::tensor<i32>{-1, 1, imin, 0}), {4}, std::vector<i32>{imin, imax, -1, 65536});
  check_values(fg::tensor<i32>(a * fg::tensor<i32>{2, -1, imax, 65536}), {4}, std::vector<i32>{-2, imin, 1, 0});
  check_values(fg::tensor<i32>(a + 1), {4}, std::vector<i32>{imin, imin + 1, imin, 65537});
  // A broadcast row (the row loop) and one element (the scalar path) wrap the same way.
  const fg::tensor<i32> m = {{imax, 0}, {1, imin}};
  check_values(fg::tensor<i32>(m * fg::tensor<i32>{2, 3} - 1), {2, 2}, std::vector<i32>{-3, -1, 1, imax});
  const fg::tensor<i32> one = imax;
  CHECK(fg::tensor<i32>(one + 1).item() == imin);
  CHECK(fg::tensor<i32>(one * one).item() == 1);
  const fg::tensor<i64> l = {lmax, lmin};
  check_values(fg::tensor<i64>(l + i64{1}), {2}, std::vector<i64>{lmin, lmin + 1});
  check_values(fg::tensor<i64>(l - i64{1}), {2}, std::vector<i64>{lmax - 1, lmax});
  check_values(fg::tensor<i64>(l * i64{-1}), {2}, std::vector<i64>{lmin + 1, lmin});
}

TEST_CASE("cast of NaN, infinities and out-of-range floats to an integer type gives its minimum, as TensorFlow on x86",
          "[binary][cast][integer]") {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  constexpr i32 imin = std::numeric_limits<i32>::min();
  constexpr i64 lmin = std::numeric_limits<i64>::min();
  // 2147483520 is the largest float below 2^31.
  const fg::tensor<float> f = {nan_f, inf_f, -inf_f, 3e9f, -3e9f, 2147483520.f, -2147483648.f, 2.9f, -2.9f};
  check_values(fg::tensor<i32>(fg::cast<i32>(f)), {9},
               std::vector<i32>{imin, imin, imin, imin, imin, 2147483520, imin, 2, -2});
  check_values(fg::tensor<i64>(fg::cast<i64>(f)), {9},
               std::vector<i64>{lmin, lmin, lmin, 3000000000, -3000000000, 2147483520, -2147483648, 2, -2});
  const fg::tensor<double> d = {2147483647.9, 2147483648.0, -2147483648.9, -2147483649.0, 9.3e18, -9.3e18,
                                9223372036854774784.0, -9223372036854775808.0};
  check_values(fg::tensor<i32>(fg::cast<i32>(d)), {8},
               std::vector<i32>{2147483647, imin, imin, imin, imin, imin, imin, imin});
  check_values(fg::tensor<i64>(fg::cast<i64>(d)), {8},
               std::vector<i64>{2147483647, 2147483648, -2147483648, -2147483649, lmin, lmin, 9223372036854774784, lmin});
  // One element takes the scalar path; converting a tensor to a C++ integer follows the same rule.
  CHECK(fg::tensor<i32>(fg::cast<i32>(fg::tensor<float>(nan_f))).item() == imin);
  CHECK(static_cast<int>(fg::tensor<float>(inf_f)) == imin);
  CHECK(static_cast<i64>(fg::tensor<double>(-1e300)) == lmin);
  CHECK(static_cast<int>(fg::tensor<float>(-7.5f)) == -7);
  // Integers to narrower integers wrap; anything nonzero (NaN too) is true.
  check_values(fg::tensor<i32>(fg::cast<i32>(fg::tensor<i64>{(i64{1} << 32) + 5, i64{-1}})), {2}, std::vector<i32>{5, -1});
  check_values(fg::tensor<bool>(fg::cast<bool>(fg::tensor<float>{nan_f, 0.f, -0.5f})), {3},
               std::vector<bool>{true, false, true});
}
