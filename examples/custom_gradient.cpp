// Custom gradients: a numerically stable log1pexp and clip_gradient_by_norm (the TensorFlow guide's two examples).
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <iostream>

int main() {
  // log(1 + e^x) with its gradient written as 1 - 1 / (1 + e^x): finite where e^x overflows.
  auto log1pexp = fg::custom_gradient([](const fg::tensor<float>& x) {
    fg::tensor<float> e = fg::exp(x);
    auto grad = [e](const fg::tensor<float>& dy) -> fg::tensor<float> { return dy * (1 - 1 / (1 + e)); };
    return std::make_pair(fg::tensor<float>(fg::log(1 + e)), grad);
  });
  auto grad_log1pexp = fg::gradients_function(log1pexp);
  auto grad_plain = fg::gradients_function([](const fg::tensor<float>& x) { return fg::log(1 + fg::exp(x)); });

  const float at0 = grad_log1pexp(0.f)[0].item();
  const float at100 = grad_log1pexp(100.f)[0].item();
  const float plain100 = grad_plain(100.f)[0].item();
  std::cout << "log1pexp gradient at 0: " << at0 << "\n";
  std::cout << "log1pexp gradient at 100: " << at100 << " (the plain composition gives " << plain100 << ")\n";

  // Identity forward; the backward pass clips the incoming gradient to a norm.
  auto clip_gradient_by_norm = fg::custom_gradient([](const fg::tensor<float>& x, const fg::tensor<float>& norm) {
    fg::tensor<float> y = fg::eval(x);
    auto grad_fn = [norm](const fg::tensor<float>& dy) {
      fg::tensor<float> l2 = fg::sqrt(fg::sum(dy * dy));
      return std::vector<fg::tensor<float>>{fg::tensor<float>(dy * norm / fg::maximum(l2, norm)), fg::tensor<float>()};
    };
    return std::make_pair(y, grad_fn);
  });
  fg::tensor<float> x = {3.f, 4.f};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::sum(clip_gradient_by_norm(x, fg::tensor<float>(1.f)) * fg::tensor<float>{30.f, 40.f});
  fg::tensor<float> g = tape.gradient(y, x);  // (30, 40) has norm 50: clipped to norm 1
  std::cout << "clipped gradient: " << fg::numpy_str(g) << "\n";

  const bool ok = at0 == 0.5f && at100 == 1.0f && std::isnan(plain100) && std::abs(g.data()[0] - 0.6f) < 1e-6f &&
                  std::abs(g.data()[1] - 0.8f) < 1e-6f;
  if (!ok) std::cerr << "custom_gradient: unexpected values\n";
  return ok ? 0 : 1;
}
