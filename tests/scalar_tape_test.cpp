// Scalar entries (Note [scalar entries]): one-element evaluations recorded as numbers, whose
// backward runs without tensors unless a tape records it. Checked against the recorded (tensor)
// path, which must give bit-identical values, against finite differences, and across the
// boundaries with ops that are not scalar entries.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <cmath>

namespace {
/// A branchy scalar function of x and w that touches many op kinds; one tape entry per line.
template <class T>
fg::tensor<T> scalar_program(const fg::tensor<T>& x, const fg::tensor<T>& w) {
  fg::tensor<T> y = x * w + T(0.5);
  fg::tensor<T> s = fg::sigmoid(y) * fg::log(1 + fg::exp(x));
  fg::tensor<T> z = fg::where(s > T(0.3), s * s, s / (w * w + 1));
  for (int i = 0; i < 4; ++i) {
    if (z > T(1)) z = z / 2 + fg::tanh(x);
    else z = z * fg::maximum(x, w) - fg::pow(w, T(3)) * T(0.25);
  }
  fg::tensor<double> zd = fg::cast<double>(z);
  fg::tensor<double> u = zd * zd + fg::sqrt(fg::abs(zd) + 1);
  return fg::cast<T>(u) + x * x * x;
}
}  // namespace

TEST_CASE("scalar entries give the recorded path's gradients bit for bit", "[tape][scalar]") {
  for (float xv : {-1.3f, 0.2f, 0.7f, 2.1f}) {
    const fg::tensor<float> x = xv, w = 0.8f;
    fg::tensor<float> gx_fast, gw_fast, gx_rec, gw_rec;
    {
      fg::gradient_tape tape;  // nothing records its backward: the walk runs on numbers
      tape.watch(x);
      tape.watch(w);
      const fg::tensor<float> f = scalar_program(x, w);
      const auto passes = fg::core::counters().passes;
      auto g = tape.gradient(f, {x, w});
      CHECK(fg::core::counters().passes == passes);  // no evaluation ran: numbers only
      gx_fast = g[0];
      gw_fast = g[1];
    }
    {
      fg::gradient_tape tape({.persistent = true});  // records its own backward: tensors
      tape.watch(x);
      tape.watch(w);
      const fg::tensor<float> f = scalar_program(x, w);
      const std::size_t recorded = tape.size();
      auto g = tape.gradient(f, {x, w});
      CHECK(tape.size() > recorded);  // the backward pass was recorded, so it ran on tensors
      gx_rec = g[0];
      gw_rec = g[1];
    }
    INFO("x = " << xv);
    CHECK(gx_fast.item() == gx_rec.item());
    CHECK(gw_fast.item() == gw_rec.item());
    CHECK(std::isfinite(gx_fast.item()));
  }
}

TEST_CASE("scalar entries agree with central finite differences in double", "[tape][scalar]") {
  for (double xv : {-1.3, 0.2, 0.7, 2.1}) {
    const double wv = 0.8;
    auto f = [&](double a, double b) { return scalar_program(fg::tensor<double>(a), fg::tensor<double>(b)).item(); };
    const fg::tensor<double> x = xv, w = wv;
    fg::gradient_tape tape;
    tape.watch(x);
    tape.watch(w);
    const fg::tensor<double> y = scalar_program(x, w);
    auto [gx, gw] = tape.gradient(y, std::tie(x, w));
    const double h = 1e-6;
    const double nx = (f(xv + h, wv) - f(xv - h, wv)) / (2 * h);
    const double nw = (f(xv, wv + h) - f(xv, wv - h)) / (2 * h);
    INFO("x = " << xv << ": analytic " << gx.item() << ", " << gw.item() << "; numeric " << nx << ", " << nw);
    CHECK(std::abs(gx.item() - nx) <= 1e-6 * std::max(1.0, std::abs(nx)));
    CHECK(std::abs(gw.item() - nw) <= 1e-6 * std::max(1.0, std::abs(nw)));
  }
}

TEST_CASE("gradients cross between scalar entries and other ops", "[tape][scalar]") {
  const fg::tensor<double> x = 1.5;
  const fg::tensor<double> v = {1.0, 2.0, 3.0};
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<double> a = x * x;                       // scalar entry
  const fg::tensor<double> r = fg::reshape(a, {1, 1});      // shape op: tensor gradients
  const fg::tensor<double> m = fg::matmul(r, r);            // 1x1 matmul: a^2
  const fg::tensor<double> s = fg::reduce_sum(v * fg::reshape(m, {}));  // 6 a^2, a reduction
  const fg::tensor<double> y = s * x + fg::concat(std::vector<fg::tensor<double>>{fg::reshape(a, {1}), v}, 0)(0);
  // y = 6 x^5 + x^2, dy/dx = 30 x^4 + 2x
  const double xv = 1.5;
  CHECK(y.item() == Approx(6 * std::pow(xv, 5) + xv * xv));
  CHECK(tape.gradient(y, x).item() == Approx(30 * std::pow(xv, 4) + 2 * xv).epsilon(1e-12));
}

TEST_CASE("a one-element source of any rank gets a gradient of its own shape", "[tape][scalar]") {
  const fg::tensor<float> x = {{3.f}};  // shape (1, 1)
  const fg::tensor<float> c = 2.f;      // rank 0
  fg::gradient_tape tape;
  tape.watch(x);
  tape.watch(c);
  const fg::tensor<float> y = x * x * c + 1;  // shape (1, 1)
  auto [gx, gc] = tape.gradient(y, std::tie(x, c));
  CHECK(gx.shape() == fg::shape{1, 1});
  CHECK(gx.item() == 12.f);
  CHECK(gc.shape() == fg::shape{});
  CHECK(gc.item() == 9.f);
  CHECK(y.shape() == fg::shape{1, 1});
}

TEST_CASE("float and double scalar entries mix through casts", "[tape][scalar]") {
  const fg::tensor<float> xf = 2.f;
  const fg::tensor<double> xd = 3.0;
  fg::gradient_tape tape;
  tape.watch(xf);
  tape.watch(xd);
  // y = xf^2 * xd (in float), dy/dxf = 2 xf xd = 12, dy/dxd = xf^2 = 4
  const fg::tensor<float> y = xf * xf * fg::cast<float>(xd);
  const fg::tensor<float> gf = tape.gradient(y, xf);
  CHECK_THROWS_AS(tape.gradient(y, xd), fg::tape_error);  // non-persistent: once only
  CHECK(gf.item() == 12.f);
  fg::gradient_tape t2;
  t2.watch(xd);
  const fg::tensor<float> y2 = xf * xf * fg::cast<float>(xd);
  const fg::tensor<double> gd = t2.gradient(y2, xd);
  CHECK(gd.dtype() == fg::dtype::float64);
  CHECK(gd.item() == 4.0);
}

TEST_CASE("a scalar loop over a variable: gradients, unconnected sources, release", "[tape][scalar][memory]") {
  auto& c = fg::core::counters();
  const auto live0 = c.live_buffers;
  {
    fg::variable<double> v(1.1, "v");
    const fg::tensor<double> unused = 4.0;
    fg::gradient_tape tape;
    tape.watch(unused);
    fg::tensor<double> y = 1.0;
    for (int i = 0; i < 10; ++i) y = y * v;  // v read by each op: watched automatically
    CHECK(tape.size() == 10);
    auto gs = tape.gradient(y, std::tie(v, unused));
    CHECK(std::get<0>(gs).item() == Approx(10 * std::pow(1.1, 9)).epsilon(1e-13));
    CHECK_FALSE(std::get<1>(gs).defined());
    CHECK(tape.size() == 0);
    // A long loop's entries come and go with their tape.
    for (int rep = 0; rep < 3; ++rep) {
      fg::gradient_tape t;
      fg::tensor<double> z = 0.5;
      t.watch(z);
      fg::tensor<double> q = z;
      for (int i = 0; i < 5000; ++i) q = q * 0.999 + 0.001;
      CHECK(t.size() == 5000);
      CHECK(t.gradient(q, z).item() == Approx(std::pow(0.999, 5000)).epsilon(1e-9));
    }
  }
  CHECK(c.live_buffers == live0);
}

TEST_CASE("output_gradients and a second target through scalar entries", "[tape][scalar]") {
  const fg::tensor<float> x = 0.5f;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const fg::tensor<float> y = fg::exp(x) * x;
  const fg::tensor<float> w = 3.f;
  const float e = std::exp(0.5f);
  CHECK(tape.gradient(y, x, w).item() == Approx(3 * e * 1.5f));
  CHECK(tape.gradient(y, x).item() == Approx(e * 1.5f));
  CHECK(tape.gradient(x, x).item() == 1.f);
}

TEST_CASE("evaluations no tape records leave the recorded scalar entries intact", "[tape][scalar]") {
  // An evaluation no tape records writes its entry where the next one goes and leaves the room
  // free (Note [entry arena]): the next entry is written over it, the recorded ones stay.
  const fg::tensor<double> x = 0.7, a = 1.5, b = -2.0;
  fg::gradient_tape outer;
  outer.watch(x);
  fg::tensor<double> y = x * a;                   // outer records: y = 1.05
  const fg::tensor<double> c = a * b + 4.5;       // no tape tracks a or b: c = 1.5
  const fg::tensor<double> u = b - a;             // nor here: u = -3.5
  fg::tensor<double> e;
  {
    fg::gradient_tape inner({.persistent = true});  // two tapes: the general recording path
    inner.watch(c);
    const fg::tensor<double> d = c * c;  // inner records: d = 2.25
    e = a / b;                           // neither records: e = -0.75
    y = y * c + d * e;                   // both record: y = 1.575 - 1.6875
    CHECK(inner.size() == 2);
    CHECK(outer.size() == 2);
    // dy/dc = y_before + 2 c e, y_before = x a.
    CHECK(inner.gradient(y, c).item() == Approx(0.7 * 1.5 + 2 * 1.5 * -0.75).epsilon(1e-14));
  }
  CHECK(e.item() == -0.75);
  const fg::tensor<double> z = y * y + u;
  CHECK(z.item() == Approx(0.1125 * 0.1125 - 3.5).epsilon(1e-14));
  // dz/dx = 2 y c a.
  CHECK(outer.gradient(z, x).item() == Approx(2 * -0.1125 * 1.5 * 1.5).epsilon(1e-14));
}
