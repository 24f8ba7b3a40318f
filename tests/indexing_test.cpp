// Indexing and slicing, gather and one_hot: values against numpy, every error path, empty and
// rank-0 tensors, gradients against central differences and hand-derived second derivatives.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace {
using namespace fg_test;
using fg::slice;

fg::tensor<std::int32_t> iota(std::initializer_list<long> dims) {
  long n = 1;
  for (long d : dims) n *= d;
  return fg::reshape(fg::range<std::int32_t>(static_cast<std::int32_t>(n)), dims);
}

}  // namespace

TEST_CASE("slices of a vector follow numpy's bounds, clamping and negative steps", "[indexing][slice]") {
  const auto a = iota({10});
  using v = std::vector<std::int32_t>;
  // Each reference is np.arange(10)[expr] for the expr in the comment.
  check_values(a(slice(2, 8, 3)), {2}, v{2, 5});                       // 2:8:3
  check_values(a(slice::from(-3)), {3}, v{7, 8, 9});                   // -3:
  check_values(a(slice::to(-7)), {3}, v{0, 1, 2});                     // :-7
  check_values(a(slice(8, 2, -2)), {3}, v{8, 6, 4});                   // 8:2:-2
  check_values(a(slice::every(-1)), {10}, v{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});  // ::-1
  check_values(a(slice(-100, 100)), {10}, v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});  // -100:100
  check_values(a(slice(5, 2)), {0}, v{});                              // 5:2
  check_values(a(slice::from(100)), {0}, v{});                         // 100:
  check_values(a(slice::every(-3)), {4}, v{9, 6, 3, 0});               // ::-3
  check_values(a(slice(-1, -100, -1)), {10}, v{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});  // -1:-100:-1
  check_values(a(slice(1, -1, 4)), {2}, v{1, 5});                      // 1:-1:4
  check_values(a(fg::all()), {10}, v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_values(a(slice()), {10}, v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("integer indices drop their dimension and fewer indices than rank keep the rest whole",
          "[indexing]") {
  const auto x = iota({2, 3, 4});
  using v = std::vector<std::int32_t>;
  // np.arange(24).reshape(2, 3, 4)[expr] for the expr in the comment.
  check_values(x(1), {3, 4}, v{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});  // [1]
  check_values(x(-1, 2), {4}, v{20, 21, 22, 23});                                 // [-1, 2]
  check_values(x(1, 2, 3), {}, v{23});                                            // [1, 2, 3]
  check_values(x(std::int64_t{-2}, 0u, std::size_t{1}), {}, v{1});               // [-2, 0, 1]
  check_values(x(slice(0, 2), fg::all(), 1), {2, 3}, v{1, 5, 9, 13, 17, 21});     // [0:2, :, 1]
  check_values(x(fg::all(), slice::every(-1)), {2, 3, 4},                          // [:, ::-1]
               v{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15});
  check_values(x(1, slice::from(1), slice::every(2)), {2, 2}, v{16, 18, 20, 22});  // [1, 1:, ::2]
  check_values(x(fg::all(), -2, 3), {2}, v{7, 19});                                // [:, -2, 3]
  check_values(x(), {2, 3, 4}, std::vector<std::int32_t>(x.data(), x.data() + 24));
}

TEST_CASE("x(i, j) on a matrix is a rank-0 tensor, and indexing takes scalars and empty tensors",
          "[indexing]") {
  const fg::tensor<float> m = {{1.f, 2.f}, {3.f, 4.f}};
  const fg::tensor<float> e = m(1, 0);
  CHECK(e.rank() == 0);
  CHECK(e.item() == 3.f);
  check_values(fg::tensor<float>(5.f)(), {}, std::vector<float>{5});
  const auto z = fg::zeros<float>({0, 3});
  CHECK(z(fg::all(), 1).shape() == fg::shape{0});
  CHECK(z(slice(0, 5)).shape() == fg::shape{0, 3});
  CHECK(fg::zeros<float>({2, 3})(slice(1, 1), 2).shape() == fg::shape{0});
}

TEST_CASE("indexing rejects out-of-range indices, too many indices and a zero step", "[indexing][errors]") {
  const auto x = iota({2, 3});
  CHECK_THROWS_AS(x(0, 3), fg::index_error);
  CHECK_THROWS_WITH(x(0, 3), Catch::Contains("index 3") && Catch::Contains("dimension 1") &&
                                 Catch::Contains("size 3") && Catch::Contains("-3 to 2"));
  CHECK_THROWS_AS(x(-3), fg::index_error);
  CHECK_THROWS_WITH(x(-3), Catch::Contains("index -3") && Catch::Contains("dimension 0") && Catch::Contains("size 2"));
  CHECK_THROWS_AS(x(0, 0, 0), fg::index_error);
  CHECK_THROWS_WITH(x(0, 0, 0), Catch::Contains("3 indices") && Catch::Contains("(2, 3)"));
  CHECK_THROWS_AS(fg::tensor<float>(1.f)(0), fg::index_error);
  CHECK_THROWS_AS(x(slice(0, 2, 0)), fg::value_error);
  CHECK_THROWS_WITH(x(slice(0, 2, 0)), Catch::Contains("step must not be zero"));
}

TEST_CASE("gradients of indexing scatter into zeros of the input's shape, matching finite differences",
          "[indexing][gradient]") {
  std::mt19937 rng(31);
  const dtensor x = random_tensor({3, 4}, rng);
  check_gradients_fd([](const std::vector<dtensor>& v) { return v[0](slice(1, 3), slice::every(-1)); }, {x}, 1);
  check_gradients_fd([](const std::vector<dtensor>& v) { return v[0](1, slice::from(1)); }, {x}, 2);
  check_gradients_fd([](const std::vector<dtensor>& v) { return v[0](-1, 2); }, {x}, 3);
  check_gradients_fd([](const std::vector<dtensor>& v) { return v[0](fg::all(), slice(0, 4, 2)); }, {x}, 4);
  check_gradients_fd([](const std::vector<dtensor>& v) { return v[0](slice(2, 2)); }, {x}, 5);
  fg::gradient_tape tape;
  tape.watch(x);
  const dtensor g = tape.gradient(x(2, 1), x);
  std::vector<double> ref(12, 0.0);
  ref[9] = 1.0;
  check_values(g, {3, 4}, ref);
}

TEST_CASE("second derivative through slicing matches the hand-derived Hessian-vector product",
          "[indexing][higher_order]") {
  // f = sum(w * y^2) with y = x[0:2, ::-1]: (H v)[i, j] = 2 w[i, 3 - j] v[i, j] for i < 2, else 0.
  std::mt19937 rng(32);
  const dtensor x = random_tensor({3, 4}, rng), v = random_tensor({3, 4}, rng), w = random_tensor({2, 4}, rng);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const dtensor y = x(slice(0, 2), slice::every(-1));
  const dtensor g = tape.gradient(fg::sum(w * y * y), x);
  const dtensor hv = tape.gradient(g, x, v);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      const double ref = i < 2 ? 2 * w.data()[i * 4 + 3 - j] * v.data()[i * 4 + j] : 0.0;
      CHECK(hv.data()[i * 4 + j] == Approx(ref).margin(1e-14));
    }
}

TEST_CASE("gather picks slices along an axis with indices of any rank, like np.take", "[indexing][gather]") {
  const dtensor p = fg::reshape(fg::range<double>(12.0), {4, 3});
  // np.arange(12.).reshape(4, 3)[np.array([[0, 2], [3, 0]])].flatten()
  check_values(fg::gather(p, fg::tensor<std::int32_t>{{0, 2}, {3, 0}}), {2, 2, 3},
               std::vector<double>{0, 1, 2, 6, 7, 8, 9, 10, 11, 0, 1, 2});
  // np.take(np.arange(12.).reshape(4, 3), [2, 0, 2], axis=1).flatten()
  check_values(fg::gather(p, fg::tensor<std::int64_t>{2, 0, 2}, 1), {4, 3},
               std::vector<double>{2, 0, 2, 5, 3, 5, 8, 6, 8, 11, 9, 11});
  // np.take(np.arange(24).reshape(2, 3, 4), np.array([[3], [1]]), axis=2).flatten()
  check_values(fg::gather(iota({2, 3, 4}), fg::tensor<std::int64_t>{{3}, {1}}, -1), {2, 3, 2, 1},
               std::vector<std::int32_t>{3, 1, 7, 5, 11, 9, 15, 13, 19, 17, 23, 21});
  check_values(fg::gather(p, fg::tensor<std::int32_t>(1), 0), {3}, std::vector<double>{3, 4, 5});
  CHECK(fg::gather(p, fg::zeros<std::int32_t>({0})).shape() == fg::shape{0, 3});
  check_values(fg::gather(p * 2.0, fg::tensor<std::int32_t>{3}), {1, 3}, std::vector<double>{18, 20, 22});
}

TEST_CASE("gather rejects out-of-range and negative indices, scalar params and a bad axis",
          "[indexing][gather][errors]") {
  const dtensor p = fg::zeros<double>({4, 3});
  CHECK_THROWS_AS(fg::gather(p, fg::tensor<std::int32_t>{0, 4}), fg::index_error);
  CHECK_THROWS_WITH(fg::gather(p, fg::tensor<std::int32_t>{0, 4}),
                    Catch::Contains("fg::gather: index 4") && Catch::Contains("element 1") &&
                        Catch::Contains("(4, 3)") && Catch::Contains("0 to 3"));
  CHECK_THROWS_WITH(fg::gather(p, fg::tensor<std::int64_t>{-1}, 1), Catch::Contains("index -1") && Catch::Contains("0 to 2"));
  CHECK_THROWS_AS(fg::gather(dtensor(1.0), fg::tensor<std::int32_t>{0}), fg::shape_error);
  CHECK_THROWS_AS(fg::gather(p, fg::tensor<std::int32_t>{0}, 2), fg::index_error);
  CHECK_THROWS_AS(fg::gather(fg::zeros<double>({0, 2}), fg::tensor<std::int32_t>{0}), fg::index_error);
}

TEST_CASE("gather's gradient adds up repeated indices and matches finite differences", "[indexing][gather][gradient]") {
  std::mt19937 rng(41);
  const dtensor x = random_tensor({4, 3}, rng);
  {
    fg::gradient_tape tape;
    tape.watch(x);
    const dtensor g = tape.gradient(fg::sum(fg::gather(x, fg::tensor<std::int32_t>{0, 0, 2})), x);
    check_values(g, {4, 3}, std::vector<double>{2, 2, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0});
  }
  const fg::tensor<std::int64_t> idx = {{1, 3, 1}, {0, 1, 2}};
  check_gradients_fd([&](const std::vector<dtensor>& v) { return fg::gather(v[0], idx); }, {x}, 42);
  check_gradients_fd([&](const std::vector<dtensor>& v) { return fg::gather(v[0], idx, 1); },
                     {random_tensor({2, 4, 2}, rng)}, 43);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::gather(v[0], fg::zeros<std::int32_t>({0})); }, {x}, 44);
}

TEST_CASE("second derivative through gather matches the hand-derived Hessian-vector product",
          "[indexing][gather][higher_order]") {
  // f = sum(w * gather(x, idx)^2): (H v)[p, k] = sum over j with idx[j] = p of 2 w[j, k] v[p, k].
  std::mt19937 rng(45);
  const std::vector<std::int32_t> ids{0, 2, 0, 2, 2};
  const fg::tensor<std::int32_t> idx(fg::shape{5}, ids);
  const dtensor x = random_tensor({3, 2}, rng), v = random_tensor({3, 2}, rng), w = random_tensor({5, 2}, rng);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const dtensor y = fg::gather(x, idx);
  const dtensor g = tape.gradient(fg::sum(w * y * y), x);
  const dtensor hv = tape.gradient(g, x, v);
  for (std::size_t p = 0; p < 3; ++p)
    for (std::size_t k = 0; k < 2; ++k) {
      double ref = 0;
      for (std::size_t j = 0; j < ids.size(); ++j)
        if (static_cast<std::size_t>(ids[j]) == p) ref += 2 * w.data()[j * 2 + k] * v.data()[p * 2 + k];
      CHECK(hv.data()[p * 2 + k] == Approx(ref).margin(1e-14));
    }
}

TEST_CASE("one_hot gives float rows with on at the index and all-off rows for indices out of range",
          "[indexing][one_hot]") {
  const auto h = fg::one_hot(fg::tensor<std::int32_t>{0, 2, -1, 3}, 3);
  static_assert(std::is_same_v<decltype(h), const fg::tensor<float>>);
  check_values(h, {4, 3}, std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  check_values(fg::one_hot<double>(fg::tensor<std::int64_t>{{1}, {0}}, 2, 5.0, -1.0), {2, 1, 2},
               std::vector<double>{-1, 5, 5, -1});
  check_values(fg::one_hot<std::int32_t>(fg::tensor<std::int32_t>(1), 3), {3}, std::vector<std::int32_t>{0, 1, 0});
  CHECK(fg::one_hot(fg::tensor<std::int32_t>{0, 1}, 0).shape() == fg::shape{2, 0});
  CHECK(fg::one_hot(fg::zeros<std::int32_t>({0}), 4).shape() == fg::shape{0, 4});
  CHECK_THROWS_AS(fg::one_hot(fg::tensor<std::int32_t>{0}, -1), fg::value_error);
  CHECK_THROWS_WITH(fg::one_hot(fg::tensor<std::int32_t>{0}, -1), Catch::Contains("fg::one_hot: depth"));
}

TEST_CASE("indexing and gather reject an undefined tensor with a value_error", "[indexing][errors]") {
  const fg::tensor<float> u;
  CHECK_THROWS_AS(u(0), fg::value_error);
  CHECK_THROWS_WITH(u(0), Catch::Contains("fg::tensor::operator()") && Catch::Contains("undefined"));
  CHECK_THROWS_WITH(fg::gather(u, fg::tensor<std::int32_t>{0}), Catch::Contains("fg::gather") && Catch::Contains("undefined"));
  CHECK_THROWS_WITH(fg::gather(fg::zeros<float>({2}), fg::tensor<std::int32_t>()), Catch::Contains("fg::gather") &&
                                                                                      Catch::Contains("undefined"));
  CHECK_THROWS_WITH(fg::one_hot(fg::tensor<std::int32_t>(), 2), Catch::Contains("fg::one_hot") && Catch::Contains("undefined"));
}

TEST_CASE("an unsigned index is never negative, and a step of LONG_MIN is defined", "[indexing][errors]") {
  const fg::tensor<int> a = {10, 20, 30, 40};
  // std::size_t(-1) is out of range, not the last element.
  CHECK_THROWS_AS(a(std::size_t(-1)), fg::index_error);
  CHECK_THROWS_WITH(a(std::size_t(-1)), Catch::Contains("out of range for dimension 0 of size 4"));
  CHECK(a(std::size_t{3}).item() == 40);
  // A step of LONG_MIN walks backwards from the end and takes one element, as numpy's a[::-2**63].
  const fg::tensor<int> r = a(fg::slice::every(std::numeric_limits<long>::min()));
  REQUIRE(r.shape() == fg::shape{1});
  CHECK(r.data()[0] == 40);
  const fg::tensor<int> f = a(fg::slice::every(std::numeric_limits<long>::max()));
  REQUIRE(f.shape() == fg::shape{1});
  CHECK(f.data()[0] == 10);
}

TEST_CASE("one_hot with a depth whose result cannot be counted is an error naming one_hot", "[indexing][one_hot][errors][sizes]") {
  using Catch::Contains;
  const fg::tensor<std::int32_t> t = {0, 1, 2, 3};
  // 4 * 2^62 elements wrap to 0.
  CHECK_THROWS_AS(fg::one_hot<float>(t, 1L << 62), fg::value_error);
  CHECK_THROWS_WITH(fg::one_hot<float>(t, 1L << 62), Contains("fg::one_hot") && Contains("(4, 4611686018427387904)"));
  // 2^62 floats: 2^64 bytes wrap to 0.
  CHECK_THROWS_AS(fg::one_hot<float>(fg::tensor<std::int32_t>{0}, 1L << 62), fg::out_of_memory);
  CHECK(fg::one_hot<float>(t, 0).shape() == fg::shape{4, 0});
}
