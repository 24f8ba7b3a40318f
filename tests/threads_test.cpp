// Intra-op threads (Note [intra-op pool], core/parallel.hpp): the setting and its errors; the
// pool's tasks, nesting and exceptions; and host loops (the fused chain, broadcasting rows,
// reductions over all and some axes, gradients under a tape) giving the same bits on 1, 2 and
// 3 threads, on both sides of the size threshold, and values a plain double loop agrees with.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/eager/nn_ops.hpp>

#include "test_helpers.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {
using fusegrad::core::parallel_threshold;

/// Restores the default setting (every core) when a test ends, passed or not.
struct threads_guard {
  ~threads_guard() { fg::config::set_intra_op_parallelism_threads(0); }
};

/// The bytes of a tensor's elements.
template <class T>
std::vector<unsigned char> bytes_of(const fg::tensor<T>& t) {
  std::vector<unsigned char> b(t.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), t.data(), b.size());
  return b;
}

/// Requires that f() gives the same bits on 1, 2 and 3 threads, and that it split across the
/// pool on 2 and 3 threads exactly when `parallel` says so; returns the 1-thread results.
template <class T>
std::vector<fg::tensor<T>> same_bits_on_1_2_3_threads(const std::function<std::vector<fg::tensor<T>>()>& f,
                                                        bool parallel) {
  threads_guard guard;
  std::vector<std::vector<fg::tensor<T>>> runs;
  for (int n : {1, 2, 3}) {
    fg::config::set_intra_op_parallelism_threads(n);
    const auto before = fusegrad::core::counters().parallel_regions;
    runs.push_back(f());
    const bool split = fusegrad::core::counters().parallel_regions > before;
    INFO(n << " threads");
    CHECK(split == (parallel && n > 1));
  }
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (std::size_t i = 0; i < runs[0].size(); ++i) {
      INFO((r + 1) << " threads against 1, result " << i);
      REQUIRE(runs[r][i].shape() == runs[0][i].shape());
      CHECK(bytes_of(runs[r][i]) == bytes_of(runs[0][i]));
    }
  return runs[0];
}

/// Seeded uniform values in [lo, hi).
template <class T>
fg::tensor<T> uniform(const fg::shape& s, unsigned seed, double lo = -4, double hi = 4) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(s.elements());
  for (auto& e : v) e = static_cast<T>(u(rng));
  return fg::tensor<T>(s, v);
}

double softplus_ref(double v) { return std::log1p(std::exp(v)); }
double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }
double chain_ref(double v) { return softplus_ref(v) * sigmoid_ref(v) + v * v; }
/// d/dx [softplus(x) sigmoid(x) + x^2], by hand.
double chain_grad_ref(double v) {
  const double s = sigmoid_ref(v);
  return s * s + softplus_ref(v) * s * (1 - s) + 2 * v;
}

template <class X>
auto chain(const X& x) {
  return fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
}

/// Requires |got - want| <= rel * (1 + |want|).
void check_close(double got, double want, double rel) {
  INFO("got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= rel * (1 + std::abs(want)));
}
}  // namespace

TEST_CASE("the intra-op setting is TensorFlow's: 0 for every core, n threads, an error for n < 0", "[threads]") {
  threads_guard guard;
  CHECK(fg::config::get_intra_op_parallelism_threads() == 0);
  CHECK(fusegrad::core::intra_op_threads() >= 1);
  fg::config::set_intra_op_parallelism_threads(3);
  CHECK(fg::config::get_intra_op_parallelism_threads() == 3);
  CHECK(fusegrad::core::intra_op_threads() == 3);
  fg::config::set_intra_op_parallelism_threads(1);
  CHECK(fusegrad::core::intra_op_threads() == 1);
  CHECK_THROWS_AS(fg::config::set_intra_op_parallelism_threads(-1), fg::value_error);
  CHECK_THROWS_WITH(fg::config::set_intra_op_parallelism_threads(-2),
                    Catch::Contains("set_intra_op_parallelism_threads") && Catch::Contains("-2") &&
                        Catch::Contains("0 for every core"));
  CHECK(fg::config::get_intra_op_parallelism_threads() == 1);  // unchanged by the failed calls
  fg::config::set_intra_op_parallelism_threads(0);
  CHECK(fusegrad::core::intra_op_threads() == fusegrad::core::available_cores());
}

TEST_CASE("the pool runs every task once, on several threads, and nested loops on the calling thread",
          "[threads]") {
  threads_guard guard;
  fg::config::set_intra_op_parallelism_threads(3);
  std::vector<std::atomic<int>> runs(3);
  std::vector<std::thread::id> ran_on(3);
  std::vector<std::set<std::thread::id>> nested_on(3);
  fusegrad::core::run_tasks(3, [&](std::size_t t) {
    ++runs[t];
    ran_on[t] = std::this_thread::get_id();
    // Nested: runs here, on this task's thread, one inner task after another.
    fusegrad::core::run_tasks(4, [&](std::size_t) { nested_on[t].insert(std::this_thread::get_id()); });
  });
  for (std::size_t t = 0; t < 3; ++t) {
    CHECK(runs[t] == 1);
    CHECK(nested_on[t] == std::set<std::thread::id>{ran_on[t]});
  }
  // parallel_for covers [0, count) once, in contiguous ranges.
  std::vector<int> hits(1000, 0);
  std::mutex m;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  fusegrad::core::parallel_for(1000, 10 * parallel_threshold, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) ++hits[i];
    std::lock_guard lock(m);
    ranges.emplace_back(b, e);
  });
  CHECK(ranges.size() == 3);
  CHECK(hits == std::vector<int>(1000, 1));
  // Below the threshold, one range on the calling thread.
  ranges.clear();
  fusegrad::core::parallel_for(1000, parallel_threshold - 1, [&](std::size_t b, std::size_t e) { ranges.emplace_back(b, e); });
  CHECK(ranges == std::vector<std::pair<std::size_t, std::size_t>>{{0, 1000}});
}

TEST_CASE("an exception thrown inside a parallel region reaches the caller, and the pool runs on", "[threads]") {
  threads_guard guard;
  fg::config::set_intra_op_parallelism_threads(3);
  for (std::size_t thrower : {0, 1, 2}) {
    INFO("task " << thrower << " throws");
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(fusegrad::core::run_tasks(3,
                                                [&](std::size_t t) {
                                                  if (t == thrower) throw fg::value_error("task failed");
                                                  ++ran;
                                                }),
                      "task failed");
    CHECK(ran <= 2);
  }
  CHECK_THROWS_AS(fusegrad::core::run_tasks(2, [](std::size_t t) {
                    if (t == 1) throw fg::shape_error("shape");
                  }),
                  fg::shape_error);
  // The pool is whole afterwards: a large evaluation splits and is right.
  const fg::tensor<float> x = uniform<float>({3 * parallel_threshold}, 11);
  const auto before = fusegrad::core::counters().parallel_regions;
  const fg::tensor<float> y = x * 2.f;
  CHECK(fusegrad::core::counters().parallel_regions == before + 1);
  for (std::size_t i = 0; i < x.size(); i += 997) CHECK(y.data()[i] == 2.f * x.data()[i]);
}

TEST_CASE("the fused chain gives the same bits on 1, 2 and 3 threads, on both sides of the threshold",
          "[threads]") {
  const std::size_t t = parallel_threshold;
  for (std::size_t n : {std::size_t{1}, std::size_t{1001}, t - 1, t, t + 1, 3 * t + 17, std::size_t{1000003}}) {
    INFO("n = " << n);
    const fg::tensor<float> x = uniform<float>({n}, 20 + static_cast<unsigned>(n % 1000));
    const auto r = same_bits_on_1_2_3_threads<float>([&] { return std::vector{fg::tensor<float>(chain(x))}; }, n >= t);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double want = chain_ref(x.data()[i]);
      worst = std::max(worst, std::abs(r[0].data()[i] - want) / (1 + std::abs(want)));
    }
    CHECK(worst < 1e-6);
  }
  // double, SIMD batches of 8 and a scalar tail
  const fg::tensor<double> xd = uniform<double>({2 * t + 5}, 3);
  same_bits_on_1_2_3_threads<double>([&] { return std::vector{fg::tensor<double>(chain(xd))}; }, true);
}

TEST_CASE("broadcasting rows give the same bits on 1, 2 and 3 threads", "[threads]") {
  // Row by row: a row vector, a column and a scalar broadcast over a matrix, with short rows,
  // and long rows that are cut into segments.
  for (const fg::shape& s : {fg::shape{601, 533}, fg::shape{2, 200003}, fg::shape{3, 23, 4099}}) {
    INFO("shape " << s);
    const std::size_t rows = s.elements() / s.back();
    const fg::tensor<float> x = uniform<float>(s, 5);
    const fg::tensor<float> row = uniform<float>({s.back()}, 6);
    const fg::tensor<float> col = fg::reshape(uniform<float>({rows}, 7), {static_cast<long>(rows), 1});
    const auto r = same_bits_on_1_2_3_threads<float>(
        [&] {
          const fg::tensor<float> x2 = fg::reshape(x, {static_cast<long>(rows), static_cast<long>(s.back())});
          return std::vector{fg::tensor<float>(fg::exp(x2) * row + col), fg::tensor<float>(x2 * col - 1.5f)};
        },
        true);
    for (std::size_t i = 0; i < s.elements(); i += 101) {
      const std::size_t rr = i / s.back(), c = i % s.back();
      check_close(r[0].data()[i], std::exp(double(x.data()[i])) * row.data()[c] + col.data()[rr], 1e-6);
      check_close(r[1].data()[i], double(x.data()[i]) * col.data()[rr] - 1.5, 1e-6);
    }
  }
}

TEST_CASE("reductions give the same bits on 1, 2 and 3 threads, and a double loop's values", "[threads]") {
  struct reduction {
    fg::shape s;
    fg::axes ax;
    bool keepdims;
  };
  const std::vector<reduction> cases = {
      {{1000003}, {}, false},    {{1000003}, {}, true},     {{7, 20011, 3}, 1, false}, {{7, 20011, 3}, {0, 2}, true},
      {{7, 20011, 3}, 2, false}, {{7, 20011, 3}, 0, false}, {{7, 20011, 3}, {}, false}, {{3, 150001}, 0, true},
      {{3, 150001}, 1, false},   {{3, 150001}, -1, true},   {{601, 533}, {}, false},   {{301, 333}, 0, false},
      {{5, 1001}, 1, false},
  };
  for (const reduction& c : cases) {
    INFO("shape " << c.s << ", axes " << (c.ax.all ? std::string("all") : std::to_string(c.ax.list[0])) << ", keepdims "
                  << c.keepdims);
    const fg::tensor<float> x = uniform<float>(c.s, 9, -2, 2);
    const bool parallel = c.s.elements() >= parallel_threshold;
    const auto r = same_bits_on_1_2_3_threads<float>(
        [&] {
          return std::vector{fg::reduce_sum(fg::exp(x) - x, c.ax, c.keepdims), fg::reduce_mean(x, c.ax, c.keepdims),
                             fg::reduce_max(x * 3.f, c.ax, c.keepdims), fg::reduce_logsumexp(x, c.ax, c.keepdims)};
        },
        parallel);
    // The references: over the plan's reduced axes, in double.
    const auto p = fusegrad::eager::plan_reduce(c.s, c.ax, "test");
    const std::size_t outs = p.keep.elements();
    std::vector<double> sum(outs, 0), mean(outs, 0), max(outs, -1e300), lse(outs, 0);
    const auto cs = fusegrad::core::contiguous_strides(p.keep);
    auto out_of = [&](std::size_t i) {
      std::size_t o = 0, rest = i;
      for (std::size_t d = c.s.rank(); d-- > 0;) {
        const std::size_t id = rest % c.s[d];
        rest /= c.s[d];
        if (!p.reduced[d]) o += id * static_cast<std::size_t>(cs[d]);
      }
      return o;
    };
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = x.data()[i];
      const std::size_t o = out_of(i);
      sum[o] += std::exp(v) - v;
      mean[o] += v / static_cast<double>(p.count);
      max[o] = std::max(max[o], 3 * v);
    }
    for (std::size_t i = 0; i < x.size(); ++i) lse[out_of(i)] += std::exp(double(x.data()[i]) - max[out_of(i)] / 3);
    for (std::size_t o = 0; o < outs; ++o) {
      INFO("output " << o);
      check_close(r[0].data()[o], sum[o], 1e-6);
      check_close(r[1].data()[o], mean[o], 1e-6);
      CHECK(r[2].data()[o] == static_cast<float>(max[o]));
      check_close(r[3].data()[o], max[o] / 3 + std::log(lse[o]), 1e-6);
    }
    // float sums accumulate in double, which hides a change of order once rounded to float;
    // double sums show it.
    const fg::tensor<double> xd = fg::cast<double>(x);
    const auto rd = same_bits_on_1_2_3_threads<double>(
        [&] { return std::vector{fg::reduce_sum(fg::exp(xd) - xd, c.ax, c.keepdims), fg::reduce_logsumexp(xd, c.ax, c.keepdims)}; },
        parallel);
    for (std::size_t o = 0; o < outs; ++o) {
      check_close(rd[0].data()[o], sum[o], 1e-12);
      check_close(rd[1].data()[o], max[o] / 3 + std::log(lse[o]), 1e-12);
    }
  }
}

TEST_CASE("gradients of the chain's sum give the same bits on 1, 2 and 3 threads", "[threads]") {
  const std::size_t t = parallel_threshold;
  for (std::size_t n : {t - 3, 5 * t + 1}) {
    INFO("n = " << n);
    const fg::tensor<float> x = uniform<float>({n}, 31);
    // The loss's saved derivative (Note [saved derivative]): one pass forward, none backward.
    const auto r = same_bits_on_1_2_3_threads<float>(
        [&] {
          fg::gradient_tape tape;
          tape.watch(x);
          const fg::tensor<float> loss = fg::sum(chain(x));
          return std::vector{loss, tape.gradient(loss, x)};
        },
        n >= t);
    double loss = 0;
    for (std::size_t i = 0; i < n; ++i) {
      loss += chain_ref(x.data()[i]);
      if (i % 37 == 0) check_close(r[1].data()[i], chain_grad_ref(x.data()[i]), 1e-5);
    }
    check_close(r[0].item(), loss, 1e-6);
    // The same loss without a tape: the same order of summation, so the same bits.
    CHECK(bytes_of(fg::tensor<float>(fg::sum(chain(x)))) == bytes_of(r[0]));
  }
  // A double loss, whose sum shows any change of order in its bits.
  const fg::tensor<double> xd = uniform<double>({5 * t + 1}, 32);
  same_bits_on_1_2_3_threads<double>(
      [&] {
        fg::gradient_tape tape;
        tape.watch(xd);
        const fg::tensor<double> loss = fg::sum(chain(xd));
        return std::vector{loss, tape.gradient(loss, xd)};
      },
      true);
  // The block backward (Note [block backward]): two inputs, one broadcast and summed down.
  const fg::tensor<float> x = uniform<float>({61, 5001}, 41);
  const fg::tensor<float> w = uniform<float>({61, 1}, 42);
  const auto r = same_bits_on_1_2_3_threads<float>(
      [&] {
        fg::gradient_tape tape;
        tape.watch(x);
        tape.watch(w);
        const fg::tensor<float> loss = fg::sum(chain(x) * w);
        auto g = tape.gradient(loss, std::vector{x, w});
        return std::vector{loss, g[0], g[1]};
      },
      true);
  for (std::size_t i = 0; i < x.size(); i += 53)
    check_close(r[1].data()[i], chain_grad_ref(x.data()[i]) * w.data()[i / 5001], 1e-5);
  for (std::size_t row = 0; row < 61; ++row) {
    double want = 0;
    for (std::size_t c = 0; c < 5001; ++c) want += chain_ref(x.data()[row * 5001 + c]);
    check_close(r[2].data()[row], want, 1e-5);
  }
}

TEST_CASE("the nn ops' own loops give the same bits on 1, 2 and 3 threads", "[threads]") {
  // float64 convolutions run fusegrad's direct loops (eval/host_conv.hpp): the forward pass and
  // the input's gradient split over images, the filters' gradient over filter rows.
  const fg::tensor<double> x = uniform<double>({4, 12, 12, 8}, 61), f = uniform<double>({3, 3, 8, 16}, 62);
  const fg::tensor<double> dy = uniform<double>({4, 6, 6, 16}, 63);
  const auto c = same_bits_on_1_2_3_threads<double>(
      [&] {
        return std::vector{fg::conv2d(x, f, 1, "SAME"), fg::conv2d_backprop_input(x.shape(), f, dy, 2, "SAME"),
                           fg::conv2d_backprop_filter(x, f.shape(), dy, 2, "SAME")};
      },
      true);
  // One output element and one filter element by hand.
  double y = 0, df = 0;
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw)
      for (int ci = 0; ci < 8; ++ci) {
        const int h = 5 + kh - 1, w = 7 + kw - 1;
        y += x.data()[((2 * 12 + h) * 12 + w) * 8 + ci] * f.data()[((kh * 3 + kw) * 8 + ci) * 16 + 3];
      }
  // stride 2, SAME on 12: no padding before, one after; tap (1, 2), channel 5 into output channel 9
  for (int n = 0; n < 4; ++n)
    for (int oh = 0; oh < 6; ++oh)
      for (int ow = 0; ow < 6; ++ow) {
        const int h = 2 * oh + 1, w = 2 * ow + 2;
        if (h < 12 && w < 12)
          df += x.data()[((n * 12 + h) * 12 + w) * 8 + 5] * dy.data()[((n * 6 + oh) * 6 + ow) * 16 + 9];
      }
  check_close(c[0].data()[((2 * 12 + 5) * 12 + 7) * 16 + 3], y, 1e-12);
  check_close(c[2].data()[((1 * 3 + 2) * 8 + 5) * 16 + 9], df, 1e-12);

  // Pooling (eval/host_pool.hpp): overlapping windows whose gradient scatters (split over
  // images), and tiling windows (split over output rows).
  const fg::tensor<float> p = uniform<float>({16, 32, 32, 16}, 64);
  const fg::tensor<float> g3 = uniform<float>({16, 16, 16, 16}, 65);
  const auto q = same_bits_on_1_2_3_threads<float>(
      [&] {
        return std::vector{fg::max_pool2d(p, 3, 2, "SAME"),         fg::avg_pool2d(p, 3, 2, "SAME"),
                           fg::max_pool2d_grad(p, g3, 3, 2, "SAME"), fg::avg_pool2d_grad(p.shape(), g3, 3, 2, "SAME"),
                           fg::max_pool2d_grad(p, g3, 2, 2, "VALID"), fg::max_pool2d_grad_grad(p, p, 3, 2, "SAME")};
      },
      true);
  // The last image's last window of the 3x3 max pool: rows and columns 30 and 31 (SAME's one
  // row of padding falls after), channel 15.
  float m = -1e30f;
  for (int h = 30; h < 32; ++h)
    for (int w = 30; w < 32; ++w) m = std::max(m, p.data()[((15 * 32 + h) * 32 + w) * 16 + 15]);
  CHECK(q[0].data()[q[0].size() - 1] == m);
}

// libgomp's, which oneDNN runs on and loads (Note [thread count followers]).
extern "C" __attribute__((weak)) int omp_get_max_threads() noexcept;

TEST_CASE("oneDNN's float32 convolutions follow the thread count", "[threads]") {
  // oneDNN splits its own work on OpenMP, whose count the calling thread's convolution sets
  // (Note [thread count followers]); its results on each count agree to float32 rounding with
  // the float64 loops'.
  threads_guard guard;
  REQUIRE(omp_get_max_threads != nullptr);
  const fg::tensor<double> xd = uniform<double>({8, 14, 14, 16}, 71), fd = uniform<double>({3, 3, 16, 32}, 72);
  const fg::tensor<double> want = fg::conv2d(xd, fd, 1, "SAME");
  for (int n : {1, 2, 3}) {
    fg::config::set_intra_op_parallelism_threads(n);
    INFO(n << " threads");
    const fg::tensor<float> y = fg::conv2d(fg::cast<float>(xd), fg::cast<float>(fd), 1, "SAME");
    CHECK(omp_get_max_threads() == n);
    double worst = 0;
    for (std::size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y.data()[i] - want.data()[i]));
    CHECK(worst < 1e-3);
  }
}

TEST_CASE("several user threads run host loops at once, each with the bits of one thread", "[threads]") {
  threads_guard guard;
  fg::config::set_intra_op_parallelism_threads(2);
  const fg::tensor<float> x = uniform<float>({9 * 40009}, 51);  // above parallel_threshold
  auto work = [&] {
    fg::gradient_tape tape;
    tape.watch(x);
    const fg::tensor<float> y = chain(x);
    const fg::tensor<float> loss = fg::sum(chain(x));
    const fg::tensor<float> m = fg::reduce_max(fg::reshape(x, {9, -1}) * 1.f, 0);
    return std::vector{y, loss, tape.gradient(loss, x), m};
  };
  const auto want = work();
  constexpr int users = 4, rounds = 5;
  std::vector<std::string> problems(users);
  std::vector<std::thread> threads;
  for (int u = 0; u < users; ++u)
    threads.emplace_back([&, u] {
      for (int k = 0; k < rounds && problems[u].empty(); ++k) {
        const auto got = work();
        for (std::size_t i = 0; i < got.size(); ++i)
          if (bytes_of(got[i]) != bytes_of(want[i])) problems[u] = "result " + std::to_string(i) + " differs";
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& p : problems) CHECK(p.empty());
}
