// Empty tensors whose other dimensions are 2^31 or more (Note [empty results]): every op family,
// forward and gradient, returns its result at once, whatever the other dimensions, as
// TensorFlow does. Each case asserts the result's shape and values (worked out by hand: an empty
// result has no values; a reduction over an empty axis gives the reducer's identity; a product
// over k = 0 gives zeros); the time bound is only a guard against a loop over the outer
// dimensions, which would take seconds to hours.
#include <catch2/catch.hpp>
#include <fusegrad/eager/nn_ops.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
using namespace fg_test;
using ftensor = fg::tensor<float>;

constexpr std::size_t B = std::size_t{1} << 31;  // a dimension past int32's range
constexpr std::size_t H = std::size_t{1} << 40;  // a batch count no loop could walk

/// Runs f() and returns its result, failing when it took 2 s or more (a generous bound, also
/// under sanitizers, for work of microseconds: only a guard against a loop over the non-empty
/// dimensions). A true hang ends the program after 60 s with a message naming the case, rather
/// than running for hours.
template <class F>
auto in_time(const std::string& what, F&& f) {
  struct watchdog {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread t;
    explicit watchdog(const std::string& what) : t([this, what] {
      std::unique_lock lock(m);
      if (!cv.wait_for(lock, std::chrono::seconds(60), [this] { return done; })) {
        std::fprintf(stderr, "empty_shapes_test: '%s' did not return within 60 s\n", what.c_str());
        std::_Exit(1);
      }
    }) {}
    ~watchdog() {
      {
        const std::lock_guard lock(m);
        done = true;
      }
      cv.notify_one();
      t.join();
    }
  };
  const watchdog guard(what);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = f();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(what << " took " << s << " s");
  CHECK(s < 2.0);
  return r;
}

/// The gradient of sum(f(x)) with respect to x, on a fresh tape.
template <class T, class F>
fg::tensor<T> grad_of(const fg::tensor<T>& x, F&& f) {
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<T> y = f(x);
  return tape.gradient(fg::reduce_sum(y), x);
}

/// Requires an empty tensor of shape s.
template <class T>
void check_empty(const fg::tensor<T>& t, const fg::shape& s) {
  REQUIRE(t.defined());
  CHECK(t.shape() == s);
  CHECK(t.size() == 0);
}

/// The empty tensor of shape (2^31, 0, 2^31).
ftensor big_empty() { return fg::zeros<float>({B, 0, B}); }
}  // namespace

TEST_CASE("elementwise ops on empty tensors with 2^31 dimensions return at once, broadcast included",
          "[empty][elementwise]") {
  const ftensor e = big_empty();
  check_empty(in_time("exp", [&] { return ftensor(fg::exp(e)); }), {B, 0, B});
  check_empty(in_time("chain with a scalar", [&] { return ftensor(fg::log1p(e * 2.f) + 1.f); }), {B, 0, B});
  // (2^31, 0, 2^31) broadcasts with (1, 0, 1), (1, 1, 1) and (0, 1): the result is (2^31, 0, 2^31).
  check_empty(in_time("broadcast (1, 0, 1)", [&] { return ftensor(e + fg::zeros<float>({1, 0, 1})); }), {B, 0, B});
  check_empty(in_time("broadcast (1, 1, 1)", [&] { return ftensor(e * fg::ones<float>({1, 1, 1})); }), {B, 0, B});
  check_empty(in_time("broadcast (0, 1)", [&] { return ftensor(fg::maximum(e, fg::zeros<float>({0, 1}))); }),
              {B, 0, B});
  // A small empty operand broadcast against a one of size 2^31 on another axis.
  check_empty(in_time("(1, 0, 1) + (2^31, 1, 1) shape", [&] {
                return ftensor(fg::broadcast_to(fg::zeros<float>({1, 0, 1}), {B, 0, B}) - 3.f);
              }),
              {B, 0, B});
  check_empty(in_time("where", [&] { return ftensor(fg::where(e > 0.f, e, fg::sigmoid(e))); }), {B, 0, B});
  check_empty(in_time("int32", [&] { return fg::tensor<int>(fg::zeros<int>({B, 0, B}) * 3 + 1); }), {B, 0, B});
  check_empty(in_time("bool", [&] { return fg::tensor<bool>(fg::logical_not(e < 1.f)); }), {B, 0, B});

  SECTION("gradients") {
    check_empty(in_time("d exp", [&] { return grad_of(e, [](const ftensor& x) { return ftensor(fg::exp(x) * x); }); }),
                {B, 0, B});
    const ftensor b = fg::zeros<float>({1, 0, 1});
    const ftensor db = in_time("d broadcast operand", [&] {
      fg::gradient_tape tape;
      tape.watch(b);
      const ftensor y = e * b + fg::tanh(b);
      return tape.gradient(fg::reduce_sum(y), b);
    });
    check_empty(db, {1, 0, 1});
    check_empty(in_time("d where", [&] {
                  return grad_of(e, [](const ftensor& x) { return ftensor(fg::where(x > 0.f, fg::square(x), -x)); });
                }),
                {B, 0, B});
  }
}

TEST_CASE("reductions of empty tensors: empty results at once, identities over an empty axis",
          "[empty][reduce]") {
  const ftensor e = big_empty();
  SECTION("results with a zero dimension") {
    check_empty(in_time("sum axis 0", [&] { return fg::reduce_sum(e, 0); }), {0, B});
    check_empty(in_time("sum axis 2 keepdims", [&] { return fg::reduce_sum(e, 2, true); }), {B, 0, 1});
    check_empty(in_time("mean axis 0", [&] { return fg::reduce_mean(e * 2.f, 0); }), {0, B});
    check_empty(in_time("max axes 0, 2", [&] { return fg::reduce_max(e, {0, 2}, true); }), {1, 0, 1});
    check_empty(in_time("min axis -1", [&] { return fg::reduce_min(e + 1.f, -1); }), {B, 0});
    check_empty(in_time("prod axis 0", [&] { return fg::reduce_prod(e, 0); }), {0, B});
    check_empty(in_time("logsumexp axis 2", [&] { return fg::reduce_logsumexp(e, 2); }), {B, 0});
    check_empty(in_time("any axis 0", [&] { return fg::reduce_any(e > 0.f, 0); }), {0, B});
    check_empty(in_time("argmax axis 0", [&] { return fg::argmax(e, 0); }), {0, B});
  }
  SECTION("a full reduction gives the identity") {
    CHECK(in_time("sum", [&] { return fg::reduce_sum(e); }).item() == 0.f);
    CHECK(in_time("prod", [&] { return fg::reduce_prod(e); }).item() == 1.f);
    CHECK(in_time("max", [&] { return fg::reduce_max(e); }).item() == -inf_f);
    CHECK(in_time("min", [&] { return fg::reduce_min(e); }).item() == inf_f);
    CHECK(in_time("logsumexp", [&] { return fg::reduce_logsumexp(e); }).item() == -inf_f);
    CHECK(std::isnan(in_time("mean", [&] { return fg::reduce_mean(e); }).item()));
    CHECK(in_time("all", [&] { return fg::reduce_all(e > 0.f); }).item());
    CHECK_FALSE(in_time("any", [&] { return fg::reduce_any(e > 0.f); }).item());
  }
  SECTION("over the empty axes of (3, 0, 2^31): three identities, keepdims or not") {
    // tf.reduce_sum / reduce_prod / reduce_max / reduce_min / reduce_logsumexp over an empty
    // axis: 0, 1, -inf, +inf, -inf; the mean of nothing is NaN.
    const ftensor x = fg::zeros<float>({3, 0, B});
    check_values(in_time("sum", [&] { return fg::reduce_sum(x, {1, 2}); }), {3}, {0.f, 0.f, 0.f});
    check_values(in_time("prod", [&] { return fg::reduce_prod(x, {1, 2}, true); }), {3, 1, 1}, {1.f, 1.f, 1.f});
    check_values(in_time("max", [&] { return fg::reduce_max(x * 2.f, {1, 2}); }), {3}, {-inf_f, -inf_f, -inf_f});
    check_values(in_time("min", [&] { return fg::reduce_min(x, {-2, -1}, true); }), {3, 1, 1},
                 {inf_f, inf_f, inf_f});
    check_values(in_time("logsumexp", [&] { return fg::reduce_logsumexp(x, {1, 2}); }), {3},
                 {-inf_f, -inf_f, -inf_f});
    const ftensor m = in_time("mean", [&] { return fg::reduce_mean(x, {1, 2}); });
    REQUIRE(m.shape() == fg::shape{3});
    for (float v : values(m)) CHECK(std::isnan(v));
    // Over the empty axis only: (3, 2^31) would be huge, so (3, 0, 2) instead.
    check_values(in_time("max axis 1", [&] { return fg::reduce_max(fg::zeros<float>({3, 0, 2}), 1); }), {3, 2},
                 std::vector<float>(6, -inf_f));
    // Integers: the lowest and highest values, as TensorFlow's.
    const fg::tensor<int> xi = fg::zeros<int>({2, 0, B});
    check_values(in_time("int max", [&] { return fg::reduce_max(xi, {1, 2}); }), {2},
                 std::vector<int>(2, std::numeric_limits<int>::lowest()));
    check_values(in_time("int min", [&] { return fg::reduce_min(xi + 1, {1, 2}); }), {2},
                 std::vector<int>(2, std::numeric_limits<int>::max()));
    check_values(in_time("int sum", [&] { return fg::reduce_sum(xi, {1, 2}); }), {2}, std::vector<int>(2, 0));
    check_values(in_time("all", [&] { return fg::reduce_all(xi > 0, {1, 2}); }), {2}, std::vector<bool>(2, true));
  }
  SECTION("gradients: zeros of the empty input's shape") {
    check_empty(in_time("d sum", [&] { return grad_of(e, [](const ftensor& x) { return fg::reduce_sum(x, 0); }); }),
                {B, 0, B});
    check_empty(
        in_time("d mean", [&] { return grad_of(e, [](const ftensor& x) { return fg::reduce_mean(x * x, 2); }); }),
        {B, 0, B});
    check_empty(in_time("d max", [&] { return grad_of(e, [](const ftensor& x) { return fg::reduce_max(x, 0); }); }),
                {B, 0, B});
    check_empty(in_time("d prod", [&] { return grad_of(e, [](const ftensor& x) { return fg::reduce_prod(x, 2); }); }),
                {B, 0, B});
    check_empty(
        in_time("d logsumexp", [&] { return grad_of(e, [](const ftensor& x) { return fg::reduce_logsumexp(x, 0); }); }),
        {B, 0, B});
    const ftensor x = fg::zeros<float>({3, 0, B});
    check_empty(in_time("d sum over the empty axes",
                        [&] { return grad_of(x, [](const ftensor& v) { return fg::reduce_sum(v, {1, 2}); }); }),
                {3, 0, B});
    check_empty(in_time("d max over the empty axes",
                        [&] { return grad_of(x, [](const ftensor& v) { return fg::reduce_max(v, {1, 2}, true); }); }),
                {3, 0, B});
    check_empty(in_time("d mean over the empty axes",
                        [&] { return grad_of(x, [](const ftensor& v) { return fg::reduce_mean(v, {1, 2}); }); }),
                {3, 0, B});
  }
}

TEST_CASE("cumsum and cumprod of empty tensors return at once along every axis", "[empty][scan]") {
  const ftensor e = big_empty();
  for (long axis : {0L, 1L, 2L, -1L}) {
    INFO("axis " << axis);
    check_empty(in_time("cumsum", [&] { return fg::cumsum(e, axis); }), {B, 0, B});
    check_empty(in_time("cumsum exclusive reverse", [&] { return fg::cumsum(e * 2.f, axis, true, true); }), {B, 0, B});
    check_empty(in_time("cumprod", [&] { return fg::cumprod(e, axis); }), {B, 0, B});
    check_empty(in_time("int cumsum", [&] { return fg::cumsum(fg::zeros<int>({B, 0, B}), axis); }), {B, 0, B});
    check_empty(in_time("d cumsum", [&] { return grad_of(e, [&](const ftensor& x) { return fg::cumsum(x, axis); }); }),
                {B, 0, B});
    check_empty(
        in_time("d cumprod", [&] { return grad_of(e, [&](const ftensor& x) { return fg::cumprod(x, axis, true); }); }),
        {B, 0, B});
  }
}

TEST_CASE("shape ops on empty tensors return at once: concat, stack, tile, transpose, slicing, broadcast_to",
          "[empty][shape_ops]") {
  const ftensor e = big_empty();
  // (2^30, 0, 2^31): stacking or tiling by 2 keeps the product of the non-zero dimensions
  // addressable (Note [checked sizes]).
  const ftensor f = fg::zeros<float>({B / 2, 0, B});
  check_empty(in_time("concat axis 1", [&] { return fg::concat({e, e}, 1); }), {B, 0, B});
  check_empty(in_time("concat axis 0", [&] { return fg::concat({f, f}, 0); }), {B, 0, B});
  check_empty(in_time("concat with a (1, 0, 2^31)", [&] { return fg::concat({e, fg::zeros<float>({1, 0, B})}, 0); }),
              {B + 1, 0, B});
  check_empty(in_time("stack axis 0", [&] { return fg::stack({f, f}, 0); }), {2, B / 2, 0, B});
  check_empty(in_time("stack axis 2", [&] { return fg::stack({f, f, f}, 2); }), {B / 2, 0, 3, B});
  check_empty(in_time("tile", [&] { return fg::tile(f, {2, 1, 1}); }), {B, 0, B});
  check_empty(in_time("tile of a (1, 0, 1) by 2^31", [&] {
                return fg::tile(fg::zeros<float>({1, 0, 1}), {static_cast<long>(B), 1, static_cast<long>(B)});
              }),
              {B, 0, B});
  check_empty(in_time("transpose", [&] { return fg::transpose(e, {2, 1, 0}); }), {B, 0, B});
  check_empty(in_time("transpose, zero last", [&] { return fg::transpose(e, {0, 2, 1}); }), {B, B, 0});
  check_empty(in_time("slice", [&] { return e(fg::slice(1, 5), fg::all(), fg::slice::every(-2)); }), {4, 0, B / 2});
  check_empty(in_time("slice with an index", [&] { return e(7); }), {0, B});
  check_empty(in_time("broadcast_to", [&] { return fg::broadcast_to(fg::zeros<float>({0, 1}), {B, 0, B}); }),
              {B, 0, B});
  check_empty(in_time("expand_dims and squeeze", [&] { return fg::squeeze(fg::expand_dims(e, 1), 1); }), {B, 0, B});
  check_empty(in_time("reshape", [&] { return fg::reshape(e, {B, B, 0}); }), {B, B, 0});
  check_empty(in_time("int concat", [&] {
                const fg::tensor<int> z = fg::zeros<int>({B, 0, B});
                return fg::concat({z, z}, 1);
              }),
              {B, 0, B});

  SECTION("gradients") {
    check_empty(in_time("d concat", [&] { return grad_of(e, [](const ftensor& x) { return fg::concat({x, ftensor(x * 2.f)}, 1); }); }),
                {B, 0, B});
    check_empty(in_time("d concat axis 0", [&] { return grad_of(f, [](const ftensor& x) { return fg::concat({x, x}, 0); }); }),
                {B / 2, 0, B});
    check_empty(in_time("d stack", [&] { return grad_of(f, [](const ftensor& x) { return fg::stack({x, x}, 1); }); }),
                {B / 2, 0, B});
    check_empty(in_time("d tile", [&] { return grad_of(f, [](const ftensor& x) { return fg::tile(x, {2, 1, 1}); }); }),
                {B / 2, 0, B});
    check_empty(in_time("d transpose", [&] { return grad_of(e, [](const ftensor& x) { return fg::transpose(x, {1, 2, 0}); }); }),
                {B, 0, B});
    check_empty(in_time("d slice", [&] { return grad_of(e, [](const ftensor& x) { return x(fg::slice(2, 9), fg::all(), 5); }); }),
                {B, 0, B});
    const ftensor small = fg::zeros<float>({1, 0, 1});
    check_empty(in_time("d broadcast_to",
                        [&] { return grad_of(small, [](const ftensor& x) { return fg::broadcast_to(x, {B, 0, B}); }); }),
                {1, 0, 1});
    check_empty(in_time("d tile of (1, 0, 1)", [&] {
                  return grad_of(small, [](const ftensor& x) {
                    return fg::tile(x, {static_cast<long>(B), 1, static_cast<long>(B)});
                  });
                }),
                {1, 0, 1});
  }
}

TEST_CASE("gather and one_hot with empty results return at once", "[empty][indexing]") {
  const ftensor e = big_empty();
  const fg::tensor<std::int32_t> two = {0, 1};
  const fg::tensor<std::int64_t> none(fg::shape{0}, std::vector<std::int64_t>{});
  check_empty(in_time("gather axis 0", [&] { return fg::gather(e, two, 0); }), {2, 0, B});
  check_empty(in_time("gather axis 1, no indices", [&] { return fg::gather(e, none, 1); }), {B, 0, B});
  check_empty(in_time("gather axis 2", [&] { return fg::gather(e, fg::tensor<std::int32_t>{{3, 4}, {5, 6}}, 2); }),
              {B, 0, 2, 2});
  check_empty(in_time("gather of an empty index matrix", [&] {
                return fg::gather(fg::zeros<float>({B, 0}), fg::zeros<std::int32_t>({0, B}), 1);
              }),
              {B, 0, B});
  // As in TensorFlow, indices are not looked at when the result is empty.
  check_empty(in_time("gather with no slices to take",
                      [&] { return fg::gather(fg::zeros<float>({0, 5}), fg::tensor<int>{9}, 1); }),
              {0, 1});
  check_empty(in_time("one_hot", [&] { return fg::one_hot<float>(fg::zeros<int>({0, B}), 1L << 20); }),
              {0, B, std::size_t{1} << 20});

  SECTION("gradients") {
    check_empty(in_time("d gather axis 0", [&] { return grad_of(e, [&](const ftensor& x) { return fg::gather(x, two, 0); }); }),
                {B, 0, B});
    check_empty(in_time("d gather axis 1", [&] { return grad_of(e, [&](const ftensor& x) { return fg::gather(x, none, 1); }); }),
                {B, 0, B});
    // Small params, an empty result: the gradient is zeros of params' shape.
    const ftensor p = {1.f, 2.f, 3.f};
    check_values(in_time("d gather of no indices",
                         [&] {
                           return grad_of(p, [](const ftensor& x) {
                             return fg::gather(x, fg::zeros<std::int32_t>({0, B}), 0);
                           });
                         }),
                 {3}, {0.f, 0.f, 0.f});
  }
}

TEST_CASE("matmul of empty batches returns at once; k = 0 gives zeros", "[empty][matmul]") {
  SECTION("2^40 empty products") {
    check_empty(in_time("(2^40, 0, 3) x (2^40, 3, 0)",
                        [] { return fg::matmul(fg::zeros<float>({H, 0, 3}), fg::zeros<float>({H, 3, 0})); }),
                {H, 0, 0});
    check_empty(in_time("(2^40, 0, 3) x (3, 2)",
                        [] { return fg::matmul(fg::zeros<float>({H, 0, 3}), fg::ones<float>({3, 2})); }),
                {H, 0, 2});
    check_empty(in_time("(2, 3) x (2^40, 3, 0)",
                        [] { return fg::matmul(fg::ones<float>({2, 3}), fg::zeros<float>({H, 3, 0})); }),
                {H, 2, 0});
    check_empty(in_time("transposed", [] {
                  return fg::matmul(fg::zeros<float>({H, 3, 0}), fg::zeros<float>({H, 0, 3}), true, true);
                }),
                {H, 0, 0});
    check_empty(in_time("int", [] { return fg::matmul(fg::zeros<int>({H, 0, 3}), fg::zeros<int>({H, 3, 0})); }),
                {H, 0, 0});
    check_empty(in_time("a zero batch axis", [] {
                  return fg::matmul(fg::zeros<float>({0, B, 2, 3}), fg::zeros<float>({0, B, 3, 2}));
                }),
                {0, B, 2, 2});
  }
  SECTION("k = 0: zeros of (b, m, n)") {
    const ftensor a = fg::zeros<float>({2, 3, 0}), b = fg::zeros<float>({0, 4});
    check_values(in_time("(2, 3, 0) x (0, 4)", [&] { return fg::matmul(a, b); }), {2, 3, 4},
                 std::vector<float>(24, 0.f));
    check_values(in_time("transposed", [&] { return fg::matmul(fg::zeros<float>({2, 0, 3}), b, true); }), {2, 3, 4},
                 std::vector<float>(24, 0.f));
    check_values(in_time("int", [&] { return fg::matmul(fg::zeros<int>({3, 0}), fg::zeros<int>({0, 2})); }), {3, 2},
                 std::vector<int>(6, 0));
    const auto g = in_time("d a, d b", [&] {
      fg::gradient_tape tape;
      tape.watch(a);
      tape.watch(b);
      return tape.gradient(fg::reduce_sum(fg::matmul(a, b)), {a, b});
    });
    check_empty(g[0], {2, 3, 0});
    check_empty(g[1], {0, 4});
  }
  SECTION("gradients of empty batches") {
    const ftensor a = fg::zeros<float>({H, 0, 3});
    const ftensor w = {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}};
    const auto g = in_time("d a, d w", [&] {
      fg::gradient_tape tape;
      tape.watch(a);
      tape.watch(w);
      return tape.gradient(fg::reduce_sum(fg::matmul(a, w)), {a, w});
    });
    check_empty(g[0], {H, 0, 3});
    // w served every (empty) batch element: its gradient sums nothing.
    check_values(g[1], {3, 2}, std::vector<float>(6, 0.f));
    check_empty(in_time("d b of (2, 3) x (2^40, 3, 0)", [&] {
                  return grad_of(fg::zeros<float>({H, 3, 0}),
                                 [](const ftensor& b) { return fg::matmul(fg::ones<float>({2, 3}), b); });
                }),
                {H, 3, 0});
  }
}

TEST_CASE("nn ops on empty batches return at once: softmax, conv2d, pools, batch norm, cross-entropies",
          "[empty][nn]") {
  const ftensor e = big_empty();
  constexpr std::size_t W = std::size_t{1} << 20;
  const ftensor images = fg::zeros<float>({B, 0, W, 3});  // NHWC with no rows
  const ftensor filters = fg::ones<float>({3, 3, 3, 2});
  SECTION("forward") {
    check_empty(in_time("softmax", [&] { return fg::softmax(e, 1); }), {B, 0, B});
    check_empty(in_time("softmax last axis", [&] { return fg::softmax(e); }), {B, 0, B});
    check_empty(in_time("log_softmax", [&] { return fg::log_softmax(e, 0); }), {B, 0, B});
    check_empty(in_time("conv2d", [&] { return fg::conv2d(images, filters, 1, "SAME"); }), {B, 0, W, 2});
    check_empty(in_time("conv2d of no images",
                        [&] { return fg::conv2d(fg::zeros<float>({0, 5, 5, 3}), filters, 1, "VALID"); }),
                {0, 3, 3, 2});
    check_empty(in_time("max_pool2d", [&] { return fg::max_pool2d(images, 2, 2, "SAME"); }), {B, 0, W / 2, 3});
    check_empty(in_time("avg_pool2d", [&] { return fg::avg_pool2d(images, 2, 2, "SAME"); }), {B, 0, W / 2, 3});
    check_empty(in_time("bias_add", [&] { return ftensor(fg::bias_add(images, fg::ones<float>({3}))); }),
                {B, 0, W, 3});
    const auto bn = in_time("fused_batch_norm inference", [&] {
      return fg::fused_batch_norm(images, fg::ones<float>({3}), fg::zeros<float>({3}), fg::zeros<float>({3}),
                                  fg::ones<float>({3}), 1e-3, 1.0, false);
    });
    check_empty(bn.y, {B, 0, W, 3});
    check_empty(in_time("batch_normalization",
                        [&] {
                          return fg::batch_normalization(images, fg::zeros<float>({3}), fg::ones<float>({3}),
                                                         fg::zeros<float>({3}), fg::ones<float>({3}), 1e-3);
                        }),
                {B, 0, W, 3});
    // The batch's statistics over no elements: the mean of nothing is NaN, as tf.nn.moments gives.
    const auto mv = in_time("moments", [&] { return fg::moments(images, {0, 1, 2}); });
    REQUIRE(mv.mean.shape() == fg::shape{3});
    for (float v : values(mv.mean)) CHECK(std::isnan(v));
    check_empty(in_time("softmax_cross_entropy",
                        [&] {
                          return fg::softmax_cross_entropy_with_logits(fg::zeros<float>({0, B}),
                                                                       fg::zeros<float>({0, B}));
                        }),
                {0});
    check_empty(in_time("sparse_softmax_cross_entropy",
                        [&] {
                          return fg::sparse_softmax_cross_entropy_with_logits(fg::zeros<int>({0}),
                                                                              fg::zeros<float>({0, B}));
                        }),
                {0});
    check_empty(in_time("sigmoid_cross_entropy", [&] { return ftensor(fg::sigmoid_cross_entropy_with_logits(e, e)); }),
                {B, 0, B});
    check_empty(in_time("dropout", [&] { return fg::dropout(e, 0.5, 7); }), {B, 0, B});
  }
  SECTION("gradients") {
    check_empty(in_time("d softmax", [&] { return grad_of(e, [](const ftensor& x) { return fg::softmax(x, 2) * x; }); }),
                {B, 0, B});
    check_empty(in_time("d log_softmax", [&] { return grad_of(e, [](const ftensor& x) { return fg::log_softmax(x, 0); }); }),
                {B, 0, B});
    check_empty(in_time("d max_pool2d",
                        [&] { return grad_of(images, [](const ftensor& x) { return fg::max_pool2d(x, 2, 2, "SAME"); }); }),
                {B, 0, W, 3});
    check_empty(in_time("d avg_pool2d",
                        [&] { return grad_of(images, [](const ftensor& x) { return fg::avg_pool2d(x, 3, 1, "SAME"); }); }),
                {B, 0, W, 3});
    // conv2d: the input's gradient is empty, the filters' sums over no positions: zeros.
    const auto g = in_time("d conv2d", [&] {
      fg::gradient_tape tape;
      tape.watch(images);
      tape.watch(filters);
      return tape.gradient(fg::reduce_sum(fg::conv2d(images, filters, 1, "SAME")), {images, filters});
    });
    check_empty(g[0], {B, 0, W, 3});
    check_values(g[1], {3, 3, 3, 2}, std::vector<float>(54, 0.f));
    // bias_add: the bias's gradient sums over no positions.
    const ftensor bias = {1.f, 2.f, 3.f};
    check_values(in_time("d bias",
                         [&] { return grad_of(bias, [&](const ftensor& v) { return ftensor(fg::bias_add(images, v)); }); }),
                 {3}, {0.f, 0.f, 0.f});
    // Batch normalisation in inference: scale's and offset's gradients sum over no positions.
    const ftensor scale = {1.f, 2.f, 3.f};
    check_values(in_time("d scale",
                         [&] {
                           return grad_of(scale, [&](const ftensor& s) {
                             return fg::fused_batch_norm(images, s, fg::zeros<float>({3}), fg::zeros<float>({3}),
                                                         fg::ones<float>({3}), 1e-3, 1.0, false)
                                 .y;
                           });
                         }),
                 {3}, {0.f, 0.f, 0.f});
    const ftensor logits = fg::zeros<float>({0, B});
    check_empty(in_time("d softmax_cross_entropy",
                        [&] {
                          return grad_of(logits, [](const ftensor& l) {
                            return fg::softmax_cross_entropy_with_logits(fg::zeros<float>({0, B}), l);
                          });
                        }),
                {0, B});
    check_empty(in_time("d sparse_softmax_cross_entropy",
                        [&] {
                          return grad_of(logits, [](const ftensor& l) {
                            return fg::sparse_softmax_cross_entropy_with_logits(fg::zeros<int>({0}), l);
                          });
                        }),
                {0, B});
    check_empty(in_time("d sigmoid_cross_entropy",
                        [&] {
                          return grad_of(e, [](const ftensor& l) {
                            return ftensor(fg::sigmoid_cross_entropy_with_logits(big_empty(), l));
                          });
                        }),
                {B, 0, B});
  }
}
