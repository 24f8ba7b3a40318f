// libFuzzer target: the expression builder. The input bytes choose an element type, three leaf
// tensors (shapes that broadcast together or not, values in [-2, 2]) and a sequence of steps;
// each step applies one expression of a catalogue (elementwise ops, literals, comparisons and
// where, broadcasting) to the running value and one of the leaves. The whole sequence runs twice
// under a tape: fused (each step one pass, recorded as one entry) and op by op (each op of a step
// its own eager evaluation and tape entry, eager::evaluate_unfused); then the gradient of the
// sum of the result with respect to the three leaves is taken in each mode. Values and gradients
// must agree within a tolerance (NaN where the other has NaN), and shapes that do not broadcast
// must give fusegrad's shape_error in both modes; anything else (another exception, a crash, a
// sanitizer report) is a defect. Built by tests/fuzz/run.sh with clang's
// -fsanitize=fuzzer,address,undefined.
#include <fusegrad/fusegrad.hpp>

#include "fuzz_bytes.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace {

using bytes = fuzz::byte_reader;

[[noreturn]] void defect(const char* what) {
  std::fprintf(stderr, "fusegrad expressions fuzz: %s\n", what);
  std::abort();
}

constexpr int catalogue_size = 8;

/// Step k of the catalogue over running value a and leaf b; tanh keeps every step in [-1, 1],
/// so long sequences neither overflow nor lose all precision.
template <class T, class A, class B>
auto step(int k, const A& a, const B& b, bool fused) {
  auto run = [&](const auto& e) -> fg::tensor<T> {
    if (fused) return fg::tensor<T>(e);
    return fg::eager::evaluate_unfused(e);
  };
  switch (k) {
    case 0: return run(fg::tanh(a * b + a));
    case 1: return run(fg::tanh(fg::log(1 + fg::exp(a)) * fg::sigmoid(b) + a * a));
    case 2: return run(fg::tanh(fg::where(a > b, fg::sqrt(fg::abs(a) + T(1)), b * b)));
    case 3: return run(fg::tanh(fg::maximum(a, b) - fg::minimum(a, 2 * b)));
    case 4: return run(fg::tanh(fg::exp(-fg::square(a - b)) / (1 + fg::abs(b))));
    case 5: return run(fg::tanh(fg::sin(a) * fg::cos(b) - a / (2 + b * b)));
    case 6: return run(fg::tanh(fg::pow(T(1.5) + fg::sigmoid(a), b)));
    default: return run(fg::tanh(fg::where(b < 0, fg::sqrt(fg::maximum(b, T(0))), a) - fg::sigmoid(a * b)));
  }
}

template <class T>
struct outcome {
  bool shape_failed = false;
  fg::tensor<T> value;
  std::vector<fg::tensor<T>> grads;
};

template <class T>
outcome<T> run(const std::vector<fg::tensor<T>>& leaves, const std::vector<std::pair<int, int>>& steps, bool fused) {
  outcome<T> o;
  try {
    fg::gradient_tape tape;
    for (const auto& l : leaves) tape.watch(l);
    fg::tensor<T> r = leaves[0];
    for (const auto& [k, b] : steps) r = step<T>(k, r, leaves[static_cast<std::size_t>(b)], fused);
    o.value = r;
    const fg::tensor<T> loss = fg::reduce_sum(r);
    o.grads = tape.gradient(loss, leaves);
  } catch (const fg::shape_error&) {
    o.shape_failed = true;
  }
  return o;
}

template <class T>
bool close(const fg::tensor<T>& x, const fg::tensor<T>& y, double tol) {
  if (x.defined() != y.defined()) return false;
  if (!x.defined()) return true;
  if (x.shape() != y.shape()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double a = static_cast<double>(x.data()[i]), b = static_cast<double>(y.data()[i]);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return false;
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) return false;
      continue;
    }
    if (std::fabs(a - b) > tol * (1 + std::fabs(b))) return false;
  }
  return true;
}

template <class T>
void check(bytes& in) {
  std::vector<fg::tensor<T>> leaves;
  for (int l = 0; l < 3; ++l) {
    const std::size_t rank = in.u8() % 4;
    fg::shape s;
    for (std::size_t d = 0; d < rank; ++d) s.push_back(1 + in.u8() % 3);
    std::vector<T> v(s.elements());
    for (T& x : v) x = static_cast<T>((static_cast<int>(in.u8()) - 128) / 64.0);
    leaves.emplace_back(s, v);
  }
  std::vector<std::pair<int, int>> steps;
  const int n = 1 + in.u8() % 6;
  for (int i = 0; i < n; ++i) steps.emplace_back(in.u8() % catalogue_size, in.u8() % 3);

  const outcome<T> fused = run(leaves, steps, true), plain = run(leaves, steps, false);
  if (fused.shape_failed != plain.shape_failed) defect("a shape error in one mode only");
  if (fused.shape_failed) return;
  // Fused and op-by-op evaluations round differently (one pass in registers or SIMD lanes, or
  // one rounded tensor per op); the steps are bounded, so the differences stay near rounding.
  const double tol = std::is_same_v<T, float> ? 2e-4 : 1e-10;
  if (!close(fused.value, plain.value, tol)) defect("fused and op-by-op values differ");
  if (fused.grads.size() != plain.grads.size()) defect("different numbers of gradients");
  for (std::size_t k = 0; k < fused.grads.size(); ++k)
    if (!close(fused.grads[k], plain.grads[k], tol * 10)) defect("fused and op-by-op gradients differ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bytes in{data, size};
  if (in.u8() % 2) check<float>(in);
  else check<double>(in);
  return 0;
}
