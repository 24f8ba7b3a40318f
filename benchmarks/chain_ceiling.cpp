// The hand-written loops for the chain y = log(1 + exp(x)) * sigmoid(x) + x * x, in a
// translation unit of their own: benchmarks/meson.build compiles this file alone with
// -O3 -march=native -ffast-math, so GCC calls glibc's vector math (libmvec, e.g.
// _ZGVeN16v_expf) and vectorises the loops. That is the ceiling the fused evaluator is
// measured against. The same loops, compiled with the project's accurate flags, live in
// fused_chain.cpp and fused_backward.cpp.

#include <cmath>
#include <cstddef>

/// y[i] = softplus(x[i]) * sigmoid(x[i]) + x[i]^2, vectorised with fast math.
void chain_ceiling_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = std::log(1.f + std::exp(v)) * (1.f / (1.f + std::exp(-v))) + v * v;
  }
}

/// Returns sum(y) and writes dsum(y)/dx into dx, in one pass, vectorised with fast math.
/// d/dx [softplus(x) sigmoid(x) + x^2] = sigmoid(x)^2 + softplus(x) sigmoid(x) (1 - sigmoid(x)) + 2x.
double chain_ceiling_forward_backward(const float* x, float* dx, std::size_t n) {
  double loss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float sp = std::log(1.f + std::exp(v));
    const float s = 1.f / (1.f + std::exp(-v));
    loss += sp * s + v * v;
    dx[i] = s * s + sp * s * (1.f - s) + 2.f * v;
  }
  return loss;
}

/// One Adam step in place (Keras' formula, as adam_update.cpp's hand loop), vectorised with fast
/// math: the ceiling of a one-pass update.
void adam_ceiling(float* __restrict w, float* __restrict m, float* __restrict v, const float* __restrict g,
                  std::size_t n, float alpha, float c1, float c2, float eps) {
  for (std::size_t i = 0; i < n; ++i) {
    m[i] += (g[i] - m[i]) * c1;
    v[i] += (g[i] * g[i] - v[i]) * c2;
    w[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + eps);
  }
}
