// gradient_tape semantics: options, watching, stop_recording, reset, unconnected gradients,
// output gradients, several sources, threads, memory release, and misuse.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <latch>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

TEST_CASE("seed 000 example 2: nested tapes give 81 and 54 for 3x^3 at 3", "[tape]") {
  fg::tensor<float> x = 3.0f;
  fg::tensor<float> dy_dx, d2y_dx2;
  {
    fg::gradient_tape gg;
    gg.watch(x);
    {
      fg::gradient_tape g;
      g.watch(x);
      fg::tensor<float> y = 3 * x * x * x;
      dy_dx = g.gradient(y, x);
    }
    d2y_dx2 = gg.gradient(dy_dx, x);
  }
  CHECK(dy_dx.item() == 81.f);
  CHECK(d2y_dx2.item() == 54.f);
}

TEST_CASE("a tape records only evaluations whose inputs it watches", "[tape]") {
  fg::tensor<float> x = 2.f, c = 5.f;
  fg::gradient_tape tape;
  fg::tensor<float> unwatched = c * c;
  CHECK(tape.size() == 0);
  tape.watch(x);
  fg::tensor<float> y = x * c;
  fg::tensor<float> z = y + unwatched;
  CHECK(tape.size() == 2);
  CHECK(tape.gradient(z, x).item() == 5.f);
}

TEST_CASE("an unconnected source gives an undefined tensor, or zeros on request", "[tape]") {
  fg::tensor<float> x = 2.f;
  fg::tensor<float> z = fg::fill<float>({2, 2}, 1.f);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  tape.watch(z);
  fg::tensor<float> y = x * x;
  CHECK_FALSE(tape.gradient(y, z).defined());
  fg::tensor<float> dz = tape.gradient(y, z, fg::unconnected_gradients::zero);
  REQUIRE(dz.defined());
  CHECK(dz.shape() == fg::shape{2, 2});
  CHECK(fg::reduce_sum(fg::abs(dz)).item() == 0.f);
}

TEST_CASE("a non-scalar target is summed, as in TensorFlow", "[tape]") {
  fg::tensor<double> x = {1.0, 2.0, 3.0};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = x * x;
  fg::tensor<double> g = tape.gradient(y, x);
  CHECK(g.data()[0] == 2.0);
  CHECK(g.data()[1] == 4.0);
  CHECK(g.data()[2] == 6.0);
}

TEST_CASE("output_gradients weight the target's elements", "[tape]") {
  fg::tensor<double> x = {1.0, 2.0};
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  fg::tensor<double> y = x * x * x;
  fg::tensor<double> g = tape.gradient(y, x, fg::tensor<double>{10.0, 100.0});
  CHECK(g.data()[0] == 30.0);
  CHECK(g.data()[1] == 1200.0);
  CHECK_THROWS_AS(tape.gradient(y, x, fg::tensor<double>{1.0, 2.0, 3.0}), std::invalid_argument);
  CHECK_THROWS_WITH(tape.gradient(y, x, fg::tensor<double>{1.0, 2.0, 3.0}),
                    Catch::Contains("output_gradients has shape (3,)") && Catch::Contains("(2,)"));
  CHECK(tape.gradient(y, x).data()[1] == 12.0);  // still usable
}

TEST_CASE("gradient with a list of sources returns them in order", "[tape]") {
  fg::tensor<float> a = 2.f, b = 3.f, c = 4.f;
  fg::gradient_tape tape;
  tape.watch(a);
  tape.watch(b);
  tape.watch(c);
  fg::tensor<float> y = a * b + c * c;
  std::vector<fg::tensor<float>> g = tape.gradient(y, {a, b, c});
  REQUIRE(g.size() == 3);
  CHECK(g[0].item() == 3.f);
  CHECK(g[1].item() == 2.f);
  CHECK(g[2].item() == 8.f);
}

TEST_CASE("an unevaluated expression target is differentiated as if assigned in the tape", "[tape]") {
  fg::tensor<float> x = 3.f;
  fg::gradient_tape tape;
  tape.watch(x);
  CHECK(tape.gradient(x * x + 1, x).item() == 6.f);
}

TEST_CASE("stop_recording and stop_gradient cut the recording", "[tape]") {
  fg::tensor<double> x = 2.0;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  fg::tensor<double> y = x * x;
  fg::tensor<double> hidden;
  {
    auto pause = tape.stop_recording();
    hidden = x * 10;
  }
  fg::tensor<double> z = y + hidden;
  CHECK(tape.gradient(z, x).item() == 4.0);
  fg::tensor<double> w = fg::stop_gradient(x * x) * x;
  CHECK(tape.gradient(w, x).item() == 4.0);
}

TEST_CASE("reset forgets the recording; the tape records again afterwards", "[tape]") {
  fg::tensor<double> x = 2.0;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = x * x;
  tape.reset();
  CHECK(tape.size() == 0);
  CHECK_FALSE(tape.gradient(y, x).defined());
  fg::gradient_tape tape2;
  tape2.watch(x);
  fg::tensor<double> y2 = x * x * x;
  CHECK(tape2.gradient(y2, x).item() == 12.0);
}

TEST_CASE("integer sources are rejected with a message naming the dtype", "[tape][errors]") {
  fg::tensor<int> i = 3;
  fg::tensor<float> x = 1.f;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  fg::tensor<float> y = x * 2;
  CHECK_THROWS_AS(tape.gradient(y, i), std::invalid_argument);
  CHECK_THROWS_WITH(tape.gradient(y, i), Catch::Contains("int32"));
  CHECK(tape.gradient(y, x).item() == 2.f);
}

TEST_CASE("tapes are thread-local: two threads record independently", "[tape][threads]") {
  auto work = [](double v, double* out) {
    fg::tensor<double> x = v;
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<double> y = x;
    for (int i = 0; i < 200; ++i) y = y * 1.0 + x;  // y = 201 x
    *out = tape.gradient(y, x).item();
  };
  double a = 0, b = 0;
  std::thread t1(work, 1.0, &a), t2(work, 2.0, &b);
  t1.join();
  t2.join();
  CHECK(a == 201.0);
  CHECK(b == 201.0);
}

TEST_CASE("using a tape from another thread is an error", "[tape][threads][errors]") {
  fg::tensor<double> x = 1.0;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = x * x;
  std::string message;
  std::thread t([&] {
    try {
      (void)tape.gradient(y, x);
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
  });
  t.join();
  CHECK_THAT(message, Catch::Contains("belongs to the thread that created it"));
  CHECK(tape.gradient(y, x).item() == 2.0);
}

TEST_CASE("a non-persistent tape releases what it saved once it has answered", "[tape][memory]") {
  auto& c = fg::core::counters();
  const auto live0 = c.live_buffers;
  {
    fg::tensor<double> x = fg::linspace<double>(0, 1, 1000);
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<double> y = fg::sum(fg::exp(x) * x);
    {
      fg::tensor<double> tmp = fg::exp(x);  // saved by the tape: an input of a recorded op
      y = fg::sum(tmp * x) + y;
    }
    CHECK(c.live_buffers > live0 + 2);  // the tape holds tmp and the first sum beyond x and y
    fg::tensor<double> g = tape.gradient(y, x);
    // After gradient() the tape holds nothing: only x, y and g are alive.
    CHECK(c.live_buffers == live0 + 3);
    CHECK(tape.size() == 0);
  }
  CHECK(c.live_buffers == live0);
}

TEST_CASE("a tape's saved tensors are freed when the tape dies or is reset", "[tape][memory]") {
  auto& c = fg::core::counters();
  fg::tensor<double> x = fg::linspace<double>(0, 1, 100);
  const auto live0 = c.live_buffers;
  {
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    {
      fg::tensor<double> t = fg::exp(x);
      fg::tensor<double> u = t * t;
      (void)u;
    }
    CHECK(c.live_buffers > live0);  // the tape keeps t (and u's id entry) alive
    tape.reset();
    CHECK(c.live_buffers == live0);
    tape.watch(x);  // reset also forgets what was watched
    {
      fg::tensor<double> t = fg::exp(x);
      fg::tensor<double> u = t * t;
      (void)u;
    }
    CHECK(c.live_buffers > live0);
  }
  CHECK(c.live_buffers == live0);
}

TEST_CASE("an error raised by a backward function keeps its type, its message naming the op", "[tape][errors]") {
  // A gradient function that rejects a value, one that indexes past an end, one that uses an
  // undefined tensor in an op (a value_error from the op) and one that returns a gradient of
  // the wrong shape (a shape_error from the tape's check).
  auto rejects = fg::custom_gradient([](const fg::tensor<double>& a) {
    auto grad = [](const fg::tensor<double>&) -> fg::tensor<double> { throw fg::value_error("dy must be positive"); };
    return std::make_pair(fg::tensor<double>(2 * a), grad);
  });
  auto indexes = fg::custom_gradient([](const fg::tensor<double>& a) {
    auto grad = [](const fg::tensor<double>&) -> fg::tensor<double> { throw fg::index_error("index 5 out of [0, 1)"); };
    return std::make_pair(fg::tensor<double>(2 * a), grad);
  });
  auto undefined = fg::custom_gradient([](const fg::tensor<double>& a) {
    auto grad = [](const fg::tensor<double>& dy) {
      fg::tensor<double> none;
      return fg::tensor<double>(dy * none);
    };
    return std::make_pair(fg::tensor<double>(2 * a), grad);
  });
  auto bad_shape = fg::custom_gradient([](const fg::tensor<double>& a) {
    auto grad = [](const fg::tensor<double>&) { return fg::zeros<double>({3}); };
    return std::make_pair(fg::tensor<double>(2 * a), grad);
  });
  fg::tensor<double> a = 1.0;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(a);
  const fg::tensor<double> y1 = rejects(a), y2 = indexes(a), y3 = undefined(a), y4 = bad_shape(a);
  const auto names_op = Catch::Contains("the backward function of 'custom_gradient' failed");
  CHECK_THROWS_AS(tape.gradient(y1, a), fg::value_error);
  CHECK_THROWS_WITH(tape.gradient(y1, a), names_op && Catch::Contains("dy must be positive"));
  CHECK_THROWS_AS(tape.gradient(y2, a), fg::index_error);
  CHECK_THROWS_WITH(tape.gradient(y2, a), names_op && Catch::Contains("index 5 out of [0, 1)"));
  CHECK_THROWS_AS(tape.gradient(y3, a), fg::value_error);
  CHECK_THROWS_WITH(tape.gradient(y3, a), names_op && Catch::Contains("undefined tensor"));
  CHECK_THROWS_AS(tape.gradient(y4, a), fg::shape_error);
  CHECK_THROWS_WITH(tape.gradient(y4, a), names_op && Catch::Contains("(3,)"));
  CHECK(tape.gradient(fg::tensor<double>(a * a), a).item() == 2.0);  // still usable
}

TEST_CASE("watching integer tensors from two threads warns exactly once", "[tape][threads]") {
  // No other test of this file watches an integer tensor, so the process-wide warning has not
  // been printed yet. The two threads start together, so an unsynchronised flag lets both
  // print (a data race, which -fsanitize=thread reports on every run).
  std::ostringstream captured;
  std::streambuf* const old = std::cerr.rdbuf(captured.rdbuf());
  std::latch start(2);
  auto work = [&start] {
    const fg::tensor<std::int32_t> i = 3;
    fg::gradient_tape tape;
    start.arrive_and_wait();
    tape.watch(i);
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  std::cerr.rdbuf(old);
  const std::string text = captured.str();
  const std::string warning = "watching an integer tensor";
  std::size_t count = 0;
  for (std::size_t p = text.find(warning); p != std::string::npos; p = text.find(warning, p + 1)) ++count;
  INFO("captured: " << text);
  CHECK(count == 1);
}

TEST_CASE("gradient() checks each gradient a backward step returns and names the op of a bad one", "[tape][errors]") {
  // A made-up op whose backward returns a gradient of the wrong shape, for an input that is
  // another entry's output (y) and for one that is a source (x).
  for (const bool on_source : {false, true}) {
    fg::tensor<float> x = {1.f, 2.f, 3.f};
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<float> y = x * 2.f;
    fg::tensor<float> z = fg::ones<float>({3});
    const fg::tensor_id in = on_source ? x.id() : y.id();
    fg::autodiff::record_op<float, 1>("bad_op", {in}, z, [](const fg::tensor<float>&, auto) {
      return std::array{fg::tensor<float>({1.f, 2.f})};
    });
    fg::tensor<float> loss = fg::reduce_sum(z * y);
    CHECK_THROWS_AS(tape.gradient(loss, x), fg::value_error);
  }
  fg::tensor<float> x = {1.f, 2.f, 3.f};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::exp(x);
  fg::tensor<float> z = fg::ones<float>({3});
  fg::autodiff::record_op<float, 1>("bad_op", {y.id()}, z, [](const fg::tensor<float>&, auto) {
    return std::array{fg::tensor<float>({{1.f, 2.f, 3.f}})};
  });
  CHECK_THROWS_WITH(tape.gradient(fg::reduce_sum(z), x),
                    Catch::Contains("backward function of 'bad_op'") && Catch::Contains("input 0") &&
                        Catch::Contains("shape (1, 3)") && Catch::Contains("that input has shape (3,)"));
  // A correct backward passes the check: d/dx sum(exp(x) * 1) through an identity op.
  fg::tensor<float> x2 = {0.f, 1.f};
  fg::gradient_tape t2;
  t2.watch(x2);
  fg::tensor<float> y2 = fg::exp(x2);
  fg::tensor<float> z2 = fg::ones<float>({2});
  fg::autodiff::record_op<float, 1>("identity_op", {y2.id()}, z2, [](const fg::tensor<float>& g, auto) {
    return std::array{g};
  });
  const fg::tensor<float> g2 = t2.gradient(fg::reduce_sum(z2), x2);
  CHECK(g2.data()[0] == Approx(1.0));
  CHECK(g2.data()[1] == Approx(std::exp(1.0)));
}

TEST_CASE("a tape destroyed on another thread than its creator leaves the creator's ops and tapes working",
          "[tape][threads]") {
  fg::tensor<float> x = 3.f;
  fg::gradient_tape outer;
  outer.watch(x);
  auto inner = std::make_unique<fg::gradient_tape>();
  inner->watch(x);
  auto innermost = std::make_unique<fg::gradient_tape>();
  innermost->watch(x);
  const fg::tensor<float> y = x * x;
  CHECK(inner->size() == 1);
  // Two of this thread's three tapes go on another thread; the outer one stays.
  std::thread([&] {
    inner.reset();
    innermost.reset();
  }).join();
  // This thread keeps running ops and recording: nothing touches the tapes that are gone.
  const fg::tensor<float> z = y * x;
  CHECK(outer.size() == 2);
  fg::gradient_tape fresh;
  fresh.watch(x);
  const fg::tensor<float> w = x * x * x;
  CHECK(fresh.gradient(w, x).item() == 27.f);
  CHECK(outer.gradient(z, x).item() == 27.f);  // z = x^3
}

TEST_CASE("a tape whose creator thread has exited may be destroyed on another thread", "[tape][threads]") {
  std::unique_ptr<fg::gradient_tape> t;
  fg::tensor<float> v = 2.f;
  std::thread([&] {
    t = std::make_unique<fg::gradient_tape>(fg::gradient_tape::options{.persistent = true});
    t->watch(v);
    const fg::tensor<float> a = v * v;
  }).join();
  CHECK(t->size() == 1);
  CHECK_THROWS_AS(t->watch(v), fg::tape_error);  // its other methods still belong to the creator
  t.reset();
  const fg::tensor<float> b = v * v;  // this thread's ops are unaffected
  CHECK(b.item() == 4.f);
}

namespace {
/// Resident memory of this process in bytes (Linux), 0 where unknown.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}
}  // namespace

TEST_CASE("a training loop keeps live buffers and resident memory flat over thousands of steps", "[tape][memory]") {
  // A 2-layer MLP step: matmul, bias, relu, logsumexp cross-entropy, gradient for 4 variables,
  // assign_sub. After a warm-up every step must free all it made.
  auto& c = fg::core::counters();
  fg::variable<float> w1(fg::random::normal<float>({20, 16}, /*seed=*/1, 0.f, 0.1f), "w1");
  fg::variable<float> b1(fg::zeros<float>({16}), "b1");
  fg::variable<float> w2(fg::random::normal<float>({16, 4}, /*seed=*/2, 0.f, 0.1f), "w2");
  fg::variable<float> b2(fg::zeros<float>({4}), "b2");
  const fg::tensor<float> x = fg::random::uniform<float>({8, 20}, /*seed=*/3, 0.f, 1.f);
  const fg::tensor<float> labels = fg::one_hot<float>(fg::tensor<int>({0, 1, 2, 3, 0, 1, 2, 3}), 4);
  float first_loss = 0.f, loss_value = 0.f;
  auto step = [&] {
    fg::gradient_tape tape;
    const fg::tensor<float> h = fg::relu(fg::matmul(x, w1) + b1);
    const fg::tensor<float> logits = fg::matmul(h, w2) + b2;
    const fg::tensor<float> lse = fg::reduce_logsumexp(logits, 1, /*keepdims=*/true);
    const fg::tensor<float> loss = -fg::reduce_mean(fg::reduce_sum(labels * (logits - lse), 1));
    auto [g1, gb1, g2, gb2] = tape.gradient(loss, std::tie(w1, b1, w2, b2));
    w1.assign_sub(0.1f * g1);
    b1.assign_sub(0.1f * gb1);
    w2.assign_sub(0.1f * g2);
    b2.assign_sub(0.1f * gb2);
    loss_value = loss.item();
  };
  for (int i = 0; i < 200; ++i) {
    step();
    if (i == 0) first_loss = loss_value;
  }
  const auto live = c.live_buffers;
  const std::size_t rss = resident_bytes();
  for (int i = 0; i < 3000; ++i) {
    step();
    REQUIRE(c.live_buffers == live);
  }
  CHECK(loss_value < first_loss);  // it trains
  // A leak of one small tensor per step would be 3000 allocations; the allocator may still
  // round up a page or two. (AddressSanitizer holds freed memory in quarantine: there only the
  // live buffers say something.)
#if !defined(__SANITIZE_ADDRESS__)
  if (rss > 0) CHECK(resident_bytes() <= rss + (std::size_t{256} << 10));
#endif
}
