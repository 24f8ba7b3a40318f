// Threads: variables read on some threads while another assigns them, tapes destroyed on
// another thread than their creator while it keeps recording, training loops on several
// threads at once giving bitwise the results of one thread, and user threads sharing the
// intra-op pool (Note [intra-op pool]) while the setting changes. Built also with
// -fsanitize=thread (docs/design.md, "Hardening"); Catch2's assertions run on the main thread
// only.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {
/// What a reader thread saw.
struct reader_report {
  int reads = 0;
  std::string problem;  ///< empty when every read was consistent
};
}  // namespace

TEST_CASE("threads recording on their own tapes read a variable while another thread assigns it",
          "[concurrency][variable]") {
  constexpr int assigns = 300;
  constexpr std::size_t n = 64;
  fg::variable<float> w(fg::fill<float>({n}, 0.f), "w");
  std::atomic<bool> done{false};
  std::vector<reader_report> reports(3);
  std::vector<std::thread> readers;
  for (std::size_t r = 0; r < reports.size(); ++r)
    readers.emplace_back([&, r] {
      reader_report& rep = reports[r];
      const fg::tensor<float> x = fg::fill<float>({n}, 2.f);
      float last = 0.f;
      // At least a few reads, also when the writer finishes first.
      while (rep.problem.empty() && (!done.load() || rep.reads < 5)) {
        fg::gradient_tape tape;  // watches w when it is read
        const fg::tensor<float> v = w.value();
        const fg::tensor<float> y = fg::reduce_sum(v * x + w * 0.f);  // a read through an expression too
        const fg::tensor<float> gw = tape.gradient(y, w);
        ++rep.reads;
        // Every value the writer assigns is constant, and the values increase: a read sees one
        // whole value, never a mix, and never an older one than a previous read.
        for (std::size_t i = 0; i < n; ++i)
          if (v.data()[i] != v.data()[0]) rep.problem = "a torn value";
        if (v.data()[0] < last) rep.problem = "an older value after a newer one";
        last = v.data()[0];
        if (y.item() != 2.f * static_cast<float>(n) * v.data()[0]) rep.problem = "a sum of another value than the one read";
        for (std::size_t i = 0; i < n; ++i)
          if (gw.data()[i] != 2.f) rep.problem = "a wrong gradient";
      }
    });
  std::thread writer([&] {
    for (int i = 1; i <= assigns; ++i) w.assign(fg::fill<float>({n}, static_cast<float>(i)));
    done = true;
  });
  writer.join();
  for (auto& t : readers) t.join();
  for (const auto& rep : reports) {
    INFO(rep.problem);
    CHECK(rep.problem.empty());
    CHECK(rep.reads >= 5);
  }
  CHECK(w.peek().data()[n - 1] == static_cast<float>(assigns));
}

TEST_CASE("a value read from a variable stays as it was when the variable is assigned on another thread",
          "[concurrency][variable]") {
  fg::variable<double> v(fg::tensor<double>{1.0, 2.0}, "v");
  const fg::tensor<double> before = v.value();
  std::thread([&] { v.assign_add(fg::tensor<double>{10.0, 10.0}); }).join();
  CHECK(before.data()[0] == 1.0);
  CHECK(before.data()[1] == 2.0);
  CHECK(v.value().data()[1] == 12.0);
}

TEST_CASE("tapes destroyed on another thread while their creator keeps recording", "[concurrency][tape]") {
  constexpr int tapes = 200;
  std::mutex m;
  std::deque<std::unique_ptr<fg::gradient_tape>> handed;
  std::atomic<bool> done{false};
  std::string problem;
  std::thread creator([&] {
    fg::tensor<float> x = 1.5f;
    fg::gradient_tape outer({.persistent = true});
    outer.watch(x);
    for (int i = 0; i < tapes; ++i) {
      auto t = std::make_unique<fg::gradient_tape>();
      t->watch(x);
      const fg::tensor<float> y = x * x;
      {
        const std::lock_guard<std::mutex> g(m);
        handed.push_back(std::move(t));
      }
      // Record while the other thread may be destroying the tapes handed over.
      fg::gradient_tape own;
      own.watch(x);
      const fg::tensor<float> z = x * x * x;
      if (own.gradient(z, x).item() != 3.f * 1.5f * 1.5f) problem = "a wrong gradient on a fresh tape";
    }
    const fg::tensor<float> last = x * x;
    if (outer.gradient(last, x).item() != 3.f) problem = "a wrong gradient on the outer tape";
    done = true;
  });
  std::thread destroyer([&] {
    for (;;) {
      std::unique_ptr<fg::gradient_tape> t;
      {
        const std::lock_guard<std::mutex> g(m);
        if (!handed.empty()) {
          t = std::move(handed.front());
          handed.pop_front();
        }
      }
      if (!t) {
        if (done.load()) break;
        std::this_thread::yield();
      }
    }  // t is destroyed here, on this thread
  });
  creator.join();
  destroyer.join();
  INFO(problem);
  CHECK(problem.empty());
  CHECK(handed.empty());
}

namespace {
/// 200 steps of gradient descent on a linear model y = x w + b with its own tape and variables,
/// over shared read-only data; returns w and b's final values.
std::vector<float> train(const fg::tensor<float>& x, const fg::tensor<float>& y, int k) {
  fg::variable<float> w(fg::fill<float>({1, 4}, 0.1f * static_cast<float>(k)), "w");
  fg::variable<float> b(fg::tensor<float>(0.5f - 0.1f * static_cast<float>(k)), "b");
  const float lr = 0.05f;
  for (int step = 0; step < 200; ++step) {
    fg::gradient_tape tape;
    const fg::tensor<float> pred = fg::reduce_sum(x * w, 1) + b;
    const fg::tensor<float> loss = fg::reduce_mean(fg::square(pred - y)) + 0.01f * fg::reduce_sum(fg::square(w));
    auto [gw, gb] = tape.gradient(loss, std::tie(w, b));
    w.assign_sub(lr * gw);
    b.assign_sub(lr * gb);
  }
  std::vector<float> out(w.peek().data(), w.peek().data() + 4);
  out.push_back(b.peek().item());
  return out;
}
}  // namespace

TEST_CASE("8 threads training their own variables on shared tensors give bitwise the results of one thread",
          "[concurrency][training]") {
  // x: 32 rows of 4 features, y = x (1, -2, 0.5, 3) + 0.25 plus a small wobble.
  std::vector<float> xs(32 * 4), ys(32);
  for (std::size_t i = 0; i < 32; ++i) {
    for (std::size_t j = 0; j < 4; ++j) xs[i * 4 + j] = static_cast<float>((i * 7 + j * 3) % 11) / 11.f - 0.5f;
    ys[i] = xs[i * 4] - 2 * xs[i * 4 + 1] + 0.5f * xs[i * 4 + 2] + 3 * xs[i * 4 + 3] + 0.25f +
            static_cast<float>(i % 3) * 0.01f;
  }
  const fg::tensor<float> x(fg::shape{32, 4}, xs);
  const fg::tensor<float> y(fg::shape{32}, ys);
  constexpr int threads = 8;
  std::vector<std::vector<float>> alone(threads), together(threads);
  for (int k = 0; k < threads; ++k) alone[k] = train(x, y, k);
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) pool.emplace_back([&, k] { together[k] = train(x, y, k); });
  for (auto& t : pool) t.join();
  for (int k = 0; k < threads; ++k) {
    INFO("thread " << k);
    REQUIRE(together[k].size() == alone[k].size());
    CHECK(std::memcmp(together[k].data(), alone[k].data(), alone[k].size() * sizeof(float)) == 0);
  }
  // The steps did move the weights (w starts at 0.1 k).
  for (int k = 0; k < threads; ++k) CHECK(alone[k][0] != 0.1f * static_cast<float>(k));
}

TEST_CASE("user threads share the intra-op pool while the setting changes, each with the bits of one thread",
          "[concurrency][threads]") {
  // Above the threshold, so that loops split: a fused chain, a reduction over an axis, and a
  // loss's gradient under a tape (its saved derivative), then the block backward of two inputs.
  const std::size_t n = 3 * fusegrad::core::parallel_grain;
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1013) / 127.f - 4.f;
  const fg::tensor<float> x(fg::shape{n}, v);
  const fg::tensor<float> w = fg::fill<float>({3, 1}, 0.5f);
  auto work = [&] {
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    tape.watch(w);
    const fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
    const fg::tensor<float> loss = fg::sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
    const fg::tensor<float> x3 = fg::reshape(x, {3, -1});
    const fg::tensor<float> weighted = fg::sum(fg::exp(x3) * w);
    auto g = tape.gradient(weighted, std::vector{x, w});
    return std::vector{y, loss, fg::reduce_max(x3, 0), tape.gradient(loss, x), g[0], g[1]};
  };
  fg::config::set_intra_op_parallelism_threads(1);
  const auto want = work();
  std::atomic<bool> done{false};
  std::vector<std::string> problems(3);
  std::vector<std::thread> users;
  for (std::size_t u = 0; u < problems.size(); ++u)
    users.emplace_back([&, u] {
      for (int round = 0; round < 4 && problems[u].empty(); ++round) {
        const auto got = work();
        for (std::size_t i = 0; i < got.size(); ++i)
          if (got[i].size() != want[i].size() ||
              std::memcmp(got[i].data(), want[i].data(), want[i].size() * sizeof(float)) != 0)
            problems[u] = "result " + std::to_string(i) + " differs";
      }
    });
  std::thread setter([&] {
    for (int k = 0; !done.load(); ++k) {
      fg::config::set_intra_op_parallelism_threads(1 + k % 3);
      std::this_thread::yield();
    }
  });
  for (auto& t : users) t.join();
  done = true;
  setter.join();
  fg::config::set_intra_op_parallelism_threads(0);
  for (const auto& p : problems) {
    INFO(p);
    CHECK(p.empty());
  }
  // A task that throws on a worker: the caller gets the exception, and the pool goes on.
  fg::config::set_intra_op_parallelism_threads(2);
  CHECK_THROWS_AS(fusegrad::core::run_tasks(2, [](std::size_t t) {
                    if (t == 1) throw fg::value_error("from a worker");
                  }),
                  fg::value_error);
  const auto regions = fusegrad::core::counters().parallel_regions;
  const fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  CHECK(fusegrad::core::counters().parallel_regions == regions + 1);
  CHECK(std::memcmp(y.data(), want[0].data(), n * sizeof(float)) == 0);
  fg::config::set_intra_op_parallelism_threads(0);
}
