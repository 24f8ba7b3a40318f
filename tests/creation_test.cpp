// Making tensors: zeros/ones/fill/range/arange/linspace, nested initializer lists up to rank 5,
// std::vector and raw buffers with a shape, xtensor containers and expressions; reading them back
// (numpy(), item(), xview()); and printing whole tensors and expressions in TensorFlow's layout.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xtensor.hpp>

namespace {
using namespace fg_test;
}  // namespace

TEST_CASE("zeros, ones and fill make tensors of a shape filled with one value", "[creation]") {
  const fg::tensor<float> z = fg::zeros({2, 3});
  CHECK(z.shape() == fg::shape{2, 3});
  CHECK(z.dtype() == fg::dtype::float32);
  CHECK(values(z) == std::vector<float>(6, 0.f));
  const fg::tensor<int> o = fg::ones<int>({4});
  CHECK(values(o) == std::vector<int>{1, 1, 1, 1});
  const fg::tensor<double> od = fg::ones<double>({});
  CHECK(od.shape() == fg::shape{});
  CHECK(od.item() == 1.0);
  const fg::tensor<bool> ob = fg::ones<bool>({2});
  CHECK(values(ob) == std::vector<bool>{true, true});
  const auto f = fg::fill({3, 1}, 7);
  STATIC_REQUIRE(std::is_same_v<decltype(f), const fg::tensor<int>>);
  CHECK(f.shape() == fg::shape{3, 1});
  CHECK(values(f) == std::vector<int>{7, 7, 7});
  CHECK(values(fg::fill<double>({2}, 0.5)) == std::vector<double>{0.5, 0.5});
  CHECK(fg::zeros<std::int64_t>({0, 5}).size() == 0);
  CHECK(fg::zeros<std::int64_t>({0, 5}).shape() == fg::shape{0, 5});
  const fg::tensor<float> r5 = fg::ones({2, 1, 3, 1, 2});
  CHECK(r5.rank() == 5);
  CHECK(values(r5) == std::vector<float>(12, 1.f));
}

TEST_CASE("zeros_like, ones_like and fill_like copy shape and element type", "[creation]") {
  const fg::tensor<std::int64_t> x = {{1, 2, 3}, {4, 5, 6}};
  const auto z = fg::zeros_like(x);
  STATIC_REQUIRE(std::is_same_v<decltype(z), const fg::tensor<std::int64_t>>);
  CHECK(z.shape() == x.shape());
  CHECK(values(z) == std::vector<std::int64_t>(6, 0));
  CHECK(values(fg::ones_like(x)) == std::vector<std::int64_t>(6, 1));
  CHECK(values(fg::fill_like(x, std::int64_t{-4})) == std::vector<std::int64_t>(6, -4));
}

TEST_CASE("range and arange count from start by delta up to but excluding limit", "[creation]") {
  CHECK(values(fg::range(5)) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(values(fg::range(1, 10, 3)) == std::vector<int>{1, 4, 7});
  CHECK(values(fg::range(10, 0, -3)) == std::vector<int>{10, 7, 4, 1});
  CHECK(values(fg::range(0.f, 1.f, 0.25f)) == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f});
  CHECK(values(fg::arange<std::int64_t>(3)) == std::vector<std::int64_t>{0, 1, 2});
  CHECK(values(fg::arange(-2, 2)) == std::vector<int>{-2, -1, 0, 1});
  // np.arange(0, 1, 0.1)
  CHECK(values(fg::arange(0.0, 1.0, 0.1)) ==
        std::vector<double>{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8,
                            0.9});
  // From a start other than 0 (tests/reference/range_values.py): each value is start + i * delta
  // with the product rounded first, as in tf.range; one fused multiply-add would round once and
  // differ in the last bit at i = 3, 5 and 7 (float64) and i = 9 (float32).
  CHECK(values(fg::range(0.1, 3.0, 0.3)) ==
        std::vector<double>{0.1, 0.4, 0.7, 0.9999999999999999, 1.3, 1.6, 1.9, 2.2, 2.5, 2.8});
  CHECK(values(fg::range(0.1f, 3.0f, 0.3f)) ==
        std::vector<float>{0.10000000149011612f, 0.4000000059604645f, 0.7000000476837158f, 1.0f, 1.3000000715255737f,
                           1.600000023841858f, 1.9000000953674316f, 2.200000047683716f, 2.5f, 2.799999952316284f});
  // Empty ranges: limit already reached, or delta pointing away from it.
  CHECK(fg::range(5, 5).shape() == fg::shape{0});
  CHECK(fg::range(5, 0).shape() == fg::shape{0});
  CHECK(fg::range(-3).shape() == fg::shape{0});
  CHECK(fg::range(0, 5, -1).size() == 0);
  CHECK_THROWS_AS(fg::range(0, 5, 0), fg::value_error);
  CHECK_THROWS_WITH(fg::range(0.f, 1.f, 0.f), Catch::Contains("range") && Catch::Contains("delta"));
}

TEST_CASE("linspace gives num evenly spaced values including both ends, like np.linspace", "[creation]") {
  CHECK(values(fg::linspace(0.f, 1.f, 5)) == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f});
  // np.linspace(-1, 1, 7, dtype=np.float32)
  CHECK(values(fg::linspace(-1.f, 1.f, 7)) ==
        std::vector<float>{-1.f, -0.6666666865348816f, -0.3333333432674408f, 0.f, 0.3333333432674408f,
                           0.6666666865348816f, 1.f});
  // np.linspace(0, 1, 11)
  CHECK(values(fg::linspace(0.0, 1.0, 11)) == std::vector<double>{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5,
                                                                  0.6000000000000001, 0.7000000000000001, 0.8, 0.9,
                                                                  1.0});
  CHECK(values(fg::linspace(2.0, 3.0, 1)) == std::vector<double>{2.0});
  CHECK(fg::linspace(0.f, 1.f, 0).shape() == fg::shape{0});
  CHECK(values(fg::linspace(3.f, -3.f, 3)) == std::vector<float>{3.f, 0.f, -3.f});
}

TEST_CASE("nested initializer lists give tensors of rank 1 to 5 in row-major order", "[creation]") {
  const fg::tensor<int> r1 = {1, 2, 3};
  CHECK(r1.shape() == fg::shape{3});
  const fg::tensor<float> r2 = {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}};
  CHECK(r2.shape() == fg::shape{3, 2});
  CHECK(values(r2) == std::vector<float>{1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  const fg::tensor<double> r3 = {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}};
  CHECK(r3.shape() == fg::shape{2, 2, 2});
  CHECK(values(r3) == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  const fg::tensor<std::int64_t> r4 = {{{{1, 2, 3}}, {{4, 5, 6}}}};
  CHECK(r4.shape() == fg::shape{1, 2, 1, 3});
  CHECK(values(r4) == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
  const fg::tensor<int> r5 = {{{{{1, 2}}, {{3, 4}}}, {{{5, 6}}, {{7, 8}}}},
                              {{{{9, 10}}, {{11, 12}}}, {{{13, 14}}, {{15, 16}}}}};
  CHECK(r5.shape() == fg::shape{2, 2, 2, 1, 2});
  std::vector<int> want(16);
  for (int k = 0; k < 16; ++k) want[static_cast<std::size_t>(k)] = k + 1;
  CHECK(values(r5) == want);
  const fg::tensor<bool> b = {{true, false}, {false, true}};
  CHECK(b.dtype() == fg::dtype::boolean);
  CHECK(values(b) == std::vector<bool>{true, false, false, true});
}

TEST_CASE("inner lists of one element make columns and (1, ..., 1) tensors", "[creation]") {
  const fg::tensor<float> col = {{1.f}, {2.f}, {3.f}};
  CHECK(col.shape() == fg::shape{3, 1});
  CHECK(values(col) == std::vector<float>{1.f, 2.f, 3.f});
  const fg::tensor<float> one = {{4.f}};
  CHECK(one.shape() == fg::shape{1, 1});
  const fg::tensor<int> r5 = {{{{{7}}}}};
  CHECK(r5.shape() == fg::shape{1, 1, 1, 1, 1});
  CHECK(r5.item() == 7);
  const fg::tensor<bool> b = {{true}, {false}};
  CHECK(b.shape() == fg::shape{2, 1});
}

TEST_CASE("integer literals fill floating and wider tensors", "[creation]") {
  const fg::tensor<float> f = {1, 2, 3};
  CHECK(values(f) == std::vector<float>{1.f, 2.f, 3.f});
  const fg::tensor<double> d = {{1, 2}, {3, 4}};
  CHECK(d.shape() == fg::shape{2, 2});
  CHECK(values(d) == std::vector<double>{1.0, 2.0, 3.0, 4.0});
  const fg::tensor<std::int64_t> l = {{1, 2}};
  CHECK(values(l) == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("a ragged nested list throws fg::shape_error naming the dimension", "[creation][error]") {
  CHECK_THROWS_AS(fg::tensor<int>({{1, 2}, {3, 4, 5}}), fg::shape_error);
  CHECK_THROWS_WITH(fg::tensor<int>({{1, 2}, {3, 4, 5}}), Catch::Contains("ragged") && Catch::Contains("dimension 1"));
  CHECK_THROWS_WITH(fg::tensor<float>({{{1.f, 2.f}, {3.f, 4.f}}, {{5.f, 6.f}}}),
                    Catch::Contains("ragged") && Catch::Contains("dimension 1"));
  CHECK_THROWS_WITH(fg::tensor<double>({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8, 9}}}),
                    Catch::Contains("ragged") && Catch::Contains("dimension 2"));
}

TEST_CASE("a std::vector or a raw buffer with a shape gives a tensor; a size mismatch throws", "[creation]") {
  const fg::tensor<float> t(fg::shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(t.shape() == fg::shape{2, 3});
  CHECK(values(t) == std::vector<float>{1, 2, 3, 4, 5, 6});
  const double raw[4] = {0.5, 1.5, 2.5, 3.5};
  const fg::tensor<double> r(fg::shape{2, 2}, raw);
  CHECK(values(r) == std::vector<double>{0.5, 1.5, 2.5, 3.5});
  CHECK(r.data() != raw);
  const fg::tensor<int> e(fg::shape{2, 0}, std::vector<int>{});
  CHECK(e.shape() == fg::shape{2, 0});
  CHECK(e.size() == 0);
  CHECK_THROWS_AS(fg::tensor<int>(fg::shape{2, 4}, std::vector<int>(6)), fg::shape_error);
  CHECK_THROWS_WITH(fg::tensor<int>(fg::shape{2, 4}, std::vector<int>(6)),
                    Catch::Contains("6 values") && Catch::Contains("(2, 4)") && Catch::Contains("8 elements"));
}

TEST_CASE("a C++ scalar gives a rank-0 tensor; integers widen into floating and wider tensors", "[creation]") {
  const fg::tensor<float> f = 3.5f;
  CHECK(f.shape() == fg::shape{});
  CHECK(f.rank() == 0);
  CHECK(f.size() == 1);
  CHECK(f.item() == 3.5f);
  const fg::tensor<double> d = 3;
  CHECK(d.item() == 3.0);
  const fg::tensor<std::int64_t> l = 5;
  CHECK(l.item() == 5);
  CHECK(l.dtype() == fg::dtype::int64);
  const fg::tensor<bool> b = true;
  CHECK(b.item());
}

TEST_CASE("xtensor containers and expressions convert to tensors", "[creation][xtensor]") {
  const xt::xarray<double> a = {{1, 2, 3}, {4, 5, 6}};
  const fg::tensor<double> t = a;
  CHECK(t.shape() == fg::shape{2, 3});
  CHECK(values(t) == std::vector<double>{1, 2, 3, 4, 5, 6});
  const xt::xtensor<int, 1> v = {7, 8};
  const fg::tensor<int> ti = v;
  CHECK(values(ti) == std::vector<int>{7, 8});
  // An unevaluated xtensor expression: arange(6) reshaped to (2, 3), then scaled.
  const fg::tensor<float> e = xt::reshape_view(xt::arange<float>(6), {2, 3});
  CHECK(e.shape() == fg::shape{2, 3});
  CHECK(values(e) == std::vector<float>{0, 1, 2, 3, 4, 5});
  const fg::tensor<float> s = xt::arange<float>(4) * 2.f + 1.f;
  CHECK(values(s) == std::vector<float>{1, 3, 5, 7});
  const fg::tensor<double> z = xt::zeros<double>({0, 2});
  CHECK(z.shape() == fg::shape{0, 2});
}

TEST_CASE("numpy() copies the values out as an xt::xarray and round-trips", "[creation][xtensor]") {
  const fg::tensor<float> t = {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}};
  xt::xarray<float> a = t.numpy();
  REQUIRE(a.dimension() == 2);
  CHECK(a.shape()[0] == 2);
  CHECK(a.shape()[1] == 3);
  CHECK(a(1, 2) == 6.f);
  a(0, 0) = 100.f;  // a copy: the tensor does not change
  CHECK(t.data()[0] == 1.f);
  const fg::tensor<float> back = a;
  CHECK(values(back) == std::vector<float>{100.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  const xt::xarray<std::int64_t> s = fg::tensor<std::int64_t>(9).numpy();
  CHECK(s.dimension() == 0);
  CHECK(s() == 9);
  // The value of an expression, read through numpy().
  const xt::xarray<float> e = fg::tensor<float>(t * 2).numpy();
  CHECK(e(1, 0) == 8.f);
}

TEST_CASE("item() reads a one-element tensor of any rank and throws naming the shape otherwise", "[creation]") {
  CHECK(fg::tensor<int>(4).item() == 4);
  CHECK(fg::fill({1, 1, 1}, 2.5).item() == 2.5);
  const fg::tensor<int> m = {{1, 2}, {3, 4}};
  CHECK_THROWS_AS(m.item(), fg::value_error);
  CHECK_THROWS_AS(m.item(), std::invalid_argument);
  CHECK_THROWS_WITH(m.item(), Catch::Contains("item") && Catch::Contains("(2, 2)"));
  CHECK_THROWS_WITH(fg::zeros({0}).item(), Catch::Contains("(0,)"));
  CHECK_THROWS_AS(fg::tensor<float>().item(), fg::value_error);
}

TEST_CASE("xview() is a zero-copy read-only xtensor view of the buffer", "[creation][xtensor]") {
  const fg::tensor<double> t = {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  const auto v = t.xview();
  CHECK(v.dimension() == 2);
  CHECK(v.shape()[0] == 2);
  CHECK(v.shape()[1] == 3);
  CHECK(v(1, 2) == 6.0);
  CHECK(&v(0, 0) == t.data());
  const xt::xarray<double> doubled = v * 2.0;
  CHECK(doubled(1, 1) == 10.0);
}

TEST_CASE("tensors print as TensorFlow prints them", "[creation][printing]") {
  const fg::tensor<int> x = {{1, 2, 4, 6}, {8, 10, 7, 11}};
  const fg::tensor<int> y = x + 2;
  CHECK(str(y) == "tensor(\n[[ 3  4  6  8]\n [10 12  9 13]], shape=(2, 4), dtype=int32)");
  CHECK(str(fg::tensor<float>(18.f)) == "tensor(18.0, shape=(), dtype=float32)");
  CHECK(str(fg::fill({1, 1}, 4.f)) == "tensor([[4.]], shape=(1, 1), dtype=float32)");
  CHECK(str(fg::tensor<float>{{4.f}}) == "tensor([[4.]], shape=(1, 1), dtype=float32)");
  CHECK(str(fg::tensor<bool>{true, false, true}) == "tensor([ True False  True], shape=(3,), dtype=bool)");
  CHECK(str(fg::tensor<double>(6.0)) == "tensor(6.0, shape=(), dtype=float64)");
  CHECK(str(fg::tensor<std::int64_t>{1, 2}) == "tensor([1 2], shape=(2,), dtype=int64)");
  // str(np.array(...)) for each body
  CHECK(str(fg::tensor<float>{0.5f, -1.25f, 3.f}) == "tensor([ 0.5  -1.25  3.  ], shape=(3,), dtype=float32)");
  CHECK(str(fg::tensor<float>{1.f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) ==
        "tensor([ 1. nan inf], shape=(3,), dtype=float32)");
  CHECK(str(fg::tensor<double>{{{1.5, 2.0}, {3.0, 4.0}}, {{5.0, 6.0}, {7.0, 8.0}}}) ==
        "tensor(\n[[[1.5 2. ]\n  [3.  4. ]]\n\n [[5.  6. ]\n  [7.  8. ]]], shape=(2, 2, 2), dtype=float64)");
  CHECK(str(fg::zeros({2, 0})) == "tensor([], shape=(2, 0), dtype=float32)");
  CHECK(str(fg::tensor<float>()) == "tensor(undefined)");
}

TEST_CASE("printing an expression evaluates it first", "[creation][printing]") {
  const fg::tensor<int> x = {{1, 2, 4, 6}, {8, 10, 7, 11}};
  auto& c = fg::core::counters();
  const auto passes = c.passes;
  CHECK(str(x + 2) == "tensor(\n[[ 3  4  6  8]\n [10 12  9 13]], shape=(2, 4), dtype=int32)");
  CHECK(c.passes - passes == 1);
  CHECK(str(fg::tensor<float>(3.f) * 6) == "tensor(18.0, shape=(), dtype=float32)");
  CHECK(str(fg::tensor<int>{1, -2} > 0) == "tensor([ True False], shape=(2,), dtype=bool)");
  CHECK(str(fg::truediv(fg::tensor<int>(12), 2)) == "tensor(6.0, shape=(), dtype=float64)");
}

TEST_CASE("a shape whose element or byte count would wrap around is an error naming the op and the shape",
          "[creation][errors][sizes]") {
  using Catch::Contains;
  const std::size_t e32 = std::size_t{1} << 32, e62 = std::size_t{1} << 62;
  // 2^32 * 2^32 elements wrap to 0 in 64 bits.
  CHECK_THROWS_AS(fg::zeros<float>({e32, e32}), fg::value_error);
  CHECK_THROWS_WITH(fg::zeros<float>({e32, e32}), Contains("fg::zeros") && Contains("(4294967296, 4294967296)"));
  CHECK_THROWS_AS(fg::ones<int>({e32, 3, e32}), fg::value_error);
  CHECK_THROWS_AS(fg::tensor<float>(fg::shape{e32, e32}, fg::device::cpu()), fg::value_error);
  // An empty tensor's other dimensions must still multiply to a countable number (numpy's rule),
  // so that its strides fit.
  CHECK_THROWS_AS(fg::fill<int>({e32, 0, e32}, 1), fg::value_error);
  const fg::tensor<float> empty = fg::zeros<float>({0, std::size_t{1} << 40});
  CHECK(empty.size() == 0);
  CHECK(empty.shape() == fg::shape{0, std::size_t{1} << 40});
  // 2^62 floats: the element count fits, 2^64 bytes wrap to 0.
  CHECK_THROWS_AS(fg::zeros<float>({e62}), fg::out_of_memory);
  CHECK_THROWS_WITH(fg::zeros<float>({e62}), Contains("fg::zeros") && Contains("(4611686018427387904,)"));
  CHECK_THROWS_AS(fg::ones<double>({e62 / 2}), fg::out_of_memory);
  CHECK_THROWS_AS(fg::tensor<float>(fg::shape{e62}, std::vector<float>{}), fg::out_of_memory);
  CHECK_THROWS_AS(fg::linspace<float>(0, 1, e62), fg::out_of_memory);
  CHECK_THROWS_WITH(fg::linspace<float>(0, 1, e62), Contains("fg::linspace"));
  // A count computed in floating point that no size_t holds.
  CHECK_THROWS_AS(fg::range<float>(0.f, 1e30f), fg::value_error);
  CHECK_THROWS_WITH(fg::range<float>(0.f, 1e30f), Contains("fg::range") && Contains("limit 1e+30"));
  CHECK_THROWS_AS(fg::range<double>(0.0, inf_d), fg::value_error);
  CHECK_THROWS_AS(fg::range<double>(0.0, nan_d), fg::value_error);
  CHECK_THROWS_AS(fg::random::uniform<float>({e32, e32}, 1), fg::value_error);
#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer aborts on such a request instead of failing it
  // A count that fits but that memory cannot hold still reaches the allocator, whose error names the bytes.
  CHECK_THROWS_WITH(fg::zeros<float>({std::size_t{1} << 60}), Contains("cannot allocate 4611686018427387904 bytes on /cpu:0"));
#endif
  // Ordinary shapes are unaffected.
  CHECK(fg::zeros<float>({0}).size() == 0);
  CHECK(fg::range<float>(0.f, -3.f).size() == 0);
}
