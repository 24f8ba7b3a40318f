// Misuse of the core API, each case with a defined outcome: conversions to C++ scalars that would
// be undefined behaviour, C++ integers that do not fit a tensor's element type, device strings,
// moved-from and default-constructed tensors and variables, tape accessors on another thread, a
// stop_recording() guard that outlives its tape, reset() while the tape computes a gradient, and
// gradient() in a loop on a persistent tape that is recording.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <latch>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Contains;

namespace {
/// Counts the non-overlapping occurrences of `what` in `text`.
std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/// Matches a message that contains each of the given parts (a matcher held by value, unlike
/// Catch's `&&` combination, which refers to its operands).
struct mentions : Catch::MatcherBase<std::string> {
  std::vector<std::string> parts;
  explicit mentions(std::vector<std::string> p) : parts(std::move(p)) {}
  bool match(const std::string& s) const override {
    for (const auto& p : parts)
      if (s.find(p) == std::string::npos) return false;
    return true;
  }
  std::string describe() const override {
    std::string d = "mentions";
    for (const auto& p : parts) d += " \"" + p + "\"";
    return d;
  }
};

/// Captures what is written to std::cerr while alive.
class cerr_capture {
 public:
  cerr_capture() : old_(std::cerr.rdbuf(out_.rdbuf())) {}
  ~cerr_capture() { std::cerr.rdbuf(old_); }
  cerr_capture(const cerr_capture&) = delete;
  cerr_capture& operator=(const cerr_capture&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::streambuf* old_;
};
}  // namespace

// ---- Conversions to C++ scalars -------------------------------------------------------------

TEST_CASE("a floating tensor converts to an unsigned type with the signed types' rule", "[misuse]") {
  // In range: truncation toward zero. Out of range, NaN and infinities: the type's minimum, 0
  // (INT_MIN for int, the rule fg::cast follows). Each of these is undefined behaviour as a
  // plain C++ conversion.
  CHECK(unsigned(fg::tensor<float>(-1.f)) == 0u);
  CHECK(std::uint64_t(fg::tensor<double>(1e20)) == 0u);
  CHECK(unsigned(fg::tensor<float>(-0.5f)) == 0u);  // truncates to 0, which fits
  CHECK(unsigned(fg::tensor<float>(3.9f)) == 3u);
  CHECK(unsigned(fg::tensor<float>(4294967040.f)) == 4294967040u);  // 2^32 - 256, the largest float below 2^32
  CHECK(unsigned(fg::tensor<float>(4294967296.f)) == 0u);           // 2^32
  CHECK(std::uint64_t(fg::tensor<double>(1e19)) == 10000000000000000000ull);  // 10^19 is exact in double
  CHECK(std::uint64_t(fg::tensor<double>(18446744073709551616.0)) == 0u);     // 2^64
  CHECK(std::uint8_t(fg::tensor<float>(255.9f)) == 255u);
  CHECK(std::uint8_t(fg::tensor<float>(256.f)) == 0u);
  CHECK(std::uint16_t(fg::tensor<double>(-1e300)) == 0u);
  CHECK(unsigned(fg::tensor<float>(std::numeric_limits<float>::quiet_NaN())) == 0u);
  CHECK(unsigned(fg::tensor<float>(std::numeric_limits<float>::infinity())) == 0u);
  CHECK(std::uint64_t(fg::tensor<double>(-std::numeric_limits<double>::infinity())) == 0u);
  // The signed rule, for comparison: the minimum of the type.
  CHECK(int(fg::tensor<float>(-3e9f)) == std::numeric_limits<int>::min());
  CHECK(std::int64_t(fg::tensor<double>(1e20)) == std::numeric_limits<std::int64_t>::min());
  CHECK(int(fg::tensor<float>(std::numeric_limits<float>::quiet_NaN())) == std::numeric_limits<int>::min());
  // A lazy expression converts through the same rule.
  const fg::tensor<float> m = -1.f;
  CHECK(unsigned(m * 2.f) == 0u);
  CHECK(int(m * 1e10f) == std::numeric_limits<int>::min());
  CHECK(unsigned(m * -2.5f) == 2u);
  // An integer tensor converts as C++ integers do (modular for unsigned, defined behaviour).
  CHECK(unsigned(fg::tensor<std::int32_t>(-1)) == 4294967295u);
}

TEST_CASE("a C++ integer that does not fit an integer tensor's type is an error naming the op, value and dtype",
          "[misuse]") {
  const fg::tensor<std::int32_t> one{1};
  const auto names = [](const char* op) { return mentions({std::string("fg::") + op, "3000000000", "int32"}); };
  CHECK_THROWS_AS(one + 3000000000LL, fg::value_error);
  CHECK_THROWS_WITH(one + 3000000000LL, names("add"));
  CHECK_THROWS_WITH(3000000000LL - one, names("subtract"));
  CHECK_THROWS_WITH(one * 3000000000LL, names("multiply"));
  CHECK_THROWS_WITH(one == 3000000000LL, names("equal"));
  CHECK_THROWS_WITH(fg::maximum(one, 3000000000LL), names("maximum"));
  CHECK_THROWS_WITH(fg::where(one > 0, one, 3000000000LL), names("where"));
  CHECK_THROWS_WITH(one + 3000000000u, names("add"));  // an unsigned scalar too
  CHECK_THROWS_WITH(one + (-3000000000LL), Contains("fg::add") && Contains("-3000000000"));
  // Tensors made from C++ integers: a scalar and nested lists.
  CHECK_THROWS_WITH([] { fg::tensor<std::int32_t> t = 3000000000LL; return t; }(), names("tensor"));
  CHECK_THROWS_WITH([] { fg::tensor<std::int32_t> t = {3000000000LL}; return t; }(), names("tensor"));
  CHECK_THROWS_WITH(([] { fg::tensor<std::int32_t> t = {{1LL, 2LL}, {3LL, 3000000000LL}}; return t; }()),
                    names("tensor"));
  CHECK_THROWS_WITH(fg::tensor<std::int64_t>{1} + 18446744073709551615ull,
                    Contains("fg::add") && Contains("18446744073709551615") && Contains("int64"));
  // Values that fit are accepted, at both ends of the range; 1 + INT_MAX wraps around as in
  // TensorFlow (Note [integer wraparound]).
  CHECK(fg::tensor<std::int32_t>(one + 2147483647LL).item() == std::numeric_limits<std::int32_t>::min());
  CHECK(fg::tensor<std::int32_t>(one + (-2147483648LL)).item() == -2147483647);
  CHECK(fg::tensor<std::int32_t>{2147483647LL, -2147483648LL}.numpy()(1) == -2147483648LL);
  // Floating tensors take any integer, rounded: 3e9 + 1 is 3e9 in float32.
  CHECK(fg::tensor<float>(fg::tensor<float>{1.f} + 3000000000LL).item() == 3000000000.f);
}

TEST_CASE("device strings parse strictly, and a bad one names itself", "[misuse]") {
  const auto rejects = [](const char* s) {
    CHECK_THROWS_AS(fg::device::parse(s), fg::device_error);
    CHECK_THROWS_WITH(fg::device::parse(s), Contains(std::string("'") + s + "'"));
  };
  rejects("/gpu:99999999999");  // does not fit an int
  rejects("/gpu:2147483648");
  rejects("/cpu:xyz");
  rejects("/cpu:1");  // one host device
  rejects("/gpu:");
  rejects("/gpu:-1");
  rejects("/gpu:1x");
  rejects("/gpux");
  rejects("/cpu0");
  rejects("/tpu:0");
  rejects("");
  CHECK_THROWS_WITH(fg::device_scope("/cpu:xyz"), Contains("'/cpu:xyz'"));
  CHECK(fg::device::parse("/cpu:0") == fg::device::cpu());
  CHECK(fg::device::parse("cpu") == fg::device::cpu());
  CHECK(fg::device::parse("/device:CPU:0") == fg::device::cpu());
  CHECK(fg::device::parse("GPU") == fg::device::gpu(0));
  CHECK(fg::device::parse("/device:GPU:3") == fg::device::gpu(3));
  CHECK(fg::device::parse("/gpu:2147483647") == fg::device::gpu(2147483647));
}

// ---- Moved-from and default-constructed objects --------------------------------------------

namespace {
/// Checks that every operation on `u`, an undefined tensor, throws fg::value_error naming the
/// operation (or, for printing, writes `tensor(undefined)`).
void check_undefined_tensor(const fg::tensor<float>& u, const fg::tensor<float>& good) {
  CHECK_FALSE(u.defined());
  CHECK(u.id() == 0);
  const auto undefined = Contains("undefined");
  // Arithmetic and elementwise ops.
  CHECK_THROWS_AS(u + 1.f, fg::value_error);
  CHECK_THROWS_WITH(u + 1.f, undefined);
  CHECK_THROWS_WITH(1.f - u, undefined);
  CHECK_THROWS_WITH(u * good, undefined);
  CHECK_THROWS_WITH(-u, undefined);
  CHECK_THROWS_WITH(fg::exp(u), undefined);
  CHECK_THROWS_WITH(fg::cast<double>(u), undefined);
  CHECK_THROWS_WITH(fg::tensor<float>(fg::sigmoid(u) * 2.f), undefined);
  // Reductions and boundary ops.
  CHECK_THROWS_WITH(fg::reduce_sum(u), undefined);
  CHECK_THROWS_WITH(fg::matmul(u, good), undefined);
  // Shape ops.
  CHECK_THROWS_WITH(fg::reshape(u, fg::shape{1}), Contains("fg::reshape") && undefined);
  CHECK_THROWS_WITH(fg::reshape(u, {-1}), Contains("fg::reshape") && undefined);
  CHECK_THROWS_WITH(fg::expand_dims(u, 0), Contains("fg::expand_dims") && undefined);
  CHECK_THROWS_WITH(fg::squeeze(u), Contains("fg::squeeze") && undefined);
  CHECK_THROWS_WITH(fg::transpose(u), undefined);
  CHECK_THROWS_WITH(fg::broadcast_to(u, fg::shape{2}), undefined);
  CHECK_THROWS_WITH(fg::concat({u, good}), undefined);
  CHECK_THROWS_WITH(fg::stack({u, good}), undefined);
  // Host access and conversions.
  CHECK_THROWS_WITH(u.item(), Contains("fg::tensor::item") && undefined);
  CHECK_THROWS_WITH(u.numpy(), Contains("fg::tensor::numpy") && undefined);
  CHECK_THROWS_WITH(u.xview(), Contains("fg::tensor::xview") && undefined);
  CHECK_THROWS_WITH(float(u), Contains("fg::tensor::item") && undefined);
  CHECK_THROWS_WITH(static_cast<bool>(u), undefined);
  CHECK_THROWS_WITH(u.cpu(), Contains("fg::tensor::to") && undefined);
  CHECK_THROWS_WITH(fg::numpy_str(u), Contains("fg::numpy_str") && undefined);
  // Printing shows it as TensorFlow prints None, so that an unconnected gradient can be printed.
  std::ostringstream os;
  os << u;
  CHECK(os.str() == "tensor(undefined)");
  // As a tape's watched tensor, gradient target and gradient source.
  fg::gradient_tape tape({.persistent = true});
  CHECK_THROWS_WITH(tape.watch(u), Contains("gradient_tape::watch") && undefined);
  tape.watch(good);
  const fg::tensor<float> y = good * good;
  const auto pause = tape.stop_recording();  // the gradients below need not be recorded
  CHECK_THROWS_WITH(tape.gradient(u, good), Contains("gradient_tape::gradient") && Contains("target is undefined"));
  CHECK_THROWS_WITH(tape.gradient(y, u), Contains("gradient_tape::gradient") && Contains("source tensor is undefined"));
  CHECK_THROWS_WITH(tape.gradient(u * 2.f, good), undefined);
  CHECK(tape.gradient(y, good).item() == 2 * good.item());
}
}  // namespace

TEST_CASE("every operation on a moved-from or default-constructed tensor is a clear error", "[misuse]") {
  const fg::tensor<float> good = 3.f;
  SECTION("default-constructed") { check_undefined_tensor(fg::tensor<float>(), good); }
  SECTION("moved from by construction") {
    fg::tensor<float> x = {1.f, 2.f};
    const fg::tensor<float> y = std::move(x);
    CHECK((y.numpy() == xt::xarray<float>{1.f, 2.f}));
    check_undefined_tensor(x, good);  // NOLINT(bugprone-use-after-move): the point of the test
  }
  SECTION("moved from by assignment") {
    fg::tensor<float> x = 5.f;
    fg::tensor<float> y;
    y = std::move(x);
    CHECK(y.item() == 5.f);
    check_undefined_tensor(x, good);  // NOLINT(bugprone-use-after-move)
  }
  SECTION("assigned to itself by move, it keeps its value") {
    fg::tensor<float> x = 7.f;
    fg::tensor<float>& alias = x;
    x = std::move(alias);
    CHECK(x.item() == 7.f);
  }
}

TEST_CASE("a moved-from tensor is not differentiated with the value it gave away", "[misuse]") {
  const fg::tensor<float> a = 2.f;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(a);
  fg::tensor<float> y = a * a * a;
  const fg::tensor<float> z = std::move(y);
  const auto pause = tape.stop_recording();  // the gradients below need not be recorded
  CHECK_THROWS_AS(tape.gradient(y, a), fg::value_error);  // NOLINT(bugprone-use-after-move)
  CHECK(tape.gradient(z, a).item() == 12.f);              // 3 a^2
  fg::tensor<float> b = a;
  const fg::tensor<float> c = std::move(b);
  CHECK_THROWS_WITH(tape.gradient(z, b), Contains("source tensor is undefined"));  // NOLINT(bugprone-use-after-move)
  CHECK(tape.gradient(z, c).item() == 12.f);  // c shares a's id
}

TEST_CASE("every operation on a moved-from variable is a clear error naming it", "[misuse]") {
  fg::variable<float> v(fg::tensor<float>{1.f, 2.f}, "w");
  const fg::variable<float> w = std::move(v);
  CHECK(w.name() == "w");
  CHECK((w.value().numpy() == xt::xarray<float>{1.f, 2.f}));
  const auto moved = [](const char* op) { return mentions({std::string("fg::variable::") + op, "moved from"}); };
  // NOLINTBEGIN(bugprone-use-after-move): the point of the test
  CHECK_THROWS_AS(v.value(), fg::value_error);
  CHECK_THROWS_WITH(v.value(), moved("value"));
  CHECK_THROWS_WITH(v.read_value(), moved("value"));
  CHECK_THROWS_WITH(v.peek(), moved("peek"));
  CHECK_THROWS_WITH(v.name(), moved("name"));
  CHECK_THROWS_WITH(v.shape(), moved("shape"));
  CHECK_THROWS_WITH(v.trainable(), moved("trainable"));
  CHECK_THROWS_WITH(v.id(), moved("id"));
  CHECK_THROWS_WITH(v.assign(fg::tensor<float>{3.f, 4.f}), moved("assign"));
  CHECK_THROWS_WITH(v.assign(w * 2.f), moved("assign"));
  CHECK_THROWS_WITH(v.assign_add(fg::tensor<float>{3.f, 4.f}), moved("assign_add"));
  CHECK_THROWS_WITH(v.assign_sub(1.f), moved("assign_sub"));
  CHECK(v.dtype() == fg::dtype::float32);  // a property of the C++ type
  CHECK_FALSE(v.valid());
  CHECK(w.valid());
  // Read through ops and conversions.
  CHECK_THROWS_WITH(v + 1.f, moved("value"));
  CHECK_THROWS_WITH(fg::exp(v), moved("value"));
  CHECK_THROWS_WITH(fg::reduce_sum(v), moved("value"));
  CHECK_THROWS_WITH(fg::tensor<float>(v), moved("value"));
  CHECK_THROWS_WITH(fg::reshape(v, {2, 1}), moved("value"));
  // Printing reads the value.
  {
    std::ostringstream os;
    CHECK_THROWS_WITH(os << fg::tensor<float>(v), moved("value"));
  }
  // Watched by a tape, explicitly or by being read, and as a gradient source.
  {
    fg::gradient_tape tape;
    CHECK_THROWS_WITH(tape.watch(v), Contains("gradient_tape::watch") && Contains("moved from"));
    const fg::tensor<float> y = fg::reduce_sum(w * w);
    CHECK_THROWS_WITH(tape.gradient(y, v), Contains("gradient_tape::gradient") && Contains("moved from"));
  }
  // A copy of a moved-from variable is moved-from too; assigning a new variable revives it.
  const fg::variable<float> copy = v;
  CHECK_THROWS_WITH(copy.value(), moved("value"));
  v = fg::variable<float>(fg::tensor<float>{5.f}, "again");
  CHECK(v.name() == "again");
  CHECK(v.value().item() == 5.f);
  // NOLINTEND(bugprone-use-after-move)
  // The variable moved to is untouched and still differentiable.
  fg::gradient_tape tape;
  const fg::tensor<float> loss = fg::reduce_sum(w * w);
  CHECK((tape.gradient(loss, w).numpy() == xt::xarray<float>{2.f, 4.f}));
}

// ---- Tapes ------------------------------------------------------------------------------

TEST_CASE("size() and watched_variables() refuse a thread that does not own the tape", "[misuse][threads]") {
  // The owner records while another thread calls the accessors; each call must throw
  // fg::tape_error without reading the tape's state. Catch's assertions run on this thread.
  const fg::variable<float> v(fg::tensor<float>{1.f, 2.f}, "v");
  fg::gradient_tape tape({.persistent = true});
  std::latch started(1);
  std::atomic<bool> done{false};
  int size_errors = 0, variables_errors = 0, other = 0;
  std::string size_message, variables_message;
  std::thread t([&] {
    started.wait();
    for (int i = 0; i < 200; ++i) {
      try {
        (void)tape.size();
        ++other;
      } catch (const fg::tape_error& e) {
        ++size_errors;
        size_message = e.what();
      }
      try {
        (void)tape.watched_variables<float>();
        ++other;
      } catch (const fg::tape_error& e) {
        ++variables_errors;
        variables_message = e.what();
      }
    }
    done = true;
  });
  fg::tensor<float> acc = fg::tensor<float>{0.f, 0.f};
  started.count_down();
  std::size_t steps = 0;
  while (!done.load() || steps < 10) {  // grows the entries and the watched variables meanwhile
    acc = acc + v * 1.5f;
    ++steps;
    if (steps % 64 == 0) tape.reset();
  }
  t.join();
  acc = acc + v * 1.5f;  // the loop may have ended on a reset
  CHECK(size_errors == 200);
  CHECK(variables_errors == 200);
  CHECK(other == 0);
  CHECK_THAT(size_message, Contains("gradient_tape::size") && Contains("belongs to the thread that created it"));
  CHECK_THAT(variables_message, Contains("gradient_tape::watched_variables"));
  // On its own thread both still answer.
  CHECK(tape.size() > 0);
  REQUIRE(tape.watched_variables<float>().size() == 1);
  CHECK(tape.watched_variables<float>()[0].name() == "v");
}

TEST_CASE("a stop_recording() guard that outlives its tape does nothing when it ends", "[misuse]") {
  const fg::tensor<float> x = 3.f;
  auto tape = std::make_unique<fg::gradient_tape>();
  std::unique_ptr<fg::gradient_tape> next;
  {
    const auto pause = tape->stop_recording();
    tape.reset();  // the guard now outlives its tape (a write to freed memory before)
    next = std::make_unique<fg::gradient_tape>();  // may take the freed tape's address
    next->watch(x);
  }
  // The guard's end left the new tape recording.
  const fg::tensor<float> y = x * x;
  CHECK(next->gradient(y, x).item() == 6.f);
  // With its tape alive, a guard pauses it and restores it afterwards.
  fg::gradient_tape t2({.persistent = true});
  t2.watch(x);
  fg::tensor<float> paused_y;
  {
    const auto pause = t2.stop_recording();
    paused_y = x * x;
  }
  const fg::tensor<float> live_y = x * x * x;
  const auto pause = t2.stop_recording();  // the gradients below need not be recorded
  CHECK_FALSE(t2.gradient(paused_y, x).defined());
  CHECK(t2.gradient(live_y, x).item() == 27.f);
}

TEST_CASE("reset() while the tape computes a gradient is a tape_error, and the tape stays usable", "[misuse]") {
  for (const bool persistent : {true, false}) {
    CAPTURE(persistent);
    fg::gradient_tape tape({.persistent = persistent});
    auto resets = fg::custom_gradient([&](const fg::tensor<double>& a) {
      auto grad = [&](const fg::tensor<double>& dy) {
        tape.reset();
        return fg::tensor<double>(2 * dy);
      };
      return std::make_pair(fg::tensor<double>(2 * a), grad);
    });
    const fg::tensor<double> a = 1.5;
    tape.watch(a);
    const fg::tensor<double> y = resets(a) * a;
    CHECK_THROWS_AS(tape.gradient(y, a), fg::tape_error);
    if (persistent) {
      CHECK_THROWS_WITH(tape.gradient(y, a), Contains("gradient_tape::reset") &&
                                                 Contains("while the tape computes a gradient") &&
                                                 Contains("custom_gradient"));
      // Out of the walk, reset works, and the tape records and differentiates again.
      tape.reset();
      CHECK(tape.size() == 0);
    }
    fg::gradient_tape fresh;
    fresh.watch(a);
    const fg::tensor<double> z = a * a * a;
    CHECK(fresh.gradient(z, a).item() == Approx(3 * 1.5 * 1.5));
  }
}

TEST_CASE("gradient() in a loop on a recording persistent tape warns once per tape", "[misuse]") {
  const fg::tensor<float> x = 2.f;
  const std::string warning = "fusegrad: warning: gradient() on a persistent tape that is recording";
  cerr_capture err;
  {
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    const fg::tensor<float> y = x * x * x;
    const std::size_t recorded = tape.size();
    for (int i = 0; i < 20; ++i) CHECK(tape.gradient(y, x).item() == 12.f);  // 3 x^2
    CHECK(tape.size() > recorded);  // each call recorded its backward pass
    CHECK(count_of(err.text(), warning) == 1);
    CHECK_THAT(err.text(), Contains("stop_recording"));
  }
  {
    // A second tape warns again, once.
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    const fg::tensor<float> y = x * x * x;
    for (int i = 0; i < 3; ++i) CHECK(tape.gradient(y, x).item() == 12.f);
    CHECK(count_of(err.text(), warning) == 2);
  }
  {
    // Under stop_recording() nothing is recorded, and nothing is warned.
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    const fg::tensor<float> y = x * x * x;
    const std::size_t recorded = tape.size();
    for (int i = 0; i < 20; ++i) {
      const auto pause = tape.stop_recording();
      CHECK(tape.gradient(y, x).item() == 12.f);
    }
    CHECK(tape.size() == recorded);
    // A non-persistent tape never records its own backward pass.
    fg::gradient_tape once;
    once.watch(x);
    const fg::tensor<float> z = x * x * x;
    CHECK(once.gradient(z, x).item() == 12.f);
    CHECK(count_of(err.text(), warning) == 2);
  }
}
