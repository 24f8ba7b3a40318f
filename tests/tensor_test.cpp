// Tensors: construction, sharing, conversion, printing, and the fusion rule (one pass per chain).
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <sstream>

namespace {
template <class X>
std::string str(const X& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}
}  // namespace

TEST_CASE("a nested initializer list gives a tensor with that shape and values", "[tensor]") {
  fg::tensor<int> x = {{1, 2, 4, 6}, {8, 10, 7, 11}};
  CHECK(x.shape() == fg::shape{2, 4});
  CHECK(x.rank() == 2);
  CHECK(x.size() == 8);
  CHECK(x.dtype() == fg::dtype::int32);
  CHECK(x.data()[5] == 10);
}

TEST_CASE("seed 000: tf.add(x, 2) prints in TensorFlow's layout", "[tensor][printing]") {
  fg::tensor<int> x = {{1, 2, 4, 6}, {8, 10, 7, 11}};
  fg::tensor<int> y = x + 2;
  CHECK(str(y) == "tensor(\n[[ 3  4  6  8]\n [10 12  9 13]], shape=(2, 4), dtype=int32)");
  CHECK(str(fg::tensor<float>(18.0f)) == "tensor(18.0, shape=(), dtype=float32)");
}

TEST_CASE("copying a tensor shares its buffer", "[tensor]") {
  fg::tensor<float> a = {1.f, 2.f};
  fg::tensor<float> b = a;
  CHECK(a.data() == b.data());
  CHECK(a.id() == b.id());
}

TEST_CASE("an elementwise chain evaluates in one pass with one allocation", "[fusion]") {
  fg::tensor<float> x = fg::linspace<float>(-2.f, 2.f, 1000);
  auto& c = fg::core::counters();
  const auto passes = c.passes, allocs = c.allocations;
  fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  CHECK(c.passes - passes == 1);
  CHECK(c.allocations - allocs == 1);
  // Reference: the same formula in double, element by element.
  for (std::size_t i = 0; i < 1000; i += 97) {
    const double v = x.data()[i];
    const double ref = std::log(1 + std::exp(v)) / (1 + std::exp(-v)) + v * v;
    CHECK(y.data()[i] == Approx(ref).epsilon(1e-6));
  }
}

TEST_CASE("sum over an elementwise chain is one pass", "[fusion]") {
  fg::tensor<float> x = fg::linspace<float>(-1.f, 1.f, 5000);
  auto& c = fg::core::counters();
  const auto passes = c.passes;
  fg::tensor<float> s = fg::sum(x * x + 1);
  CHECK(c.passes - passes == 1);
  double ref = 0;
  for (std::size_t i = 0; i < 5000; ++i) ref += double(x.data()[i]) * x.data()[i] + 1;
  CHECK(s.item() == Approx(ref).epsilon(1e-6));
}

TEST_CASE("an expression captures its operands' values when built", "[expression]") {
  fg::tensor<float> x = 1.f;
  auto e = fg::exp(x) + 1;
  x = 5.f;  // rebinding x does not change e
  fg::tensor<float> y = e;
  CHECK(y.item() == Approx(std::exp(1.0) + 1));
}

TEST_CASE("a one-element tensor converts to bool; more elements throw naming the shape", "[tensor]") {
  fg::tensor<int> a = 12;
  CHECK(static_cast<bool>(a > 3));
  CHECK_FALSE(static_cast<bool>(a == 1));
  CHECK(int(a % 5) == 2);
  fg::tensor<int> v = {1, 2};
  CHECK_THROWS_WITH(static_cast<bool>(v > 0), Catch::Contains("ambiguous") && Catch::Contains("(2,)"));
}

TEST_CASE("broadcasting mismatch throws invalid_argument naming the op and both shapes", "[errors]") {
  fg::tensor<float> a = fg::zeros<float>({2, 3});
  fg::tensor<float> b = fg::zeros<float>({4});
  CHECK_THROWS_AS(a + b, std::invalid_argument);
  CHECK_THROWS_WITH(a + b, Catch::Contains("add") && Catch::Contains("(2, 3)") && Catch::Contains("(4,)"));
}

TEST_CASE("the buffer cache reuses the block of a size kept last and frees the oldest when full", "[tensor]") {
  using cache = fusegrad::core::host_block_cache;
  const auto block = [](std::size_t bytes) {
    return ::operator new(bytes, std::align_val_t{fusegrad::core::buffer_alignment});
  };
  const auto release = [](void* p) { ::operator delete(p, std::align_val_t{fusegrad::core::buffer_alignment}); };
  cache c;
  CHECK(c.take(4096) == nullptr);
  void* first = block(4096);
  void* second = block(4096);
  REQUIRE(c.keep(first, 4096));
  REQUIRE(c.keep(second, 4096));
  CHECK(c.take(2048) == nullptr);  // sizes match exactly
  CHECK(c.take(4096) == second);   // the one kept last
  CHECK(c.take(4096) == first);
  CHECK(c.take(4096) == nullptr);
  release(first);
  release(second);
  // Full in slots: keeping one more frees the block kept longest ago (size 1024 + 0 here).
  std::vector<void*> kept;
  for (std::size_t i = 0; i < cache::slots + 1; ++i) {
    kept.push_back(block(1024 + 64 * i));
    REQUIRE(c.keep(kept.back(), 1024 + 64 * i));
  }
  CHECK(c.take(1024) == nullptr);
  CHECK(c.take(1024 + 64) == kept[1]);
  CHECK(c.take(1024 + 64 * cache::slots) == kept[cache::slots]);
  release(kept[1]);
  release(kept[cache::slots]);
  // Full in bytes: a block larger than the whole cache is refused, one that fits frees others.
  void* huge = block(16);
  CHECK_FALSE(c.keep(huge, cache::max_bytes + 1));
  release(huge);
  void* big = block(cache::max_bytes - 512);
  REQUIRE(c.keep(big, cache::max_bytes - 512));  // frees every smaller block to make room
  CHECK(c.take(1024 + 64 * 2) == nullptr);
  CHECK(c.take(cache::max_bytes - 512) == big);
  release(big);
}
