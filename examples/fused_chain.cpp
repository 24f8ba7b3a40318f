// Fusion: an elementwise chain is one typed expression, evaluated in one pass over the data
// when a result is needed; a reduction of the chain is one pass too, and so is the chain with
// its derivative under a tape.
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <iostream>

int main() {
  const fg::tensor<double> x = fg::linspace<double>(-3.0, 3.0, 1000001);
  // fusegrad counts the loops its evaluators run (the hook its tests use to prove fusion).
  const auto& passes = fg::core::counters().passes;
  const auto start = passes;

  // One loop, one output buffer: no tensors for exp(x), 1 + exp(x), log(...), sigmoid(x), x * x.
  fg::tensor<double> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  const auto after_chain = passes;

  // The chain and the sum also run as one pass.
  fg::tensor<double> s = fg::reduce_sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  const auto after_sum = passes;

  // `auto` keeps the expression (it has captured x's value); nothing runs until it is assigned.
  auto lazy = fg::exp(-x) * x;
  const auto after_lazy = passes;
  const fg::tensor<double> z = fg::eval(lazy);

  // Under a tape, the forward pass of a chain of one tensor with transcendental functions also
  // computes the chain's derivative (docs/design.md, "Saved derivatives"), still in one pass;
  // the gradient of the loss is then that derivative, with no pass of its own.
  fg::gradient_tape tape;
  tape.watch(x);
  const auto before_loss = passes;
  const fg::tensor<double> loss = fg::reduce_sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  const auto loss_passes = passes - before_loss;
  const auto before_gradient = passes;
  const fg::tensor<double> dx = tape.gradient(loss, x);
  const auto gradient_passes = passes - before_gradient;

  std::cout << "chain: " << after_chain - start << " pass, chain + sum: " << after_sum - after_chain
            << " pass, chain + sum + derivative: " << loss_passes << " pass, gradient: " << gradient_passes
            << " passes\n";

  // Values against the same formulas written out by hand at element 750000 (x = 1.5).
  const double v = x.data()[750000], sig = 1 / (1 + std::exp(-v));
  const double y_ref = std::log1p(std::exp(v)) * sig + v * v;
  const double dx_ref = sig * sig + std::log1p(std::exp(v)) * sig * (1 - sig) + 2 * v;
  const bool ok = after_chain - start == 1 && after_sum - after_chain == 1 && after_lazy == after_sum &&
                  loss_passes == 1 && gradient_passes == 0 && std::fabs(y.data()[750000] - y_ref) < 1e-12 &&
                  std::fabs(dx.data()[750000] - dx_ref) < 1e-12 &&
                  std::fabs(z.data()[750000] - std::exp(-v) * v) < 1e-13 &&
                  std::fabs(s.item() - loss.item()) < 1e-9 * std::fabs(s.item());
  if (!ok) std::cerr << "fused_chain: expected one pass per chain and sum, none for the gradient, and matching values\n";
  return ok ? 0 : 1;
}
