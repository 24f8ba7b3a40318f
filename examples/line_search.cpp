// Seed 002's backtracking line search: a gradient from a tape, then an ordinary while loop on
// tensor values that halves the step until the function has fallen enough. Repeated, it
// minimizes a quadratic; and since the tape records whatever runs, one step is itself
// differentiable, its derivative checked against finite differences.
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>

// One step from init_x down fn's gradient; returns the new point and fn's value there.
template <class F>
std::pair<fg::tensor<float>, fg::tensor<float>> line_search_step(const F& fn, const fg::tensor<float>& init_x,
                                                                 float rate = 1.0f) {
  fg::gradient_tape tape;
  tape.watch(init_x);  // variables are recorded by themselves; a tensor is watched when asked
  fg::tensor<float> value = fn(init_x);
  const fg::tensor<float> grad = tape.gradient(value, init_x);
  const fg::tensor<float> grad_norm = fg::reduce_sum(grad * grad);
  const fg::tensor<float> init_value = value;
  fg::tensor<float> x = init_x;
  while (value > init_value - rate * grad_norm) {  // a one-element tensor condition
    x = init_x - rate * grad;
    value = fn(x);
    rate /= 2.0f;
  }
  return {x, value};
}

int main() {
  // A long, narrow bowl with its lowest point, 0, at (1, -2).
  const fg::tensor<float> center = {1.0f, -2.0f}, scale = {1.0f, 10.0f};
  auto fn = [&](const fg::tensor<float>& x) {
    return fg::tensor<float>(fg::reduce_sum(scale * fg::square(x - center)));
  };

  fg::tensor<float> x = {-3.0f, 3.0f};
  std::printf("start: x = %s, value = %s\n", fg::numpy_str(x).c_str(), fg::numpy_str(fn(x)).c_str());
  fg::tensor<float> value;
  for (int step = 1; step <= 40; ++step) {
    std::tie(x, value) = line_search_step(fn, x);
    if (step % 5 == 0) std::printf("step %2d: x = %s, value = %.3g\n", step, fg::numpy_str(x).c_str(), value.item());
  }
  const bool found = value.item() < 1e-5f && fg::reduce_max(fg::abs(x - center)).item() < 1e-2f;

  // The derivative of one step's value with respect to its starting point, through the loop
  // (an outer tape records the inner tape's gradient too), against central differences.
  const fg::tensor<float> x0 = {0.5f, -1.0f};
  fg::tensor<float> d;
  {
    fg::gradient_tape outer;
    outer.watch(x0);
    d = outer.gradient(line_search_step(fn, x0).second, x0);
  }
  const float h = 1e-2f;
  bool derivative = true;
  for (std::size_t i = 0; i < 2; ++i) {
    const fg::tensor<float> e = i == 0 ? fg::tensor<float>{h, 0.0f} : fg::tensor<float>{0.0f, h};
    const float numeric =
        (line_search_step(fn, x0 + e).second.item() - line_search_step(fn, x0 - e).second.item()) / (2 * h);
    std::printf("d value / d x0[%zu]: tape %.5f, finite differences %.5f\n", i, d.data()[i], numeric);
    derivative = derivative && std::fabs(d.data()[i] - numeric) <= 1e-2f * std::fmax(1.0f, std::fabs(numeric));
  }

  if (!found) std::fprintf(stderr, "line_search: expected to reach the minimum at (1, -2)\n");
  if (!derivative)
    std::fprintf(stderr, "line_search: the tape's derivative of a step differs from finite differences\n");
  return found && derivative ? 0 : 1;
}
