// Shape ops: transpose, expand_dims, squeeze, broadcast_to, concat, stack, tile; values against
// numpy, every error path, empty and rank-0 tensors, gradients against central differences.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

namespace {
using namespace fg_test;
fg::tensor<std::int32_t> iota(std::initializer_list<long> dims) {
  long n = 1;
  for (long d : dims) n *= d;
  return fg::reshape(fg::range<std::int32_t>(static_cast<std::int32_t>(n)), dims);
}

// A boundary op written only as rules (Note [boundary ops]): a vector's elements in reverse
// order; its gradient reverses g through the same runner.
struct reverse_rule {
  static constexpr const char* name = "reverse";
  fg::shape shape(const fg::shape& s) {
    FG_CHECK(s.rank() == 1, fg::shape_error, "fg::reverse: needs a vector, got shape ", s);
    return s;
  }
  template <class T>
  void host(T* out, const fg::tensor<T>& x) const { std::reverse_copy(x.data(), x.data() + x.size(), out); }
  template <class T>
  std::array<fg::tensor<T>, 1> backward(const fg::tensor<T>& g, std::span<const bool>) const {
    return {fusegrad::ops::run_boundary<T>(reverse_rule{}, g)};
  }
};
template <class X>
auto reverse(const X& x) { return fusegrad::ops::run_boundary<fg::value_type_of<X>>(reverse_rule{}, x); }

}  // namespace

TEST_CASE("transpose reverses the axes of a matrix and of a rank-3 tensor", "[shape_ops][transpose]") {
  check_values(fg::transpose(iota({2, 3})), {3, 2}, std::vector<std::int32_t>{0, 3, 1, 4, 2, 5});
  // np.transpose(np.arange(24).reshape(2, 3, 4)).flatten()
  check_values(fg::transpose(iota({2, 3, 4})), {4, 3, 2},
               std::vector<std::int32_t>{0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23});
}

TEST_CASE("transpose with a permutation matches numpy, negative axes included, and permute is its alias",
          "[shape_ops][transpose]") {
  // np.transpose(np.arange(24).reshape(2, 3, 4), (1, 2, 0)).flatten()
  const std::vector<std::int32_t> ref{0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23};
  check_values(fg::transpose(iota({2, 3, 4}), {1, 2, 0}), {3, 4, 2}, ref);
  check_values(fg::transpose(iota({2, 3, 4}), {-2, -1, 0}), {3, 4, 2}, ref);
  check_values(fg::permute(iota({2, 3, 4}), {1, 2, 0}), {3, 4, 2}, ref);
  check_values(fg::transpose(iota({2, 3}), {0, 1}), {2, 3}, std::vector<std::int32_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("transpose takes expressions, scalars and empty tensors", "[shape_ops][transpose]") {
  fg::tensor<float> x = {{1.f, 2.f}, {3.f, 4.f}};
  check_values(fg::transpose(x * 2.f), {2, 2}, std::vector<float>{2, 6, 4, 8});
  check_values(fg::transpose(fg::tensor<float>(5.f)), {}, std::vector<float>{5});
  CHECK(fg::transpose(fg::zeros<float>({0, 3})).shape() == fg::shape{3, 0});
}

TEST_CASE("transpose rejects a wrong-length, repeated or out-of-range permutation", "[shape_ops][transpose][errors]") {
  const auto x = iota({2, 3, 4});
  CHECK_THROWS_AS(fg::transpose(x, {1, 0}), fg::shape_error);
  CHECK_THROWS_WITH(fg::transpose(x, {1, 0}), Catch::Contains("fg::transpose") && Catch::Contains("(2, 3, 4)") &&
                                                  Catch::Contains("one entry per axis"));
  CHECK_THROWS_AS(fg::transpose(x, {0, 0, 1}), fg::shape_error);
  CHECK_THROWS_WITH(fg::transpose(x, {0, 0, 1}), Catch::Contains("twice") && Catch::Contains("[0, 0, 1]"));
  CHECK_THROWS_AS(fg::transpose(x, {0, 1, 3}), fg::index_error);
  CHECK_THROWS_WITH(fg::transpose(x, {0, 1, 3}), Catch::Contains("axis 3"));
}

TEST_CASE("expand_dims inserts a size-1 axis at positive and negative positions", "[shape_ops][expand_dims]") {
  const auto x = iota({2, 3});
  const std::vector<std::int32_t> v{0, 1, 2, 3, 4, 5};
  check_values(fg::expand_dims(x, 0), {1, 2, 3}, v);
  check_values(fg::expand_dims(x, 1), {2, 1, 3}, v);
  check_values(fg::expand_dims(x, 2), {2, 3, 1}, v);
  check_values(fg::expand_dims(x, -1), {2, 3, 1}, v);
  check_values(fg::expand_dims(x, -3), {1, 2, 3}, v);
  check_values(fg::expand_dims(fg::tensor<float>(7.f), 0), {1}, std::vector<float>{7});
  CHECK(fg::expand_dims(fg::zeros<float>({0}), 1).shape() == fg::shape{0, 1});
  CHECK_THROWS_AS(fg::expand_dims(x, 3), fg::index_error);
  CHECK_THROWS_WITH(fg::expand_dims(x, 3), Catch::Contains("fg::expand_dims: axis 3") && Catch::Contains("(2, 3)") &&
                                               Catch::Contains("-3 to 2"));
  CHECK_THROWS_AS(fg::expand_dims(x, -4), fg::index_error);
}

TEST_CASE("squeeze drops all size-1 axes or the listed ones", "[shape_ops][squeeze]") {
  const auto x = iota({1, 2, 1, 3});
  const std::vector<std::int32_t> v{0, 1, 2, 3, 4, 5};
  check_values(fg::squeeze(x), {2, 3}, v);
  check_values(fg::squeeze(x, 0), {2, 1, 3}, v);
  check_values(fg::squeeze(x, {0, -2}), {2, 3}, v);
  check_values(fg::squeeze(fg::tensor<float>(1.f)), {}, std::vector<float>{1});
  check_values(fg::squeeze(fg::zeros<float>({1, 1})), {}, std::vector<float>{0});
  CHECK(fg::squeeze(fg::zeros<float>({0, 1})).shape() == fg::shape{0});
}

TEST_CASE("squeeze rejects an axis whose size is not 1, a repeated axis and an axis out of range",
          "[shape_ops][squeeze][errors]") {
  const auto x = iota({1, 2, 1, 3});
  CHECK_THROWS_AS(fg::squeeze(x, 1), fg::shape_error);
  CHECK_THROWS_WITH(fg::squeeze(x, 1), Catch::Contains("fg::squeeze: cannot squeeze axis 1") &&
                                           Catch::Contains("(1, 2, 1, 3)") && Catch::Contains("size is 2, not 1"));
  CHECK_THROWS_WITH(fg::squeeze(x, {0, 0}), Catch::Contains("listed twice"));
  CHECK_THROWS_AS(fg::squeeze(x, 4), fg::index_error);
}

TEST_CASE("broadcast_to follows numpy's rules", "[shape_ops][broadcast_to]") {
  check_values(fg::broadcast_to(fg::tensor<std::int32_t>{1, 2, 3}, {2, 3}), {2, 3},
               std::vector<std::int32_t>{1, 2, 3, 1, 2, 3});
  // np.broadcast_to(np.array([[1.], [2.], [3.]]), (2, 3, 4)).flatten()
  check_values(fg::broadcast_to(fg::tensor<double>{{1.}, {2.}, {3.}}, {2, 3, 4}), {2, 3, 4},
               std::vector<double>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  check_values(fg::broadcast_to(fg::tensor<float>(2.f), {2, 2}), {2, 2}, std::vector<float>{2, 2, 2, 2});
  check_values(fg::broadcast_to(fg::tensor<float>{1.f, 2.f}, {2}), {2}, std::vector<float>{1, 2});
  CHECK(fg::broadcast_to(fg::zeros<float>({0, 1}), {0, 4}).shape() == fg::shape{0, 4});
  CHECK(fg::broadcast_to(fg::zeros<float>({1, 3}), {0, 3}).shape() == fg::shape{0, 3});
}

TEST_CASE("broadcast_to names both shapes when they do not broadcast", "[shape_ops][broadcast_to][errors]") {
  const auto x = iota({2, 3});
  CHECK_THROWS_AS(fg::broadcast_to(x, {3, 3}), fg::shape_error);
  CHECK_THROWS_WITH(fg::broadcast_to(x, {3, 3}),
                    Catch::Contains("fg::broadcast_to") && Catch::Contains("(2, 3)") && Catch::Contains("(3, 3)"));
  CHECK_THROWS_WITH(fg::broadcast_to(x, {3}), Catch::Contains("(2, 3)") && Catch::Contains("(3,)") &&
                                                  Catch::Contains("fewer dimensions"));
}

TEST_CASE("concat joins along an axis, negative axes and expressions included", "[shape_ops][concat]") {
  const fg::tensor<std::int32_t> a = {{1, 2}, {3, 4}}, b = {{5}, {6}};
  // np.concatenate([a, b], 1)
  check_values(fg::concat({a, b}, 1), {2, 3}, std::vector<std::int32_t>{1, 2, 5, 3, 4, 6});
  check_values(fg::concat({a, b}, -1), {2, 3}, std::vector<std::int32_t>{1, 2, 5, 3, 4, 6});
  // np.concatenate([np.arange(3).reshape(1, 3), np.arange(3, 9).reshape(2, 3)], 0)
  check_values(fg::concat<std::int32_t>({iota({1, 3}), iota({2, 3}) + 3}, 0), {3, 3},
               std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  // np.concatenate([np.arange(12).reshape(2, 3, 2), np.arange(12, 24).reshape(2, 3, 2)], 1).flatten()
  check_values(fg::concat(std::vector{iota({2, 3, 2}), fg::tensor<std::int32_t>(iota({2, 3, 2}) + 12)}, 1), {2, 6, 2},
               std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23});
  check_values(fg::concat({a}, 0), {2, 2}, std::vector<std::int32_t>{1, 2, 3, 4});
}

TEST_CASE("concat handles empty pieces", "[shape_ops][concat]") {
  const fg::tensor<float> a = {{1.f, 2.f}, {3.f, 4.f}};
  check_values(fg::concat({fg::zeros<float>({2, 0}), a}, 1), {2, 2}, std::vector<float>{1, 2, 3, 4});
  CHECK(fg::concat({fg::zeros<float>({0, 3}), fg::zeros<float>({0, 3})}, 0).shape() == fg::shape{0, 3});
}

TEST_CASE("concat rejects an empty list, scalars, mixed ranks, mismatched dimensions and a bad axis",
          "[shape_ops][concat][errors]") {
  const auto x = iota({2, 3});
  CHECK_THROWS_AS(fg::concat(std::vector<fg::tensor<float>>{}, 0), fg::value_error);
  CHECK_THROWS_WITH(fg::concat(std::vector<fg::tensor<float>>{}, 0), Catch::Contains("at least one tensor"));
  CHECK_THROWS_AS(fg::concat({fg::tensor<float>(1.f), fg::tensor<float>(2.f)}, 0), fg::shape_error);
  CHECK_THROWS_WITH(fg::concat({fg::tensor<float>(1.f)}, 0), Catch::Contains("fg::stack"));
  CHECK_THROWS_AS(fg::concat({x, iota({6})}, 0), fg::shape_error);
  CHECK_THROWS_WITH(fg::concat({x, iota({6})}, 0), Catch::Contains("tensor 1 has shape (6,)") && Catch::Contains("same rank"));
  CHECK_THROWS_AS(fg::concat({x, iota({2, 4})}, 0), fg::shape_error);
  CHECK_THROWS_WITH(fg::concat({x, iota({2, 4})}, 0), Catch::Contains("fg::concat: tensor 1 has shape (2, 4)") &&
                                                          Catch::Contains("tensor 0 has shape (2, 3)"));
  CHECK_THROWS_AS(fg::concat({x, x}, 2), fg::index_error);
}

TEST_CASE("stack adds a new axis, at any position, scalars included", "[shape_ops][stack]") {
  const fg::tensor<std::int32_t> a = {1, 2}, b = {3, 4};
  check_values(fg::stack({a, b}, 0), {2, 2}, std::vector<std::int32_t>{1, 2, 3, 4});
  // np.stack([[1, 2], [3, 4]], 1)
  check_values(fg::stack({a, b}, 1), {2, 2}, std::vector<std::int32_t>{1, 3, 2, 4});
  // np.stack([np.arange(12).reshape(2, 3, 2), np.arange(12, 24).reshape(2, 3, 2)], -1).flatten()
  check_values(fg::stack(std::vector{iota({2, 3, 2}), fg::tensor<std::int32_t>(iota({2, 3, 2}) + 12)}, -1), {2, 3, 2, 2},
               std::vector<std::int32_t>{0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23});
  check_values(fg::stack({fg::tensor<float>(1.f), fg::tensor<float>(2.f), fg::tensor<float>(3.f)}, 0), {3},
               std::vector<float>{1, 2, 3});
  CHECK(fg::stack({fg::zeros<float>({0}), fg::zeros<float>({0})}, 1).shape() == fg::shape{0, 2});
}

TEST_CASE("stack rejects an empty list, unequal shapes and a bad axis", "[shape_ops][stack][errors]") {
  const fg::tensor<float> a = {1.f, 2.f}, b = {1.f, 2.f, 3.f};
  CHECK_THROWS_AS(fg::stack(std::vector<fg::tensor<float>>{}, 0), fg::value_error);
  CHECK_THROWS_AS(fg::stack({a, b}, 0), fg::shape_error);
  CHECK_THROWS_WITH(fg::stack({a, b}, 0), Catch::Contains("fg::stack: tensor 1 has shape (3,)") &&
                                              Catch::Contains("tensor 0 has shape (2,)"));
  CHECK_THROWS_AS(fg::stack({a, a}, 2), fg::index_error);
  CHECK_THROWS_WITH(fg::stack({a, a}, -3), Catch::Contains("axis -3") && Catch::Contains("-2 to 1"));
}

TEST_CASE("tile repeats a tensor along each axis like np.tile", "[shape_ops][tile]") {
  // np.tile(np.array([[1, 2], [3, 4]]), (2, 3))
  check_values(fg::tile(fg::tensor<std::int32_t>{{1, 2}, {3, 4}}, {2, 3}), {4, 6},
               std::vector<std::int32_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  check_values(fg::tile(iota({3}), {2}), {6}, std::vector<std::int32_t>{0, 1, 2, 0, 1, 2});
  check_values(fg::tile(iota({2, 1}), {1, 3}), {2, 3}, std::vector<std::int32_t>{0, 0, 0, 1, 1, 1});
  CHECK(fg::tile(iota({2, 3}), {0, 2}).shape() == fg::shape{0, 6});
  check_values(fg::tile(fg::tensor<float>(4.f), {}), {}, std::vector<float>{4});
}

TEST_CASE("tile rejects a wrong number of multiples and negative ones", "[shape_ops][tile][errors]") {
  const auto x = iota({2, 3});
  CHECK_THROWS_AS(fg::tile(x, {2}), fg::shape_error);
  CHECK_THROWS_WITH(fg::tile(x, {2}), Catch::Contains("fg::tile") && Catch::Contains("(2, 3)") &&
                                          Catch::Contains("one per axis"));
  CHECK_THROWS_AS(fg::tile(x, {1, -1}), fg::value_error);
  CHECK_THROWS_WITH(fg::tile(x, {1, -1}), Catch::Contains("negative"));
}

TEST_CASE("gradients of transpose, expand_dims and squeeze match finite differences", "[shape_ops][gradient]") {
  std::mt19937 rng(11);
  const dtensor x = random_tensor({2, 3, 4}, rng);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::transpose(v[0]); }, {x}, 1);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::transpose(v[0], {1, 2, 0}); }, {x}, 2);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::transpose(v[0] * v[0], {0, 2, 1}); }, {x}, 3);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::expand_dims(v[0], 1); }, {x}, 4);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::squeeze(v[0]); }, {random_tensor({1, 3, 1}, rng)}, 5);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::transpose(v[0]); }, {random_tensor({0, 2}, rng)}, 6);
}

TEST_CASE("gradients of broadcast_to and tile sum over the copies, matching finite differences",
          "[shape_ops][gradient]") {
  std::mt19937 rng(12);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::broadcast_to(v[0], {2, 3, 4}); },
                     {random_tensor({3, 1}, rng)}, 7);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::broadcast_to(v[0], {4}); },
                     {random_tensor({}, rng)}, 8);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::tile(v[0], {2, 1, 3}); },
                     {random_tensor({2, 3, 2}, rng)}, 9);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::tile(v[0], {0, 2}); }, {random_tensor({2, 2}, rng)}, 10);
}

TEST_CASE("gradients of concat and stack split the upstream gradient, matching finite differences",
          "[shape_ops][gradient]") {
  std::mt19937 rng(13);
  const dtensor a = random_tensor({2, 3}, rng), b = random_tensor({2, 1}, rng), c = random_tensor({2, 2}, rng);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::concat(v, 1); }, {a, b, c}, 14);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::concat<double>({v[0], v[0] * v[1]}, 0); },
                     {a, random_tensor({2, 3}, rng)}, 15);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::stack(v, 1); },
                     {a, random_tensor({2, 3}, rng)}, 16);
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::stack(v, 0); },
                     {random_tensor({}, rng), random_tensor({}, rng)}, 17);
}

TEST_CASE("concat's gradient reaches only the inputs a tape watches", "[shape_ops][gradient]") {
  const dtensor a = {1., 2.}, b = {3., 4., 5.};
  fg::gradient_tape tape;
  tape.watch(b);
  const dtensor y = fg::sum(fg::concat({a, b}, 0) * dtensor{1., 2., 3., 4., 5.});
  check_values(tape.gradient(y, b), {3}, std::vector<double>{3, 4, 5});
}

TEST_CASE("second derivatives through transpose, concat and tile match hand-derived Hessian-vector products",
          "[shape_ops][higher_order]") {
  std::mt19937 rng(21);
  const dtensor x = random_tensor({2, 3}, rng), v = random_tensor({2, 3}, rng);
  SECTION("transpose: f = sum(w * t(x)^2) has Hessian-vector product 2 * t^-1(w) * v") {
    const dtensor w = random_tensor({3, 2}, rng);
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    const dtensor t = fg::transpose(x);
    const dtensor g = tape.gradient(fg::sum(w * t * t), x);
    const dtensor hv = tape.gradient(g, x, v);
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        CHECK(hv.data()[i * 3 + j] == Approx(2 * w.data()[j * 2 + i] * v.data()[i * 3 + j]).epsilon(1e-12));
  }
  SECTION("concat({x, x}): f = sum(w * c^2) has Hessian-vector product 2 * (w_top + w_bottom) * v") {
    const dtensor w = random_tensor({4, 3}, rng);
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    const dtensor c = fg::concat({x, x}, 0);
    const dtensor g = tape.gradient(fg::sum(w * c * c), x);
    const dtensor hv = tape.gradient(g, x, v);
    for (std::size_t k = 0; k < 6; ++k)
      CHECK(hv.data()[k] == Approx(2 * (w.data()[k] + w.data()[k + 6]) * v.data()[k]).epsilon(1e-12));
  }
  SECTION("tile(x, {1, 2}): f = sum(w * t^2) has Hessian-vector product 2 * (w_left + w_right) * v") {
    const dtensor w = random_tensor({2, 6}, rng);
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    const dtensor t = fg::tile(x, {1, 2});
    const dtensor g = tape.gradient(fg::sum(w * t * t), x);
    const dtensor hv = tape.gradient(g, x, v);
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        CHECK(hv.data()[i * 3 + j] ==
              Approx(2 * (w.data()[i * 6 + j] + w.data()[i * 6 + j + 3]) * v.data()[i * 3 + j]).epsilon(1e-12));
  }
}

TEST_CASE("shape ops take variables, and a tape that watches accessed variables differentiates them",
          "[shape_ops][gradient]") {
  fg::variable<double> v(dtensor{{1., 2.}, {3., 4.}});
  fg::gradient_tape tape;
  const dtensor y = fg::sum(fg::transpose(v) * dtensor{{1., 2.}, {3., 4.}});
  // d/dv[i, j] = w[j, i]
  check_values(tape.gradient(y, v), {2, 2}, std::vector<double>{1, 3, 2, 4});
}

TEST_CASE("shape ops reject an undefined tensor with a value_error", "[shape_ops][errors]") {
  const fg::tensor<float> u;
  CHECK_THROWS_AS(fg::transpose(u), fg::value_error);
  CHECK_THROWS_WITH(fg::transpose(u), Catch::Contains("fg::transpose") && Catch::Contains("undefined"));
  CHECK_THROWS_WITH(fg::broadcast_to(u, {2}), Catch::Contains("fg::broadcast_to") && Catch::Contains("undefined"));
  CHECK_THROWS_WITH(fg::tile(u, {}), Catch::Contains("fg::tile") && Catch::Contains("undefined"));
  CHECK_THROWS_AS(fg::concat({fg::zeros<float>({1}), u}, 0), fg::value_error);
  CHECK_THROWS_WITH(fg::concat({fg::zeros<float>({1}), u}, 0), Catch::Contains("fg::concat") && Catch::Contains("undefined"));
  CHECK_THROWS_AS(fg::stack({fg::zeros<float>({1}), u}, 0), fg::value_error);
  CHECK_THROWS_WITH(fg::stack({fg::zeros<float>({1}), u}, 0), Catch::Contains("fg::stack") && Catch::Contains("undefined"));
}

TEST_CASE("the boundary-op runner evaluates, checks, runs and records an op given only its rules",
          "[shape_ops][boundary]") {
  const dtensor x = {1., 2., 3.};
  // The operand is an expression: the runner evaluates it first.
  check_values(reverse(x * 2.), {3}, std::vector<double>{6, 4, 2});
  CHECK_THROWS_AS(reverse(dtensor()), fg::value_error);
  CHECK_THROWS_WITH(reverse(dtensor()), Catch::Contains("fg::reverse") && Catch::Contains("undefined"));
  CHECK_THROWS_WITH(reverse(dtensor{{1.}}), Catch::Contains("fg::reverse: needs a vector"));
  fg::gradient_tape tape;
  tape.watch(x);
  const dtensor y = fg::sum(reverse(x) * dtensor{1., 10., 100.});
  check_values(tape.gradient(y, x), {3}, std::vector<double>{100, 10, 1});
}

TEST_CASE("gradients flow through chained boundary ops: transpose of tile, to second order", "[shape_ops][boundary]") {
  // x = [[a, b]] tiled 3 times along axis 0 is [[a, b], [a, b], [a, b]]; transposed, [[a, a, a], [b, b, b]].
  const dtensor x = {{2., 5.}};
  const dtensor w = {{1., 2., 3.}, {4., 5., 6.}};
  fg::gradient_tape outer;
  outer.watch(x);
  fg::gradient_tape inner;
  inner.watch(x);
  const dtensor t = fg::transpose(fg::tile(x, {3, 1}));
  check_values(t, {2, 3}, std::vector<double>{2, 2, 2, 5, 5, 5});
  // y = sum(t * t * w) = a^2 (1 + 2 + 3) + b^2 (4 + 5 + 6): dy/da = 12 a, dy/db = 30 b.
  const dtensor y = fg::sum(t * t * w);
  const dtensor g = inner.gradient(y, x);
  check_values(g, {1, 2}, std::vector<double>{24, 150});
  // d/dx sum(g) = (12, 30).
  check_values(outer.gradient(fg::sum(g), x), {1, 2}, std::vector<double>{12, 30});
}

TEST_CASE("reshape, broadcast_to, tile, concat and broadcasting reject shapes whose element count would wrap around",
          "[shape_ops][errors][sizes]") {
  using Catch::Contains;
  const std::size_t e32 = std::size_t{1} << 32, e62 = std::size_t{1} << 62;
  const fg::tensor<float> a4 = {1.f, 2.f, 3.f, 4.f};
  // 4 * (2^62 + 1) is 4 in 64 bits: the same count as a4's.
  CHECK_THROWS_AS(fg::reshape(a4, fg::shape{e62 + 1, 4}), fg::value_error);
  CHECK_THROWS_WITH(fg::reshape(a4, fg::shape{e62 + 1, 4}), Contains("fg::reshape") && Contains("(4611686018427387905, 4)"));
  CHECK_THROWS_AS(fg::reshape(a4, {1L << 62, 4, -1}), fg::value_error);
  CHECK_THROWS_AS(fg::broadcast_to(fg::tensor<float>{1}, {e32, e32}), fg::value_error);
  CHECK_THROWS_WITH(fg::broadcast_to(fg::tensor<float>{1}, {e32, e32}),
                    Contains("fg::broadcast_to") && Contains("(4294967296, 4294967296)"));
  CHECK_THROWS_AS(fg::tile(a4, {1L << 62}), fg::value_error);
  CHECK_THROWS_WITH(fg::tile(a4, {1L << 62}), Contains("fg::tile") && Contains("(4,)"));
  // Empty tensors whose other dimension is as large as a shape allows: joined, that dimension overflows.
  const fg::tensor<float> wide = fg::zeros<float>({0, static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max())});
  CHECK_THROWS_AS(fg::concat({wide, wide}, 1), fg::value_error);
  CHECK_THROWS_WITH(fg::concat({wide, wide}, 1), Contains("fg::concat"));
  // (0, 2^32, 1) + (0, 1, 2^32) would be (0, 2^32, 2^32).
  const fg::tensor<float> col = fg::zeros<float>({0, e32, 1}), row = fg::zeros<float>({0, 1, e32});
  CHECK_THROWS_AS(col + row, fg::value_error);
  CHECK_THROWS_WITH(col + row, Contains("fg::add") && Contains("(0, 4294967296, 4294967296)"));
  // Shapes that fit are unaffected.
  CHECK(fg::reshape(a4, {2, -1}).shape() == fg::shape{2, 2});
  CHECK(fg::tile(a4, {0}).size() == 0);
  CHECK(fg::tensor<float>(col + fg::zeros<float>({0, 1, 1})).shape() == fg::shape{0, e32, 1});
}
