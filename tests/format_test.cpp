// Tests for fusegrad/core/format.hpp. Every expected string is numpy's own output for the
// expression in the comment above it (numpy 2.x default print options).

#include "fusegrad/core/format.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace {

using fusegrad::core::format_array;

/// Formats `data` with the given shape the way the library prints a tensor body.
template <class T>
std::string render(const T* data, const std::vector<std::size_t>& shape, std::size_t indent = 0) {
  std::ostringstream os;
  format_array(os, data, std::span<const std::size_t>(shape), indent);
  return os.str();
}

template <class T>
std::string render(const std::vector<T>& data, const std::vector<std::size_t>& shape, std::size_t indent = 0) {
  return render(data.data(), shape, indent);
}

/// 0, 1, ..., n - 1 as T.
template <class T>
std::vector<T> arange(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i);
  return v;
}

constexpr double qnan = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("dtype_name gives TensorFlow's dtype names", "[format]") {
  using fusegrad::core::dtype_name;
  STATIC_REQUIRE(dtype_name<float>() == "float32");
  STATIC_REQUIRE(dtype_name<double>() == "float64");
  STATIC_REQUIRE(dtype_name<std::int32_t>() == "int32");
  STATIC_REQUIRE(dtype_name<std::int64_t>() == "int64");
  STATIC_REQUIRE(dtype_name<bool>() == "bool");
}

TEST_CASE("integers in a 2-D array are right-aligned to a common width", "[format]") {
  // str(np.array([[3,4,6,8],[10,12,9,13]], dtype=np.int32))
  CHECK(render(std::vector<std::int32_t>{3, 4, 6, 8, 10, 12, 9, 13}, {2, 4}) ==
        "[[ 3  4  6  8]\n"
        " [10 12  9 13]]");
}

TEST_CASE("negative integers widen the field", "[format]") {
  // str(np.array([-1, 2], dtype=np.int32))
  CHECK(render(std::vector<std::int32_t>{-1, 2}, {2}) == "[-1  2]");
  // str(np.array([[-100, 5], [3, 42]], dtype=np.int64))
  CHECK(render(std::vector<std::int64_t>{-100, 5, 3, 42}, {2, 2}) ==
        "[[-100    5]\n"
        " [   3   42]]");
}

TEST_CASE("bools print True and False with True padded to False's width", "[format]") {
  const bool mixed[] = {true, false};
  // str(np.array([True, False]))
  CHECK(render(mixed, {2}) == "[ True False]");
  const bool all_true[] = {true, true};
  // str(np.array([True, True]))
  CHECK(render(all_true, {2}) == "[ True  True]");
  // str(np.array([[True], [False]]))
  CHECK(render(mixed, {2, 1}) ==
        "[[ True]\n"
        " [False]]");
}

TEST_CASE("floats share fraction width, padded with spaces on the right", "[format]") {
  // str(np.array([1.5, 2., 3.25]))
  CHECK(render(std::vector<double>{1.5, 2., 3.25}, {3}) == "[1.5  2.   3.25]");
  // str(np.array([-1.5, 22.25, -333.125]))
  CHECK(render(std::vector<double>{-1.5, 22.25, -333.125}, {3}) == "[  -1.5     22.25  -333.125]");
}

TEST_CASE("integral floats print with a bare decimal point", "[format]") {
  // str(np.array([[4.]]))
  CHECK(render(std::vector<double>{4.}, {1, 1}) == "[[4.]]");
  // str(np.array([1., 2., 3.]))
  CHECK(render(std::vector<double>{1., 2., 3.}, {3}) == "[1. 2. 3.]");
}

TEST_CASE("float arrays keep at most eight fractional digits, rounded", "[format]") {
  // str(np.array([0.123456789, 1.0]))
  CHECK(render(std::vector<double>{0.123456789, 1.0}, {2}) == "[0.12345679 1.        ]");
  // str(np.array([1/3, 2/3]))
  CHECK(render(std::vector<double>{1.0 / 3, 2.0 / 3}, {2}) == "[0.33333333 0.66666667]");
}

TEST_CASE("float32 arrays use float32 shortest digits", "[format]") {
  // str(np.array([0.1, 0.2, 0.3], dtype=np.float32))
  CHECK(render(std::vector<float>{0.1f, 0.2f, 0.3f}, {3}) == "[0.1 0.2 0.3]");
  // str(np.array([1/3, 2/3], dtype=np.float32))
  CHECK(render(std::vector<float>{static_cast<float>(1.0 / 3), static_cast<float>(2.0 / 3)}, {2}) ==
        "[0.33333334 0.6666667 ]");
}

TEST_CASE("nan, inf, -inf and negative zero align with the other elements", "[format]") {
  // str(np.array([np.nan, np.inf, -np.inf, -0.0, 1.5]))
  CHECK(render(std::vector<double>{qnan, infinity, -infinity, -0.0, 1.5}, {5}) == "[ nan  inf -inf -0.   1.5]");
  // str(np.array([np.nan, -np.inf]))
  CHECK(render(std::vector<double>{qnan, -infinity}, {2}) == "[ nan -inf]");
  // str(np.array([-0.0, 0.0]))
  CHECK(render(std::vector<double>{-0.0, 0.0}, {2}) == "[-0.  0.]");
}

TEST_CASE("scientific notation when the largest magnitude reaches the cutoff", "[format]") {
  // str(np.array([1.23456e10, 1.0]))
  CHECK(render(std::vector<double>{1.23456e10, 1.0}, {2}) == "[1.23456e+10 1.00000e+00]");
  // str(np.array([1e8, 1.5e8]))
  CHECK(render(std::vector<double>{1e8, 1.5e8}, {2}) == "[1.0e+08 1.5e+08]");
  // str(np.array([9.9e7, 1e7]))
  CHECK(render(std::vector<double>{9.9e7, 1e7}, {2}) == "[99000000. 10000000.]");
}

TEST_CASE("float32 arrays switch to scientific notation from 1e6", "[format]") {
  // str(np.array([2e6, 1.5e6], dtype=np.float32))
  CHECK(render(std::vector<float>{2e6f, 1.5e6f}, {2}) == "[2.0e+06 1.5e+06]");
  // str(np.array([2e6, 1.5e6]))
  CHECK(render(std::vector<double>{2e6, 1.5e6}, {2}) == "[2000000. 1500000.]");
}

TEST_CASE("scientific notation when the smallest magnitude is below 1e-4", "[format]") {
  // str(np.array([1e-5, 1.0]))
  CHECK(render(std::vector<double>{1e-5, 1.0}, {2}) == "[1.e-05 1.e+00]");
  // str(np.array([1e-5, 2e-5]))
  CHECK(render(std::vector<double>{1e-5, 2e-5}, {2}) == "[1.e-05 2.e-05]");
  // str(np.array([1e-4, 2e-4]))
  CHECK(render(std::vector<double>{1e-4, 2e-4}, {2}) == "[0.0001 0.0002]");
}

TEST_CASE("scientific notation when max over min magnitude exceeds 1000", "[format]") {
  // str(np.array([0.001, 2.0]))
  CHECK(render(std::vector<double>{0.001, 2.0}, {2}) == "[1.e-03 2.e+00]");
  // str(np.array([0.001, 1.0]))
  CHECK(render(std::vector<double>{0.001, 1.0}, {2}) == "[0.001 1.   ]");
}

TEST_CASE("scientific exponents share a width of at least two digits", "[format]") {
  // str(np.array([1e-100, 1.0]))
  CHECK(render(std::vector<double>{1e-100, 1.0}, {2}) == "[1.e-100 1.e+000]");
  // str(np.array([0.0, 1e-5, np.nan, -np.inf]))
  CHECK(render(std::vector<double>{0.0, 1e-5, qnan, -infinity}, {4}) == "[0.e+00 1.e-05    nan   -inf]");
}

TEST_CASE("float32 scientific mantissas continue with the exact binary digits", "[format]") {
  // str(np.array([124.874886, 66.306335, 1e-5], dtype=np.float32))
  const std::vector<float> v{static_cast<float>(124.874886), static_cast<float>(66.306335), static_cast<float>(1e-5)};
  CHECK(render(v, {3}) == "[1.24874886e+02 6.63063354e+01 9.99999975e-06]");
}

TEST_CASE("float scalars use the shortest repr of their own width", "[format]") {
  const float f32_tenth = 0.1f;
  const double f64_tenth = 0.1;
  const double widened = static_cast<double>(0.1f);
  const float f32_pi = std::numbers::pi_v<float>;
  const double f64_pi = std::numbers::pi;
  const float f32_third = static_cast<float>(1.0 / 3);
  // str(np.float32(0.1))
  CHECK(render(&f32_tenth, {}) == "0.1");
  // str(np.float64(0.1))
  CHECK(render(&f64_tenth, {}) == "0.1");
  // str(np.float64(np.float32(0.1)))
  CHECK(render(&widened, {}) == "0.10000000149011612");
  // str(np.float32(np.pi))
  CHECK(render(&f32_pi, {}) == "3.1415927");
  // str(np.float64(np.pi))
  CHECK(render(&f64_pi, {}) == "3.141592653589793");
  // str(np.float32(1/3))
  CHECK(render(&f32_third, {}) == "0.33333334");
}

TEST_CASE("rank-0 values print as numpy scalars", "[format]") {
  const std::int32_t i32 = 5;
  const std::int64_t i64 = -7;
  const bool flag = true;
  // str(np.array(5, dtype=np.int32))
  CHECK(render(&i32, {}) == "5");
  // str(np.array(-7, dtype=np.int64))
  CHECK(render(&i64, {}) == "-7");
  // str(np.array(True))
  CHECK(render(&flag, {}) == "True");

  const auto scalar = [](double x) { return render(&x, {}); };
  // str(np.array(18.0))
  CHECK(scalar(18.0) == "18.0");
  // str(np.array(0.5))
  CHECK(scalar(0.5) == "0.5");
  // str(np.array(1e-5))
  CHECK(scalar(1e-5) == "1e-05");
  // str(np.array(np.inf))
  CHECK(scalar(infinity) == "inf");
  // str(np.array(-np.inf))
  CHECK(scalar(-infinity) == "-inf");
  // str(np.array(np.nan))
  CHECK(scalar(qnan) == "nan");
  // str(np.array(-0.0))
  CHECK(scalar(-0.0) == "-0.0");
  // str(np.array(1e16))
  CHECK(scalar(1e16) == "1e+16");
  // str(np.array(1e15))
  CHECK(scalar(1e15) == "1000000000000000.0");

  const float f32_million = 1e6f;
  const float f32_below_million = 999999.94f;
  // str(np.array(1e6, dtype=np.float32))
  CHECK(render(&f32_million, {}) == "1e+06");
  // str(np.array(999999.94, dtype=np.float32))
  CHECK(render(&f32_below_million, {}) == "999999.94");
}

TEST_CASE("empty arrays print as [] whatever their shape", "[format]") {
  // str(np.zeros((0,), dtype=np.int32))
  CHECK(render<std::int32_t>(nullptr, {0}) == "[]");
  // str(np.zeros((2, 0)))
  CHECK(render<double>(nullptr, {2, 0}) == "[]");
  // str(np.zeros((0, 3), dtype=np.bool_))
  CHECK(render<bool>(nullptr, {0, 3}) == "[]");
}

TEST_CASE("rank 3 separates 2-D blocks by one blank line", "[format]") {
  // str(np.arange(8, dtype=np.int32).reshape(2, 2, 2))
  CHECK(render(arange<std::int32_t>(8), {2, 2, 2}) ==
        "[[[0 1]\n"
        "  [2 3]]\n"
        "\n"
        " [[4 5]\n"
        "  [6 7]]]");
}

TEST_CASE("rank 5 separates k-D blocks by k - 1 blank lines", "[format]") {
  // str(np.arange(32, dtype=np.int32).reshape(2, 2, 2, 2, 2))
  CHECK(render(arange<std::int32_t>(32), {2, 2, 2, 2, 2}) ==
        "[[[[[ 0  1]\n"
        "    [ 2  3]]\n"
        "\n"
        "   [[ 4  5]\n"
        "    [ 6  7]]]\n"
        "\n"
        "\n"
        "  [[[ 8  9]\n"
        "    [10 11]]\n"
        "\n"
        "   [[12 13]\n"
        "    [14 15]]]]\n"
        "\n"
        "\n"
        "\n"
        " [[[[16 17]\n"
        "    [18 19]]\n"
        "\n"
        "   [[20 21]\n"
        "    [22 23]]]\n"
        "\n"
        "\n"
        "  [[[24 25]\n"
        "    [26 27]]\n"
        "\n"
        "   [[28 29]\n"
        "    [30 31]]]]]");
}

TEST_CASE("more than 1000 elements are summarised in 1-D", "[format]") {
  // str(np.arange(2000))
  CHECK(render(arange<std::int64_t>(2000), {2000}) == "[   0    1    2 ... 1997 1998 1999]");
  // str(np.arange(1001.0))
  CHECK(render(arange<double>(1001), {1001}) == "[   0.    1.    2. ...  998.  999. 1000.]");
}

TEST_CASE("more than 1000 elements are summarised along every long axis", "[format]") {
  // str(np.arange(10000).reshape(100, 100))
  CHECK(render(arange<std::int64_t>(10000), {100, 100}) ==
        "[[   0    1    2 ...   97   98   99]\n"
        " [ 100  101  102 ...  197  198  199]\n"
        " [ 200  201  202 ...  297  298  299]\n"
        " ...\n"
        " [9700 9701 9702 ... 9797 9798 9799]\n"
        " [9800 9801 9802 ... 9897 9898 9899]\n"
        " [9900 9901 9902 ... 9997 9998 9999]]");
  // str(np.arange(2 * 3 * 1001).reshape(2, 3, 1001))
  CHECK(render(arange<std::int64_t>(2 * 3 * 1001), {2, 3, 1001}) ==
        "[[[   0    1    2 ...  998  999 1000]\n"
        "  [1001 1002 1003 ... 1999 2000 2001]\n"
        "  [2002 2003 2004 ... 3000 3001 3002]]\n"
        "\n"
        " [[3003 3004 3005 ... 4001 4002 4003]\n"
        "  [4004 4005 4006 ... 5002 5003 5004]\n"
        "  [5005 5006 5007 ... 6003 6004 6005]]]");
}

TEST_CASE("lines longer than 75 characters wrap under the first element", "[format]") {
  std::vector<double> sevenths(30);
  std::vector<float> sevenths_f32(30);
  for (std::size_t i = 0; i < 30; ++i) {
    sevenths[i] = static_cast<double>(i) / 7.0;
    sevenths_f32[i] = static_cast<float>(i) / 7.0f;
  }
  // str(np.arange(30) / 7)
  CHECK(render(sevenths, {30}) ==
        "[0.         0.14285714 0.28571429 0.42857143 0.57142857 0.71428571\n"
        " 0.85714286 1.         1.14285714 1.28571429 1.42857143 1.57142857\n"
        " 1.71428571 1.85714286 2.         2.14285714 2.28571429 2.42857143\n"
        " 2.57142857 2.71428571 2.85714286 3.         3.14285714 3.28571429\n"
        " 3.42857143 3.57142857 3.71428571 3.85714286 4.         4.14285714]");
  // str(np.arange(30, dtype=np.float32) / np.float32(7))
  CHECK(render(sevenths_f32, {30}) ==
        "[0.         0.14285715 0.2857143  0.42857143 0.5714286  0.71428573\n"
        " 0.85714287 1.         1.1428572  1.2857143  1.4285715  1.5714285\n"
        " 1.7142857  1.8571428  2.         2.142857   2.2857144  2.4285715\n"
        " 2.5714285  2.7142856  2.857143   3.         3.142857   3.2857144\n"
        " 3.4285715  3.5714285  3.7142856  3.857143   4.         4.142857  ]");
}

TEST_CASE("rows of a 2-D array wrap with the nested indent", "[format]") {
  std::vector<std::int64_t> thousands = arange<std::int64_t>(40);
  for (auto& x : thousands) x *= 1000;
  // str(np.arange(40, dtype=np.int64).reshape(2, 20) * 1000)
  CHECK(render(thousands, {2, 20}) ==
        "[[    0  1000  2000  3000  4000  5000  6000  7000  8000  9000 10000 11000\n"
        "  12000 13000 14000 15000 16000 17000 18000 19000]\n"
        " [20000 21000 22000 23000 24000 25000 26000 27000 28000 29000 30000 31000\n"
        "  32000 33000 34000 35000 36000 37000 38000 39000]]");
}

TEST_CASE("indent shifts continuation lines and counts toward the line width", "[format]") {
  std::vector<double> sevenths(30);
  for (std::size_t i = 0; i < 30; ++i) sevenths[i] = static_cast<double>(i) / 7.0;
  // np.array2string(np.arange(30) / 7, prefix='tf.Tensor(')
  CHECK(render(sevenths, {30}, 10) ==
        "[0.         0.14285714 0.28571429 0.42857143 0.57142857\n"
        "           0.71428571 0.85714286 1.         1.14285714 1.28571429\n"
        "           1.42857143 1.57142857 1.71428571 1.85714286 2.\n"
        "           2.14285714 2.28571429 2.42857143 2.57142857 2.71428571\n"
        "           2.85714286 3.         3.14285714 3.28571429 3.42857143\n"
        "           3.57142857 3.71428571 3.85714286 4.         4.14285714]");
  // np.array2string(np.arange(6, dtype=np.int32).reshape(2, 3), prefix='tf.Tensor(')
  CHECK(render(arange<std::int32_t>(6), {2, 3}, 10) ==
        "[[0 1 2]\n"
        "           [3 4 5]]");
}
