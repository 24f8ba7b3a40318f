// Training: the training ops (eager/training.hpp), the optimizers of fg::optimizers, fg::nn's
// initializers, dense layer, model walk, losses and metrics, against Keras 3 from TensorFlow 2.21
// (tests/reference/keras_training.py prints every number here), against the formulas written
// out in double, and against finite differences.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>
#include <fusegrad/data.hpp>

#include "test_helpers.hpp"

#include <array>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

namespace {
using fg_test::values;
using rows = std::vector<std::array<float, 4>>;

// The variable and gradients of tests/reference/keras_training.py, section 1.
const std::vector<float> w0 = {1.0f, -2.0f, 3.0f, 0.5f};
fg::tensor<float> gradient_at(int k) {
  return fg::tensor<float>{0.1f * static_cast<float>(k + 1), -0.2f, 0.3f * (k % 2 ? -1.f : 1.f),
                           -0.4f + 0.15f * static_cast<float>(k)};
}

// Runs five steps of opt on a fresh variable and compares each step's values with Keras'.
// Keras and fusegrad round the same float32 formulas; a power or a square root may differ in
// the last place, so values agree to 2e-6 relative (the Adam family's bias corrections) or 1e-6.
template <class O>
void check_steps(O opt, const rows& want, double rel = 1e-6) {
  fg::variable<float> w(fg::tensor<float>(fg::shape{4}, w0), "w");
  for (int k = 0; k < 5; ++k) {
    opt.apply_gradients(std::vector{gradient_at(k)}, std::vector{w});
    const auto got = values(w.peek());
    for (std::size_t i = 0; i < 4; ++i) {
      INFO("step " << k + 1 << " element " << i << ": " << got[i] << " against Keras' " << want[k][i]);
      CHECK(fg_test::matches(got[i], want[k][i], {rel}));
    }
  }
  CHECK(opt.iterations() == 5);
}
}  // namespace

TEST_CASE("optimizers: five steps against Keras 3", "[optimizers]") {
  using namespace fg::optimizers;
  SECTION("sgd") {
    check_steps(sgd({.learning_rate = 0.1}), {{0.99000001f, -1.98000002f, 2.97000003f, 0.540000021f},
                                              {0.970000029f, -1.96000004f, 3.0f, 0.564999998f},
                                              {0.940000057f, -1.94000006f, 2.97000003f, 0.574999988f},
                                              {0.900000036f, -1.92000008f, 3.0f, 0.569999993f},
                                              {0.850000024f, -1.9000001f, 2.97000003f, 0.550000012f}});
  }
  SECTION("sgd with momentum") {
    check_steps(sgd({.learning_rate = 0.1, .momentum = 0.9}),
                {{0.99000001f, -1.98000002f, 2.97000003f, 0.540000021f},
                 {0.961000025f, -1.94200003f, 2.97300005f, 0.601000011f},
                 {0.904900014f, -1.88779998f, 2.94570017f, 0.665899992f},
                 {0.814410031f, -1.81902003f, 2.95113015f, 0.719309986f},
                 {0.682969034f, -1.73711801f, 2.92601705f, 0.747379005f}});
  }
  SECTION("sgd with Nesterov momentum") {
    check_steps(sgd({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}),
                {{0.981000006f, -1.96200001f, 2.94300008f, 0.575999975f},
                 {0.934899986f, -1.90779996f, 2.97570014f, 0.655900002f},
                 {0.854409993f, -1.83902001f, 2.92113018f, 0.724309981f},
                 {0.732968986f, -1.75711799f, 2.95601726f, 0.767378986f},
                 {0.564672112f, -1.66340613f, 2.90341544f, 0.772641063f}});
  }
  const rows adam_rows = {{0.900003791f, -1.90000224f, 2.90000176f, 0.599998534f},
                          {0.803487897f, -1.80000436f, 2.90526485f, 0.696263134f},
                          {0.707688928f, -1.70000565f, 2.87168574f, 0.782315016f},
                          {0.611649394f, -1.60000741f, 2.87694883f, 0.84642446f},
                          {0.51492691f, -1.50000906f, 2.85650754f, 0.875666738f}};
  SECTION("adam") { check_steps(adam({.learning_rate = 0.1}), adam_rows, 2e-6); }
  SECTION("adam with amsgrad (v never falls here, so the same values)") {
    check_steps(adam({.learning_rate = 0.1, .amsgrad = true}), adam_rows, 2e-6);
  }
  SECTION("adamw") {
    check_steps(adamw({.learning_rate = 0.1, .weight_decay = 0.004}),
                {{0.899603844f, -1.89920223f, 2.8988018f, 0.59979856f},
                 {0.802728176f, -1.79844463f, 2.90290546f, 0.695823252f},
                 {0.706608117f, -1.69772649f, 2.86816525f, 0.78159678f},
                 {0.610285938f, -1.59704912f, 2.87228107f, 0.845393658f},
                 {0.513319373f, -1.49641192f, 2.85069084f, 0.874297798f}},
                2e-6);
  }
  SECTION("rmsprop") {
    check_steps(rmsprop({.learning_rate = 0.1}), {{0.683788061f, -1.68377614f, 2.68377399f, 0.81622684f},
                                                  {0.398076683f, -1.45436192f, 2.91318893f, 0.990198672f},
                                                  {0.139013737f, -1.26226807f, 2.72109461f, 1.06165445f},
                                                  {-0.0997375697f, -1.09174526f, 2.89161777f, 1.02425826f},
                                                  {-0.322760344f, -0.935478568f, 2.73535085f, 0.883150339f}},
                2e-6);
  }
  SECTION("adagrad") {
    check_steps(adagrad({.learning_rate = 0.1}), {{0.969848871f, -1.94654775f, 2.93117523f, 0.578446448f},
                                                  {0.918209076f, -1.89940727f, 2.98786998f, 0.622469008f},
                                                  {0.85697186f, -1.85676718f, 2.93855023f, 0.639811218f},
                                                  {0.793726325f, -1.81754398f, 2.98278284f, 0.631172538f},
                                                  {0.731708944f, -1.78102911f, 2.94233084f, 0.59851265f}},
                2e-6);
  }
  SECTION("clipnorm") {
    check_steps(sgd({.learning_rate = 0.1, .clipnorm = 0.25}),
                {{0.995435655f, -1.99087131f, 2.98630691f, 0.518257439f},
                 {0.985066116f, -1.98050177f, 3.0018611f, 0.531219363f},
                 {0.969427526f, -1.97007608f, 2.98622251f, 0.536432207f},
                 {0.95093751f, -1.96083105f, 3.00009012f, 0.534120977f},
                 {0.931649566f, -1.95311582f, 2.98851728f, 0.526405811f}},
                2e-6);
  }
  SECTION("clipvalue") {
    check_steps(sgd({.learning_rate = 0.1, .clipvalue = 0.25}),
                {{0.99000001f, -1.98000002f, 2.9749999f, 0.524999976f},
                 {0.970000029f, -1.96000004f, 3.0f, 0.549999952f},
                 {0.945000052f, -1.94000006f, 2.9749999f, 0.559999943f},
                 {0.920000076f, -1.92000008f, 3.0f, 0.554999948f},
                 {0.8950001f, -1.9000001f, 2.9749999f, 0.534999967f}});
  }
}

TEST_CASE("optimizers: global_clipnorm scales every gradient together, as Keras does", "[optimizers]") {
  fg::optimizers::sgd opt({.learning_rate = 0.1, .global_clipnorm = 0.25});
  fg::variable<float> w(fg::tensor<float>(fg::shape{4}, w0), "w"), u(fg::tensor<float>{0.5f, 0.5f}, "u");
  const rows want_w = {{0.996047139f, -1.99209428f, 2.98814154f, 0.515811384f},
                       {0.987376034f, -1.98342323f, 3.00114822f, 0.52665025f},
                       {0.974320233f, -1.97471941f, 2.98809242f, 0.531002164f},
                       {0.958358467f, -1.96673858f, 3.00006366f, 0.529006958f},
                       {0.941024065f, -1.95980477f, 2.98966312f, 0.522073209f}};
  const std::vector<std::array<float, 2>> want_u = {{0.488141447f, 0.503952861f},
                                                    {0.47513479f, 0.508288383f},
                                                    {0.462078959f, 0.512640297f},
                                                    {0.450107664f, 0.516630709f},
                                                    {0.439707041f, 0.520097613f}};
  for (int k = 0; k < 5; ++k) {
    opt.apply_gradients(std::vector{gradient_at(k), fg::tensor<float>{0.3f, -0.1f}}, std::vector{w, u});
    for (std::size_t i = 0; i < 4; ++i) CHECK(fg_test::matches(values(w.peek())[i], want_w[k][i], {2e-6}));
    for (std::size_t i = 0; i < 2; ++i) CHECK(fg_test::matches(values(u.peek())[i], want_u[k][i], {2e-6}));
  }
}

TEST_CASE("optimizers: slots are made per variable, named as Keras names them", "[optimizers]") {
  fg::optimizers::adam opt({.learning_rate = 0.1});
  fg::variable<float> w(fg::tensor<float>(fg::shape{4}, w0), "w");
  for (int k = 0; k < 5; ++k) opt.apply_gradients(std::vector{gradient_at(k)}, std::vector{w});
  const auto vars = opt.variables();
  REQUIRE(vars.size() == 3);
  CHECK(vars[0].name == "iteration");
  CHECK(std::get<fg::variable<std::int64_t>>(vars[0].value).peek().item() == 5);
  CHECK(vars[1].name == "w_momentum");
  CHECK(vars[2].name == "w_velocity");
  // Keras' adam/w_0_momentum and adam/w_0_velocity after the five steps.
  const std::vector<float> m = {0.131440997f, -0.0819019973f, 0.0251129996f, -0.0280689988f};
  const std::vector<float> v = {0.000549500342f, 0.000199600428f, 0.000449100946f, 0.000274151185f};
  const auto got_m = values(std::get<fg::variable<float>>(vars[1].value).peek());
  const auto got_v = values(std::get<fg::variable<float>>(vars[2].value).peek());
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(fg_test::matches(got_m[i], m[i], {1e-6}));
    CHECK(fg_test::matches(got_v[i], v[i], {1e-6}));
  }
  // A copy is the same optimizer: one step counter, the same slots.
  fg::optimizers::adam same = opt;
  same.apply_gradients(std::vector{gradient_at(0)}, std::vector{w});
  CHECK(opt.iterations() == 6);
  CHECK(opt.variables().size() == 3);
}

TEST_CASE("optimizers: Adam in float64 follows the formulas written out", "[optimizers]") {
  fg::optimizers::adam opt({.learning_rate = 0.01, .beta_1 = 0.8, .beta_2 = 0.99, .epsilon = 1e-6});
  fg::variable<double> w(fg::tensor<double>{0.5, -1.5}, "w");
  double m[2] = {0, 0}, v[2] = {0, 0}, x[2] = {0.5, -1.5};
  for (int t = 1; t <= 4; ++t) {
    const double g[2] = {0.3 * t, -0.7 / t};
    opt.apply_gradients(std::vector{fg::tensor<double>{g[0], g[1]}}, std::vector{w});
    const double alpha = 0.01 * std::sqrt(1 - std::pow(0.99, t)) / (1 - std::pow(0.8, t));
    for (int i = 0; i < 2; ++i) {
      m[i] += (g[i] - m[i]) * (1 - 0.8);
      v[i] += (g[i] * g[i] - v[i]) * (1 - 0.99);
      x[i] -= m[i] * alpha / (std::sqrt(v[i]) + 1e-6);
      CHECK(fg_test::matches(values(w.peek())[i], x[i], {1e-14}));
    }
  }
}

TEST_CASE("optimizers: unconnected gradients skip their variable; minimize; schedules", "[optimizers]") {
  fg::variable<float> a(fg::tensor<float>{1.f, 2.f}, "a"), b(fg::tensor<float>{3.f}, "b");
  fg::optimizers::sgd opt({.learning_rate = 0.5});
  opt.apply_gradients(std::vector{fg::tensor<float>{1.f, 1.f}, fg::tensor<float>()}, std::vector{a, b});
  CHECK(values(a.peek()) == std::vector<float>{0.5f, 1.5f});
  CHECK(values(b.peek()) == std::vector<float>{3.f});

  // minimize: loss = sum(b^2), gradient 2b = 6, b = 3 - 0.5 * 6 = 0.
  const fg::tensor<float> loss = opt.minimize([&] { return fg::tensor<float>(fg::reduce_sum(b * b)); }, std::vector{b});
  CHECK(loss.item() == 9.f);
  CHECK(b.peek().item() == 0.f);

  // A schedule of the step: 1, 0.5, 0.25 ...
  fg::optimizers::sgd halving({.learning_rate = fg::optimizers::learning_rate(
                                   [](std::int64_t step) { return std::pow(0.5, static_cast<double>(step)); })});
  fg::variable<float> c(fg::tensor<float>{0.f}, "c");
  for (int k = 0; k < 3; ++k) halving.apply_gradients(std::vector{fg::tensor<float>{-1.f}}, std::vector{c});
  CHECK(c.peek().item() == 1.75f);
  CHECK(halving.current_learning_rate() == 0.125);

  // (gradient, variable) pairs, as fg::implicit_gradients gives them.
  opt.apply_gradients(std::vector<std::pair<fg::tensor<float>, fg::variable<float>>>{{fg::tensor<float>{2.f}, c}});
  CHECK(c.peek().item() == 0.75f);
}

TEST_CASE("optimizers: bad input changes nothing", "[optimizers]") {
  fg::variable<float> a(fg::tensor<float>{1.f, 2.f}, "a"), b(fg::tensor<float>{3.f}, "b");
  fg::optimizers::adam opt;
  CHECK_THROWS_WITH(opt.apply_gradients(std::vector{fg::tensor<float>{1.f, 1.f}}, std::vector{a, b}),
                    Catch::Contains("1 gradients for 2 variables"));
  CHECK_THROWS_WITH(opt.apply_gradients(std::vector{fg::tensor<float>{1.f, 1.f}, fg::tensor<float>{1.f, 1.f}},
                                        std::vector{a, b}),
                    Catch::Contains("variable 'b' has shape (1,) but its gradient has shape (2,)"));
  CHECK(values(a.peek()) == std::vector<float>{1.f, 2.f});
  CHECK(opt.iterations() == 0);
  CHECK(opt.variables().size() == 1);  // no slot made
  CHECK_THROWS_WITH(fg::optimizers::sgd({.momentum = 1.5}), Catch::Contains("momentum must be in [0, 1]"));

  fg::variable<float> m(fg::tensor<float>{0.f}, "m"), v(fg::tensor<float>{0.f}, "v");
  CHECK_THROWS_WITH(fg::apply_adam(a, m, v, fg::tensor<float>{1.f, 1.f}, {}),
                    Catch::Contains("fg::apply_adam: slot 'm' has shape (1,) but variable 'a' has shape (2,)"));
  CHECK_THROWS_WITH(fg::apply_adam(a, m, v, fg::tensor<float>{1.f, 1.f}, {.step = 0}),
                    Catch::Contains("step counts from 1"));
  CHECK(values(a.peek()) == std::vector<float>{1.f, 2.f});
}

TEST_CASE("training ops: the values a reader took stay as they were", "[optimizers]") {
  fg::variable<float> w(fg::tensor<float>{1.f, 2.f}, "w");
  const fg::tensor<float> before = w.value();
  fg::apply_gradient_descent(w, 0.5, fg::tensor<float>{2.f, 2.f});
  CHECK(values(before) == std::vector<float>{1.f, 2.f});
  CHECK(values(w.peek()) == std::vector<float>{0.f, 1.f});
  CHECK(w.peek().id() == w.id());
}

TEST_CASE("training ops: a step writes in place only the buffers nothing else holds", "[optimizers]") {
  // Two copies of one Adam run, one with a reader holding each value between steps (so each
  // step writes new buffers) and one without (so each step writes the variable's own buffer):
  // the same bits, and the reader keeps its values.
  const std::size_t n = 1000;  // SIMD batches and a scalar tail
  auto data = [&](std::uint64_t seed) { return fg::random::normal<float>({n}, seed); };
  fg::variable<float> a(data(1), "a"), b(data(1), "b");
  fg::optimizers::adam opt_a({.learning_rate = 0.01}), opt_b({.learning_rate = 0.01});
  for (std::uint64_t k = 0; k < 4; ++k) {
    const std::vector<fg::tensor<float>> g{data(10 + k)};
    const float* own = a.peek().data();  // the temporary reader is gone after this line
    opt_a.apply_gradients(g, std::vector{a});
    CHECK(a.peek().data() == own);  // in place
    const fg::tensor<float> reader = b.value();
    const std::vector<float> read = values(reader);
    opt_b.apply_gradients(g, std::vector{b});
    CHECK(b.peek().data() != reader.data());  // a new buffer
    CHECK(values(reader) == read);
    CHECK(values(a.peek()) == values(b.peek()));
  }
  // After a non-persistent tape's gradient(), which releases what it saved, the step is in place.
  fg::variable<float> w(fg::tensor<float>{{1.f, -2.f}, {0.5f, 3.f}}, "w");
  fg::optimizers::sgd sgd({.learning_rate = 0.1});
  const fg::tensor<float> x = {{1.f, 2.f}};
  fg::gradient_tape tape;
  const fg::tensor<float> loss = fg::reduce_sum(fg::square(fg::matmul(x, w)));
  const std::vector<fg::tensor<float>> grads = tape.gradient(loss, std::vector{w});
  const float* own = w.peek().data();
  sgd.apply_gradients(grads, std::vector{w});
  CHECK(w.peek().data() == own);
  // d/dw sum((x w)^2) = 2 x^T (x w); x w = (2, 4).
  CHECK(values(w.peek()) == std::vector<float>{1.f - 0.1f * 4.f, -2.f - 0.1f * 8.f, 0.5f - 0.1f * 8.f, 3.f - 0.1f * 16.f});
  // A slot that is the variable itself takes the copying path (no lock is taken twice).
  fg::variable<float> m(fg::tensor<float>{0.f}, "m");
  fg::apply_keras_momentum(m, m, fg::tensor<float>{1.f}, {.learning_rate = 0.5, .momentum = 0.9});
  CHECK(values(m.peek()) == std::vector<float>{-0.5f});
}

TEST_CASE("training ops: one pass on every thread count gives the same bits", "[optimizers]") {
  // Above the intra-op threshold the loop splits; each element's update is independent.
  const std::size_t n = 600000;
  const fg::tensor<float> g = fg::random::normal<float>({n}, 7);
  auto run = [&](int threads) {
    fg::config::set_intra_op_parallelism_threads(threads);
    fg::variable<float> w(fg::random::normal<float>({n}, 8), "w");
    fg::optimizers::adam opt;
    for (int k = 0; k < 3; ++k) opt.apply_gradients(std::vector{g}, std::vector{w});
    return values(w.peek());
  };
  const auto one = run(1), two = run(2), three = run(3);
  fg::config::set_intra_op_parallelism_threads(0);
  CHECK(one == two);
  CHECK(one == three);
}

TEST_CASE("losses: values against Keras 3", "[losses]") {
  namespace losses = fg::nn::losses;
  using losses::reduction;
  const fg::tensor<std::int64_t> labels = {2, 0, 1};
  const fg::tensor<float> logits = {{1.0f, 2.0f, 3.0f}, {1e4f, 0.0f, -1e4f}, {0.5f, 0.5f, -1.0f}};
  const fg::tensor<float> probs = {{0.1f, 0.2f, 0.7f}, {1.0f, 0.0f, 0.0f}, {0.3f, 0.6f, 0.1f}};
  const fg::tensor<float> one_hot = {{0.f, 0.f, 1.f}, {1.f, 0.f, 0.f}, {0.f, 1.f, 0.f}};
  auto near = [](const fg::tensor<float>& got, std::vector<float> want, double rel = 2e-6) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("element " << i << ": " << got.data()[i] << " against Keras' " << want[i]);
      CHECK(fg_test::matches(got.data()[i], want[i], {rel, false}));
    }
  };
  near(losses::sparse_categorical_crossentropy({.from_logits = true})(labels, logits), {0.402174085f});
  near(losses::sparse_categorical_crossentropy({.from_logits = true, .reduction = reduction::sum})(labels, logits),
       {1.20652223f});
  near(losses::sparse_categorical_crossentropy({.from_logits = true, .reduction = reduction::none})(labels, logits),
       {0.407605946f, 0.0f, 0.798916221f});
  near(losses::sparse_categorical_crossentropy({.reduction = reduction::none})(labels, probs),
       {0.356674969f, 2.38418551e-07f, 0.510825574f}, 1e-5);
  near(losses::sparse_categorical_crossentropy()(labels, probs), {0.289166927f});
  near(losses::categorical_crossentropy({.from_logits = true})(one_hot, logits), {0.402174085f});
  near(losses::categorical_crossentropy({.reduction = reduction::none})(one_hot, probs),
       {0.356674969f, 1.19209304e-07f, 0.510825574f}, 1e-5);
  near(losses::categorical_crossentropy({.from_logits = true, .label_smoothing = 0.1, .reduction = reduction::none})(
           one_hot, logits),
       {0.50760597f, 1000.0f, 0.848916173f});

  const fg::tensor<float> bt = {{0.f, 1.f}, {1.f, 0.f}, {1.f, 1.f}};
  near(losses::binary_crossentropy({.from_logits = true, .reduction = reduction::none})(
           bt, fg::tensor<float>{{-1.f, 2.f}, {0.5f, 1e4f}, {3.f, -2.f}}),
       {0.220094845f, 5000.23682f, 1.08775771f});
  near(losses::binary_crossentropy({.reduction = reduction::none})(
           bt, fg::tensor<float>{{0.2f, 0.9f}, {0.6f, 0.f}, {1.f, 0.3f}}),
       {0.164252043f, 0.255412847f, 0.601986468f}, 1e-5);

  const fg::tensor<float> rt = {{0.f, 1.f}, {1.f, 0.5f}}, rp = {{0.25f, 0.5f}, {2.f, 0.5f}};
  const fg::tensor<float> sw = {1.f, 0.5f};
  near(losses::mean_squared_error()(rt, rp), {0.328125f});
  near(losses::mean_squared_error()(rt, rp, sw), {0.203125f});
  near(losses::mean_squared_error({.reduction = reduction::sum})(rt, rp, sw), {0.40625f});
  near(losses::mean_absolute_error({.reduction = reduction::none})(rt, rp), {0.375f, 0.5f});
  near(losses::mean_absolute_error()(rt, rp, sw), {0.3125f});
  near(losses::huber({.reduction = reduction::none})(rt, rp), {0.078125f, 0.25f});
  near(losses::huber()(rt, rp, sw), {0.1015625f});
  const fg::tensor<float> kt = {{0.2f, 0.8f}, {0.5f, 0.5f}}, kp = {{0.4f, 0.6f}, {0.9f, 0.1f}};
  near(losses::kl_divergence({.reduction = reduction::none})(kt, kp), {0.0915161818f, 0.510825634f}, 1e-5);
  near(losses::kl_divergence()(kt, kp, sw), {0.173464507f}, 1e-5);
}

TEST_CASE("losses: gradients against finite differences, and of second order", "[losses]") {
  namespace losses = fg::nn::losses;
  const fg::tensor<std::int64_t> labels = {2, 0};
  const fg::tensor<double> soft = {{0.2, 0.3, 0.5}, {0.6, 0.1, 0.3}};
  const std::vector<std::function<fg::tensor<double>(const fg::tensor<double>&)>> fns = {
      [&](const fg::tensor<double>& x) { return losses::sparse_categorical_crossentropy({.from_logits = true})(labels, x); },
      [&](const fg::tensor<double>& x) { return losses::categorical_crossentropy({.from_logits = true})(soft, x); },
      [&](const fg::tensor<double>& x) { return losses::categorical_crossentropy()(soft, fg::tensor<double>(fg::sigmoid(x))); },
      [&](const fg::tensor<double>& x) { return losses::binary_crossentropy({.from_logits = true})(soft, x); },
      [&](const fg::tensor<double>& x) { return losses::mean_squared_error()(soft, x); },
      [&](const fg::tensor<double>& x) { return losses::huber({.delta = 0.5})(soft, x); },
      [&](const fg::tensor<double>& x) { return losses::kl_divergence()(soft, fg::tensor<double>(fg::sigmoid(x))); },
  };
  const fg::tensor<double> x0 = {{0.3, -1.2, 0.7}, {1.1, 0.4, -0.6}};
  for (std::size_t f = 0; f < fns.size(); ++f) {
    INFO("loss " << f);
    const auto r = fg::testing::check_gradients([&](const std::vector<fg::tensor<double>>& in) { return fns[f](in[0]); },
                                                {x0});
    CHECK(r.max_error < 1e-6);
  }
  // A Hessian-vector product through the sparse cross-entropy: the gradient of <grad, v>.
  fg::gradient_tape outer;
  fg::tensor<double> x = x0;
  outer.watch(x);
  fg::tensor<double> g;
  {
    fg::gradient_tape inner;
    inner.watch(x);
    g = inner.gradient(losses::sparse_categorical_crossentropy({.from_logits = true})(labels, x), x);
  }
  const fg::tensor<double> hv = outer.gradient(fg::reduce_sum(g * fg::tensor<double>{{1.0, 0.0, -1.0}, {0.5, 0.5, 0.0}}), x);
  REQUIRE(hv.defined());
  // Row 0's softmax p: H v = (diag(p) - p p^T) v / 2 (the mean over two rows).
  const double e0 = std::exp(0.3), e1 = std::exp(-1.2), e2 = std::exp(0.7), z = e0 + e1 + e2;
  const double p[3] = {e0 / z, e1 / z, e2 / z}, v[3] = {1.0, 0.0, -1.0};
  const double pv = p[0] * v[0] + p[1] * v[1] + p[2] * v[2];
  for (int i = 0; i < 3; ++i) CHECK(hv.data()[i] == Approx(p[i] * (v[i] - pv) / 2).epsilon(1e-12));
}

TEST_CASE("losses: bad input names the loss and the shapes", "[losses]") {
  namespace losses = fg::nn::losses;
  CHECK_THROWS_WITH(losses::mean_squared_error()(fg::tensor<float>{1.f, 2.f}, fg::tensor<float>{1.f}),
                    Catch::Contains("fg::nn::losses::mean_squared_error: y_true of shape (2,) and y_pred of shape (1,)"));
  CHECK_THROWS_WITH(losses::sparse_categorical_crossentropy({.from_logits = true})(fg::tensor<std::int64_t>{3},
                                                                                   fg::tensor<float>{{0.f, 1.f, 2.f}}),
                    Catch::Contains("label value of 3"));
  CHECK_THROWS_WITH(losses::mean_squared_error()(fg::tensor<float>{{1.f}, {2.f}}, fg::tensor<float>{{1.f}, {2.f}},
                                                 fg::tensor<float>{1.f, 2.f, 3.f}),
                    Catch::Contains("sample_weight of shape (3,)"));
}

TEST_CASE("metrics: values against Keras 3", "[metrics]") {
  namespace metrics = fg::nn::metrics;
  metrics::mean m;
  m(0.0);
  CHECK(m(5.0).item() == 2.5f);  // seed 002's numbers
  m.update_state(fg::tensor<float>{8.f, 9.f});
  CHECK(m.result().item() == 5.5f);
  m.reset_state();
  CHECK(m.result().item() == 0.f);

  const fg::tensor<float> pred = {{0.1f, 0.2f, 0.7f}, {0.5f, 0.4f, 0.1f}, {0.3f, 0.3f, 0.4f}, {0.2f, 0.5f, 0.3f}};
  metrics::sparse_categorical_accuracy sca;
  sca.update_state(fg::tensor<std::int64_t>{2, 0, 1, 1}, pred);
  CHECK(sca.result().item() == 0.75f);
  metrics::accuracy acc;
  acc.update_state(fg::tensor<int>{1, 2, 3, 4}, fg::tensor<int>{1, 2, 0, 4});
  CHECK(acc.result().item() == 0.75f);
  metrics::binary_accuracy ba;
  ba.update_state(fg::tensor<float>{{1.f}, {0.f}, {1.f}, {0.f}}, fg::tensor<float>{{0.7f}, {0.6f}, {0.4f}, {0.1f}});
  CHECK(ba.result().item() == 0.5f);
  const fg::tensor<float> hot = {{0.f, 0.f, 1.f}, {1.f, 0.f, 0.f}, {0.f, 1.f, 0.f}, {0.f, 1.f, 0.f}};
  metrics::categorical_accuracy ca;
  ca.update_state(hot, pred);
  CHECK(ca.result().item() == 0.75f);
  metrics::top_k_categorical_accuracy top2(2);
  top2.update_state(hot, pred);
  CHECK(top2.result().item() == 1.f);
  // Weighted: the sample weights weigh each row's hit.
  metrics::sparse_categorical_accuracy w;
  w.update_state(fg::tensor<std::int64_t>{2, 0, 1, 1}, pred, fg::tensor<float>{1.f, 1.f, 2.f, 0.f});
  CHECK(w.result().item() == 0.5f);
}

TEST_CASE("initializers: Keras' fans and the spread of the values", "[initializers]") {
  namespace init = fg::nn::initializers;
  CHECK(init::compute_fans({784, 256}).in == 784);
  CHECK(init::compute_fans({3, 3, 16, 32}).in == 144);
  CHECK(init::compute_fans({3, 3, 16, 32}).out == 288);
  const fg::tensor<float> g = init::initializer("glorot_uniform").operator()<float>({784, 256});
  const float limit = 0.0759554525f;  // Keras' sqrt(6 / (784 + 256))
  CHECK(fg::reduce_max(g).item() < limit);
  CHECK(fg::reduce_min(g).item() >= -limit);
  CHECK(fg::reduce_max(g).item() > 0.99f * limit);
  // he_normal: standard deviation sqrt(2 / fan_in) = 0.117851 for the conv kernel (Keras' target).
  const fg::tensor<double> h = init::he_normal({.seed = 5}).operator()<double>({3, 3, 16, 32});
  const double sd = std::sqrt(fg::reduce_mean(fg::square(h - fg::reduce_mean(h))).item());
  CHECK(sd == Approx(0.11785113).epsilon(0.03));
  CHECK(fg::reduce_max(fg::abs(h)).item() <= 2 * 0.133978731 + 1e-12);  // truncated at two of its stddev
  // A seed repeats; no seed draws anew.
  CHECK(values(init::he_normal({.seed = 5}).operator()<double>({4})) == values(init::he_normal({.seed = 5}).operator()<double>({4})));
  CHECK(values(init::random_normal().operator()<double>({4})) != values(init::random_normal().operator()<double>({4})));
  CHECK(values(init::constant(2.5).operator()<float>({2})) == std::vector<float>{2.5f, 2.5f});
  CHECK_THROWS_WITH(init::initializer("glorot"), Catch::Contains("unknown initializer 'glorot'"));
}

namespace {
struct mnist_model {  // seed 002: a model is a plain struct
  fg::nn::dense dense1{10}, dense2{10};
  fg::tensor<float> operator()(const fg::tensor<float>& x) { return dense2(dense2(dense1(x))); }
};
struct block {
  fg::nn::dense inner{3, {.activation = "relu"}};
  fg::variable<float> scale{fg::tensor<float>{2.f}, "scale"};
  int ignored = 7;
};
struct nested {
  std::vector<block> blocks{block{}, block{}};
  std::array<fg::nn::dense, 1> heads{fg::nn::dense(1)};
  fg::nn::dense shared{2};
  fg::nn::dense alias = shared;  // the same layer under a second name: listed once
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(mnist_model, dense1, dense2);
BOOST_HANA_ADAPT_STRUCT(block, inner, scale, ignored);
BOOST_HANA_ADAPT_STRUCT(nested, blocks, heads, shared, alias);

TEST_CASE("model walk: names from member paths, nested structs, vectors, shared layers", "[layers]") {
  mnist_model m;
  CHECK(fg::nn::trainable_variables(m).empty());  // not built before its first call
  const fg::tensor<float> out = m(fg::zeros<float>({1, 1, 784}));
  CHECK(out.shape() == fg::shape{1, 1, 10});
  std::vector<std::string> names;
  for (const auto& v : fg::nn::named_variables(m)) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{"dense1/kernel", "dense1/bias", "dense2/kernel", "dense2/bias"});
  CHECK(fg::nn::trainable_variables(m).size() == 4);

  nested n;
  for (auto& b : n.blocks) (void)b.inner(fg::ones<float>({2, 4}));
  (void)n.heads[0](fg::ones<float>({2, 3}));
  (void)n.shared(fg::ones<float>({2, 3}));
  names.clear();
  for (const auto& v : fg::nn::named_variables(n)) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{"blocks/0/inner/kernel", "blocks/0/inner/bias", "blocks/0/scale",
                                          "blocks/1/inner/kernel", "blocks/1/inner/bias", "blocks/1/scale",
                                          "heads/0/kernel", "heads/0/bias", "shared/kernel", "shared/bias"});
}

TEST_CASE("dense: values, one set of variables when called twice, errors", "[layers]") {
  fg::nn::dense d(2, {.activation = "relu", .kernel_initializer = fg::nn::initializers::constant(0.5),
                      .bias_initializer = fg::nn::initializers::constant(-1.0)});
  const fg::tensor<double> x = {{1.0, 2.0, 3.0}, {-1.0, 0.0, 0.5}};
  const fg::tensor<double> y = d(x);
  // relu(0.5 * sum(row) - 1): rows sum to 6 and -0.5.
  CHECK(values(y) == std::vector<double>{2.0, 2.0, 0.0, 0.0});
  CHECK(d.weights().size() == 2);
  CHECK(d.count_params() == 8);
  CHECK_THROWS_WITH(d(fg::tensor<double>{{1.0, 2.0}}),
                    Catch::Contains("fg::nn::dense 'dense': input of shape (1, 2) has 2 features on its last axis, but "
                                    "the layer was built for input of shape (2, 3)"));
  CHECK_THROWS_WITH(d(fg::tensor<float>{{1.f, 2.f, 3.f}}), Catch::Contains("called on float32 input"));
  CHECK_THROWS_WITH(fg::nn::dense(3, {.activation = "rellu"}), Catch::Contains("unknown activation 'rellu'"));

  // Gradients through dense with each activation, in float64, against finite differences: with
  // respect to the input by check_gradients, and to the kernel variable by central differences.
  for (const char* act : {"linear", "relu", "sigmoid", "tanh", "softmax", "elu", "gelu", "swish", "softplus"}) {
    INFO(act);
    fg::nn::dense layer(3, {.activation = act, .kernel_initializer = fg::nn::initializers::glorot_uniform({.seed = 1})});
    const fg::tensor<double> in = {{0.3, -0.7}, {1.2, 0.1}};
    auto loss = [&](const fg::tensor<double>& v) { return fg::tensor<double>(fg::reduce_sum(fg::sin(layer(v)))); };
    (void)loss(in);
    const auto r = fg::testing::check_gradients([&](const std::vector<fg::tensor<double>>& v) { return loss(v[0]); }, {in});
    CHECK(r.max_error < 1e-6);
    fg::variable<double> kernel = std::get<fg::variable<double>>(layer.weights()[0].value);
    fg::tensor<double> analytic;
    {
      fg::gradient_tape tape;
      analytic = tape.gradient(loss(in), kernel);
    }
    const std::vector<double> k0 = values(kernel.peek());
    for (std::size_t i = 0; i < k0.size(); ++i) {
      auto at = [&](double dk) {
        std::vector<double> k = k0;
        k[i] += dk;
        kernel.assign(fg::tensor<double>(kernel.shape(), k));
        return loss(in).item();
      };
      const double fd = (at(1e-6) - at(-1e-6)) / 2e-6;
      CHECK(analytic.data()[i] == Approx(fd).epsilon(1e-6).margin(1e-8));
    }
    kernel.assign(fg::tensor<double>(kernel.shape(), k0));
  }
}

TEST_CASE("training: the issue's custom loop learns", "[layers][optimizers]") {
  mnist_model m;
  fg::optimizers::adam opt({.learning_rate = 1e-2});
  fg::nn::losses::sparse_categorical_crossentropy loss_fn({.from_logits = true});
  const fg::tensor<float> x = fg::random::normal<float>({32, 784}, 1);
  const fg::tensor<std::int64_t> y = fg::cast<std::int64_t>(fg::random::uniform<float>({32}, 2) * 10.f);
  (void)m(x);
  const auto vars = fg::nn::trainable_variables(m);
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    fg::gradient_tape tape;
    const fg::tensor<float> loss = loss_fn(y, m(x));
    opt.apply_gradients(tape.gradient(loss, vars), vars);
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(last < 0.5f * first);  // 32 samples, memorised
}

TEST_CASE("layers: conv2d, pools, flatten, reshape, dropout, activation against the ops", "[layers]") {
  namespace nn = fg::nn;
  const fg::tensor<float> x = fg::random::normal<float>({2, 6, 6, 3}, 11);
  nn::conv2d conv(4, {3, 3}, {.strides = 2, .padding = "same", .activation = "relu",
                              .bias_initializer = nn::initializers::constant(0.1)});
  const fg::tensor<float> y = conv(x);
  const auto kernel = std::get<fg::variable<float>>(conv.weights()[0].value);
  CHECK(kernel.shape() == fg::shape{3, 3, 3, 4});
  const fg::tensor<float> want = fg::relu(fg::conv2d(x, kernel.peek(), 2, "SAME") + 0.1f);
  CHECK(values(y) == values(want));
  CHECK(conv.count_params() == 3 * 3 * 3 * 4 + 4);
  CHECK_THROWS_WITH(conv(fg::zeros<float>({1, 6, 6, 2})), Catch::Contains("has 2 channels, but the layer was built"));
  CHECK_THROWS_WITH(nn::conv2d(4, 3, {.padding = "full"}), Catch::Contains("padding must be \"valid\" or \"same\""));

  CHECK(values(nn::max_pool2d()(x)) == values(fg::max_pool2d(x, 2, 2, "VALID")));
  CHECK(values(nn::average_pool2d(3, {.strides = 1, .padding = "same"})(x)) ==
        values(fg::avg_pool2d(x, 3, 1, "SAME")));
  CHECK(nn::global_average_pooling2d()(x).shape() == fg::shape{2, 3});
  CHECK(values(nn::global_max_pooling2d()(x)) == values(fg::global_max_pool2d(x)));
  CHECK(nn::flatten()(x).shape() == fg::shape{2, 108});
  CHECK(nn::reshape({9, 12})(x).shape() == fg::shape{2, 9, 12});
  CHECK(values(nn::activation("tanh")(x)) == values(fg::tensor<float>(fg::tanh(x))));

  nn::dropout drop(0.5, {.seed = 3});
  CHECK(values(drop(x)) == values(x));  // inference: the identity
  const fg::tensor<float> d1 = drop(x, true), d2 = drop(x, true);
  CHECK(values(d1) == values(fg::dropout(x, 0.5, 3)));  // the first call's mask: seed + 0
  CHECK(values(d2) == values(fg::dropout(x, 0.5, 4)));  // a new mask each call
}

TEST_CASE("sequential: Keras' names, shared layers, summary() as Keras prints it", "[layers]") {
  namespace nn = fg::nn;
  fg::random::set_seed(0);
  nn::dense first(256, {.activation = "relu"});
  nn::sequential model{first, nn::dense(256, {.activation = "relu"}), nn::dense(10)};
  const fg::tensor<float> out = model(fg::zeros<float>({3, 784}));
  CHECK(out.shape() == fg::shape{3, 10});
  std::vector<std::string> names;
  for (const auto& v : nn::named_variables(model)) names.push_back(v.name);
  CHECK(names == std::vector<std::string>{"sequential/dense/kernel", "sequential/dense/bias",
                                          "sequential/dense_1/kernel", "sequential/dense_1/bias",
                                          "sequential/dense_2/kernel", "sequential/dense_2/bias"});
  CHECK(first.built());  // the sequential holds the same layer
  // TensorFlow 2.21's model.summary() for the same model (tests/reference/keras_training.py).
  CHECK(model.summary_text() ==
        "Model: \"sequential\"\n"
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ dense (Dense)                   │ (None, 256)            │       200,960 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ dense_1 (Dense)                 │ (None, 256)            │        65,792 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ dense_2 (Dense)                 │ (None, 10)             │         2,570 │\n"
        "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
        " Total params: 269,322 (1.03 MB)\n"
        " Trainable params: 269,322 (1.03 MB)\n"
        " Non-trainable params: 0 (0.00 B)\n");

  nn::sequential cnn{nn::conv2d(16, 3, {.activation = "relu"}), nn::conv2d(16, 3, {.activation = "relu"}),
                     nn::global_average_pooling2d(), nn::dense(10)};
  (void)cnn(fg::zeros<float>({1, 28, 28, 1}));
  CHECK(cnn.summary_text() ==
        "Model: \"sequential\"\n"
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ conv2d (Conv2D)                 │ (None, 26, 26, 16)     │           160 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ conv2d_1 (Conv2D)               │ (None, 24, 24, 16)     │         2,320 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ global_average_pooling2d        │ (None, 16)             │             0 │\n"
        "│ (GlobalAveragePooling2D)        │                        │               │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ dense (Dense)                   │ (None, 10)             │           170 │\n"
        "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
        " Total params: 2,650 (10.35 KB)\n"
        " Trainable params: 2,650 (10.35 KB)\n"
        " Non-trainable params: 0 (0.00 B)\n");

  // Trained with a custom loop: the sequential is a model like any other.
  const fg::tensor<float> xs = fg::random::normal<float>({64, 8}, 21);
  const fg::tensor<std::int64_t> ys = fg::cast<std::int64_t>(fg::reduce_sum(xs, 1) > 0.f);
  nn::sequential clf{nn::dense(16, {.activation = "tanh"}), nn::dense(2)};
  (void)clf(xs);
  fg::optimizers::sgd opt({.learning_rate = 0.5, .momentum = 0.9});
  nn::losses::sparse_categorical_crossentropy loss_fn({.from_logits = true});
  const auto vars = nn::trainable_variables(clf);
  for (int step = 0; step < 40; ++step) {
    fg::gradient_tape tape;
    const fg::tensor<float> loss = loss_fn(ys, clf(xs, true));
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  }
  nn::metrics::sparse_categorical_accuracy acc;
  acc.update_state(ys, clf(xs));
  CHECK(acc.result().item() > 0.95f);
}

TEST_CASE("learning-rate schedules: Keras' formulas", "[optimizers]") {
  namespace opt = fg::optimizers;
  const auto e = opt::exponential_decay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  CHECK(e.at(0) == 0.1);
  CHECK(e.at(10) == Approx(0.05));
  CHECK(e.at(5) == Approx(0.1 * std::sqrt(0.5)));
  const auto s = opt::exponential_decay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  CHECK(s.at(19) == Approx(0.05));
  const auto p = opt::piecewise_constant_decay({10, 20}, {1.0, 0.5, 0.1});
  CHECK(p.at(10) == 1.0);
  CHECK(p.at(11) == 0.5);
  CHECK(p.at(20) == 0.5);
  CHECK(p.at(21) == 0.1);
  const auto c = opt::cosine_decay({.initial_learning_rate = 1.0, .decay_steps = 100, .alpha = 0.1});
  CHECK(c.at(0) == Approx(1.0));
  CHECK(c.at(50) == Approx(0.55));
  CHECK(c.at(200) == Approx(0.1));
  CHECK_THROWS_WITH(opt::piecewise_constant_decay({10}, {1.0}), Catch::Contains("1 values for 1 boundaries"));
}

TEST_CASE("batch_normalization: batch statistics in training, moving ones in inference", "[layers]") {
  namespace nn = fg::nn;
  nn::batch_normalization bn;
  const fg::tensor<double> x = {{1.0, 2.0}, {3.0, 6.0}};  // mean (2, 4), biased variance (1, 4)
  const fg::tensor<double> y = bn(x, true);
  const double a = 1 / std::sqrt(1.001), b = 2 / std::sqrt(4.001);
  const std::vector<double> want = {-a, -b, a, b};
  for (std::size_t i = 0; i < 4; ++i) CHECK(y.data()[i] == Approx(want[i]).epsilon(1e-12));
  const auto stats = nn::non_trainable_variables<double>(bn);
  REQUIRE(stats.size() == 2);
  CHECK(values(stats[0].peek())[0] == Approx(0.02));  // 0.99 * 0 + 0.01 * 2
  CHECK(values(stats[0].peek())[1] == Approx(0.04));
  CHECK(values(stats[1].peek())[1] == Approx(1.03));  // 0.99 * 1 + 0.01 * 4
  CHECK(nn::trainable_variables<double>(bn).size() == 2);  // gamma, beta
  // Inference: the moving statistics.
  const fg::tensor<double> z = bn(x);
  CHECK(z.data()[0] == Approx((1.0 - 0.02) / std::sqrt(0.99 + 0.01 + 1e-3)).epsilon(1e-12));
  // The gradient in training mode against finite differences (the moving statistics move on
  // every call but do not enter the training-mode output).
  const auto r = fg::testing::check_gradients(
      [&](const std::vector<fg::tensor<double>>& in) { return fg::tensor<double>(fg::reduce_sum(fg::sin(bn(in[0], true)))); },
      {fg::tensor<double>{{0.3, -1.0}, {1.4, 0.2}, {-0.5, 0.9}}});
  CHECK(r.max_error < 1e-6);
  CHECK_THROWS_WITH(bn(fg::tensor<double>{{1.0, 2.0, 3.0}}), Catch::Contains("has 3 channels on its last axis"));
}

namespace {
// A synthetic two-class problem: the class is whether a fixed direction's projection is positive.
struct two_classes {
  fg::tensor<float> x;
  fg::tensor<std::int64_t> y;
};
two_classes make_two_classes(std::size_t n, std::uint64_t seed) {
  const fg::tensor<float> x = fg::random::normal<float>({n, 6}, seed);
  const fg::tensor<float> w = {{1.f}, {-2.f}, {0.5f}, {1.5f}, {-1.f}, {0.25f}};
  return {x, fg::cast<std::int64_t>(fg::reshape(fg::matmul(x, w), {static_cast<long>(n)}) > 0.f)};
}
struct small_net {
  fg::nn::dense hidden{16, {.activation = "tanh"}}, out{2};
  fg::tensor<float> operator()(const fg::tensor<float>& x, bool training = false) { return out(hidden(x, training)); }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(small_net, hidden, out);

TEST_CASE("fit: a Sequential classifier trained with compile/fit, validation and early stopping", "[fit]") {
  namespace nn = fg::nn;
  fg::random::set_seed(4);
  const two_classes d = make_two_classes(512, 5);
  nn::sequential model{nn::dense(16, {.activation = "relu"}), nn::dense(2)};
  model.compile({.optimizer = fg::optimizers::adam({.learning_rate = 0.02}),
                 .loss = nn::losses::sparse_categorical_crossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto stop = std::make_shared<nn::callbacks::early_stopping>(
      nn::callbacks::early_stopping_options{.monitor = "val_accuracy", .patience = 2});
  std::ostringstream progress;
  const nn::history h = model.fit(d.x, d.y, {.batch_size = 32, .epochs = 30, .verbose = 2, .validation_split = 0.25,
                                             .callbacks = {stop}, .seed = 1, .output = &progress});
  REQUIRE(h["loss"].size() == h.epochs.size());
  CHECK(h["loss"].back() < h["loss"].front());
  CHECK(h["val_accuracy"].back() >= 0.95);
  CHECK(h.values.count("accuracy") == 1);
  CHECK(h.values.count("val_loss") == 1);
  if (stop->stopped_epoch() >= 0) CHECK(h.epochs.size() == static_cast<std::size_t>(stop->stopped_epoch() + 1));
  // One line per epoch off a terminal: "Epoch 1/30", then "12/12 - 0s - 1ms/step - accuracy: ...".
  const std::string text = progress.str();
  CHECK(text.rfind("Epoch 1/30\n12/12 - ", 0) == 0);
  CHECK(text.find(" - loss: ") != std::string::npos);
  CHECK(text.find(" - val_accuracy: ") != std::string::npos);

  const fg::nn::logs e = model.evaluate(d.x, d.y);
  CHECK(e.at("accuracy") >= 0.95);
  const fg::tensor<float> p = model.predict(d.x, {.batch_size = 100});
  CHECK(p.shape() == fg::shape{512, 2});
  // predict's batches give what one call gives.
  const fg::tensor<float> whole = model(d.x);
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(p.data()[i] == Approx(whole.data()[i]).epsilon(1e-5).margin(1e-6));
}

TEST_CASE("summary: nn::model<S> prints its struct's layers, each once, named by member", "[fit][layers]") {
  namespace nn = fg::nn;
  nn::model<small_net> m;
  // Before the first call: no variables, no shapes.
  CHECK(m.summary_text().find("│ hidden (Dense)                  │ ?                      │             0 │") !=
        std::string::npos);
  (void)m(fg::ones<float>({4, 3}));
  const std::string text = m.summary_text();
  // hidden: 3 x 16 + 16 = 64 parameters; out: 16 x 2 + 2 = 34; 98 float32 = 392 bytes.
  CHECK(text.rfind("Model: \"small_net\"\n", 0) == 0);
  CHECK(text.find("│ hidden (Dense)                  │ (None, 16)             │            64 │\n") != std::string::npos);
  CHECK(text.find("│ out (Dense)                     │ (None, 2)              │            34 │\n") != std::string::npos);
  CHECK(text.find(" Total params: 98 (392.00 B)\n Trainable params: 98 (392.00 B)\n Non-trainable params: 0 (0.00 B)\n") !=
        std::string::npos);
  // The same table as a sequential of the same layers prints, but for the title and the names.
  nn::sequential seq{m.hidden, m.out};
  std::string expected = seq.summary_text();
  expected.replace(0, expected.find('\n'), "Model: \"small_net\"");
  expected.replace(expected.find("dense (Dense)  "), 15, "hidden (Dense) ");
  expected.replace(expected.find("dense_1 (Dense)"), 15, "out (Dense)    ");
  CHECK(text == expected);
  // A layer held twice (nested::alias is nested::shared) is one row, under its first path.
  const auto layers = nn::impl::named_layers(nested{});
  std::vector<std::string> names;
  for (const auto& [name, l] : layers) names.push_back(name);
  CHECK(names == std::vector<std::string>{"blocks/0/inner", "blocks/1/inner", "heads/0", "shared"});
}

TEST_CASE("fit: nn::model gives a plain struct Keras' methods; callbacks; errors", "[fit]") {
  namespace nn = fg::nn;
  const two_classes d = make_two_classes(256, 9);
  nn::model<small_net> m;
  m.compile({.optimizer = fg::optimizers::sgd({.learning_rate = 0.3, .momentum = 0.9}),
             .loss = nn::losses::sparse_categorical_crossentropy({.from_logits = true}),
             .metrics = {"accuracy"}});
  std::vector<int> begun;
  std::int64_t batches = 0;
  double rate_seen = 0;
  const nn::history h = m.fit(
      d.x, d.y,
      {.batch_size = 64, .epochs = 6, .verbose = 0,
       .callbacks = {nn::callbacks::lambda_callback({.on_epoch_begin = [&](int e, const nn::logs&) { begun.push_back(e); },
                                                     .on_batch_end = [&](std::int64_t, const nn::logs&) { ++batches; }}),
                     nn::callbacks::learning_rate_scheduler([&](int epoch, double lr) {
                       rate_seen = lr;
                       return epoch < 3 ? 0.3 : 0.1;
                     })}});
  CHECK(begun == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(batches == 6 * 4);
  CHECK(rate_seen == Approx(0.1));  // the rate set for epochs 3 to 5
  CHECK(h["accuracy"].back() > 0.9);
  CHECK(nn::trainable_variables(m).size() == 4);
  CHECK(nn::named_variables(m)[0].name == "hidden/kernel");

  // Errors: before compile, mismatched lengths, an unknown metric.
  nn::model<small_net> raw;
  CHECK_THROWS_WITH(raw.fit(d.x, d.y), Catch::Contains("not compiled; call compile() first"));
  CHECK_THROWS_WITH(m.fit(d.x, fg::tensor<std::int64_t>{1, 0}), Catch::Contains("x has 256 samples (shape (256, 6)) but y has 2"));
  CHECK_THROWS_WITH(raw.compile({.optimizer = fg::optimizers::sgd(),
                                 .loss = nn::losses::mean_squared_error(),
                                 .metrics = {"precision"}}),
                    Catch::Contains("unknown metric 'precision'"));

  // An exception from a callback midway leaves the variables as the last completed step left them.
  const auto before = values(std::get<fg::variable<float>>(nn::named_variables(m)[0].value).peek());
  std::vector<float> after_first;
  CHECK_THROWS_WITH(
      m.fit(d.x, d.y,
            {.batch_size = 64, .epochs = 1, .verbose = 0,
             .callbacks = {nn::callbacks::lambda_callback({.on_batch_end = [&](std::int64_t b, const nn::logs&) {
               if (b == 0) after_first = values(std::get<fg::variable<float>>(nn::named_variables(m)[0].value).peek());
               if (b == 1) throw std::runtime_error("stop here");
             }})}}),
      Catch::Contains("stop here"));
  const auto now = values(std::get<fg::variable<float>>(nn::named_variables(m)[0].value).peek());
  CHECK(now != before);  // two steps ran ...
  CHECK(now != after_first);  // ... the second completed before the callback threw
}

TEST_CASE("progress logger: TensorFlow 2's bar with a fake clock", "[fit]") {
  namespace nn = fg::nn;
  std::ostringstream os;
  double now = 0;
  nn::callbacks::progress_logger bar(1, true, os, [&] { return now; });
  nn::callbacks::training_context ctx;
  ctx.epochs = 2;
  ctx.steps = 4;
  bar.attach(&ctx);
  bar.on_epoch_begin(0, {});
  now = 0.5;
  bar.on_batch_end(0, {{"loss", 0.5}});
  now = 0.52;  // within 0.05 s of the last draw: not redrawn
  bar.on_batch_end(1, {{"loss", 0.4}});
  now = 1.0;
  bar.on_batch_end(2, {{"loss", 0.3}});
  now = 2.0;
  bar.on_batch_end(3, {{"loss", 0.25}});
  bar.on_epoch_end(0, {{"loss", 0.25}, {"accuracy", 0.875}});
  CHECK(os.str() == "Epoch 1/2\n"
                    "\r1/4 [======>.......................] - ETA: 1s - loss: 0.5000"
                    "\r3/4 [=====================>........] - ETA: 0s - loss: 0.3000"
                    "\r4/4 [==============================] - 2s 500ms/step - accuracy: 0.8750 - loss: 0.2500\n");
  CHECK(bar.bar(0) == "0/4 [..............................]");
}

namespace {
/// The smallest source of batches fit takes (nn::batch_dataset): (x, y) pairs walked by a
/// range-based for loop; each walk is one pass. `passes` counts the walks.
struct batch_list {
  std::vector<std::tuple<fg::tensor<float>, fg::tensor<std::int64_t>>> batches;
  std::shared_ptr<int> passes = std::make_shared<int>(0);
  auto begin() const {
    ++*passes;
    return batches.begin();
  }
  auto end() const { return batches.end(); }
};
/// x and y cut into batches of n rows, in order.
batch_list batches_of(const fg::tensor<float>& x, const fg::tensor<std::int64_t>& y, std::size_t n) {
  batch_list out;
  const std::size_t rows = x.shape()[0];
  for (std::size_t lo = 0; lo < rows; lo += n) {
    std::vector<std::int64_t> idx(std::min(n, rows - lo));
    std::iota(idx.begin(), idx.end(), static_cast<std::int64_t>(lo));
    const fg::tensor<std::int64_t> i(fg::shape{idx.size()}, idx);
    out.batches.emplace_back(fg::gather(x, i, 0), fg::gather(y, i, 0));
  }
  return out;
}
/// Requires the trainable variables of a and b to hold the same values, bit for bit.
void check_same_weights(const fg::nn::sequential& a, const fg::nn::sequential& b) {
  const std::vector<fg::variable<float>> wa = fg::nn::trainable_variables(a), wb = fg::nn::trainable_variables(b);
  REQUIRE(wa.size() == wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i)
    for (std::size_t j = 0; j < wa[i].shape().elements(); ++j) CHECK(wb[i].peek().data()[j] == wa[i].peek().data()[j]);
}
/// A sequential classifier for two_classes, compiled, with fixed initial weights.
fg::nn::sequential fixed_classifier(const fg::tensor<float>& x) {
  namespace nn = fg::nn;
  nn::sequential model{nn::dense(8, {.activation = "relu"}), nn::dense(2)};
  model(x);
  std::uint64_t seed = 40;
  for (fg::variable<float>& v : nn::trainable_variables(model))
    v.assign(fg::random::uniform<float>(v.shape(), seed++, -0.5f, 0.5f));
  model.compile({.optimizer = fg::optimizers::adam({.learning_rate = 0.01}),
                 .loss = nn::losses::sparse_categorical_crossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return model;
}
}  // namespace

TEST_CASE("fit: a dataset of batches trains as the same batches of tensors do", "[fit][data]") {
  namespace nn = fg::nn;
  const two_classes d = make_two_classes(200, 6);
  const two_classes v = make_two_classes(60, 7);
  const batch_list train = batches_of(d.x, d.y, 32), val = batches_of(v.x, v.y, 32);
  nn::sequential a = fixed_classifier(d.x), b = fixed_classifier(d.x);
  // Tensors, unshuffled, validated on tensors; the same batches as a dataset, validated on one.
  const nn::history ha = a.fit(d.x, d.y, {.batch_size = 32, .epochs = 3, .verbose = 0,
                                          .validation_data = std::pair{v.x, v.y}, .shuffle = false});
  const nn::history hb = b.fit(train, {.epochs = 3, .verbose = 0, .validation_data = val});
  CHECK(*train.passes == 3);
  CHECK(*val.passes == 3);
  for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    CAPTURE(k);
    CHECK(hb[k] == ha[k]);
  }
  check_same_weights(a, b);
  // evaluate and predict over the dataset give what they give over the tensors.
  CHECK(b.evaluate(val) == a.evaluate(v.x, v.y, {.batch_size = 32}));
  const fg::tensor<float> pa = a.predict(d.x, {.batch_size = 32}), pb = b.predict(train);
  REQUIRE(pb.shape() == pa.shape());
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK(pb.data()[i] == pa.data()[i]);
}

TEST_CASE("fit: steps_per_epoch draws from one pass across epochs; errors", "[fit][data]") {
  namespace nn = fg::nn;
  const two_classes d = make_two_classes(96, 8);
  const batch_list train = batches_of(d.x, d.y, 32);  // 3 batches
  nn::sequential a = fixed_classifier(d.x), b = fixed_classifier(d.x);
  // Two epochs of one step, then the pass runs out at the third: the first two batches train
  // as one epoch of them would.
  const nn::history h = a.fit(train, {.epochs = 2, .verbose = 0, .steps_per_epoch = 1});
  CHECK(*train.passes == 1);
  REQUIRE(h["loss"].size() == 2);
  batch_list first_two;
  first_two.batches = {train.batches[0], train.batches[1]};
  b.fit(first_two, {.epochs = 1, .verbose = 0});
  check_same_weights(a, b);
  CHECK_THROWS_WITH(a.fit(train, {.epochs = 1, .verbose = 0, .steps_per_epoch = 4}),
                    Catch::Contains("ran out after 3 of steps_per_epoch = 4"));
  CHECK_THROWS_WITH(a.fit(train, {.verbose = 0, .validation_split = 0.2}),
                    Catch::Contains("validation_split is for tensors"));
  CHECK_THROWS_WITH(a.fit(d.x, d.y, {.verbose = 0, .steps_per_epoch = 2}), Catch::Contains("steps_per_epoch is for datasets"));
  batch_list bad;
  bad.batches = {{d.x, fg::gather(d.y, fg::tensor<std::int64_t>{0, 1}, 0)}};
  CHECK_THROWS_WITH(a.fit(bad, {.verbose = 0}), Catch::Contains("batch 0 has 96 samples in x"));
}

TEST_CASE("fit: an fg::data pipeline trains, validates, repeats and predicts", "[fit][data]") {
  namespace nn = fg::nn;
  const two_classes d = make_two_classes(256, 9);
  const auto train = fg::data::from_tensor_slices(d.x, d.y).shuffle(256, 3).batch(32);
  const auto val = fg::data::from_tensor_slices(d.x, d.y).batch(64);
  nn::sequential model = fixed_classifier(d.x);
  const nn::history h = model.fit(train, {.epochs = 6, .verbose = 0, .validation_data = val});
  REQUIRE(h["val_accuracy"].size() == 6);
  CHECK(h["val_accuracy"].back() >= 0.9);
  // The validation logs are evaluate's over the same batches.
  CHECK(model.evaluate(val).at("loss") == Approx(model.evaluate(d.x, d.y, {.batch_size = 64}).at("loss")).epsilon(1e-6));
  // A repeated pipeline with steps_per_epoch; a filtered one, whose length is unknown.
  CHECK(model.fit(train.repeat(), {.epochs = 2, .verbose = 0, .steps_per_epoch = 5})["loss"].size() == 2);
  const auto kept = fg::data::from_tensor_slices(d.x, d.y)
                        .filter([](const fg::tensor<float>&, const fg::tensor<std::int64_t>& y) { return y.item() >= 0; })
                        .batch(32);
  CHECK(kept.cardinality() == fg::data::unknown_cardinality);
  CHECK(model.fit(kept, {.epochs = 1, .verbose = 0})["loss"].size() == 1);
  const fg::tensor<float> p = model.predict(fg::data::from_tensor_slices(d.x).batch(100)), q = model.predict(d.x);
  REQUIRE(p.shape() == q.shape());
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(p.data()[i] == Approx(q.data()[i]).epsilon(1e-5).margin(1e-6));
}

TEST_CASE("progress logger: a dataset's first epoch counts steps without a total", "[fit][data]") {
  namespace nn = fg::nn;
  std::ostringstream os;
  double now = 0;
  nn::callbacks::progress_logger bar(1, true, os, [&] { return now; });
  nn::callbacks::training_context ctx;
  ctx.epochs = 1;
  ctx.steps = 0;  // unknown
  bar.attach(&ctx);
  bar.on_epoch_begin(0, {});
  now = 0.5;
  bar.on_batch_end(0, {{"loss", 0.5}});
  now = 0.52;  // within 0.05 s of the last draw: not redrawn
  bar.on_batch_end(1, {{"loss", 0.4}});
  now = 1.5;
  bar.on_batch_end(2, {{"loss", 0.3}});
  ctx.steps = 3;  // fit sets the count once the pass has ended
  bar.on_epoch_end(0, {{"loss", 0.3}});
  CHECK(os.str() == "Epoch 1/1\n"
                    "\r      1/Unknown - 1s 500ms/step - loss: 0.5000"
                    "\r      3/Unknown - 2s 500ms/step - loss: 0.3000"
                    "\r3/3 [==============================] - 2s 500ms/step - loss: 0.3000\n");
}

// ---------------------------------------------------------------------------------------------
// Embedding and weight regularizers (tests/reference/keras_training.py, section 6)
// ---------------------------------------------------------------------------------------------
namespace {
template <class T = float>
fg::variable<T> weight_of(const fg::nn::layer& l, std::size_t i) {
  return std::get<fg::variable<T>>(l.weights().at(i).value);
}
// Requires t's elements to match want within rel (zeros of either sign match zeros).
template <class T>
void check_near(const fg::tensor<T>& t, const std::vector<T>& want, double rel) {
  REQUIRE(t.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": " << t.data()[i] << " against " << want[i]);
    CHECK(fg_test::matches(t.data()[i], want[i], {rel, false}));
  }
}
// The tape's gradient of loss() with respect to v against central differences in float64.
void check_variable_gradient(fg::variable<double> v, const std::function<fg::tensor<double>()>& loss) {
  fg::tensor<double> analytic;
  {
    fg::gradient_tape tape;
    analytic = tape.gradient(loss(), v);
  }
  REQUIRE(analytic.shape() == v.shape());
  const std::vector<double> v0 = values(v.peek());
  for (std::size_t i = 0; i < v0.size(); ++i) {
    auto at = [&](double dv) {
      std::vector<double> w = v0;
      w[i] += dv;
      v.assign(fg::tensor<double>(v.shape(), w));
      return loss().item();
    };
    const double fd = (at(1e-6) - at(-1e-6)) / 2e-6;
    INFO(v.name() << " element " << i);
    CHECK(analytic.data()[i] == Approx(fd).epsilon(1e-6).margin(1e-8));
  }
  v.assign(fg::tensor<double>(v.shape(), v0));
}

// Section 6's embeddings (5 x 3), indices and weights c of the loss sum(y * y * c).
const std::vector<float> emb0 = {-0.699999988f, -0.599999964f, -0.5f,        -0.399999976f, -0.299999982f,
                                 -0.199999988f, -0.0999999642f, 0.0f,        0.100000024f,  0.200000048f,
                                 0.300000012f,  0.400000036f,  0.50000006f, 0.600000083f,  0.699999988f};
fg::tensor<float> emb_c() {
  std::vector<float> c(18);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * static_cast<float>(i) - 2.f;  // exact
  return fg::tensor<float>(fg::shape{2, 3, 3}, c);
}
// Section 6's Dense: kernel (3, 2), bias (2), four samples of three features, two targets each.
const std::vector<float> reg_kernel = {0.5f, -1.0f, 0.25f, 2.0f, -1.5f, 0.75f};
const std::vector<float> reg_bias = {0.1f, -0.2f};
const fg::tensor<float> reg_x = {{1.f, 2.f, 3.f}, {-1.f, 0.5f, 2.f}, {0.f, -2.f, 1.f}, {2.f, 1.f, -1.f}};
const fg::tensor<float> reg_y = {{0.5f, -1.f}, {1.f, 0.f}, {-0.5f, 2.f}, {1.5f, 1.f}};
// A dense of 2 units on 3 features holding section 6's kernel and bias.
fg::nn::dense fixed_dense(fg::nn::regularizers::regularizer kernel, fg::nn::regularizers::regularizer bias = {}) {
  fg::nn::dense d(2, {.kernel_regularizer = std::move(kernel), .bias_regularizer = std::move(bias)});
  (void)d(fg::zeros<float>({1, 3}));
  weight_of(d, 0).assign(fg::tensor<float>(fg::shape{3, 2}, reg_kernel));
  weight_of(d, 1).assign(fg::tensor<float>(fg::shape{2}, reg_bias));
  return d;
}
// Section 6's Embedding(6, 2) -> Flatten -> Dense(1) problem.
const fg::tensor<std::int32_t> seq_x = {{0, 1, 2}, {3, 4, 5}, {1, 1, 0}, {5, 2, 3}};
const fg::tensor<float> seq_y = {{1.f}, {0.f}, {0.5f}, {-1.f}};
const std::vector<float> seq_emb = {-0.800000012f, -0.649999976f, -0.5f,         -0.349999994f,
                                    -0.199999988f, -0.0500000119f, 0.100000024f, 0.25000006f,
                                    0.400000036f,  0.550000012f,   0.699999988f, 0.850000083f};
const std::vector<float> seq_kernel = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.25f};
// Keras' history["loss"] of two epochs of SGD(0.1) on it, and the embeddings after them.
const std::vector<double> seq_history = {0.834168732, 0.506469607};
const std::vector<float> seq_emb_after = {-0.790798306f, -0.662758052f, -0.399139166f, -0.347412288f,
                                          -0.291177422f, -0.0299853124f, 0.133659393f, 0.231618121f,
                                          0.392516673f,  0.546733439f,   0.680070698f, 0.865298927f};

struct bag_of_words {  // an embedding in a plain struct
  fg::nn::embedding embedding{6, 2, {.embeddings_regularizer = fg::nn::regularizers::l2(0.01)}};
  fg::nn::dense out{1};
  template <class I>
  fg::tensor<float> operator()(const fg::tensor<I>& x, bool training = false) {
    return out(fg::reshape(embedding(x, training), {static_cast<long>(x.shape()[0]), -1L}), training);
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(bag_of_words, embedding, out);

TEST_CASE("embedding: values and the gradient to the embeddings against Keras 3; repeated indices add up",
          "[layers][embedding]") {
  namespace nn = fg::nn;
  // Keras' y, sum(y * y * c) and its gradient (made dense from IndexedSlices): rows 2 and 1 are
  // looked up three times and once, so row 2's gradient adds three contributions.
  const std::vector<float> want_y = {-0.699999988f, -0.599999964f, -0.5f,         -0.0999999642f, 0.0f,
                                     0.100000024f,  -0.0999999642f, 0.0f,         0.100000024f,   0.50000006f,
                                     0.600000083f,  0.699999988f,  -0.399999976f, -0.299999982f, -0.199999988f,
                                     -0.0999999642f, 0.0f,          0.100000024f};
  const std::vector<float> want_grad = {2.79999995f, 2.0999999f, 1.5f, -0.799999952f, -0.74999994f,
                                        -0.599999964f, 0.0f,     0.0f, 0.300000072f,  0.0f,
                                        0.0f,          0.0f,     0.25000003f, 0.600000083f, 1.04999995f};
  auto run = [&](auto indices) {
    nn::embedding e(5, 3);
    CHECK(e.type_name() == "Embedding");
    CHECK_FALSE(e.built());
    (void)e(indices);
    fg::variable<float> w = weight_of(e, 0);
    CHECK(w.shape() == fg::shape{5, 3});
    w.assign(fg::tensor<float>(fg::shape{5, 3}, emb0));
    fg::gradient_tape tape;
    const fg::tensor<float> y = e(indices);
    const fg::tensor<float> loss = fg::reduce_sum(y * y * emb_c());
    const fg::tensor<float> g = tape.gradient(loss, w);
    CHECK(y.shape() == fg::shape{2, 3, 3});
    CHECK(values(y) == want_y);  // rows copied exactly
    CHECK(fg_test::matches(loss.item(), -1.02749991f, {1e-6}));
    check_near(g, want_grad, 1e-6);
    CHECK(e.output_shape() == fg::shape{2, 3, 3});
  };
  SECTION("int32 indices") { run(fg::tensor<std::int32_t>{{0, 2, 2}, {4, 1, 2}}); }
  SECTION("int64 indices") { run(fg::tensor<std::int64_t>{{0, 2, 2}, {4, 1, 2}}); }

  // Any shape of indices: a scalar gives one row, rank 3 gives rank 4.
  nn::embedding e(5, 3);
  CHECK(e(fg::tensor<std::int32_t>(4)).shape() == fg::shape{3});
  CHECK(e(fg::zeros<std::int64_t>({2, 1, 4})).shape() == fg::shape{2, 1, 4, 3});
  // Keras' default initializer: uniform in [-0.05, 0.05).
  const fg::tensor<float> w = weight_of(e, 0).peek();
  CHECK(fg::reduce_max(fg::abs(w)).item() <= 0.05f);
  CHECK(fg::reduce_max(w).item() > 0.f);
  // Float input is cast to int32 first, as Keras casts it: 2.75 picks row 2.
  const fg::tensor<float> by_float = e(fg::tensor<float>{2.75f, 0.f});
  CHECK(values(by_float) == values(e(fg::tensor<std::int32_t>{2, 0})));
  // The walk names the variable "embedding/embeddings".
  CHECK(nn::named_variables(e).at(0).name == "embedding/embeddings");
  CHECK(e.count_params() == 15);
}

TEST_CASE("embedding: an index out of range names the layer, the index and input_dim, and changes nothing",
          "[layers][embedding]") {
  namespace nn = fg::nn;
  nn::embedding e(5, 3, {.name = "tokens"});
  CHECK_THROWS_AS(e(fg::tensor<std::int32_t>{1, 5}), fg::index_error);
  CHECK_FALSE(e.built());  // the first call failed before the variables were made
  CHECK_THROWS_WITH(e(fg::tensor<std::int64_t>{{0, 1}, {-1, 2}}),
                    "fg::nn::embedding 'tokens': index -1 (element 2 of indices of shape (2, 2)) is out of range for "
                    "input_dim 5 (valid: 0 to 4)");
  (void)e(fg::tensor<std::int32_t>{0});
  const std::vector<float> before = values(weight_of(e, 0).peek());
  CHECK_THROWS_AS(e(fg::tensor<std::int64_t>{std::int64_t{4}, std::int64_t{5000000000}}), std::out_of_range);
  CHECK_THROWS_AS(e(fg::tensor<float>{7.f}), fg::index_error);
  CHECK(values(weight_of(e, 0).peek()) == before);
  CHECK(e.output_shape() == fg::shape{1, 3});  // still the last call that ran
  CHECK_THROWS_WITH(nn::embedding(0, 3), Catch::Contains("input_dim and output_dim must be positive, got 0 and 3"));
  // Float64 embeddings: lookup<double>; a float32 call of the float64 layer names the layer.
  nn::embedding d(4, 2);
  CHECK(d.lookup<double>(fg::tensor<std::int32_t>{3}).shape() == fg::shape{1, 2});
  CHECK_THROWS_WITH(d(fg::tensor<std::int32_t>{3}), Catch::Contains("fg::nn::embedding 'embedding': asked for float32 embeddings, but its first call made them float64"));
}

TEST_CASE("embedding: float64 gradients to the embeddings against finite differences", "[layers][embedding]") {
  namespace nn = fg::nn;
  nn::embedding e(4, 3, {.embeddings_initializer = nn::initializers::random_uniform({.minval = -1, .maxval = 1, .seed = 3}),
                         .embeddings_regularizer = nn::regularizers::l1_l2(0.02, 0.03)});
  const fg::tensor<std::int64_t> idx = {{3, 0, 3}, {1, 3, 0}};  // row 2 unused, row 3 three times
  (void)e.lookup<double>(idx);
  const fg::tensor<double> c = fg::random::normal<double>({2, 3, 3}, 11);
  check_variable_gradient(weight_of<double>(e, 0), [&] {
    fg::tensor<double> loss = fg::reduce_sum(fg::sin(e.lookup<double>(idx)) * c);
    for (const fg::tensor<double>& r : nn::regularization_losses<double>(e)) loss = loss + r;
    return loss;
  });
  // The regularizers alone, as functions of a tensor, by check_gradients (no element near 0,
  // where |w| has no derivative).
  const fg::tensor<double> w = {{0.5, -1.25, 0.75}, {-0.3, 2.0, -0.9}};
  for (const nn::regularizers::regularizer& reg :
       {nn::regularizers::l1(0.3), nn::regularizers::l2(0.2), nn::regularizers::l1_l2(0.02, 0.5),
        nn::regularizers::regularizer("l1_l2")}) {
    const auto r = fg::testing::check_gradients([&](const std::vector<fg::tensor<double>>& in) { return reg(in[0]); }, {w});
    CHECK(r.max_error < 1e-6);
  }
}

TEST_CASE("regularizers: l1, l2 and l1_l2 of a dense with fixed weights against Keras 3", "[regularizers]") {
  namespace nn = fg::nn;
  namespace reg = fg::nn::regularizers;
  auto loss_values = [](const nn::dense& d) {
    std::vector<float> out;
    for (const fg::tensor<float>& t : nn::regularization_losses(d)) out.push_back(t.item());
    return out;
  };
  // Keras' layer.losses for the kernel regularized alone.
  CHECK(loss_values(fixed_dense(reg::l1(0.01))) == std::vector<float>{0.0599999987f});
  CHECK(loss_values(fixed_dense(reg::l2(0.01))) == std::vector<float>{0.081249997f});
  CHECK(loss_values(fixed_dense(reg::l1_l2(0.02, 0.03))) == std::vector<float>{0.363749981f});
  CHECK(loss_values(fixed_dense("l1")) == std::vector<float>{0.0599999987f});  // Keras' default factor 0.01
  CHECK(loss_values(fixed_dense("l2")) == std::vector<float>{0.081249997f});
  // "l1_l2": 0.01 and 0.01 (Keras' documented defaults for the name): 0.06 + 0.08125 by hand.
  CHECK(fg_test::matches(loss_values(fixed_dense("l1_l2")).at(0), 0.14125f, {1e-6}));
  // Kernel and bias: one term each, in the variables' order.
  const nn::dense both = fixed_dense(reg::l1_l2(0.02, 0.03), reg::l2(0.5));
  CHECK(loss_values(both) == std::vector<float>{0.363749981f, 0.0250000022f});
  // No regularizer, no term; a factor of 0 still adds a term of 0, as in Keras.
  CHECK(nn::regularization_losses(fixed_dense({})).empty());
  CHECK(loss_values(fixed_dense(reg::l1_l2(0, 0))) == std::vector<float>{0.f});
  // Through a sequential holding the same layer.
  nn::sequential s{both};
  CHECK(s.losses().size() == 2);
  CHECK(s.losses()[1].item() == 0.0250000022f);
  // Computed from the current values each time.
  weight_of(both, 1).assign(fg::tensor<float>{1.f, 1.f});
  CHECK(s.losses()[1].item() == 1.f);  // 0.5 * (1 + 1)
  // Conv2D: kernel and bias regularized, by hand: 18 kernel elements of 0.5, two biases of -2.
  nn::conv2d conv(2, 3, {.kernel_initializer = nn::initializers::constant(0.5),
                         .bias_initializer = nn::initializers::constant(-2.0),
                         .kernel_regularizer = reg::l1(0.01), .bias_regularizer = reg::l2(0.01)});
  (void)conv(fg::ones<float>({1, 5, 5, 1}));
  const auto c = nn::regularization_losses(conv);
  REQUIRE(c.size() == 2);
  CHECK(fg_test::matches(c[0].item(), 0.09f, {1e-6}));
  CHECK(fg_test::matches(c[1].item(), 0.08f, {1e-6}));
  // Errors: an unknown name, a negative or infinite factor.
  CHECK_THROWS_WITH(reg::regularizer("l3"), Catch::Contains("unknown regularizer 'l3'; Keras' names: l1, l2, l1_l2"));
  CHECK_THROWS_WITH(reg::l2(-0.1), Catch::Contains("fg::nn::regularizers::l2: the factor must be finite and at least 0"));
  CHECK_THROWS_WITH(reg::l1_l2(0.1, INFINITY), Catch::Contains("fg::nn::regularizers::l1_l2: factors must be"));
}

TEST_CASE("regularizers: the gradient of a loss plus the regularization against Keras 3 and finite differences",
          "[regularizers]") {
  namespace nn = fg::nn;
  namespace reg = fg::nn::regularizers;
  nn::dense d = fixed_dense(reg::l1_l2(0.02, 0.03), reg::l1(0.05));
  const fg::tensor<float> x = fg::gather(reg_x, fg::tensor<std::int32_t>{0, 1});
  const fg::tensor<float> y = fg::gather(reg_y, fg::tensor<std::int32_t>{0, 1});
  const auto vars = nn::trainable_variables(d);
  fg::gradient_tape tape;
  fg::tensor<float> total = nn::losses::mean_squared_error()(y, d(x));
  for (const fg::tensor<float>& r : nn::regularization_losses(d)) total = total + r;
  const auto g = tape.gradient(total, vars);
  // Keras: mse + tf.add_n(layer.losses) and its GradientTape gradient.
  CHECK(fg_test::matches(total.item(), 20.6232815f, {1e-6}));
  check_near(g[0], {0.237499997f, 1.29500008f, -4.93375015f, 7.01499987f, -10.2349997f, 12.4400005f}, 1e-6);
  check_near(g[1], {-4.0374999f, 4.625f}, 1e-6);

  // In float64, against central differences, for the kernel and the bias.
  nn::dense d64(2, {.activation = "tanh", .kernel_regularizer = reg::l1_l2(0.02, 0.03), .bias_regularizer = "l2"});
  const fg::tensor<double> x64 = fg::cast<double>(reg_x);
  (void)d64(x64);
  weight_of<double>(d64, 1).assign(fg::tensor<double>{0.3, -0.4});
  auto loss = [&] {
    fg::tensor<double> l = fg::reduce_sum(fg::square(d64(x64)));
    for (const fg::tensor<double>& r : nn::regularization_losses<double>(d64)) l = l + r;
    return l;
  };
  check_variable_gradient(weight_of<double>(d64, 0), loss);
  check_variable_gradient(weight_of<double>(d64, 1), loss);
}

TEST_CASE("fit: kernel and bias regularizers give Keras 3's loss, weights and evaluate", "[fit][regularizers]") {
  namespace nn = fg::nn;
  namespace reg = fg::nn::regularizers;
  nn::dense d = fixed_dense(reg::l2(0.1), reg::l1(0.05));
  nn::sequential model{d};
  model.compile({.optimizer = fg::optimizers::sgd({.learning_rate = 0.1}), .loss = nn::losses::mean_squared_error()});
  std::vector<float> before;
  for (const fg::tensor<float>& t : model.losses()) before.push_back(t.item());
  CHECK(before == std::vector<float>{0.8125f, 0.0150000006f});  // Keras' model.losses
  const nn::history h = model.fit(reg_x, reg_y, {.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false});
  // Keras' history["loss"]: the mean squared error plus the regularization (14.7832 + 0.8275 in
  // the first epoch), before each step.
  REQUIRE(h["loss"].size() == 2);
  CHECK(h["loss"][0] == Approx(15.6107035).epsilon(1e-6));
  CHECK(h["loss"][1] == Approx(6.9817791).epsilon(1e-6));
  check_near(weight_of(d, 0).peek(),
             {0.333889842f, -0.869099975f, 0.433856666f, 0.989634395f, -0.570193768f, -0.0592937768f}, 2e-6);
  check_near(weight_of(d, 1).peek(), {0.404667974f, -0.194499999f}, 2e-6);
  CHECK(model.evaluate(reg_x, reg_y, {.batch_size = 4}).at("loss") == Approx(4.01699877).epsilon(1e-6));
  // evaluate in batches of one gives the same (the regularization added to each batch's loss).
  CHECK(model.evaluate(reg_x, reg_y, {.batch_size = 1}).at("loss") == Approx(4.01699877).epsilon(1e-6));
}

TEST_CASE("embedding: first in a sequential and in a plain struct, trained by fit on integer indices as Keras does",
          "[fit][embedding]") {
  namespace nn = fg::nn;
  namespace reg = fg::nn::regularizers;
  SECTION("sequential") {
    nn::sequential model{nn::embedding(6, 2, {.embeddings_regularizer = reg::l2(0.01)}), nn::flatten(), nn::dense(1)};
    CHECK(model(seq_x).shape() == fg::shape{4, 1});
    std::vector<std::string> names;
    for (const auto& v : nn::named_variables(model)) names.push_back(v.name);
    CHECK(names == std::vector<std::string>{"sequential/embedding/embeddings", "sequential/dense/kernel",
                                            "sequential/dense/bias"});
    weight_of(model[0], 0).assign(fg::tensor<float>(fg::shape{6, 2}, seq_emb));
    weight_of(model[2], 0).assign(fg::tensor<float>(fg::shape{6, 1}, seq_kernel));
    model.compile({.optimizer = fg::optimizers::sgd({.learning_rate = 0.1}), .loss = nn::losses::mean_squared_error()});
    const nn::history h = model.fit(seq_x, seq_y, {.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false});
    CHECK(h["loss"][0] == Approx(seq_history[0]).epsilon(1e-6));
    CHECK(h["loss"][1] == Approx(seq_history[1]).epsilon(1e-6));
    check_near(weight_of(model[0], 0).peek(), seq_emb_after, 2e-6);
    // int64 indices, predict and evaluate; validation_data of indices.
    const fg::tensor<std::int64_t> x64 = fg::cast<std::int64_t>(seq_x);
    check_near(model.predict(x64, {.batch_size = 3}), values(model(seq_x)), 1e-6);
    CHECK(model.evaluate(x64, seq_y).count("loss") == 1);
    const nn::history v =
        model.fit(seq_x, seq_y, {.epochs = 1, .verbose = 0, .validation_data = std::pair{x64, seq_y}});
    CHECK(v.values.count("val_loss") == 1);
    const fg::tensor<float> as_float = fg::cast<float>(seq_x);
    CHECK_THROWS_WITH(model.fit(seq_x, seq_y, {.verbose = 0, .validation_data = std::pair{as_float, seq_y}}),
                      Catch::Contains("validation_data's x is float32 but x is integer"));
    // A sequential whose first layer takes no indices says so.
    nn::sequential dense_first{nn::dense(2)};
    CHECK_THROWS_WITH(dense_first(seq_x), Catch::Contains("'sequential': called on int32 input, but its first layer "
                                                          "'dense' (Dense) takes float input"));
  }
  SECTION("plain struct") {
    nn::model<bag_of_words> m;
    (void)m(seq_x);
    std::vector<std::string> names;
    for (const auto& v : nn::named_variables(m)) names.push_back(v.name);
    CHECK(names == std::vector<std::string>{"embedding/embeddings", "out/kernel", "out/bias"});
    weight_of(m.embedding, 0).assign(fg::tensor<float>(fg::shape{6, 2}, seq_emb));
    weight_of(m.out, 0).assign(fg::tensor<float>(fg::shape{6, 1}, seq_kernel));
    CHECK(m.losses().size() == 1);
    m.compile({.optimizer = fg::optimizers::sgd({.learning_rate = 0.1}), .loss = nn::losses::mean_squared_error()});
    const nn::history h = m.fit(seq_x, seq_y, {.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false});
    CHECK(h["loss"][0] == Approx(seq_history[0]).epsilon(1e-6));
    CHECK(h["loss"][1] == Approx(seq_history[1]).epsilon(1e-6));
    check_near(weight_of(m.embedding, 0).peek(), seq_emb_after, 2e-6);
  }
}

TEST_CASE("embedding: summary() row as Keras prints it", "[layers][embedding]") {
  namespace nn = fg::nn;
  nn::sequential model{nn::embedding(100, 8), nn::flatten(), nn::dense(1)};
  (void)model(fg::zeros<std::int32_t>({2, 4}));
  // TensorFlow 2.21's model.summary() for the same model (tests/reference/keras_training.py).
  CHECK(model.summary_text() ==
        "Model: \"sequential\"\n"
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
        "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
        "│ embedding (Embedding)           │ (None, 4, 8)           │           800 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ flatten (Flatten)               │ (None, 32)             │             0 │\n"
        "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
        "│ dense (Dense)                   │ (None, 1)              │            33 │\n"
        "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
        " Total params: 833 (3.25 KB)\n"
        " Trainable params: 833 (3.25 KB)\n"
        " Non-trainable params: 0 (0.00 B)\n");
}
