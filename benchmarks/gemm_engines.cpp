// The float32 GEMM engines on the MLP step's shapes (784-256-256-10, batch 128: the forward and
// backward products, and the first layer's input gradient, which a step does not need):
// OpenBLAS's cblas_sgemm, which fusegrad's matmul calls, against oneDNN's dnnl_sgemm, the other
// engine fusegrad links, each the mean of 300 calls after 20, on the calling thread's count
// (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS). `gemm_engines openblas` or `gemm_engines onednn` runs
// one engine alone: each library's threads spin for a while after a call, so two engines in one
// process on few cores slow each other. docs/benchmarks.md, "Training on real data", quotes
// `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=N OPENBLAS_NUM_THREADS=N
// build/benchmarks/gemm_engines ENGINE`.
#include <cblas.h>
#include <dnnl.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
struct shape { const char* what; char ta, tb; int m, n, k; };
int main(int argc, char** argv) {
  const bool use_o = argc < 2 || std::strcmp(argv[1], "onednn") != 0;
  const bool use_d = argc < 2 || std::strcmp(argv[1], "openblas") != 0;
  const shape shapes[] = {{"x.W1 fwd", 'N', 'N', 128, 256, 784}, {"h.W2 fwd", 'N', 'N', 128, 256, 256},
                          {"h.W3 fwd", 'N', 'N', 128, 10, 256},  {"dY.W1^T", 'N', 'T', 128, 784, 256},
                          {"X^T.dY W1", 'T', 'N', 784, 256, 128}, {"X^T.dY W2", 'T', 'N', 256, 256, 128},
                          {"dY.W2^T", 'N', 'T', 128, 256, 256}};
  double tot_o = 0, tot_d = 0;
  for (const shape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.m) * s.k, 0.5f), b(static_cast<size_t>(s.k) * s.n, 0.25f),
        c(static_cast<size_t>(s.m) * s.n);
    const int lda = s.ta == 'N' ? s.k : s.m, ldb = s.tb == 'N' ? s.n : s.k;
    auto run = [&](bool dnnl, int reps) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) {
        if (dnnl)
          dnnl_sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), s.n);
        else
          cblas_sgemm(CblasRowMajor, s.ta == 'N' ? CblasNoTrans : CblasTrans, s.tb == 'N' ? CblasNoTrans : CblasTrans,
                      s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), s.n);
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    if (use_o) run(false, 20);
    if (use_d) run(true, 20);
    const double o = use_o ? run(false, 300) : 0, d = use_d ? run(true, 300) : 0;
    const double gf = 2.0 * s.m * s.n * s.k * 1e-9;
    tot_o += o, tot_d += d;
    std::printf("%-10s %c%c %4d x %4d x %4d:", s.what, s.ta, s.tb, s.m, s.n, s.k);
    if (use_o) std::printf(" openblas %7.1f us (%6.1f GFLOP/s)", o * 1e6, gf / o);
    if (use_d) std::printf(" onednn %7.1f us (%6.1f GFLOP/s)", d * 1e6, gf / d);
    std::printf("\n");
  }
  std::printf("all shapes:");
  if (use_o) std::printf(" openblas %.1f us", tot_o * 1e6);
  if (use_d) std::printf(" onednn %.1f us", tot_d * 1e6);
  if (use_o && use_d) std::printf(" (%.2fx)", tot_o / tot_d);
  std::printf("\n");
}
