// Higher-order gradients: a persistent tape records its own backward passes, so gradients of
// gradients come for free; nested tapes give the same (seed 000, example 2).
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <iostream>

int main() {
  fg::tensor<float> x = 3.0f;
  fg::gradient_tape g({.persistent = true});
  g.watch(x);
  fg::tensor<float> y = 3 * x * x * x;
  fg::tensor<float> dy_dx = g.gradient(y, x);    // 9 x^2 = 81
  fg::tensor<float> d2y_dx2 = g.gradient(dy_dx, x);  // 18 x = 54
  fg::tensor<float> d3y_dx3 = g.gradient(d2y_dx2, x);  // 18
  std::cout << dy_dx << "\n" << d2y_dx2 << "\n" << d3y_dx3 << "\n";

  // The tfe form: gradients_function of gradients_function (seed 003): d2/dx2 x^2 = 2.
  auto square = [](const fg::tensor<float>& v) { return fg::tensor<float>(v * v); };
  auto grad = fg::gradients_function(square);
  auto gradgrad = fg::gradients_function([&](const fg::tensor<float>& v) { return grad(v)[0]; });
  const float second = gradgrad(3.f)[0].item();
  std::cout << "gradgrad(square)(3) = " << second << "\n";

  const bool ok = dy_dx.item() == 81.f && d2y_dx2.item() == 54.f && d3y_dx3.item() == 18.f && second == 2.f;
  if (!ok) std::cerr << "higher_order: unexpected values\n";
  return ok ? 0 : 1;
}
