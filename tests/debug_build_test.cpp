// The library in an unoptimised build (meson compiles this file with -O0; Note [host simd] in
// core/config.hpp): the fused chain, its sum and its gradient, on the scalar path, against the
// same formulas written with <cmath>.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <vector>

#if defined(__OPTIMIZE__)
#error "debug_build_test must be compiled without optimisation"
#endif

TEST_CASE("an unoptimised build evaluates and differentiates a fused chain", "[debug_build]") {
  std::vector<float> xs;
  for (int i = 0; i < 101; ++i) xs.push_back(-5.0f + 0.1f * static_cast<float>(i));
  const fg::tensor<float> x(fg::shape{xs.size()}, xs);
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  const fg::tensor<float> loss = fg::reduce_sum(y);
  const fg::tensor<float> dx = tape.gradient(loss, x);
  double sum = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i], sig = 1 / (1 + std::exp(-v)), sp = std::log1p(std::exp(v));
    const double yi = sp * sig + v * v, di = sig * sig + sp * sig * (1 - sig) + 2 * v;
    sum += yi;
    INFO("x = " << v);
    CHECK(y.data()[i] == Approx(yi).epsilon(1e-5).margin(1e-6));
    CHECK(dx.data()[i] == Approx(di).epsilon(1e-5).margin(1e-6));
  }
  CHECK(loss.item() == Approx(sum).epsilon(1e-5));
}
