// gradient_tape::jacobian and batch_jacobian against hand-derived Jacobians.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

TEST_CASE("jacobian of an elementwise square is diagonal", "[jacobian]") {
  fg::tensor<double> x = {1.0, 2.0, 3.0};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = x * x;
  fg::tensor<double> j = tape.jacobian(y, x);
  REQUIRE(j.shape() == fg::shape{3, 3});
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) CHECK(j.data()[r * 3 + c] == (r == c ? 2.0 * (r + 1) : 0.0));
}

TEST_CASE("jacobian of a broadcast product has shape target + source", "[jacobian]") {
  fg::tensor<double> x = {1.0, 2.0};
  fg::tensor<double> w = {{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}};
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  fg::tensor<double> y = fg::sum(w * x, 1);  // y_i = sum_j w_ij x_j: jacobian = w
  fg::tensor<double> j = tape.jacobian(y, x);
  REQUIRE(j.shape() == fg::shape{3, 2});
  for (std::size_t i = 0; i < 6; ++i) CHECK(j.data()[i] == w.data()[i]);
  CHECK(tape.jacobian(y, x).data()[5] == 6.0);  // persistent: can be asked again
}

TEST_CASE("batch_jacobian gives per-example jacobians", "[jacobian]") {
  fg::tensor<double> x = {{1.0, 2.0}, {3.0, 4.0}};  // batch of 2, 2 features
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = x * x * x;  // per example: diag(3 x^2)
  fg::tensor<double> j = tape.batch_jacobian(y, x);
  REQUIRE(j.shape() == fg::shape{2, 2, 2});
  const double expected[8] = {3, 0, 0, 12, 27, 0, 0, 48};
  for (int i = 0; i < 8; ++i) CHECK(j.data()[i] == expected[i]);
}

TEST_CASE("batch_jacobian checks that both sides are batched alike", "[jacobian][errors]") {
  fg::tensor<double> x = {{1.0, 2.0}};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = fg::sum(x);
  CHECK_THROWS_AS(tape.batch_jacobian(y, x), std::invalid_argument);
}

TEST_CASE("jacobian and batch_jacobian refuse a non-persistent tape already used, naming themselves",
          "[jacobian][errors]") {
  fg::tensor<double> x = {{1.0, 2.0}};
  for (const bool batch : {false, true}) {
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<double> y = x * x;
    (void)tape.gradient(fg::sum(y), x);  // uses the tape up
    const std::string op = batch ? "gradient_tape::batch_jacobian: " : "gradient_tape::jacobian: ";
    auto call = [&] { return batch ? tape.batch_jacobian(y, x) : tape.jacobian(y, x); };
    CHECK_THROWS_AS(call(), fg::tape_error);
    CHECK_THROWS_WITH(call(), op + "GradientTape.gradient can only be called once on non-persistent tapes");
  }
}
