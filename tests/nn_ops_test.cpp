// The neural-network ops (activations, softmax, cross-entropies, normalisations, dropout,
// bias_add) against TensorFlow 2.21 on fixed inputs (tests/reference/nn_ops_values.py made the
// numbers), their errors, dropout's mask, and second derivatives through the cross-entropies.
#include <catch2/catch.hpp>

#include <fusegrad/eager/nn_ops.hpp>

#include "test_helpers.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {
using namespace fg_test;
using ftensor = fg::tensor<float>;

/// Requires shape s and every element within rel * |want| + abs of want.
template <class T>
void check_near(const fg::tensor<T>& got, const fg::shape& s, const std::vector<T>& want, double rel = 2e-6,
                double abs = 1e-7) {
  REQUIRE(got.defined());
  REQUIRE(got.shape() == s);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got.data()[i] << ", want " << want[i]);
    const double g = static_cast<double>(got.data()[i]), v = static_cast<double>(want[i]);
    CHECK(std::fabs(g - v) <= rel * std::fabs(v) + abs);
  }
}

/// The gradient of sum(f(x) * w) with respect to x.
template <class T, class F>
fg::tensor<T> grad_of(F f, const fg::tensor<T>& x, const fg::tensor<T>& w) {
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<T> y = fg::reduce_sum(fg::tensor<T>(f(x)) * w);
  return tape.gradient(y, x);
}

/// TensorFlow's values and gradients d/dx sum(f(x)) of one activation, float32 and float64.
struct activation_row {
  std::string name;
  std::vector<float> f32_value, f32_grad;
  std::vector<double> f64_value, f64_grad;
};

// nn_ops_values.py: x = [-20, -3.5, -3, -1, -0.25, 0, 0.5, 2, 3, 6, 6.5, 20]. The float64 rows of
// leaky_relu and gelu use exact constants (TensorFlow rounds leaky_relu's alpha attribute and
// gelu's constants to float32 first): numpy's and Python's math's values.
const std::vector<activation_row> activation_rows = {
    {"leaky_relu",
     {-4.0f, -0.699999988f, -0.600000024f, -0.200000003f, -0.0500000007f, 0.0f, 0.5f, 2.0f, 3.0f, 6.0f, 6.5f,
      20.0f},
     {0.200000003f, 0.200000003f, 0.200000003f, 0.200000003f, 0.200000003f, 0.200000003f, 1.0f, 1.0f, 1.0f,
      1.0f, 1.0f, 1.0f},
     {-4.0, -0.7000000000000001, -0.6000000000000001, -0.2, -0.05, 0.0, 0.5, 2.0, 3.0, 6.0, 6.5, 20.0},
     {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}},
    {"leaky_relu_0.01",
     {-0.199999988f, -0.0350000001f, -0.0299999993f, -0.00999999978f, -0.00249999994f, 0.0f, 0.5f, 2.0f, 3.0f,
      6.0f, 6.5f, 20.0f},
     {0.00999999978f, 0.00999999978f, 0.00999999978f, 0.00999999978f, 0.00999999978f, 0.00999999978f, 1.0f,
      1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
     {-0.2, -0.035, -0.03, -0.01, -0.0025, 0.0, 0.5, 2.0, 3.0, 6.0, 6.5, 20.0},
     {0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}},
    {"elu",
     {-1.0f, -0.969802618f, -0.950212955f, -0.63212055f, -0.221199214f, 0.0f, 0.5f, 2.0f, 3.0f, 6.0f, 6.5f,
      20.0f},
     {0.0f, 0.030197382f, 0.0497870445f, 0.36787945f, 0.778800786f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
     {-0.9999999979388464, -0.9698026165776815, -0.950212931632136, -0.6321205588285577, -0.22119921692859512,
      0.0, 0.5, 2.0, 3.0, 6.0, 6.5, 20.0},
     {2.0611535811454473e-09, 0.03019738342231848, 0.04978706836786395, 0.36787944117144233, 0.7788007830714049,
      1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}},
    {"selu",
     {-1.75809932f, -1.70500934f, -1.6705687f, -1.11133075f, -0.388890177f, 0.0f, 0.525350511f, 2.10140204f,
      3.15210295f, 6.30420589f, 6.82955647f, 21.0140209f},
     {0.0f, 0.0530899763f, 0.0875306129f, 0.64676857f, 1.36920917f, 1.05070102f, 1.05070102f, 1.05070102f,
      1.05070102f, 1.05070102f, 1.05070102f, 1.05070102f},
     {-1.7580993372236642, -1.7050093409572833, -1.670568728767112, -1.1113307378125628, -0.388890197478119,
      0.0, 0.5253504936777402, 2.101401974710961, 3.1521029620664414, 6.304205924132883, 6.829556417810623,
      21.014019747109607},
     {3.6237126632698846e-09, 0.05308999989009355, 0.0875306120802648, 0.6467686030348141, 1.369209143369258,
      1.0507009873554805, 1.0507009873554805, 1.0507009873554805, 1.0507009873554805, 1.0507009873554805,
      1.0507009873554805, 1.0507009873554805}},
    {"gelu",
     {-0.0f, -0.000814201543f, -0.00404969649f, -0.158655256f, -0.100323416f, 0.0f, 0.345731229f, 1.95449972f,
      2.99595022f, 6.0f, 6.5f, 20.0f},
     {0.0f, -0.00282176072f, -0.0119456518f, -0.0833154917f, 0.304626644f, 0.5f, 0.86749512f, 1.08523178f,
      1.01194561f, 1.0f, 1.0f, 1.0f},
     {-5.507248237212385e-88, -0.0008142017766243376, -0.004049694094890279, -0.15865525393145702,
      -0.10032341857926907, 0.0, 0.34573123063700656, 1.9544997361036416, 2.99595030590511, 5.999999994080474,
      6.49999999973896, 20.0},
     {-1.1014360483133464e-86, -0.0028217603536246356, -0.011945647204183929, -0.08331547058768635,
      0.30462664511636395, 0.5, 0.8674951246561629, 1.085231801078197, 1.011945647204184, 1.0000000354687093,
      1.0000000016950519, 1.0}},
    {"gelu_approximate",
     {-0.0f, -0.000616252422f, -0.00363743305f, -0.158807993f, -0.100324646f, 0.0f, 0.345714003f, 1.95459771f,
      2.99636269f, 6.0f, 6.5f, 20.0f},
     {0.0f, -0.00242287689f, -0.0115842428f, -0.0829640925f, 0.304645896f, 0.5f, 0.86736995f, 1.08609903f,
      1.01158416f, 1.0f, 1.0f, 1.0f},
     {-0.0, -0.0006161976553737403, -0.0036373920817729943, -0.15880800939172324, -0.100324649298315, 0.0,
      0.34571400982514394, 1.954597694087775, 2.996362607918227, 5.9999999999156035, 6.499999999999372, 20.0},
     {0.0, -0.0024226437601168166, -0.011584166630969516, -0.08296408384578255, 0.30464590484893955, 0.5,
      0.8673699035346424, 1.0860992566236183, 1.0115841666309695, 1.0000000007709977, 1.0000000000065836, 1.0}},
    {"silu",
     {-4.12230818e-08f, -0.102592811f, -0.142277598f, -0.268941402f, -0.109455861f, 0.0f, 0.311229676f,
      1.76159418f, 2.85772228f, 5.98516417f, 6.490242f, 20.0f},
     {-3.91619288e-08f, -0.0702733472f, -0.0881040916f, 0.0723294765f, 0.376289904f, 0.5f, 0.739961207f,
      1.09078419f, 1.08810413f, 1.01232648f, 1.00824189f, 1.0f},
     {-4.1223072363804067e-08, -0.10259280762974711, -0.14227761953270035, -0.2689414213699951,
      -0.10945587477855047, 0.0, 0.3112296656009273, 1.7615941559557649, 2.8577223804672998, 5.985164261060191,
      6.490242315331209, 19.99999995877693},
     {-3.916191866064678e-08, -0.07027335282771813, -0.08810410601516963, 0.07232948812851325,
      0.3762899784298023, 0.5, 0.7399611873026519, 1.0907842487848955, 1.0881041060151695, 1.0123264325915255,
      1.008241854348962, 1.000000039161918}},
    {"relu6",
     {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 2.0f, 3.0f, 6.0f, 6.0f, 6.0f},
     {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f},
     {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 2.0, 3.0, 6.0, 6.0, 6.0},
     {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0}},
    {"softsign",
     {-0.952380955f, -0.777777791f, -0.75f, -0.5f, -0.200000003f, 0.0f, 0.333333343f, 0.666666687f, 0.75f,
      0.857142866f, 0.866666675f, 0.952380955f},
     {0.00226757373f, 0.0493827164f, 0.0625f, 0.25f, 0.639999986f, 1.0f, 0.444444448f, 0.111111112f, 0.0625f,
      0.0204081628f, 0.0177777782f, 0.00226757373f},
     {-0.9523809523809523, -0.7777777777777778, -0.75, -0.5, -0.2, 0.0, 0.3333333333333333, 0.6666666666666666,
      0.75, 0.8571428571428571, 0.8666666666666667, 0.9523809523809523},
     {0.0022675736961451248, 0.04938271604938271, 0.0625, 0.25, 0.64, 1.0, 0.4444444444444444,
      0.1111111111111111, 0.0625, 0.02040816326530612, 0.017777777777777778, 0.0022675736961451248}},
    {"hard_sigmoid",
     {0.0f, 0.0f, 0.0f, 0.333333343f, 0.458333343f, 0.5f, 0.583333313f, 0.833333313f, 1.0f, 1.0f, 1.0f, 1.0f},
     {0.0f, 0.0f, 0.0f, 0.166666672f, 0.166666672f, 0.166666672f, 0.166666672f, 0.166666672f, 0.0f, 0.0f, 0.0f,
      0.0f},
     {0.0, 0.0, 0.0, 0.3333333333333333, 0.4583333333333333, 0.5, 0.5833333333333334, 0.8333333333333334, 1.0,
      1.0, 1.0, 1.0},
     {0.0, 0.0, 0.0, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666,
      0.16666666666666666, 0.0, 0.0, 0.0, 0.0}},
    {"erf",
     {-1.0f, -0.999999404f, -0.999978006f, -0.842700839f, -0.276326418f, 0.0f, 0.520499885f, 0.995322347f,
      0.999978006f, 1.0f, 1.0f, 1.0f},
     {0.0f, 5.39942721e-06f, 0.000139253054f, 0.415107518f, 1.06001425f, 1.12837923f, 0.87878263f,
      0.0206669867f, 0.000139253054f, 2.6173011e-16f, 5.05257996e-19f, 0.0f},
     {-1.0, -0.9999992569016276, -0.9999779095030015, -0.8427007929497148, -0.2763263901682369, 0.0,
      0.5204998778130466, 0.9953222650189527, 0.9999779095030014, 1.0, 1.0, 1.0},
     {2.1610374743867984e-174, 5.399426777384783e-06, 0.00013925305194674786, 0.41510749742059466,
      1.0600141293761143, 1.1283791670955126, 0.8787825789354448, 0.020666985354092057, 0.00013925305194674786,
      2.617301239249265e-16, 5.052580003062652e-19, 2.1610374743867984e-174}},
    {"erfc",
     {2.0f, 1.99999928f, 1.99997795f, 1.84270072f, 1.27632642f, 1.0f, 0.479500115f, 0.00467773527f,
      2.20904967e-05f, 2.15197356e-17f, 3.84214829e-20f, 0.0f},
     {-0.0f, -5.39942721e-06f, -0.000139253054f, -0.415107518f, -1.06001425f, -1.12837923f, -0.87878263f,
      -0.0206669867f, -0.000139253054f, -2.6173011e-16f, -5.05257996e-19f, -0.0f},
     {2.0, 1.9999992569016276, 1.9999779095030015, 1.8427007929497148, 1.276326390168237, 1.0,
      0.47950012218695337, 0.004677734981047266, 2.209049699858544e-05, 2.151973671249891e-17,
      3.842148327120648e-20, 5.3958656116079026e-176},
     {-2.1610374743867984e-174, -5.399426777384783e-06, -0.00013925305194674786, -0.41510749742059466,
      -1.0600141293761143, -1.1283791670955126, -0.8787825789354448, -0.020666985354092057,
      -0.00013925305194674786, -2.617301239249265e-16, -5.052580003062652e-19, -2.1610374743867984e-174}},
};

template <class T>
std::function<fg::tensor<T>(const fg::tensor<T>&)> activation(const std::string& name) {
  using X = const fg::tensor<T>&;
  if (name == "leaky_relu") return [](X x) { return fg::tensor<T>(fg::leaky_relu(x)); };
  if (name == "leaky_relu_0.01") return [](X x) { return fg::tensor<T>(fg::leaky_relu(x, 0.01)); };
  if (name == "elu") return [](X x) { return fg::tensor<T>(fg::elu(x)); };
  if (name == "selu") return [](X x) { return fg::tensor<T>(fg::selu(x)); };
  if (name == "gelu") return [](X x) { return fg::gelu(x); };
  if (name == "gelu_approximate") return [](X x) { return fg::gelu(x, true); };
  if (name == "silu") return [](X x) { return fg::tensor<T>(fg::silu(x)); };
  if (name == "relu6") return [](X x) { return fg::tensor<T>(fg::relu6(x)); };
  if (name == "softsign") return [](X x) { return fg::tensor<T>(fg::softsign(x)); };
  if (name == "hard_sigmoid") return [](X x) { return fg::tensor<T>(fg::hard_sigmoid(x)); };
  if (name == "erf") return [](X x) { return fg::tensor<T>(fg::erf(x)); };
  if (name == "erfc") return [](X x) { return fg::tensor<T>(fg::erfc(x)); };
  FAIL("no activation " << name);
  return {};
}

template <class T>
void check_activations() {
  const std::vector<double> xs = {-20, -3.5, -3, -1, -0.25, 0, 0.5, 2, 3, 6, 6.5, 20};
  const fg::tensor<T> x(fg::shape{xs.size()}, std::vector<T>(xs.begin(), xs.end()));
  const fg::tensor<T> ones = fg::ones_like(x);
  // float32: a few ulp; TensorFlow's elu and selu gradients at -20 cancel to 0 in float32 (they
  // add the activation back), fusegrad's are e^-20 times the constant: the absolute margin.
  const double rel = std::is_same_v<T, float> ? 2e-6 : 1e-14;
  const double abs = std::is_same_v<T, float> ? 1e-8 : 1e-15;
  for (const activation_row& row : activation_rows) {
    INFO(row.name << (std::is_same_v<T, float> ? " float32" : " float64"));
    const auto f = activation<T>(row.name);
    // The tanh form of gelu computes 1 + tanh(u), which cancels for x < -3 in TensorFlow's
    // arithmetic and fusegrad's alike: an ulp of tanh there is 3e-4 (float32) of the result.
    const double row_rel = row.name == "gelu_approximate" ? rel * 500 : rel;
    const auto& value = [&]() -> const std::vector<T>& {
      if constexpr (std::is_same_v<T, float>) return row.f32_value; else return row.f64_value;
    }();
    const auto& grad = [&]() -> const std::vector<T>& {
      if constexpr (std::is_same_v<T, float>) return row.f32_grad; else return row.f64_grad;
    }();
    {
      INFO("value");
      check_near(f(x), x.shape(), value, row_rel, abs);
    }
    {
      INFO("gradient (the kinks take TensorFlow's side)");
      check_near(grad_of(f, x, ones), x.shape(), grad, row_rel, abs);
    }
  }
}
}  // namespace

TEST_CASE("activations and erf match TensorFlow's values and gradients, kinks included", "[nn][activations]") {
  check_activations<float>();
  check_activations<double>();
  // swish is silu; the activations stay lazy and fuse into one pass.
  const ftensor x = {-1.f, 0.5f, 2.f};
  CHECK(values(ftensor(fg::swish(x))) == values(ftensor(fg::silu(x))));
  auto& c = fg::core::counters();
  const auto passes = c.passes;
  const ftensor y = fg::relu6(fg::leaky_relu(x) * 2.f) + fg::elu(x) - fg::softsign(x);
  CHECK(c.passes - passes == 1);
  CHECK(y.data()[2] == Approx(4.f + 2.f - 2.f / 3.f));
}

TEST_CASE("gelu keeps its tiny negative tail (erfc, not 1 + erf)", "[nn][activations]") {
  // 0.5 * x * erfc(-x / sqrt(2)) at x = -10: 1 + erf(-7.07) would cancel to 0.
  const fg::tensor<double> g = fg::gelu(fg::tensor<double>(-10.0));
  CHECK(g.item() == Approx(0.5 * -10 * std::erfc(10 * 0.7071067811865476)).epsilon(1e-15));
  CHECK(g.item() < 0);
}

TEST_CASE("softmax and log_softmax match TensorFlow on either axis and stay finite at 1e4", "[nn][softmax]") {
  const ftensor logits = {{1.f, 2.f, 3.f}, {-1.f, 0.5f, 4.f}};
  check_near(fg::softmax(logits), {2, 3},
             {0.0900305733f, 0.244728476f, 0.665240943f, 0.00649794331f, 0.0291217621f, 0.964380324f});
  check_near(fg::log_softmax(logits), {2, 3},
             {-2.40760589f, -1.40760589f, -0.407605946f, -5.03626966f, -3.53626966f, -0.0362695642f});
  check_near(fg::softmax(logits, 0), {2, 3},
             {0.880797029f, 0.817574441f, 0.268941432f, 0.119202912f, 0.182425514f, 0.731058598f});
  check_near(fg::log_softmax(logits, 0), {2, 3},
             {-0.126928046f, -0.201413333f, -1.31326163f, -2.12692809f, -1.70141339f, -0.313261658f});
  const ftensor big = {{1e4f, 0.f, -1e4f}};
  check_near(fg::softmax(big), {1, 3}, {1.0f, 0.0f, 0.0f});
  check_near(fg::log_softmax(big), {1, 3}, {0.0f, -10000.0f, -20000.0f});
  // Gradients of sum(f(x) * w) over axis 0.
  const ftensor w = {{0.5f, -1.f, 2.f}, {1.5f, 0.25f, -0.75f}};
  check_near(grad_of([](const ftensor& x) { return fg::softmax(x, 0); }, logits, w), {2, 3},
             {-0.104993515f, -0.186433077f, 0.540682793f, 0.104993582f, 0.186433062f, -0.540682852f}, 1e-5, 1e-7);
  check_near(grad_of([](const ftensor& x) { return fg::log_softmax(x, 0); }, logits, w), {2, 3},
             {-1.26159406f, -0.386819184f, 1.66382325f, 1.26159418f, 0.386819124f, -1.66382325f}, 1e-5, 1e-7);
  // An expression operand, rank 3, and an empty axis of rows.
  const fg::tensor<double> x3 = fg::random::normal<double>({2, 3, 4}, 7);
  const fg::tensor<double> s3 = fg::softmax(x3 * 2.0, 1);
  const fg::tensor<double> sums = fg::reduce_sum(s3, 1);
  for (std::size_t i = 0; i < sums.size(); ++i) CHECK(sums.data()[i] == Approx(1.0).epsilon(1e-15));
  CHECK(fg::softmax(ftensor(fg::shape{0, 3}, std::vector<float>{})).shape() == fg::shape{0, 3});
  CHECK_THROWS_AS(fg::softmax(ftensor(1.f)), fg::shape_error);
  CHECK_THROWS_AS(fg::log_softmax(logits, 2), fg::index_error);
}

TEST_CASE("softmax_cross_entropy_with_logits matches TensorFlow, with its gradients, at 1e4 too",
          "[nn][cross_entropy]") {
  const ftensor logits = {{1.f, 2.f, 3.f}, {-1.f, 0.5f, 4.f}};
  const ftensor labels = {{0.1f, 0.6f, 0.3f}, {0.f, 0.f, 1.f}};
  const ftensor w = {1.f, -2.f};
  check_near(fg::softmax_cross_entropy_with_logits(labels, logits), {2}, {1.20760596f, 0.0362695642f});
  check_near(fg::softmax_cross_entropy_with_logits(fg::transpose(labels), fg::transpose(logits), 0), {2},
             {1.20760596f, 0.0362695642f});
  fg::gradient_tape tape({.persistent = true});
  tape.watch(logits);
  tape.watch(labels);
  const ftensor loss = fg::reduce_sum(fg::softmax_cross_entropy_with_logits(labels, logits) * w);
  check_near(tape.gradient(loss, labels), {2, 3},
             {2.40760589f, 1.40760589f, 0.407605946f, -10.0725393f, -7.07253933f, -0.0725391284f}, 1e-5, 1e-7);
  check_near(tape.gradient(loss, logits), {2, 3},
             {-0.00996942818f, -0.355271548f, 0.365240932f, -0.0129958866f, -0.0582435243f, 0.0712393522f}, 1e-5, 1e-7);
  // Logits of +-1e4: finite, exact losses and gradients.
  const ftensor big_logits = {{1e4f, 0.f}, {-1e4f, 0.f}, {1e4f, 0.f}};
  const ftensor big_labels = {{0.f, 1.f}, {1.f, 0.f}, {0.25f, 0.75f}};
  const auto ce = [&](const ftensor& x) { return fg::softmax_cross_entropy_with_logits(big_labels, x); };
  check_near(ce(big_logits), {3}, {10000.0f, 10000.0f, 7500.0f});
  check_near(grad_of(ce, big_logits, fg::ones<float>({3})), {3, 2}, {1.0f, -1.0f, -1.0f, 1.0f, 0.75f, -0.75f});
  // The gradient is sum(labels) * softmax - labels: exact for labels that are not distributions.
  const fg::tensor<double> x = {{0.3, -1.2, 2.0}};
  const fg::tensor<double> z = {{0.5, 1.5, 0.25}};
  const fg::tensor<double> gx =
      grad_of([&](const fg::tensor<double>& v) { return fg::softmax_cross_entropy_with_logits(z, v); }, x,
              fg::ones<double>({1}));
  const double e0 = std::exp(0.3), e1 = std::exp(-1.2), e2 = std::exp(2.0), s = e0 + e1 + e2;
  check_near(gx, {1, 3}, std::vector<double>{2.25 * e0 / s - 0.5, 2.25 * e1 / s - 1.5, 2.25 * e2 / s - 0.25}, 1e-14, 0);
}

TEST_CASE("sparse_softmax_cross_entropy_with_logits matches TensorFlow, with its gradient, at 1e4 too",
          "[nn][cross_entropy]") {
  const ftensor logits = {{1.f, 2.f, 3.f}, {-1.f, 0.5f, 4.f}};
  const fg::tensor<std::int32_t> labels = {2, 0};
  check_near(fg::sparse_softmax_cross_entropy_with_logits(labels, logits), {2}, {0.407605946f, 5.03626966f});
  const auto ce = [&](const ftensor& x) { return fg::sparse_softmax_cross_entropy_with_logits(labels, x); };
  check_near(grad_of(ce, logits, ftensor{1.f, -2.f}), {2, 3},
             {0.0900305733f, 0.244728476f, -0.334759057f, 1.98700416f, -0.0582435243f, -1.92876065f}, 1e-5, 1e-7);
  const ftensor logits3 = {{{0.5f, -1.f, 2.f}, {3.f, 0.f, -2.f}}, {{1.f, 1.f, 1.f}, {-0.5f, 4.f, 0.25f}}};
  const fg::tensor<std::int64_t> labels3 = {{std::int64_t{1}, std::int64_t{0}}, {std::int64_t{2}, std::int64_t{1}}};
  check_near(fg::sparse_softmax_cross_entropy_with_logits(labels3, logits3), {2, 2},
             {3.24131131f, 0.054985214f, 1.09861231f, 0.0340407081f});
  // [1e4, 0] with label 1 costs 1e4, never inf or NaN.
  const ftensor big_logits = {{1e4f, 0.f}, {-1e4f, 0.f}, {1e4f, 0.f}};
  const fg::tensor<std::int32_t> big_labels = {1, 0, 0};
  const auto big = [&](const ftensor& x) { return fg::sparse_softmax_cross_entropy_with_logits(big_labels, x); };
  check_near(big(big_logits), {3}, {10000.0f, 10000.0f, 0.0f});
  check_near(grad_of(big, big_logits, fg::ones<float>({3})), {3, 2}, {1.0f, -1.0f, -1.0f, 1.0f, 0.0f, 0.0f});
}

TEST_CASE("sparse_softmax_cross_entropy_with_logits picks the right class beyond 2^24 classes in float32",
          "[nn][cross_entropy]") {
  // Class 2^24 + 1 is not a float32: Note [class indices as logits] compares in int64 there.
  const std::size_t classes = (std::size_t{1} << 24) + 2;
  const std::int64_t label = (std::int64_t{1} << 24) + 1;
  fg::tensor<float> x = fg::zeros<float>({1, classes});
  x.buffer()->data[label] = 5.f;
  const fg::tensor<std::int64_t> labels = fg::tensor<std::int64_t>(fg::shape{1}, std::vector<std::int64_t>{label});
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<float> loss = fg::sparse_softmax_cross_entropy_with_logits(labels, x);
  const fg::tensor<float> g = tape.gradient(loss, x);
  const double sum = static_cast<double>(classes - 1) + std::exp(5.0);
  // The loss is log(sum) - 5 (relative to float32 rounding of a sum over 2^24 terms).
  CHECK(std::abs(loss.item() - (std::log(sum) - 5.0)) < 1e-3);
  CHECK(std::abs(g.data()[label] - (std::exp(5.0) / sum - 1)) < 1e-6);
  CHECK(std::abs(g.data()[label - 1] - 1 / sum) < 1e-9);  // the float32 neighbour of the label gets no -1
}

TEST_CASE("sparse_softmax_cross_entropy_with_logits names the row and the label of a bad label and records nothing",
          "[nn][cross_entropy][errors]") {
  const ftensor logits = fg::zeros<float>({3, 10});
  fg::gradient_tape tape;
  tape.watch(logits);
  // TensorFlow's CPU kernel: "Received a label value of 10 which is outside the valid range of [0, 10)."
  CHECK_THROWS_WITH(fg::sparse_softmax_cross_entropy_with_logits(fg::tensor<std::int32_t>{1, 10, 2}, logits * 2.f),
                    Catch::Contains("Received a label value of 10 which is outside the valid range of [0, 10)") &&
                        Catch::Contains("row 1"));
  const fg::tensor<std::int64_t> negative = {std::int64_t{-1}, std::int64_t{0}, std::int64_t{0}};
  CHECK_THROWS_AS(fg::sparse_softmax_cross_entropy_with_logits(negative, logits), fg::index_error);
  // Labels must have the logits' shape without the class axis.
  CHECK_THROWS_WITH(fg::sparse_softmax_cross_entropy_with_logits(fg::tensor<std::int32_t>{{1, 2, 3}}, logits * 2.f),
                    Catch::Contains("labels of shape (1, 3) do not fit logits of shape (3, 10)") &&
                        Catch::Contains("(3,)"));
  CHECK_THROWS_AS(fg::softmax_cross_entropy_with_logits(fg::zeros<float>({3, 9}), logits * 2.f), fg::shape_error);
  CHECK_THROWS_AS(fg::sigmoid_cross_entropy_with_logits(fg::zeros<float>({3}), logits), fg::shape_error);
  CHECK(tape.size() == 0);
}

TEST_CASE("sigmoid_cross_entropy_with_logits matches TensorFlow, gradient at logit 0 included", "[nn][cross_entropy]") {
  const ftensor logits = {-1e4f, 1e4f, 0.f, -2.5f, 3.f, 1e4f};
  const ftensor labels = {0.f, 1.f, 0.3f, 1.f, 0.f, 0.f};
  check_near(ftensor(fg::sigmoid_cross_entropy_with_logits(labels, logits)), {6},
             {0.0f, 0.0f, 0.693147182f, 2.57888985f, 3.04858732f, 10000.0f});
  fg::gradient_tape tape({.persistent = true});
  tape.watch(logits);
  tape.watch(labels);
  const ftensor loss = fg::reduce_sum(fg::sigmoid_cross_entropy_with_logits(labels, logits));
  check_near(tape.gradient(loss, labels), {6}, {10000.0f, -10000.0f, -0.0f, 2.5f, -3.0f, -10000.0f});
  check_near(tape.gradient(loss, logits), {6}, {0.0f, 0.0f, 0.199999988f, -0.924141824f, 0.952574134f, 1.0f});
}

namespace {
/// The gradient of sum(sparse_softmax_cross_entropy_with_logits(labels, x) * w) with respect to x.
fg::tensor<double> sparse_ce_grad(const fg::tensor<std::int64_t>& labels, const fg::tensor<double>& x,
                                  const fg::tensor<double>& w) {
  const auto ce = [&](const fg::tensor<double>& v) { return fg::sparse_softmax_cross_entropy_with_logits(labels, v); };
  return grad_of(ce, x, w);
}
}  // namespace

TEST_CASE("a Hessian-vector product through sparse_softmax_cross_entropy_with_logits matches finite differences",
          "[nn][cross_entropy][higher_order]") {
  const std::uint64_t seed = 11;
  INFO("seed " << seed);
  const fg::tensor<double> x = fg::random::normal<double>({3, 4}, seed) * 2.0;
  const fg::tensor<double> v = fg::random::normal<double>({3, 4}, seed + 1);
  const fg::tensor<double> w = {0.5, -1.5, 2.0};
  const fg::tensor<std::int64_t> labels = {std::int64_t{3}, std::int64_t{0}, std::int64_t{2}};
  fg::tensor<double> hv;
  {
    fg::gradient_tape outer;
    outer.watch(x);
    const fg::tensor<double> g = sparse_ce_grad(labels, x, w);
    hv = outer.gradient(fg::reduce_sum(g * v), x);
  }
  // H v = (grad(x + h v) - grad(x - h v)) / 2h
  const double h = 1e-5;
  const fg::tensor<double> fd = (sparse_ce_grad(labels, fg::tensor<double>(x + h * v), w) -
                                 sparse_ce_grad(labels, fg::tensor<double>(x - h * v), w)) /
                                (2 * h);
  REQUIRE(hv.shape() == x.shape());
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i << ": tape " << hv.data()[i] << ", finite difference " << fd.data()[i]);
    CHECK(std::fabs(hv.data()[i] - fd.data()[i]) <= 1e-8 * std::max(1.0, std::fabs(fd.data()[i])));
  }
  // By hand: with p = softmax(x), H v = w * (p * v - p * sum(p * v)) per row.
  for (std::size_t r = 0; r < 3; ++r) {
    double s = 0, pv = 0, p[4];
    for (std::size_t c = 0; c < 4; ++c) s += std::exp(x.data()[r * 4 + c]);
    for (std::size_t c = 0; c < 4; ++c) p[c] = std::exp(x.data()[r * 4 + c]) / s, pv += p[c] * v.data()[r * 4 + c];
    for (std::size_t c = 0; c < 4; ++c) {
      const double want = w.data()[r] * (p[c] * v.data()[r * 4 + c] - p[c] * pv);
      CHECK(hv.data()[r * 4 + c] == Approx(want).epsilon(1e-12).margin(1e-15));
    }
  }
}

TEST_CASE("the first-order gradient of a cross-entropy with respect to the logits is one fused pass",
          "[nn][cross_entropy][fusion]") {
  const fg::tensor<double> x = fg::random::normal<double>({64, 10}, 3);
  const fg::tensor<std::int32_t> labels = fg::random::uniform<std::int32_t>({64}, 4, 0, 10);
  const fg::tensor<double> z = fg::softmax(fg::random::normal<double>({64, 10}, 5));
  for (const bool sparse : {true, false}) {
    INFO((sparse ? "sparse" : "softmax"));
    fg::gradient_tape tape;
    tape.watch(x);
    const fg::tensor<double> loss = sparse ? fg::sparse_softmax_cross_entropy_with_logits(labels, x)
                                           : fg::softmax_cross_entropy_with_logits(z, x);
    auto& c = fg::core::counters();
    const auto passes = c.passes;
    const fg::tensor<double> g = tape.gradient(loss, x);  // upstream ones: no reduction before the step
    CHECK(c.passes - passes == 1);
    REQUIRE(g.shape() == x.shape());
  }
}

TEST_CASE("l2_normalize and bias_add match TensorFlow", "[nn][normalization]") {
  const ftensor x = {{3.f, 4.f}, {0.f, 0.f}, {1.f, -2.f}};
  check_near(ftensor(fg::l2_normalize(x, 1)), {3, 2},
             {0.600000024f, 0.800000012f, 0.0f, 0.0f, 0.44721359f, -0.89442718f});
  check_near(ftensor(fg::l2_normalize(x, 0)), {3, 2},
             {0.948683262f, 0.89442718f, 0.0f, 0.0f, 0.316227764f, -0.44721359f});
  check_near(ftensor(fg::l2_normalize(x, {0, 1})), {3, 2},
             {0.547722578f, 0.730296731f, 0.0f, 0.0f, 0.182574183f, -0.365148365f});
  const ftensor value = fg::reshape(ftensor(fg::range<float>(12.f) * 0.5f), {1, 2, 2, 3});
  const ftensor bias = {1.f, -2.f, 0.25f};
  check_near(ftensor(fg::bias_add(value, bias)), {1, 2, 2, 3},
             {1.0f, -1.5f, 1.25f, 2.5f, 0.0f, 2.75f, 4.0f, 1.5f, 4.25f, 5.5f, 3.0f, 5.75f});
  // The bias's gradient is the sum over the other axes.
  fg::gradient_tape tape;
  tape.watch(bias);
  const fg::tensor<float> gb = tape.gradient(fg::reduce_sum(fg::relu(fg::bias_add(value, bias))), bias);
  CHECK(values(gb) == std::vector<float>{4.f, 2.f, 4.f});  // relu passes value + bias > 0
  CHECK_THROWS_WITH(fg::bias_add(value, ftensor{1.f, 2.f}),
                    Catch::Contains("bias of shape (2,) does not fit value of shape (1, 2, 2, 3)"));
  CHECK_THROWS_WITH(fg::bias_add(bias, bias), Catch::Contains("rank 2 or more"));
}

TEST_CASE("moments and batch_normalization match TensorFlow", "[nn][normalization]") {
  const ftensor x = fg::reshape(ftensor{0.5f, -1.f, 2.f, 3.5f, 0.f, 1.25f, -2.f, 4.f, 1.f, -0.5f, 2.5f, 0.75f},
                                {2, 3, 2});
  const auto [m02, v02] = fg::moments(x, {0, 2});
  check_near(m02, {3}, {0.375f, 1.5f, 1.125f});
  check_near(v02, {3}, {5.171875f, 2.125f, 0.828125f});
  const auto [m1, v1] = fg::moments(x, 1, true);
  check_near(m1, {2, 1, 2}, {0.833333313f, 1.25f, 0.5f, 1.41666663f});
  check_near(v1, {2, 1, 2}, {0.722222269f, 3.375f, 3.5f, 3.59722257f});
  const auto all = fg::moments(x * 1.f, {0, 1, 2});
  check_near(all.mean, {}, {1.0f});
  check_near(all.variance, {}, {2.92708325f});
  const ftensor bx = {{0.5f, -1.f, 2.f}, {3.5f, 0.f, 1.25f}};
  const ftensor mean = {1.f, -0.5f, 0.25f}, variance = {0.5f, 2.f, 1.5f};
  const ftensor offset = {0.1f, 0.2f, -0.3f}, scale = {2.f, 0.5f, -1.f};
  check_near(fg::batch_normalization(bx, mean, variance, offset, scale, 1e-3), {2, 3},
             {-1.3128016f, 0.0232674778f, -1.72839296f, 7.16400719f, 0.376732528f, -1.11622453f});
  check_near(fg::batch_normalization(bx, mean, variance, {}, {}, 1e-3), {2, 3},
             {-0.706400752f, -0.35346505f, 1.42839289f, 3.53200364f, 0.35346505f, 0.816224456f});
}

namespace {
// nn_ops_values.py: x of shape (2, 2, 2, 3), NHWC, and the weights w of sum(y * w).
const std::vector<float> bn_x = {0.5f, -1.f, 2.f, 3.5f, 0.f, 1.25f, -2.f, 4.f, 1.f, -0.5f, 2.5f, 0.75f,
                                 1.5f, 0.25f, -0.75f, 2.f, -3.f, 0.5f, 1.f, 1.75f, -1.25f, 0.f, 2.25f, 3.f};
std::vector<float> bn_weights() {
  std::vector<float> w;
  for (int i = 0; i < 24; ++i) w.push_back(static_cast<float>(((i * 7) % 5 - 2) * 0.5));
  return w;
}
// FusedBatchNormV3's y and the gradient of sum(y * w) with respect to x, training and inference.
const std::vector<float> bn_training_y = {
    -0.220190644f, -0.242321923f, -1.2235322f, 3.62209702f, -0.00241850317f, -0.640248716f, -3.42209721f,
    0.957195163f, -0.445820868f, -1.5009532f, 0.597340047f, -0.25139305f, 1.06057191f, 0.0575573444f,
    0.915173948f, 1.70095325f, -0.722128808f, -0.056965217f, 0.420190632f, 0.41741246f, 1.3040297f,
    -0.860571861f, 0.537364185f, -2.00124359f};
const std::vector<float> bn_training_grad_x = {
    -1.07960117f, -0.00381275942f, -0.789224744f, 0.02855918f, 0.0938099325f, 0.742770374f, -0.188654497f,
    0.124445558f, 0.346105576f, 0.685616314f, -0.321867734f, -0.0505592488f, 1.63785028f, -0.151675746f,
    -0.486269891f, -0.845711648f, 0.0408452861f, -0.836079776f, -0.361256719f, 0.0547341444f, 0.664678812f,
    0.123198219f, 0.163521335f, 0.408578843f};
const std::vector<float> bn_inference_y = {
    -1.31280148f, 0.0232674778f, -1.72839284f, 7.16400766f, 0.376732528f, -1.11622453f, -8.37680817f,
    1.79059279f, -0.912168384f, -4.13840437f, 1.26039517f, -0.70811224f, 1.51280153f, 0.465098798f,
    0.516224504f, 2.92560291f, -0.683662653f, -0.504056156f, 0.100000001f, 0.995296359f, 0.924336731f,
    -2.7256031f, 1.1720289f, -2.54461741f};
const std::vector<float> bn_inference_grad_x = {
    -2.82560301f, 0.0f, -0.816224515f, -1.4128015f, 0.176732525f, 0.816224515f, 0.0f, 0.35346505f,
    0.408112258f, 1.4128015f, -0.35346505f, -0.0f, 2.82560301f, -0.176732525f, -0.408112258f, -2.82560301f,
    0.0f, -0.816224515f, -1.4128015f, 0.176732525f, 0.816224515f, 0.0f, 0.35346505f, 0.408112258f};
}  // namespace

TEST_CASE("fused_batch_norm matches TensorFlow's FusedBatchNormV3 in training and inference", "[nn][normalization]") {
  const ftensor x(fg::shape{2, 2, 2, 3}, bn_x), w(fg::shape{2, 2, 2, 3}, bn_weights());
  const ftensor scale = {2.f, 0.5f, -1.f}, offset = {0.1f, 0.2f, -0.3f};
  const ftensor mean = {1.f, -0.5f, 0.25f}, variance = {0.5f, 2.f, 1.5f};
  const std::vector<float> saved_mean = {0.75f, 0.84375f, 0.8125f};
  const std::vector<float> saved_variance = {2.4375f, 4.34277344f, 1.65234375f};
  {
    INFO("training, exponential_avg_factor 1: the batch's statistics, the variance with Bessel's correction");
    const auto r = fg::fused_batch_norm(x, scale, offset);
    check_near(r.y, x.shape(), bn_training_y, 1e-5, 1e-6);
    check_near(r.batch_mean, {3}, {0.75f, 0.84375f, 0.8125f});
    check_near(r.batch_variance, {3}, {2.78571439f, 4.96317005f, 1.88839293f});
    check_near(r.saved_mean, {3}, saved_mean);
    check_near(r.saved_variance, {3}, saved_variance);
  }
  {
    INFO("training, exponential_avg_factor 0.3: the running statistics blended");
    const auto r = fg::fused_batch_norm(x, scale, offset, mean, variance, 1e-3, 0.3);
    check_near(r.y, x.shape(), bn_training_y, 1e-5, 1e-6);
    check_near(r.batch_mean, {3}, {0.925000012f, -0.0968749821f, 0.418749988f});
    check_near(r.batch_variance, {3}, {1.18571436f, 2.88895106f, 1.6165179f});
    check_near(r.saved_mean, {3}, saved_mean);
    check_near(r.saved_variance, {3}, saved_variance);
  }
  {
    INFO("inference: the given statistics");
    const auto r = fg::fused_batch_norm(x, scale, offset, mean, variance, 1e-3, 1.0, false);
    check_near(r.y, x.shape(), bn_inference_y, 1e-5, 1e-6);
    check_near(r.batch_mean, {3}, {1.0f, -0.5f, 0.25f});
    check_near(r.batch_variance, {3}, {0.5f, 2.0f, 1.5f});
  }
  for (const bool training : {true, false}) {
    INFO((training ? "training" : "inference") << ": gradients of sum(y * w)");
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    tape.watch(scale);
    tape.watch(offset);
    const auto r = fg::fused_batch_norm(x, scale, offset, mean, variance, 1e-3, 1.0, training);
    const ftensor loss = fg::reduce_sum(r.y * w);
    if (training) {
      check_near(tape.gradient(loss, x), x.shape(), bn_training_grad_x, 1e-4, 1e-6);
      check_near(tape.gradient(loss, scale), {3}, {-1.52090549f, 1.55187535f, 0.413159192f}, 1e-4, 1e-6);
    } else {
      check_near(tape.gradient(loss, x), x.shape(), bn_inference_grad_x, 1e-4, 1e-6);
      check_near(tape.gradient(loss, scale), {3}, {-2.82560301f, 3.7113831f, 0.204056129f}, 1e-4, 1e-6);
    }
    check_near(tape.gradient(loss, offset), {3}, {-1.5f, 1.5f, -0.5f}, 1e-5, 1e-6);
  }
  // Bad shapes throw before anything is recorded.
  const ftensor matrix = fg::reshape(x, {4, 6});
  fg::gradient_tape tape;
  tape.watch(x);
  CHECK_THROWS_WITH(fg::fused_batch_norm(x * 2.f, ftensor{1.f, 2.f}, offset),
                    Catch::Contains("scale has shape (2,)") && Catch::Contains("3 channels"));
  CHECK_THROWS_WITH(fg::fused_batch_norm(x * 2.f, scale, offset, {}, {}, 1e-3, 1.0, false),
                    Catch::Contains("mean is required"));
  CHECK_THROWS_AS(fg::fused_batch_norm(matrix, ftensor{}, ftensor{}), fg::shape_error);
  CHECK(tape.size() == 0);
}

TEST_CASE("dropout keeps 1 - rate of the elements scaled by 1 / (1 - rate), the same for the same seed",
          "[nn][dropout]") {
  const ftensor x = fg::ones<float>({100, 100}) * 3.f;
  const ftensor a = fg::dropout(x, 0.25, 42);
  const ftensor b = fg::dropout(x * 1.f, 0.25, 42);
  const ftensor c = fg::dropout(x, 0.25, 43);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float v = a.data()[i];
    CHECK((v == 0.f || v == 4.f));  // 3 / 0.75
    kept += v != 0.f;
  }
  // 7500 expected; 5 standard deviations (sqrt(10000 * 0.25 * 0.75) = 43) either side.
  CHECK(kept > 7500 - 217);
  CHECK(kept < 7500 + 217);
  CHECK(values(a) == values(b));
  CHECK(values(a) != values(c));
  // Rate 0 returns x itself; the gradient flows through the kept elements, scaled.
  CHECK(fg::dropout(x, 0.0, 1).id() == x.id());
  fg::gradient_tape tape;
  tape.watch(x);
  const ftensor g = tape.gradient(fg::reduce_sum(fg::dropout(x, 0.25, 42)), x);
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g.data()[i] == (a.data()[i] == 0.f ? 0.f : 4.f / 3.f));
  // A rate outside [0, 1) is an error, and records nothing.
  fg::gradient_tape t2;
  t2.watch(x);
  CHECK_THROWS_WITH(fg::dropout(x * 2.f, 1.0, 1), Catch::Contains("rate must be in [0, 1)"));
  CHECK_THROWS_AS(fg::dropout(x, -0.1, 1), fg::value_error);
  CHECK_THROWS_AS(fg::dropout(x, std::nan(""), 1), fg::value_error);
  CHECK(t2.size() == 0);
  // The seedless form draws from the thread's generator.
  fg::random::set_seed(5);
  const ftensor d1 = fg::dropout(x, 0.5);
  fg::random::set_seed(5);
  CHECK(values(ftensor(fg::dropout(x, 0.5))) == values(d1));
}
