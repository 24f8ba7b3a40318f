// fg::matmul: values against numpy for every operand layout and transpose flag, integer
// products, errors, empty operands, gradients against central differences, second derivatives.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <vector>

namespace {
using namespace fg_test;
dtensor iota(std::initializer_list<long> dims, double start = 0) {
  long n = 1;
  for (long d : dims) n *= d;
  return fg::reshape(fg::range<double>(start, start + static_cast<double>(n)), dims);
}

const dtensor A = {{1., 2., 3.}, {4., 5., 6.}};
const dtensor B = {{7., 8.}, {9., 10.}, {11., 12.}};
const dtensor C = {{1., -1., 2.}, {0., 3., 1.}};
}  // namespace

TEST_CASE("seed example: matmul of [[2]] with itself prints [[4.]]", "[linalg][matmul]") {
  fg::tensor<float> x = {{2.f}};
  std::ostringstream os;
  os << fg::matmul(x, x);
  CHECK(os.str() == "tensor([[4.]], shape=(1, 1), dtype=float32)");
}

TEST_CASE("matmul of matrices matches numpy for every transpose flag, in float and double", "[linalg][matmul]") {
  using v = std::vector<double>;
  check_values(fg::matmul(A, B), {2, 2}, v{58, 64, 139, 154});                    // A @ B
  check_values(fg::matmul(A, C, false, true), {2, 2}, v{5, 9, 11, 21});           // A @ C.T
  check_values(fg::matmul(A, C, true, false), {3, 3}, v{1, 11, 6, 2, 13, 9, 3, 15, 12});  // A.T @ C
  check_values(fg::matmul(A, B, true, true), {3, 3}, v{39, 49, 59, 54, 68, 82, 69, 87, 105});  // A.T @ B.T
  check_values(fg::matmul(fg::cast<float>(A), fg::cast<float>(B)), {2, 2}, std::vector<float>{58, 64, 139, 154});
  check_values(fg::matmul(A * 1.0, B), {2, 2}, v{58, 64, 139, 154});
}

TEST_CASE("matmul of integer matrices uses exact integer arithmetic", "[linalg][matmul]") {
  const fg::tensor<std::int32_t> a = {{1, 2}, {3, 4}}, b = {{5, 6}, {7, 8}};
  // np.array([[1, 2], [3, 4]]) @ np.array([[5, 6], [7, 8]])
  check_values(fg::matmul(a, b), {2, 2}, std::vector<std::int32_t>{19, 22, 43, 50});
  // np.array([[1, 2], [3, 4]]).T @ np.array([[5, 6], [7, 8]]).T
  check_values(fg::matmul(a, b, true, true), {2, 2}, std::vector<std::int32_t>{23, 31, 34, 46});
  const fg::tensor<std::int64_t> c = {{3000000000LL}}, d = {{3}};
  check_values(fg::matmul(c, d), {1, 1}, std::vector<std::int64_t>{9000000000LL});
  check_values(fg::matmul(fg::tensor<std::int64_t>{1, 2}, fg::tensor<std::int64_t>{{1, 0}, {0, 1}}), {2},
               std::vector<std::int64_t>{1, 2});
}

TEST_CASE("matmul multiplies batches, and a single matrix against each batch element", "[linalg][matmul]") {
  using v = std::vector<double>;
  const dtensor x = iota({2, 2, 3}), y = iota({2, 3, 2}, 12);
  // np.arange(12.).reshape(2, 2, 3) @ np.arange(12., 24.).reshape(2, 3, 2)
  check_values(fg::matmul(x, y), {2, 2, 2}, v{46, 49, 172, 184, 424, 445, 604, 634});
  // np.arange(12.).reshape(2, 2, 3) @ B
  check_values(fg::matmul(x, B), {2, 2, 2}, v{31, 34, 112, 124, 193, 214, 274, 304});
  // np.array([[1., 0.], [2., -1.]]) @ np.arange(12.).reshape(2, 2, 3)
  check_values(fg::matmul(dtensor{{1., 0.}, {2., -1.}}, x), {2, 2, 3}, v{0, 1, 2, -3, -2, -1, 6, 7, 8, 3, 4, 5});
  // np.arange(24.).reshape(2, 2, 2, 3) @ np.arange(24.).reshape(2, 2, 3, 2)
  check_values(fg::matmul(iota({2, 2, 2, 3}), iota({2, 2, 3, 2})), {2, 2, 2, 2},
               v{10, 13, 28, 40, 172, 193, 244, 274, 550, 589, 676, 724, 1144, 1201, 1324, 1390});
  // np.arange(24.).reshape(2, 2, 2, 3) @ B
  check_values(fg::matmul(iota({2, 2, 2, 3}), B), {2, 2, 2, 2},
               v{31, 34, 112, 124, 193, 214, 274, 304, 355, 394, 436, 484, 517, 574, 598, 664});
  // the batched product with transposed operands equals the product of the transposes
  check_values(fg::matmul(fg::transpose(x, {0, 2, 1}), fg::transpose(y, {0, 2, 1}), true, true), {2, 2, 2},
               v{46, 49, 172, 184, 424, 445, 604, 634});
}

TEST_CASE("matmul with a vector gives a vector, and two vectors give a scalar", "[linalg][matmul]") {
  check_values(fg::matmul(A, dtensor{1., -1., 2.}), {2}, std::vector<double>{5, 11});     // A @ [1, -1, 2]
  check_values(fg::matmul(dtensor{1., -1.}, A), {3}, std::vector<double>{-3, -3, -3});    // [1, -1] @ A
  check_values(fg::matmul(C, dtensor{1., 2.}, true), {3}, std::vector<double>{1, 5, 4});  // C.T @ [1, 2]
  check_values(fg::matmul(dtensor{1., 2., 3.}, dtensor{4., 5., 6.}), {}, std::vector<double>{32});
  check_values(fg::matmul(iota({2, 2, 3}), dtensor{1., 0., -1.}), {2, 2}, std::vector<double>{-2, -2, -2, -2});
}

TEST_CASE("matmul of empty operands gives empty results or zeros", "[linalg][matmul]") {
  CHECK(fg::matmul(fg::zeros<double>({0, 3}), B).shape() == fg::shape{0, 2});
  check_values(fg::matmul(fg::zeros<double>({2, 0}), fg::zeros<double>({0, 3})), {2, 3}, std::vector<double>(6, 0.0));
  check_values(fg::matmul(fg::zeros<float>({2, 0}), fg::zeros<float>({0, 1})), {2, 1}, std::vector<float>{0, 0});
  check_values(fg::matmul(fg::zeros<std::int32_t>({1, 0}), fg::zeros<std::int32_t>({0, 2})), {1, 2},
               std::vector<std::int32_t>{0, 0});
  CHECK(fg::matmul(fg::zeros<double>({0, 2, 3}), B).shape() == fg::shape{0, 2, 2});
}

TEST_CASE("matmul names itself and both shapes when the operands do not fit", "[linalg][matmul][errors]") {
  CHECK_THROWS_AS(fg::matmul(A, fg::zeros<double>({4, 5})), fg::shape_error);
  CHECK_THROWS_WITH(fg::matmul(A, fg::zeros<double>({4, 5})),
                    Catch::Contains("fg::matmul") && Catch::Contains("(2, 3)") && Catch::Contains("(4, 5)") &&
                        Catch::Contains("3 vs 4"));
  CHECK_THROWS_WITH(fg::matmul(A, B, false, true), Catch::Contains("(2, 3)") && Catch::Contains("(3, 2)") &&
                                                       Catch::Contains("transpose_b"));
  CHECK_THROWS_WITH(fg::matmul(A, dtensor{1., 2.}), Catch::Contains("(2, 3)") && Catch::Contains("(2,)"));
  CHECK_THROWS_AS(fg::matmul(iota({2, 2, 3}), iota({3, 3, 2})), fg::shape_error);
  CHECK_THROWS_WITH(fg::matmul(iota({2, 2, 3}), iota({3, 3, 2})),
                    Catch::Contains("batch dimensions") && Catch::Contains("(2, 2, 3)") && Catch::Contains("(3, 3, 2)"));
  CHECK_THROWS_AS(fg::matmul(dtensor(2.0), A), fg::shape_error);
  CHECK_THROWS_WITH(fg::matmul(dtensor(2.0), A), Catch::Contains("rank >= 1") && Catch::Contains("()"));
  CHECK_THROWS_AS(fg::matmul(dtensor{1., 2.}, A, true), fg::shape_error);
  CHECK_THROWS_WITH(fg::matmul(dtensor{1., 2.}, A, true), Catch::Contains("vector"));
}

TEST_CASE("matmul's gradients match finite differences for every transpose flag", "[linalg][gradient]") {
  std::mt19937 rng(51);
  const dtensor a = random_tensor({2, 3}, rng), b = random_tensor({3, 4}, rng);
  const dtensor at = random_tensor({3, 2}, rng), bt = random_tensor({4, 3}, rng);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); }, {a, b}, 1);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], true, false); }, {at, b}, 2);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], false, true); }, {a, bt}, 3);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], true, true); }, {at, bt}, 4);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[0] * v[1]); },
                     {random_tensor({3, 3}, rng), random_tensor({3, 3}, rng)}, 5);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({2, 0}, rng), random_tensor({0, 3}, rng)}, 6);
}

TEST_CASE("batched and broadcast matmul gradients match finite differences", "[linalg][gradient]") {
  std::mt19937 rng(52);
  const dtensor x = random_tensor({2, 2, 3}, rng), y = random_tensor({2, 3, 4}, rng), m = random_tensor({3, 4}, rng);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); }, {x, y}, 7);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], true, true); },
                     {random_tensor({2, 3, 2}, rng), random_tensor({2, 4, 3}, rng)}, 8);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); }, {x, m}, 9);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], false, true); },
                     {x, random_tensor({4, 3}, rng)}, 10);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({4, 2}, rng), random_tensor({2, 2, 3}, rng)}, 11);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], true, false); },
                     {random_tensor({2, 4}, rng), random_tensor({2, 2, 3}, rng)}, 12);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({2, 2, 2, 3}, rng), m}, 13);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({2, 2, 2, 3}, rng), random_tensor({2, 2, 3, 2}, rng)}, 14);
}

TEST_CASE("matmul gradients with vector operands match finite differences", "[linalg][gradient]") {
  std::mt19937 rng(53);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({2, 3}, rng), random_tensor({3}, rng)}, 15);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({2}, rng), random_tensor({2, 3}, rng)}, 16);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1]); },
                     {random_tensor({3}, rng), random_tensor({3}, rng)}, 17);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::matmul(v[0], v[1], false, true); },
                     {random_tensor({2}, rng), random_tensor({3, 2}, rng)}, 18);
}

TEST_CASE("second derivative of sum(matmul(x, x)) from a persistent tape matches the hand-derived Hessian",
          "[linalg][higher_order]") {
  // f = sum(X X) has df/dX[a, b] = sum_l X[b, l] + sum_i X[i, a], so the Hessian-vector product
  // d/dX sum(V * df/dX) at [c, d] is sum_a V[a, c] + sum_b V[d, b].
  std::mt19937 rng(61);
  const std::size_t n = 3;
  const dtensor x = random_tensor({n, n}, rng), v = random_tensor({n, n}, rng);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const dtensor y = fg::matmul(x, x);
  const dtensor g = tape.gradient(y, x);
  const dtensor hv = tape.gradient(g, x, v);
  REQUIRE(hv.shape() == x.shape());
  for (std::size_t c = 0; c < n; ++c)
    for (std::size_t d = 0; d < n; ++d) {
      double ref = 0;
      for (std::size_t k = 0; k < n; ++k) ref += v.data()[k * n + c] + v.data()[d * n + k];
      CHECK(hv.data()[c * n + d] == Approx(ref).epsilon(1e-12));
    }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      double ref = 0;
      for (std::size_t k = 0; k < n; ++k) ref += x.data()[b * n + k] + x.data()[k * n + a];
      CHECK(g.data()[a * n + b] == Approx(ref).epsilon(1e-12));
    }
}

TEST_CASE("the mixed second derivative of a broadcast batched matmul sums over the batch",
          "[linalg][higher_order]") {
  // f = sum(W * matmul(A, B)) with A (2, 3) and B (4, 3, 2): df/dB[b] = A^T W[b], and
  // d/dA sum(V * df/dB) at [i, j] = sum_b sum_k W[b, i, k] V[b, j, k].
  std::mt19937 rng(62);
  const dtensor a = random_tensor({2, 3}, rng), b = random_tensor({4, 3, 2}, rng);
  const dtensor w = random_tensor({4, 2, 2}, rng), v = random_tensor({4, 3, 2}, rng);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(a);
  tape.watch(b);
  const dtensor gb = tape.gradient(fg::sum(w * fg::matmul(a, b)), b);
  const dtensor ga = tape.gradient(gb, a, v);
  REQUIRE(ga.shape() == a.shape());
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      double ref = 0;
      for (std::size_t bb = 0; bb < 4; ++bb)
        for (std::size_t k = 0; k < 2; ++k) ref += w.data()[bb * 4 + i * 2 + k] * v.data()[bb * 6 + j * 2 + k];
      CHECK(ga.data()[i * 3 + j] == Approx(ref).epsilon(1e-12));
    }
}

TEST_CASE("matmul takes a variable, and a tape that watches accessed variables differentiates it",
          "[linalg][gradient]") {
  // d sum(V B) / dV = ones(2, 2) B^T: row sums of B, [15, 19, 23], in every row.
  fg::variable<double> v(A);
  fg::gradient_tape tape;
  const dtensor y = fg::sum(fg::matmul(v, B));
  check_values(tape.gradient(y, v), {2, 3}, std::vector<double>{15, 19, 23, 15, 19, 23});
}

TEST_CASE("matmul rejects an undefined operand with a value_error", "[linalg][errors]") {
  CHECK_THROWS_AS(fg::matmul(A, dtensor()), fg::value_error);
  CHECK_THROWS_WITH(fg::matmul(dtensor(), A), Catch::Contains("fg::matmul") && Catch::Contains("undefined"));
}

TEST_CASE("integer matmul wraps around as two's complement", "[linalg][integer]") {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  constexpr i32 imax = std::numeric_limits<i32>::max(), imin = std::numeric_limits<i32>::min();
  const fg::tensor<i32> a = {{imax, 1}, {65536, 0}};
  const fg::tensor<i32> b = {{1, 2}, {1, 0}};
  // [[imax + 1, 2 imax], [65536, 131072]]
  CHECK(values(fg::matmul(a, b)) == std::vector<i32>{imin, -2, 65536, 131072});
  CHECK(values(fg::matmul(fg::tensor<i32>{{65536}}, fg::tensor<i32>{{65536}})) == std::vector<i32>{0});
  // a^T b^T = [[imax, 65536], [1, 0]] [[1, 1], [2, 0]]: the transposed loops wrap too.
  CHECK(values(fg::matmul(a, b, true, true)) == std::vector<i32>{imin + 131071, imax, 1, 1});
  constexpr i64 lmax = std::numeric_limits<i64>::max(), lmin = std::numeric_limits<i64>::min();
  CHECK(values(fg::matmul(fg::tensor<i64>{{lmax, i64{1}}}, fg::tensor<i64>{{1}, {1}})) == std::vector<i64>{lmin});
}
