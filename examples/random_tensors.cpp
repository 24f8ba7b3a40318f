// Random tensors: the same seed gives the same values on every run and platform; the forms
// without a seed draw from a per-thread generator that set_seed restarts.
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>

int main() {
  const auto a = fg::random::normal<float>({10, 6}, 42);                  // mean 0, stddev 1
  const auto b = fg::random::normal<double>({3}, 42, 1.0, 0.5);           // mean 1, stddev 0.5
  const auto c = fg::random::uniform<float>({4}, 7, -1.0f, 1.0f);         // in [-1, 1)
  const auto d = fg::random::uniform<std::int32_t>({4}, 7, 0, 10);        // integers in [0, 10); maxval required
  const auto e = fg::random::truncated_normal<float>({8}, 3, 0.0f, 2.0f); // values beyond 2 stddev redrawn
  std::cout << b << '\n' << c << '\n' << d << '\n';

  bool ok = a.shape() == fg::shape{10, 6} && a.dtype() == fg::dtype::float32 && b.dtype() == fg::dtype::float64;
  // The same seed, the same tensor.
  const auto a_again = fg::random::normal<float>({10, 6}, 42);
  for (std::size_t i = 0; i < a.size(); ++i) ok = ok && a.data()[i] == a_again.data()[i];
  for (std::size_t i = 0; i < c.size(); ++i) ok = ok && c.data()[i] >= -1.0f && c.data()[i] < 1.0f;
  for (std::size_t i = 0; i < d.size(); ++i) ok = ok && d.data()[i] >= 0 && d.data()[i] < 10;
  for (std::size_t i = 0; i < e.size(); ++i) ok = ok && std::fabs(e.data()[i]) <= 4.0f;

  // Without a seed: set_seed restarts this thread's sequence.
  fg::random::set_seed(5);
  const auto first = fg::random::normal<float>({100}, {.mean = 1.0f, .stddev = 2.0f});
  const auto k = fg::random::uniform<std::int32_t>({5}, {.minval = 0, .maxval = 10});
  fg::random::set_seed(5);
  const auto replay = fg::random::normal<float>({100}, {.mean = 1.0f, .stddev = 2.0f});
  for (std::size_t i = 0; i < first.size(); ++i) ok = ok && first.data()[i] == replay.data()[i];
  ok = ok && k.shape() == fg::shape{5};

  if (!ok) std::cerr << "random_tensors: a draw broke its contract\n";
  return ok ? 0 : 1;
}
