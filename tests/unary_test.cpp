// Elementwise unary ops against numpy: ordinary values and the edge cases (inf, -inf, nan,
// -0.0 with its sign bit, denormals), through both the SIMD and the scalar evaluation paths;
// integer forms; empty, rank-0 and rank-5 tensors; fusion of unary chains.
#include <catch2/catch.hpp>

#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using namespace fg_test;
/// numpy's results of one op, element by element.
template <class T>
struct expected_row {
  std::string name;
  std::vector<T> want;
};

/// An op under test, applied to float and to double tensors.
struct unary_case {
  std::string name;
  std::function<fg::tensor<float>(const fg::tensor<float>&)> f32;
  std::function<fg::tensor<double>(const fg::tensor<double>&)> f64;
  bool exact;      ///< correctly rounded by definition (no libm-style approximation)
  bool zero_sign;  ///< checks the sign bit of zero results
};

/// Binds a generic op to float and double tensors.
template <class F>
unary_case make_case(std::string name, F f, bool exact, bool zero_sign = true) {
  return {std::move(name), [f](const fg::tensor<float>& x) -> fg::tensor<float> { return f(x); },
          [f](const fg::tensor<double>& x) -> fg::tensor<double> { return f(x); }, exact, zero_sign};
}

/// Every unary op on floating tensors, named as in the reference tables.
const std::vector<unary_case>& unary_cases() {
  static const std::vector<unary_case> cases = {
      make_case("negative", [](const auto& x) { return fg::negative(x); }, true),
      make_case("abs", [](const auto& x) { return fg::abs(x); }, true),
      make_case("sign", [](const auto& x) { return fg::sign(x); }, true),
      make_case("exp", [](const auto& x) { return fg::exp(x); }, false),
      make_case("expm1", [](const auto& x) { return fg::expm1(x); }, false),
      make_case("log", [](const auto& x) { return fg::log(x); }, false),
      make_case("log1p", [](const auto& x) { return fg::log1p(x); }, false),
      make_case("sqrt", [](const auto& x) { return fg::sqrt(x); }, true),
      make_case("rsqrt", [](const auto& x) { return fg::rsqrt(x); }, false),
      make_case("square", [](const auto& x) { return fg::square(x); }, true),
      make_case("reciprocal", [](const auto& x) { return fg::reciprocal(x); }, true),
      make_case("sin", [](const auto& x) { return fg::sin(x); }, false),
      make_case("cos", [](const auto& x) { return fg::cos(x); }, false),
      make_case("tan", [](const auto& x) { return fg::tan(x); }, false),
      make_case("tanh", [](const auto& x) { return fg::tanh(x); }, false),
      make_case("sigmoid", [](const auto& x) { return fg::sigmoid(x); }, false),
      make_case("softplus", [](const auto& x) { return fg::softplus(x); }, false),
      make_case("erf", [](const auto& x) { return fg::erf(x); }, false),
      make_case("erfc", [](const auto& x) { return fg::erfc(x); }, false),
      // relu(-0.0) may be either zero: std::max and the SIMD max pick different operands on ties.
      make_case("relu", [](const auto& x) { return fg::relu(x); }, true, false),
      make_case("floor", [](const auto& x) { return fg::floor(x); }, true),
      make_case("ceil", [](const auto& x) { return fg::ceil(x); }, true),
      make_case("round", [](const auto& x) { return fg::round(x); }, true),
  };
  return cases;
}

// References computed with numpy 2 on float32 and float64 arrays (np.seterr(all='ignore')).
// x = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.0, 10.0, -10.0, 100.0, -100.0, inf, -inf, nan,
//               denorm_min], dtype=np.float32)
const std::vector<float> float_inputs = {
    0.0f, -0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 2.5f, -2.5f, 3.0f, 10.0f, -10.0f, 100.0f, -100.0f, inf_f, -inf_f,
    nan_f, dmin_f};
const std::vector<expected_row<float>> float_expected = {
    // np.negative(x)
    {"negative",
     {-0.0f, 0.0f, -0.5f, 0.5f, -1.0f, 1.0f, -2.5f, 2.5f, -3.0f, -10.0f, 10.0f, -100.0f, 100.0f, -inf_f,
      inf_f, nan_f, -dmin_f}},
    // np.abs(x)
    {"abs",
     {0.0f, 0.0f, 0.5f, 0.5f, 1.0f, 1.0f, 2.5f, 2.5f, 3.0f, 10.0f, 10.0f, 100.0f, 100.0f, inf_f, inf_f, nan_f,
      dmin_f}},
    // np.sign(x), except sign(-0.0): fusegrad keeps zero's sign bit (ops/unary.hpp), numpy gives 0.0
    {"sign",
     {0.0f, -0.0f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, nan_f,
      1.0f}},
    // np.exp(x)
    {"exp",
     {1.0f, 1.0f, 1.64872122f, 0.606530666f, 2.71828198f, 0.367879421f, 12.1824932f, 0.0820850059f,
      20.085537f, 22026.4668f, 4.53999237e-05f, inf_f, 0x1.bp-145f, inf_f, 0.0f, nan_f, 1.0f}},
    // np.expm1(x)
    {"expm1",
     {0.0f, -0.0f, 0.648721278f, -0.393469334f, 1.71828187f, -0.63212055f, 11.1824942f, -0.917915046f,
      19.085537f, 22025.4648f, -0.999954581f, inf_f, -1.0f, inf_f, -1.0f, nan_f, dmin_f}},
    // np.log(x)
    {"log",
     {-inf_f, -inf_f, -0.693147182f, nan_f, 0.0f, nan_f, 0.91629076f, nan_f, 1.09861231f, 2.30258512f, nan_f,
      4.60517025f, nan_f, inf_f, nan_f, nan_f, -103.278931f}},
    // np.log1p(x)
    {"log1p",
     {0.0f, -0.0f, 0.405465126f, -0.693147182f, 0.693147182f, -inf_f, 1.25276303f, nan_f, 1.38629436f,
      2.39789534f, nan_f, 4.61512041f, nan_f, inf_f, nan_f, nan_f, dmin_f}},
    // np.sqrt(x)
    {"sqrt",
     {0.0f, -0.0f, 0.707106769f, nan_f, 1.0f, nan_f, 1.58113885f, nan_f, 1.73205078f, 3.1622777f, nan_f,
      10.0f, nan_f, inf_f, nan_f, nan_f, 3.74339207e-23f}},
    // 1 / np.sqrt(x)
    {"rsqrt",
     {inf_f, -inf_f, 1.41421354f, nan_f, 1.0f, nan_f, 0.632455528f, nan_f, 0.577350259f, 0.316227764f, nan_f,
      0.100000001f, nan_f, 0.0f, nan_f, nan_f, 2.67137384e+22f}},
    // np.square(x)
    {"square",
     {0.0f, 0.0f, 0.25f, 0.25f, 1.0f, 1.0f, 6.25f, 6.25f, 9.0f, 100.0f, 100.0f, 10000.0f, 10000.0f, inf_f,
      inf_f, nan_f, 0.0f}},
    // np.reciprocal(x)
    {"reciprocal",
     {inf_f, -inf_f, 2.0f, -2.0f, 1.0f, -1.0f, 0.400000006f, -0.400000006f, 0.333333343f, 0.100000001f,
      -0.100000001f, 0.00999999978f, -0.00999999978f, 0.0f, -0.0f, nan_f, inf_f}},
    // np.sin(x)
    {"sin",
     {0.0f, -0.0f, 0.47942555f, -0.47942555f, 0.841471016f, -0.841471016f, 0.598472178f, -0.598472178f,
      0.141120002f, -0.54402107f, 0.54402107f, -0.506365657f, 0.506365657f, nan_f, nan_f, nan_f, dmin_f}},
    // np.cos(x)
    {"cos",
     {1.0f, 1.0f, 0.87758255f, 0.87758255f, 0.540302277f, 0.540302277f, -0.801143587f, -0.801143587f,
      -0.989992499f, -0.839071512f, -0.839071512f, 0.862318873f, 0.862318873f, nan_f, nan_f, nan_f, 1.0f}},
    // np.tan(x)
    {"tan",
     {0.0f, -0.0f, 0.546302497f, -0.546302497f, 1.55740774f, -1.55740774f, -0.747022271f, 0.747022271f,
      -0.142546535f, 0.648360789f, -0.648360789f, -0.587213933f, 0.587213933f, nan_f, nan_f, nan_f, dmin_f}},
    // np.tanh(x)
    {"tanh",
     {0.0f, -0.0f, 0.462117195f, -0.462117195f, 0.761594176f, -0.761594176f, 0.986614287f, -0.986614287f,
      0.995054781f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, nan_f, dmin_f}},
    // 1 / (1 + np.exp(-x))
    {"sigmoid",
     {0.5f, 0.5f, 0.622459352f, 0.377540678f, 0.731058598f, 0.268941402f, 0.924141824f, 0.0758581832f,
      0.952574134f, 0.999954581f, 4.53978682e-05f, 1.0f, 0.0f, 1.0f, 0.0f, nan_f, 0.5f}},
    // np.logaddexp(0, x)
    {"softplus",
     {0.693147182f, 0.693147182f, 0.974076986f, 0.474076986f, 1.31326175f, 0.313261688f, 2.57888985f,
      0.078889735f, 3.04858732f, 10.0000458f, 4.53989014e-05f, 100.0f, 0x1.bp-145f, inf_f, 0.0f, nan_f,
      0.693147182f}},
    // math.erf(x) and math.erfc(x) of the float32 inputs, rounded to float32 (numpy has no erf),
    // except erfc(10) = 2.09e-45, 1.49 denormal steps: the C library's erfcf rounds it to 2 steps
    // (an error of 0.51 ulp), which fusegrad keeps (TensorFlow's float32 erfc flushes it to 0)
    {"erf",
     {0.0f, -0.0f, 0.520499885f, -0.520499885f, 0.842700779f, -0.842700779f, 0.999593019f, -0.999593019f,
      0.999977887f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, nan_f, dmin_f}},
    {"erfc",
     {1.0f, 1.0f, 0.479500115f, 1.52049983f, 0.157299206f, 1.84270084f, 0.000406952022f, 1.99959302f,
      2.20904967e-05f, 2 * dmin_f, 2.0f, 0.0f, 2.0f, 0.0f, 2.0f, nan_f, 1.0f}},
    // np.maximum(x, 0)
    {"relu",
     {0.0f, 0.0f, 0.5f, 0.0f, 1.0f, 0.0f, 2.5f, 0.0f, 3.0f, 10.0f, 0.0f, 100.0f, 0.0f, inf_f, 0.0f, nan_f,
      dmin_f}},
    // np.floor(x)
    {"floor",
     {0.0f, -0.0f, 0.0f, -1.0f, 1.0f, -1.0f, 2.0f, -3.0f, 3.0f, 10.0f, -10.0f, 100.0f, -100.0f, inf_f, -inf_f,
      nan_f, 0.0f}},
    // np.ceil(x)
    {"ceil",
     {0.0f, -0.0f, 1.0f, -0.0f, 1.0f, -1.0f, 3.0f, -2.0f, 3.0f, 10.0f, -10.0f, 100.0f, -100.0f, inf_f, -inf_f,
      nan_f, 1.0f}},
    // np.round(x)
    {"round",
     {0.0f, -0.0f, 0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, 10.0f, -10.0f, 100.0f, -100.0f, inf_f, -inf_f,
      nan_f, 0.0f}},
};
// x = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.0, 10.0, -10.0, 100.0, -100.0, inf, -inf, nan,
//               denorm_min], dtype=np.float64)
const std::vector<double> double_inputs = {
    0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.0, 10.0, -10.0, 100.0, -100.0, inf_d, -inf_d, nan_d, dmin_d};
const std::vector<expected_row<double>> double_expected = {
    // np.negative(x)
    {"negative",
     {-0.0, 0.0, -0.5, 0.5, -1.0, 1.0, -2.5, 2.5, -3.0, -10.0, 10.0, -100.0, 100.0, -inf_d, inf_d, nan_d,
      -dmin_d}},
    // np.abs(x)
    {"abs",
     {0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 2.5, 2.5, 3.0, 10.0, 10.0, 100.0, 100.0, inf_d, inf_d, nan_d, dmin_d}},
    // np.sign(x), except sign(-0.0): fusegrad keeps zero's sign bit (ops/unary.hpp), numpy gives 0.0
    {"sign",
     {0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, nan_d, 1.0}},
    // np.exp(x)
    {"exp",
     {1.0, 1.0, 1.6487212707001282, 0.60653065971263342, 2.7182818284590451, 0.36787944117144233,
      12.182493960703473, 0.0820849986238988, 20.085536923187668, 22026.465794806718, 4.5399929762484854e-05,
      2.6881171418161356e+43, 3.7200759760208361e-44, inf_d, 0.0, nan_d, 1.0}},
    // np.expm1(x)
    {"expm1",
     {0.0, -0.0, 0.64872127070012819, -0.39346934028736658, 1.7182818284590453, -0.63212055882855767,
      11.182493960703473, -0.91791500137610116, 19.085536923187668, 22025.465794806718, -0.99995460007023751,
      2.6881171418161356e+43, -1.0, inf_d, -1.0, nan_d, dmin_d}},
    // np.log(x)
    {"log",
     {-inf_d, -inf_d, -0.69314718055994529, nan_d, 0.0, nan_d, 0.91629073187415511, nan_d, 1.0986122886681098,
      2.3025850929940459, nan_d, 4.6051701859880918, nan_d, inf_d, nan_d, nan_d, -744.44007192138122}},
    // np.log1p(x)
    {"log1p",
     {0.0, -0.0, 0.40546510810816438, -0.69314718055994529, 0.69314718055994529, -inf_d, 1.2527629684953681,
      nan_d, 1.3862943611198906, 2.3978952727983707, nan_d, 4.6151205168412597, nan_d, inf_d, nan_d, nan_d,
      dmin_d}},
    // np.sqrt(x)
    {"sqrt",
     {0.0, -0.0, 0.70710678118654757, nan_d, 1.0, nan_d, 1.5811388300841898, nan_d, 1.7320508075688772,
      3.1622776601683795, nan_d, 10.0, nan_d, inf_d, nan_d, nan_d, 2.2227587494850775e-162}},
    // 1 / np.sqrt(x)
    {"rsqrt",
     {inf_d, -inf_d, 1.4142135623730949, nan_d, 1.0, nan_d, 0.63245553203367588, nan_d, 0.57735026918962584,
      0.31622776601683794, nan_d, 0.10000000000000001, nan_d, 0.0, nan_d, nan_d, 4.4989137945431964e+161}},
    // np.square(x)
    {"square",
     {0.0, 0.0, 0.25, 0.25, 1.0, 1.0, 6.25, 6.25, 9.0, 100.0, 100.0, 10000.0, 10000.0, inf_d, inf_d, nan_d,
      0.0}},
    // np.reciprocal(x)
    {"reciprocal",
     {inf_d, -inf_d, 2.0, -2.0, 1.0, -1.0, 0.40000000000000002, -0.40000000000000002, 0.33333333333333331,
      0.10000000000000001, -0.10000000000000001, 0.01, -0.01, 0.0, -0.0, nan_d, inf_d}},
    // np.sin(x)
    {"sin",
     {0.0, -0.0, 0.47942553860420301, -0.47942553860420301, 0.8414709848078965, -0.8414709848078965,
      0.59847214410395655, -0.59847214410395655, 0.14112000805986721, -0.54402111088936977,
      0.54402111088936977, -0.50636564110975879, 0.50636564110975879, nan_d, nan_d, nan_d, dmin_d}},
    // np.cos(x)
    {"cos",
     {1.0, 1.0, 0.87758256189037276, 0.87758256189037276, 0.54030230586813977, 0.54030230586813977,
      -0.8011436155469337, -0.8011436155469337, -0.98999249660044542, -0.83907152907645244,
      -0.83907152907645244, 0.86231887228768389, 0.86231887228768389, nan_d, nan_d, nan_d, 1.0}},
    // np.tan(x)
    {"tan",
     {0.0, -0.0, 0.54630248984379048, -0.54630248984379048, 1.5574077246549023, -1.5574077246549023,
      -0.74702229723866032, 0.74702229723866032, -0.1425465430742778, 0.64836082745908663,
      -0.64836082745908663, -0.58721391515692911, 0.58721391515692911, nan_d, nan_d, nan_d, dmin_d}},
    // np.tanh(x)
    {"tanh",
     {0.0, -0.0, 0.46211715726000974, -0.46211715726000974, 0.76159415595576485, -0.76159415595576485,
      0.98661429815143031, -0.98661429815143031, 0.99505475368673046, 0.99999999587769273,
      -0.99999999587769273, 1.0, -1.0, 1.0, -1.0, nan_d, dmin_d}},
    // 1 / (1 + np.exp(-x))
    {"sigmoid",
     {0.5, 0.5, 0.62245933120185459, 0.37754066879814541, 0.7310585786300049, 0.2689414213699951,
      0.92414181997875655, 0.075858180021243546, 0.95257412682243336, 0.99995460213129761,
      4.5397868702434395e-05, 1.0, 3.7200759760208356e-44, 1.0, 0.0, nan_d, 0.5}},
    // np.logaddexp(0, x)
    {"softplus",
     {0.69314718055994529, 0.69314718055994529, 0.97407698418010669, 0.47407698418010669, 1.3132616875182228,
      0.31326168751822286, 2.5788897342925496, 0.078889734292549626, 3.0485873515737421, 10.000045398899218,
      4.5398899216864647e-05, 100.0, 3.7200759760208361e-44, inf_d, 0.0, nan_d, 0.69314718055994529}},
    // math.erf(x) and math.erfc(x)
    {"erf",
     {0.0, -0.0, 0.5204998778130465, -0.5204998778130465, 0.8427007929497149, -0.8427007929497149,
      0.999593047982555, -0.999593047982555, 0.9999779095030014, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, nan_d, dmin_d}},
    {"erfc",
     {1.0, 1.0, 0.4795001221869535, 1.5204998778130465, 0.15729920705028513, 1.842700792949715,
      0.0004069520174449589, 1.999593047982555, 2.2090496998585438e-05, 2.088487583762545e-45, 2.0, 0.0, 2.0,
      0.0, 2.0, nan_d, 1.0}},
    // np.maximum(x, 0)
    {"relu",
     {0.0, 0.0, 0.5, 0.0, 1.0, 0.0, 2.5, 0.0, 3.0, 10.0, 0.0, 100.0, 0.0, inf_d, 0.0, nan_d, dmin_d}},
    // np.floor(x)
    {"floor",
     {0.0, -0.0, 0.0, -1.0, 1.0, -1.0, 2.0, -3.0, 3.0, 10.0, -10.0, 100.0, -100.0, inf_d, -inf_d, nan_d, 0.0}},
    // np.ceil(x)
    {"ceil",
     {0.0, -0.0, 1.0, -0.0, 1.0, -1.0, 3.0, -2.0, 3.0, 10.0, -10.0, 100.0, -100.0, inf_d, -inf_d, nan_d, 1.0}},
    // np.round(x)
    {"round",
     {0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, 10.0, -10.0, 100.0, -100.0, inf_d, -inf_d, nan_d, 0.0}},
};

/// The reference row of op `name`.
template <class T>
const std::vector<T>& expected_for(const std::vector<expected_row<T>>& table, const std::string& name) {
  for (const auto& row : table)
    if (row.name == name) return row.want;
  FAIL("no reference row for " << name);
  static const std::vector<T> none;
  return none;
}

/// Applies op to the inputs three ways and checks every result against want: all inputs in
/// one tensor (SIMD batches plus a scalar tail), each input repeated 16 times (whole SIMD
/// batches of that value) and each input as a rank-0 tensor (the scalar path). Inputs listed
/// in simd_skip are checked on the scalar path only.
template <class T, class F>
void check_all_paths(const std::string& name, F op, const std::vector<T>& in, const std::vector<T>& want,
                     tolerance tol, const std::vector<std::size_t>& simd_skip = {}) {
  REQUIRE(in.size() == want.size());
  const auto simd_skipped = [&](std::size_t i) {
    return std::find(simd_skip.begin(), simd_skip.end(), i) != simd_skip.end();
  };
  const fg::tensor<T> all = op(fg::tensor<T>(fg::shape{in.size()}, in));
  REQUIRE(all.shape() == fg::shape{in.size()});
  constexpr std::size_t lanes = 16;
  std::vector<T> repeated;
  for (T v : in) repeated.insert(repeated.end(), lanes, v);
  const fg::tensor<T> batches = op(fg::tensor<T>(fg::shape{in.size(), lanes}, repeated));
  for (std::size_t i = 0; i < in.size(); ++i) {
    INFO(name << "(" << in[i] << "): want " << want[i]);
    const fg::tensor<T> scalar = op(fg::tensor<T>(in[i]));
    CHECK(scalar.shape() == fg::shape{});
    INFO("one tensor " << all.data()[i] << ", rank 0 " << scalar.item());
    CHECK(matches(scalar.item(), want[i], tol));
    if (simd_skipped(i)) continue;
    CHECK(matches(all.data()[i], want[i], tol));
    std::size_t bad_lanes = 0;
    T bad = want[i];
    for (std::size_t l = 0; l < lanes; ++l)
      if (!matches(batches.data()[i * lanes + l], want[i], tol)) {
        ++bad_lanes;
        bad = batches.data()[i * lanes + l];
      }
    INFO("lanes of full SIMD batches that differ: " << bad_lanes << " (for example " << bad << ")");
    CHECK(bad_lanes == 0);
  }
}
}  // namespace

TEST_CASE("every float unary op matches numpy float32 on ordinary and edge values, on SIMD and scalar paths",
          "[unary]") {
  // exp(-100) and softplus(-100) are denormal results, which xsimd's batch exp flushes to zero
  // (docs/design.md, "SIMD math"): they are checked on the scalar path only.
  const std::vector<std::pair<std::string, std::vector<std::size_t>>> simd_known = {{"exp", {12}}, {"softplus", {12}}};
  for (const unary_case& c : unary_cases()) {
    std::vector<std::size_t> skip;
    for (const auto& [name, idx] : simd_known)
      if (name == c.name) skip = idx;
    check_all_paths<float>(c.name, c.f32, float_inputs, expected_for(float_expected, c.name),
                           {c.exact ? 0.0 : 1e-6, c.zero_sign}, skip);
  }
}

TEST_CASE("every double unary op matches numpy float64 on ordinary and edge values, on SIMD and scalar paths",
          "[unary]") {
  // As above: negative(+0.0), expm1(-0.0), log1p(-0.0), log(denorm_min) and relu(nan) on the SIMD path.
  const std::vector<std::pair<std::string, std::vector<std::size_t>>> simd_known = {
      {"negative", {0}}, {"expm1", {1}}, {"log1p", {1}}, {"log", {16}}, {"relu", {15}}};
  for (const unary_case& c : unary_cases()) {
    std::vector<std::size_t> skip;
    for (const auto& [name, idx] : simd_known)
      if (name == c.name) skip = idx;
    check_all_paths<double>(c.name, c.f64, double_inputs, expected_for(double_expected, c.name),
                            {c.exact ? 0.0 : 1e-15, c.zero_sign}, skip);
  }
}

TEST_CASE("round halves to even on both paths, like tf.round and np.round", "[unary][round]") {
  // np.round(np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 4194304.5, -4194304.5, 0.49999997, 8388609],
  //                   dtype=np.float32))
  const std::vector<float> in = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 4194304.5f, -4194304.5f, 0x1.fffffep-2f,
                                 8388609.f};
  const std::vector<float> want = {0.f, 2.f, 2.f, 4.f, -0.f, -2.f, -2.f, 4194304.f, -4194304.f, 0.f, 8388609.f};
  check_all_paths<float>("round", [](const auto& x) { return fg::round(x); }, in, want, {});
  std::vector<double> in_d(in.begin(), in.end()), want_d(want.begin(), want.end());
  check_all_paths<double>("round", [](const auto& x) { return fg::round(x); }, in_d, want_d, {});
}

TEST_CASE("integer negative, abs, sign, square and relu match numpy on int32 and int64", "[unary][int]") {
  fg::tensor<std::int32_t> a = {-7, 0, 5, -1, 46340};
  CHECK(values(fg::tensor<std::int32_t>(-a)) == std::vector<std::int32_t>{7, 0, -5, 1, -46340});
  CHECK(values(fg::tensor<std::int32_t>(fg::negative(a))) == std::vector<std::int32_t>{7, 0, -5, 1, -46340});
  CHECK(values(fg::tensor<std::int32_t>(fg::abs(a))) == std::vector<std::int32_t>{7, 0, 5, 1, 46340});
  // np.sign, np.square, np.maximum(a, 0) on int32
  CHECK(values(fg::tensor<std::int32_t>(fg::sign(a))) == std::vector<std::int32_t>{-1, 0, 1, -1, 1});
  CHECK(values(fg::tensor<std::int32_t>(fg::square(a))) == std::vector<std::int32_t>{49, 0, 25, 1, 2147395600});
  CHECK(values(fg::tensor<std::int32_t>(fg::relu(a))) == std::vector<std::int32_t>{0, 0, 5, 0, 46340});
  const fg::tensor<std::int64_t> l = {std::int64_t{-3000000000}, std::int64_t{0}, std::int64_t{3037000499},
                                      std::int64_t{-1}};
  CHECK(values(fg::tensor<std::int64_t>(-l)) == std::vector<std::int64_t>{3000000000LL, 0, -3037000499LL, 1});
  CHECK(values(fg::tensor<std::int64_t>(fg::abs(l))) == std::vector<std::int64_t>{3000000000LL, 0, 3037000499LL, 1});
  CHECK(values(fg::tensor<std::int64_t>(fg::sign(l))) == std::vector<std::int64_t>{-1, 0, 1, -1});
  // np.square(np.array([-3000000000, 0, 3037000499, -1], dtype=np.int64))
  CHECK(values(fg::tensor<std::int64_t>(fg::square(l))) ==
        std::vector<std::int64_t>{9000000000000000000LL, 0, 9223372030926249001LL, 1});
  CHECK(values(fg::tensor<std::int64_t>(fg::relu(l))) == std::vector<std::int64_t>{0, 0, 3037000499LL, 0});
  STATIC_REQUIRE(std::is_same_v<fg::value_type_of<decltype(fg::abs(l))>, std::int64_t>);
}

TEST_CASE("logical_not and operator! negate bool tensors", "[unary][logical]") {
  fg::tensor<bool> b = {true, false, false, true};
  CHECK(values(fg::tensor<bool>(fg::logical_not(b))) == std::vector<bool>{false, true, true, false});
  CHECK(values(fg::tensor<bool>(!b)) == std::vector<bool>{false, true, true, false});
  CHECK(values(fg::tensor<bool>(!!b)) == values(b));
  fg::tensor<float> x = {-1.f, 1.f};
  CHECK(values(fg::tensor<bool>(!(x > 0))) == std::vector<bool>{true, false});
}

TEST_CASE("unary ops on empty tensors give empty tensors of the same shape", "[unary][empty]") {
  const fg::tensor<float> e0(fg::shape{0}, std::vector<float>{});
  const fg::tensor<double> e20(fg::shape{2, 0}, std::vector<double>{});
  const fg::tensor<float> a = fg::exp(e0);
  CHECK(a.shape() == fg::shape{0});
  CHECK(a.size() == 0);
  const fg::tensor<double> b = fg::tanh(fg::log(e20) * 2);
  CHECK(b.shape() == fg::shape{2, 0});
  CHECK(b.size() == 0);
  const fg::tensor<int> c = fg::abs(fg::tensor<int>(fg::shape{0, 3}, std::vector<int>{}));
  CHECK(c.shape() == fg::shape{0, 3});
  const fg::tensor<bool> d = !fg::tensor<bool>(fg::shape{0}, std::vector<bool>{});
  CHECK(d.shape() == fg::shape{0});
}

TEST_CASE("unary ops keep rank 0 and rank 5, element by element", "[unary]") {
  const fg::tensor<float> s = fg::sqrt(fg::tensor<float>(2.25f));
  CHECK(s.shape() == fg::shape{});
  CHECK(s.item() == 1.5f);
  const fg::tensor<double> x = {{{{{0.1, -0.2}}, {{0.3, 0.4}}, {{-0.5, 0.6}}}},
                                {{{{0.7, -0.8}}, {{0.9, 1.0}}, {{-1.1, 1.2}}}}};
  REQUIRE(x.shape() == fg::shape{2, 1, 3, 1, 2});
  const fg::tensor<double> y = fg::exp(x) * fg::sin(x) - fg::abs(x);
  REQUIRE(y.shape() == x.shape());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double v = x.data()[k];
    CHECK(y.data()[k] == Approx(std::exp(v) * std::sin(v) - std::fabs(v)).epsilon(1e-14));
  }
}

TEST_CASE("a chain of unary ops runs in one pass with one allocation", "[unary][fusion]") {
  std::vector<float> xs;
  for (int k = 0; k < 1003; ++k) xs.push_back(-3.f + 6.f * static_cast<float>(k) / 1002.f);
  const fg::tensor<float> x(fg::shape{1003}, xs);
  auto& c = fg::core::counters();
  const auto passes = c.passes, allocs = c.allocations;
  const fg::tensor<float> y =
      fg::tanh(fg::exp(fg::sin(x)) - fg::sqrt(fg::abs(x)) + fg::square(fg::cos(x))) + fg::sigmoid(-x) * fg::softplus(x);
  CHECK(c.passes - passes == 1);
  CHECK(c.allocations - allocs == 1);
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const double v = xs[k];
    const double ref = std::tanh(std::exp(std::sin(v)) - std::sqrt(std::fabs(v)) + std::cos(v) * std::cos(v)) +
                       1 / (1 + std::exp(v)) * std::log1p(std::exp(v));
    INFO("x = " << v);
    CHECK(y.data()[k] == Approx(ref).epsilon(1e-5).margin(1e-6));
  }
}

namespace {
/// A float op, its double-precision reference, and the range its inputs are drawn from.
struct accuracy_case {
  std::string name;
  std::function<fg::tensor<float>(const fg::tensor<float>&)> f32;
  std::function<fg::tensor<double>(const fg::tensor<double>&)> f64;
  double (*ref)(double);
  double lo, hi;
  double floor;  ///< errors are relative to max(|ref|, floor): absolute near the zeros of sin, cos, log
};

/// Binds a generic op to float and double tensors, with its reference and input range.
template <class F>
accuracy_case make_accuracy(std::string name, F f, double (*ref)(double), double lo, double hi, double floor) {
  return {std::move(name), [f](const fg::tensor<float>& x) -> fg::tensor<float> { return f(x); },
          [f](const fg::tensor<double>& x) -> fg::tensor<double> { return f(x); }, ref, lo, hi, floor};
}

// Double-precision references, computed with the standard library.
double ref_exp(double x) { return std::exp(x); }
double ref_expm1(double x) { return std::expm1(x); }
double ref_log(double x) { return std::log(x); }
double ref_log1p(double x) { return std::log1p(x); }
double ref_sqrt(double x) { return std::sqrt(x); }
double ref_rsqrt(double x) { return 1 / std::sqrt(x); }
double ref_sin(double x) { return std::sin(x); }
double ref_cos(double x) { return std::cos(x); }
double ref_tan(double x) { return std::tan(x); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double ref_erf(double x) { return std::erf(x); }
double ref_erfc(double x) { return std::erfc(x); }
}  // namespace

TEST_CASE("float and double transcendental ops stay within a few ulp of std:: math over seeded random inputs",
          "[unary][accuracy]") {
  const std::vector<accuracy_case> cases = {
      make_accuracy("exp", [](const auto& x) { return fg::exp(x); }, ref_exp, -80, 80, 0),
      make_accuracy("expm1", [](const auto& x) { return fg::expm1(x); }, ref_expm1, -5, 5, 0),
      make_accuracy("log", [](const auto& x) { return fg::log(x); }, ref_log, 1e-6, 1e6, 1),
      make_accuracy("log1p", [](const auto& x) { return fg::log1p(x); }, ref_log1p, -0.9, 100, 0),
      make_accuracy("sqrt", [](const auto& x) { return fg::sqrt(x); }, ref_sqrt, 0, 1e6, 0),
      make_accuracy("rsqrt", [](const auto& x) { return fg::rsqrt(x); }, ref_rsqrt, 1e-6, 1e6, 0),
      make_accuracy("sin", [](const auto& x) { return fg::sin(x); }, ref_sin, -100, 100, 1),
      make_accuracy("cos", [](const auto& x) { return fg::cos(x); }, ref_cos, -100, 100, 1),
      make_accuracy("tan", [](const auto& x) { return fg::tan(x); }, ref_tan, -1.4, 1.4, 1),
      make_accuracy("tanh", [](const auto& x) { return fg::tanh(x); }, ref_tanh, -10, 10, 0),
      make_accuracy("sigmoid", [](const auto& x) { return fg::sigmoid(x); }, ref_sigmoid, -30, 30, 0),
      make_accuracy("softplus", [](const auto& x) { return fg::softplus(x); }, ref_softplus, -30, 30, 0),
      make_accuracy("erf", [](const auto& x) { return fg::erf(x); }, ref_erf, -6, 6, 0),
      // Up to 9 (erfc(9) = 4e-37): beyond, float results are denormal, with fewer significant bits.
      make_accuracy("erfc", [](const auto& x) { return fg::erfc(x); }, ref_erfc, -6, 9, 0),
  };
  const unsigned seed = 20240611;
  INFO("seed " << seed);
  std::mt19937 gen(seed);
  for (const accuracy_case& c : cases) {
    std::uniform_real_distribution<double> u(c.lo, c.hi);
    std::vector<float> xf(4099);
    for (float& v : xf) v = static_cast<float>(u(gen));
    std::vector<double> xd(xf.begin(), xf.end());
    const fg::tensor<float> yf = c.f32(fg::tensor<float>(fg::shape{xf.size()}, xf));
    const fg::tensor<double> yd = c.f64(fg::tensor<double>(fg::shape{xd.size()}, xd));
    double worst_f = 0, worst_d = 0;
    for (std::size_t k = 0; k < xf.size(); ++k) {
      const double ref = c.ref(xd[k]);
      const double scale = std::max(std::fabs(ref), c.floor);
      worst_f = std::max(worst_f, std::fabs(yf.data()[k] - ref) / scale);
      worst_d = std::max(worst_d, std::fabs(yd.data()[k] - ref) / scale);
    }
    INFO(c.name << ": worst relative error " << worst_f << " (float), " << worst_d << " (double)");
    CHECK(worst_f <= 4e-7);
    CHECK(worst_d <= 1e-15);
  }
}

// Without AVX-512DQ, double batches reach xsimd's exp family with a clamped argument
// (Note [float64 exp range], ops/unary.hpp); the values must still be the limits and NaNs of
// the scalar functions, and the sanitizer build (float-cast-overflow) must find no conversion
// out of range.
TEST_CASE("double exp, expm1, tanh, sigmoid and softplus reach their limits beyond the float64 range on the SIMD path",
          "[unary][simd]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> xs = {-inf, -1e300, -1e19, -1000.0, -800.5, -700.0, -30.0, -1.5, 0.0, 2.5, 30.0,
                                  709.0, 710.0, 800.5, 1000.0, 1e19, 1e300, inf, nan};
  const fg::tensor<double> x(fg::shape{xs.size()}, xs);
  struct row {
    const char* name;
    fg::tensor<double> got;
    double (*ref)(double);
  };
  const row rows[] = {
      {"exp", fg::exp(x), [](double v) { return std::exp(v); }},
      {"expm1", fg::expm1(x), [](double v) { return std::expm1(v); }},
      {"tanh", fg::tanh(x), [](double v) { return std::tanh(v); }},
      {"sigmoid", fg::sigmoid(x), [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"softplus", fg::softplus(x), [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); }},
  };
  for (const row& r : rows)
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double want = r.ref(xs[i]), got = r.got.data()[i];
      INFO(r.name << "(" << xs[i] << ") = " << got << ", std:: gives " << want);
      if (std::isnan(want)) CHECK(std::isnan(got));
      else if (std::isinf(want) || want == 0 || std::fabs(want) == 1) CHECK(got == want);
      else CHECK(std::fabs(got - want) <= 1e-15 * std::fabs(want));
    }
}

TEST_CASE("the SIMD path keeps zero's sign bit like the scalar path", "[unary][simd]") {
  const auto batch = [](float v) { return fg::tensor<float>(fg::shape{16}, std::vector<float>(16, v)); };
  const auto batch_d = [](double v) { return fg::tensor<double>(fg::shape{8}, std::vector<double>(8, v)); };
  // np.negative(np.float32(0)) = -0.0, np.expm1(-0.0) = -0.0, np.log1p(-0.0) = -0.0
  CHECK(std::signbit(fg::tensor<float>(-batch(0.f)).data()[0]));
  CHECK(std::signbit(fg::tensor<float>(fg::expm1(batch(-0.f))).data()[0]));
  CHECK(std::signbit(fg::tensor<float>(fg::log1p(batch(-0.f))).data()[0]));
  CHECK(std::signbit(fg::tensor<double>(-batch_d(0.0)).data()[0]));
  CHECK_FALSE(std::signbit(fg::tensor<double>(-batch_d(-0.0)).data()[0]));
}

TEST_CASE("sigmoid_derivative is sigmoid(x) * (1 - sigmoid(x))", "[unary]") {
  const fg::tensor<double> x = fg::linspace<double>(-10, 10, 201);
  const fg::tensor<double> d = fg::sigmoid_derivative(x);
  const fg::tensor<float> df = fg::sigmoid_derivative(fg::cast<float>(x));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x.data()[i];
    const double s = 1 / (1 + std::exp(-v));
    const double ref = s * (1 - s);  // the cancellation in 1 - s bounds the relative accuracy
    INFO("x = " << v);
    CHECK(std::abs(d.data()[i] - ref) <= 1e-11 * ref);
    CHECK(std::abs(df.data()[i] - ref) <= 2e-3 * ref);
  }
}

namespace {
/// Checks d/dv reduce_sum(where(v > 0, op(v), 0)) against want (one value per input) on every
/// path: the where and the sum in one expression and op(v) evaluated on its own first; over a
/// tensor cycling through the inputs (SIMD batches mixing selected and unselected lanes, plus
/// a scalar tail) and over each input as a rank-0 tensor (the backward pass on numbers). Also
/// checks that an output gradient of zeros gives zeros.
template <class T, class F>
void check_zero_upstream(const std::string& name, F op, const std::vector<T>& in, const std::vector<T>& want) {
  const auto grad = [&](const fg::tensor<T>& v, bool fused) {
    fg::gradient_tape tape;
    tape.watch(v);
    fg::tensor<T> y;
    if (fused) {
      y = fg::reduce_sum(fg::where(v > 0, op(v), 0));
    } else {
      const fg::tensor<T> o = op(v);
      y = fg::reduce_sum(fg::where(v > 0, o, 0));
    }
    return tape.gradient(y, v);
  };
  std::vector<T> cycled;
  for (std::size_t k = 0; k < 16 * in.size() + 3; ++k) cycled.push_back(in[k % in.size()]);
  const fg::tensor<T> v(fg::shape{cycled.size()}, cycled);
  for (const bool fused : {true, false}) {
    INFO(name << (fused ? ", fused" : ", op evaluated first"));
    const fg::tensor<T> g = grad(v, fused);
    REQUIRE(g.shape() == v.shape());
    for (std::size_t k = 0; k < cycled.size(); ++k) {
      INFO("element " << k << ": v = " << cycled[k] << ", gradient " << g.data()[k] << ", want " << want[k % in.size()]);
      CHECK(g.data()[k] == want[k % in.size()]);
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      const T got = grad(fg::tensor<T>(in[i]), fused).item();
      INFO("rank 0: v = " << in[i] << ", gradient " << got << ", want " << want[i]);
      CHECK(got == want[i]);
    }
  }
  fg::gradient_tape tape;
  tape.watch(v);
  const fg::tensor<T> y = op(v);
  const fg::tensor<T> g = tape.gradient(y, v, fg::zeros_like(y));
  for (std::size_t k = 0; k < cycled.size(); ++k) {
    INFO(name << ", output gradient 0 at v = " << cycled[k] << ": gradient " << g.data()[k]);
    CHECK(g.data()[k] == 0);
  }
}

template <class T>
void check_zero_upstream_ops() {
  // tests/reference/where_mask_grads.py: TensorFlow 2.21 gives these in float32 and float64.
  check_zero_upstream<T>("sqrt", [](const auto& v) { return fg::sqrt(v); }, {-1, 0, 4}, {0, 0, 0.25});
  check_zero_upstream<T>("rsqrt", [](const auto& v) { return fg::rsqrt(v); }, {-1, 0, 4}, {0, 0, -0.0625});
  check_zero_upstream<T>("reciprocal", [](const auto& v) { return fg::reciprocal(v); }, {0, T(-0.0), 2}, {0, 0, -0.25});
}
}  // namespace

TEST_CASE("sqrt, rsqrt and reciprocal have gradient 0 where the upstream is 0, as in TensorFlow", "[unary][gradient]") {
  // where(v > 0, sqrt(v), 0) sends an upstream of 0 to sqrt at v <= 0, where sqrt's derivative
  // is inf or nan (Note [zero upstream], ops/unary.hpp).
  check_zero_upstream_ops<float>();
  check_zero_upstream_ops<double>();
}

TEST_CASE("log's gradient stays nan at 0 under a zero upstream, as TensorFlow's does", "[unary][gradient]") {
  // tests/reference/where_mask_grads.py: d/dv sum(where(v > 0, log(v), 0)) at [0, 2] is [nan, 0.5].
  fg::tensor<double> v = {0.0, 2.0};
  fg::gradient_tape tape;
  tape.watch(v);
  const fg::tensor<double> g = tape.gradient(fg::reduce_sum(fg::where(v > 0, fg::log(v), 0)), v);
  CHECK(std::isnan(g.data()[0]));
  CHECK(g.data()[1] == 0.5);
}

TEST_CASE("an evaluated costly activation masked by where gets the zero upstream's gradient", "[unary][gradient]") {
  // y = sqrt(v) + exp(v) is evaluated (and recorded) first, then masked: its backward step runs
  // the rules on the zero upstream (sqrt's gives 0, exp's 0 * e^-1), as TensorFlow does: [0, 54.85].
  const fg::tensor<double> v = {-1.0, 4.0};
  fg::gradient_tape tape;
  tape.watch(v);
  const fg::tensor<double> y = fg::sqrt(v) + fg::exp(v);
  const fg::tensor<double> g = tape.gradient(fg::reduce_sum(fg::where(v > 0, y, 0)), v);
  CHECK(g.data()[0] == 0.0);
  CHECK(g.data()[1] == Approx(0.25 + std::exp(4.0)).epsilon(1e-14));
}

TEST_CASE("negative, abs and square of signed integers wrap around as two's complement", "[unary][integer]") {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  constexpr i32 imax = std::numeric_limits<i32>::max(), imin = std::numeric_limits<i32>::min();
  constexpr i64 lmin = std::numeric_limits<i64>::min();
  const fg::tensor<i32> x = {imin, imax, 65536, 46341, -3};
  check_values(fg::tensor<i32>(-x), {5}, std::vector<i32>{imin, -imax, -65536, -46341, 3});
  check_values(fg::tensor<i32>(fg::abs(x)), {5}, std::vector<i32>{imin, imax, 65536, 46341, 3});
  // 46341^2 = 2147488281 = 2^31 + 4633 wraps to -2147479015.
  check_values(fg::tensor<i32>(fg::square(x)), {5}, std::vector<i32>{0, 1, 0, -2147479015, 9});
  CHECK(fg::tensor<i32>(-fg::tensor<i32>(imin)).item() == imin);
  const fg::tensor<i64> l = {lmin, i64{1} << 32};
  check_values(fg::tensor<i64>(-l), {2}, std::vector<i64>{lmin, -(i64{1} << 32)});
  check_values(fg::tensor<i64>(fg::abs(l)), {2}, std::vector<i64>{lmin, i64{1} << 32});
  check_values(fg::tensor<i64>(fg::square(l)), {2}, std::vector<i64>{0, 0});
}
