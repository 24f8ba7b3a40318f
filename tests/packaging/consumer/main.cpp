// A program built against an installed fusegrad (tests/packaging/run.sh): a fused chain, its
// gradient under a tape, and a matmul (OpenBLAS), checked against values computed by hand.
// Its first line of output names the mode it was built in (Note [package mode]).
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <cstdio>

int main() {
#if defined(FUSEGRAD_SEPARATE_ENGINES)
  std::printf("mode: package\n");
#else
  std::printf("mode: header-only\n");
#endif
  fg::tensor<float> x = {1.f, 2.f, 3.f};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::reduce_sum(x * x + 2 * x);  // 1 + 2 + 4 + 4 + 9 + 6 = 26
  fg::tensor<float> dx = tape.gradient(y, x);            // 2x + 2 = 4, 6, 8
  fg::tensor<float> m = fg::matmul(fg::tensor<float>{{1.f, 2.f}}, fg::tensor<float>{{3.f}, {4.f}});  // 11
  const bool ok = y.item() == 26.f && dx.data()[0] == 4.f && dx.data()[2] == 8.f && m.item() == 11.f;
  std::printf("fusegrad consumer: %s\n", ok ? "ok" : "wrong values");
  return ok ? 0 : 1;
}
