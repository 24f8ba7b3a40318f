// fg::data::dataset, tf.data's Dataset: the deterministic transformations against the values and
// cardinalities TensorFlow 2.21 gives (tests/reference/tf_data.py), shuffle by the properties of
// its algorithm (permutations, a uniform first position, the buffer's bound on how early an
// element can come, seeds and epochs), parallel map's order, exceptions from map and generator
// threads, threads stopped when a loop breaks early, and the errors of bad arguments. Built also
// with -fsanitize=thread.
#include <catch2/catch.hpp>
#include <fusegrad/data.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <ranges>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

namespace fgd = fg::data;
using i64 = std::int64_t;
using itensor = fg::tensor<i64>;

namespace {
/// The elements of t in row-major order.
template <class T>
std::vector<T> values(const fg::tensor<T>& t) {
  return std::vector<T>(t.data(), t.data() + t.size());
}
/// The flat values of each element of a dataset of int64 tensors.
std::vector<std::vector<i64>> collect(const fgd::dataset<itensor>& ds) {
  std::vector<std::vector<i64>> out;
  for (const itensor& x : ds) out.push_back(values(x));
  return out;
}
/// The scalars of a dataset of int64 scalars.
std::vector<i64> scalars(const fgd::dataset<itensor>& ds) {
  std::vector<i64> out;
  for (const itensor& x : ds) {
    REQUIRE(x.rank() == 0);
    out.push_back(x.item());
  }
  return out;
}
/// np.arange(0, 60).reshape([6, 10]) of seed 004.
itensor seed004_data() {
  std::vector<i64> v(60);
  std::iota(v.begin(), v.end(), i64{0});
  return itensor(fg::shape{6, 10}, v);
}
/// The row numbers of a batch of rows of seed004_data (row r holds 10r .. 10r + 9), checking
/// that each row is whole.
std::vector<i64> row_numbers(const itensor& batch) {
  REQUIRE(batch.rank() == 2);
  REQUIRE(batch.shape()[1] == 10);
  std::vector<i64> rows;
  const std::vector<i64> v = values(batch);
  for (std::size_t r = 0; r < batch.shape()[0]; ++r) {
    const i64 first = v[r * 10];
    REQUIRE(first % 10 == 0);
    for (std::size_t c = 0; c < 10; ++c) REQUIRE(v[r * 10 + c] == first + static_cast<i64>(c));
    rows.push_back(first / 10);
  }
  return rows;
}
/// The order of range(n).shuffle(buffer, seed) as one batch.
std::vector<i64> shuffled(i64 n, i64 buffer, std::uint64_t seed) {
  std::vector<i64> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), i64{0});
  return values(fgd::from_tensor_slices(itensor(fg::shape{static_cast<std::size_t>(n)}, v))
                    .shuffle(buffer, seed)
                    .batch(n)
                    .make_iterator()
                    .next());
}
}  // namespace

static_assert(std::ranges::input_range<const fgd::dataset<itensor>>);
static_assert(std::is_same_v<decltype(fgd::range(3).map([](const itensor& x) { return x * 2; })), fgd::dataset<itensor>>,
              "a lazy expression returned by map becomes its tensor");
static_assert(std::is_same_v<decltype(fgd::range(3).map([](const itensor& x) { return std::pair{x, fg::cast<float>(x)}; })),
                             fgd::dataset<std::tuple<itensor, fg::tensor<float>>>>,
              "a std::pair returned by map becomes a std::tuple");

TEST_CASE("seed 004's walk without shuffle gives tf.data's batches", "[data]") {
  const auto ds = fgd::from_tensor_slices(seed004_data()).batch(4).repeat(2);
  // tests/reference/tf_data.py: "seed 004 walk batch sizes" {4, 2, 4, 2}, and the values.
  std::vector<std::vector<i64>> want;
  for (int epoch = 0; epoch < 2; ++epoch) {
    want.emplace_back(40);
    std::iota(want.back().begin(), want.back().end(), i64{0});
    want.emplace_back(20);
    std::iota(want.back().begin(), want.back().end(), i64{40});
  }
  std::vector<std::size_t> sizes;
  for (const itensor& b : ds) sizes.push_back(b.shape()[0]);
  CHECK(sizes == std::vector<std::size_t>{4, 2, 4, 2});
  CHECK(collect(ds) == want);
  CHECK(ds.cardinality() == 4);
}

TEST_CASE("seed 004's walk with shuffle(3): four batches of 4 and 2, each epoch a permutation of the rows", "[data]") {
  const auto ds = fgd::from_tensor_slices(seed004_data()).shuffle(3).batch(4).repeat(2);
  std::vector<std::vector<i64>> epochs(2);
  std::vector<std::size_t> sizes;
  int n = 0;
  for (const itensor& b : ds) {
    sizes.push_back(b.shape()[0]);
    const std::vector<i64> rows = row_numbers(b);
    auto& e = epochs[n++ / 2];
    e.insert(e.end(), rows.begin(), rows.end());
  }
  CHECK(sizes == std::vector<std::size_t>{4, 2, 4, 2});  // tf_data.py: the same sizes with shuffle(3)
  for (auto& e : epochs) {
    // Buffer 3: row i cannot come out before position i - 2 (Note [shuffle buffer]).
    for (std::size_t p = 0; p < e.size(); ++p) CHECK(e[p] <= static_cast<i64>(p) + 2);
    std::sort(e.begin(), e.end());
    CHECK(e == std::vector<i64>{0, 1, 2, 3, 4, 5});
  }
}

TEST_CASE("shuffle with a buffer as large as the data draws uniform permutations", "[data][shuffle]") {
  // First positions of 5 elements over 2000 seeds: chi-square with 4 degrees of freedom, whose
  // 99.999th percentile is 25.7.
  std::vector<int> first(5, 0);
  std::map<std::vector<i64>, int> perms;
  for (std::uint64_t seed = 0; seed < 12000; ++seed) {
    std::vector<i64> p = shuffled(5, 5, seed);
    std::vector<i64> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    REQUIRE(sorted == std::vector<i64>{0, 1, 2, 3, 4});
    if (seed < 2000) ++first[static_cast<std::size_t>(p[0])];
    ++perms[p];
  }
  double chi2 = 0;
  for (int c : first) chi2 += (c - 400.0) * (c - 400.0) / 400.0;
  INFO("first-position counts " << first[0] << " " << first[1] << " " << first[2] << " " << first[3] << " " << first[4]);
  CHECK(chi2 < 25.7);
  // All 120 permutations over 12000 seeds, 100 expected each: chi-square with 119 degrees of
  // freedom, mean 119 and standard deviation 15.4; 200 is more than 5 deviations above.
  CHECK(perms.size() == 120);
  double chi2_all = 0;
  for (const auto& [p, c] : perms) chi2_all += (c - 100.0) * (c - 100.0) / 100.0;
  CHECK(chi2_all < 200);
}

TEST_CASE("a small shuffle buffer keeps each element at or after position i - buffer_size + 1", "[data][shuffle]") {
  // Output k is drawn from inputs 0 .. k + buffer_size - 1 (Note [shuffle buffer]), so input i
  // comes out at position i - buffer_size + 1 or later; the bound is reached.
  constexpr i64 n = 50, buffer = 4;
  bool reached = false;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const std::vector<i64> p = shuffled(n, buffer, seed);
    for (i64 k = 0; k < n; ++k) {
      CHECK(p[static_cast<std::size_t>(k)] <= k + buffer - 1);
      reached = reached || p[static_cast<std::size_t>(k)] == k + buffer - 1;
    }
  }
  CHECK(reached);
}

TEST_CASE("a seeded shuffle repeats; reshuffle_each_iteration decides whether epochs differ", "[data][shuffle]") {
  const auto x = fgd::range(20);
  auto epochs = [](const fgd::dataset<itensor>& ds) {
    const std::vector<i64> all = scalars(ds.repeat(2));
    REQUIRE(all.size() == 40);
    return std::pair{std::vector<i64>(all.begin(), all.begin() + 20), std::vector<i64>(all.begin() + 20, all.end())};
  };
  const auto [a1, a2] = epochs(x.shuffle(20, 42));
  const auto [b1, b2] = epochs(x.shuffle(20, 42));
  CHECK(a1 == b1);  // two datasets with one seed: the same orders
  CHECK(a2 == b2);
  CHECK(a1 != a2);  // reshuffled each epoch (all 20! orders equally likely: a repeat is 4e-19)
  CHECK(a1 != epochs(x.shuffle(20, 43)).first);
  const auto [c1, c2] = epochs(x.shuffle(20, 42, false));
  CHECK(c1 == c2);
  // Without a seed, the seed comes from fg::random's generator: set_seed makes it repeat.
  fg::random::set_seed(7);
  const auto d = x.shuffle(20);
  fg::random::set_seed(7);
  const auto e = x.shuffle(20);
  CHECK(scalars(d) == scalars(e));
}

TEST_CASE("range, take, skip, shard, filter, repeat, concatenate, enumerate and zip give tf.data's elements", "[data]") {
  // tests/reference/tf_data.py
  CHECK(scalars(fgd::range(2, 11, 3)) == std::vector<i64>{2, 5, 8});
  CHECK(scalars(fgd::range(10, 0, -3)) == std::vector<i64>{10, 7, 4, 1});
  CHECK(scalars(fgd::range(5, 2)).empty());
  CHECK(scalars(fgd::range(10).take(3)) == std::vector<i64>{0, 1, 2});
  CHECK(scalars(fgd::range(10).take(-1)) == std::vector<i64>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(scalars(fgd::range(10).skip(7)) == std::vector<i64>{7, 8, 9});
  CHECK(scalars(fgd::range(10).skip(-1)).empty());
  CHECK(scalars(fgd::range(10).shard(3, 1)) == std::vector<i64>{1, 4, 7});
  CHECK(scalars(fgd::range(10).filter([](const itensor& x) { return fg::equal(x % i64{3}, i64{0}); })) ==
        std::vector<i64>{0, 3, 6, 9});
  CHECK(scalars(fgd::range(10).filter([](const itensor& x) { return x.item() % 3 == 0; })) == std::vector<i64>{0, 3, 6, 9});
  CHECK(scalars(fgd::range(3).repeat(2)) == std::vector<i64>{0, 1, 2, 0, 1, 2});
  CHECK(scalars(fgd::range(3).concatenate(fgd::range(5, 7))) == std::vector<i64>{0, 1, 2, 5, 6});
  CHECK(scalars(fgd::range(5).map([](const itensor& x) { return x * i64{2}; }).cache().repeat(2)) ==
        std::vector<i64>{0, 2, 4, 6, 8, 0, 2, 4, 6, 8});

  std::vector<std::pair<i64, i64>> en;
  for (auto [i, x] : fgd::range(3).map([](const itensor& x) { return x * i64{10}; }).enumerate(5))
    en.emplace_back(i.item(), x.item());
  CHECK(en == std::vector<std::pair<i64, i64>>{{5, 0}, {6, 10}, {7, 20}});

  std::vector<std::pair<i64, i64>> zipped;
  for (auto [a, b] : fgd::zip(fgd::range(3), fgd::range(10, 15))) zipped.emplace_back(a.item(), b.item());
  CHECK(zipped == std::vector<std::pair<i64, i64>>{{0, 10}, {1, 11}, {2, 12}});
}

TEST_CASE("batch, drop_remainder, unbatch and tuple batches give tf.data's elements", "[data][batch]") {
  // tests/reference/tf_data.py
  CHECK(collect(fgd::range(7).batch(3)) == std::vector<std::vector<i64>>{{0, 1, 2}, {3, 4, 5}, {6}});
  CHECK(collect(fgd::range(7).batch(3, true)) == std::vector<std::vector<i64>>{{0, 1, 2}, {3, 4, 5}});
  CHECK(collect(fgd::range(7).batch(3).unbatch().batch(2)) ==
        std::vector<std::vector<i64>>{{0, 1}, {2, 3}, {4, 5}, {6}});

  // from_tensor_slices((arange(10).reshape(5, 2), arange(5) * 1.5)).batch(2)
  const itensor a = fg::reshape(fg::range<i64>(10), {5, 2});
  const fg::tensor<double> b = fg::cast<double>(fg::range<i64>(5)) * 1.5;
  std::vector<std::vector<i64>> as;
  std::vector<std::vector<double>> bs;
  std::vector<fg::shape> shapes;
  for (auto [x, y] : fgd::from_tensor_slices(a, b).batch(2)) {
    as.push_back(values(x));
    bs.push_back(values(y));
    shapes.push_back(x.shape());
  }
  CHECK(as == std::vector<std::vector<i64>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
  CHECK(bs == std::vector<std::vector<double>>{{0.0, 1.5}, {3.0, 4.5}, {6.0}});
  CHECK(shapes == std::vector<fg::shape>{{2, 2}, {2, 2}, {1, 2}});
}

TEST_CASE("padded_batch pads each dimension to the batch's longest or to padded_shapes, as tf.data", "[data][batch]") {
  // tests/reference/tf_data.py: elements fill([x], x) for x in 1..5
  const auto ragged = fgd::range(1, 6).map([](const itensor& x) {
    return fg::fill<i64>(fg::shape{static_cast<std::size_t>(x.item())}, x.item());
  });
  using rows = std::vector<std::vector<i64>>;
  CHECK(collect(ragged.padded_batch(2)) == rows{{1, 0, 2, 2}, {3, 3, 3, 0, 4, 4, 4, 4}, {5, 5, 5, 5, 5}});
  std::vector<fg::shape> shapes;
  for (const itensor& b : ragged.padded_batch(2)) shapes.push_back(b.shape());
  CHECK(shapes == std::vector<fg::shape>{{2, 2}, {2, 4}, {1, 5}});
  CHECK(collect(ragged.padded_batch(2, {.padded_shapes = {{6}}, .padding_values = {-1}})) ==
        rows{{1, -1, -1, -1, -1, -1, 2, 2, -1, -1, -1, -1},
             {3, 3, 3, -1, -1, -1, 4, 4, 4, 4, -1, -1},
             {5, 5, 5, 5, 5, -1}});
  CHECK(collect(ragged.padded_batch(2, {.drop_remainder = true})) == rows{{1, 0, 2, 2}, {3, 3, 3, 0, 4, 4, 4, 4}});
  CHECK(ragged.padded_batch(2).cardinality() == fgd::range(5).batch(2).cardinality());

  // rank 2: range(x * (4 - x)) as (x, 4 - x) for x in 1..3, one batch of (3, 3, 3)
  const auto grid = fgd::range(1, 4).map([](const itensor& x) {
    const i64 r = x.item();
    return fg::reshape(fg::range<i64>(r * (4 - r)), {r, 4 - r});
  });
  const itensor g = grid.padded_batch(3).make_iterator().next();
  CHECK(g.shape() == fg::shape{3, 3, 3});
  CHECK(values(g) == std::vector<i64>{0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0});
  // a padded size given for one dimension, the other the batch's longest
  CHECK(grid.padded_batch(3, {.padded_shapes = {{4, -1}}}).make_iterator().next().shape() == fg::shape{3, 4, 3});

  // tuples: each component by its position, with its own padding value
  const auto pairs = fgd::range(1, 4).map([](const itensor& x) {
    const i64 r = x.item();
    return std::pair{fg::fill<i64>(fg::shape{static_cast<std::size_t>(r)}, r),
                     fg::fill<float>(fg::shape{static_cast<std::size_t>(4 - r), 1}, static_cast<float>(r))};
  });
  auto [a, b] = pairs.padded_batch(3, {.padding_values = {0, 0.5}}).make_iterator().next();
  CHECK(values(a) == std::vector<i64>{1, 0, 0, 2, 2, 0, 3, 3, 3});
  CHECK(b.shape() == fg::shape{3, 3, 1});
  CHECK(values(b) == std::vector<float>{1, 1, 1, 2, 2, 0.5f, 3, 0.5f, 0.5f});

  // errors name the element, the component and the sizes
  CHECK_THROWS_WITH(collect(ragged.padded_batch(2, {.padded_shapes = {{3}}})),
                    Catch::Contains("padded_batch") && Catch::Contains("element 1") && Catch::Contains("(3)"));
  CHECK_THROWS_WITH(collect(ragged.padded_batch(2, {.padded_shapes = {{3, 3}}})),
                    Catch::Contains("padded_shapes[0] has 2 dimensions") && Catch::Contains("rank 1"));
  const auto ranks = fgd::range(1, 3).map([](const itensor& x) { return x.item() == 1 ? fg::zeros<i64>({2}) : fg::zeros<i64>({2, 2}); });
  CHECK_THROWS_WITH(collect(ranks.padded_batch(2)), Catch::Contains("element 1 has shape (2, 2)") && Catch::Contains("keeps the rank"));
  CHECK_THROWS_WITH(ragged.padded_batch(0), Catch::Contains("padded_batch: batch_size must be at least 1"));
}

TEST_CASE("cardinality gives tf.data's counts, INFINITE (-1) and UNKNOWN (-2)", "[data]") {
  // tests/reference/tf_data.py, "cardinality ..." lines.
  const auto r = fgd::range(10);
  const auto lt5 = [](const itensor& x) { return x.item() < 5; };
  CHECK(fgd::infinite_cardinality == -1);
  CHECK(fgd::unknown_cardinality == -2);
  CHECK(r.cardinality() == 10);
  CHECK(r.repeat().cardinality() == -1);
  CHECK(r.repeat(3).cardinality() == 30);
  CHECK(fgd::range(0).repeat().cardinality() == 0);
  CHECK(r.filter(lt5).cardinality() == -2);
  CHECK(r.filter(lt5).repeat().cardinality() == -1);
  CHECK(r.filter(lt5).repeat(2).cardinality() == -2);
  CHECK(r.batch(3).cardinality() == 4);
  CHECK(r.batch(3, true).cardinality() == 3);
  CHECK(r.repeat().batch(3).cardinality() == -1);
  CHECK(r.take(3).cardinality() == 3);
  CHECK(r.take(30).cardinality() == 10);
  CHECK(r.repeat().take(30).cardinality() == 30);
  CHECK(r.skip(3).cardinality() == 7);
  CHECK(r.skip(30).cardinality() == 0);
  CHECK(r.skip(-1).cardinality() == 0);
  CHECK(r.repeat().skip(3).cardinality() == -1);
  CHECK(r.shard(3, 0).cardinality() == 4);
  CHECK(r.shard(3, 1).cardinality() == 3);
  CHECK(r.shard(3, 2).cardinality() == 3);
  CHECK(r.shuffle(4).cardinality() == 10);
  CHECK(r.map([](const itensor& x) { return x; }).cardinality() == 10);
  CHECK(r.cache().cardinality() == 10);
  CHECK(r.prefetch(2).cardinality() == 10);
  CHECK(r.enumerate().cardinality() == 10);
  CHECK(fgd::zip(r, fgd::range(4)).cardinality() == 4);
  CHECK(fgd::zip(r, fgd::range(4).repeat()).cardinality() == 10);
  CHECK(fgd::zip(r.repeat(), fgd::range(4).filter(lt5)).cardinality() == -2);
  CHECK(r.batch(3).unbatch().cardinality() == -2);
  CHECK(r.concatenate(fgd::range(4)).cardinality() == 14);
  CHECK(r.concatenate(fgd::range(4).repeat()).cardinality() == -1);
  CHECK(r.repeat().filter(lt5).cardinality() == -2);
  CHECK(r.filter(lt5).take(3).cardinality() == -2);
  CHECK(r.filter(lt5).skip(3).cardinality() == -2);
  CHECK(r.filter(lt5).batch(3).cardinality() == -2);
  CHECK(r.filter(lt5).shard(3, 0).cardinality() == -2);
  CHECK(fgd::zip(fgd::range(3), r.filter(lt5)).cardinality() == -2);
  CHECK(fgd::range(0).filter(lt5).cardinality() == -2);
  CHECK(r.batch(2).repeat().unbatch().cardinality() == -1);
  CHECK(fgd::from_generator([] { return std::optional<itensor>(); }).cardinality() == -2);
}

TEST_CASE("batches of shuffled rows hold whole rows, tuple components stay aligned, and mixed sources join",
          "[data][batch]") {
  // x row i is (i, -i, 2i), y[i] = 100 + i: every batch row must pair them.
  std::vector<i64> xv, yv;
  for (i64 i = 0; i < 37; ++i) {
    xv.insert(xv.end(), {i, -i, 2 * i});
    yv.push_back(100 + i);
  }
  const itensor x(fg::shape{37, 3}, xv), y(fg::shape{37}, yv);
  std::multiset<i64> seen;
  for (auto [xb, yb] : fgd::from_tensor_slices(x, y).shuffle(10, 5).batch(8)) {
    const std::vector<i64> xs = values(xb), ys = values(yb);
    REQUIRE(xb.shape()[0] == yb.shape()[0]);
    for (std::size_t r = 0; r < yb.shape()[0]; ++r) {
      const i64 i = ys[r] - 100;
      CHECK(xs[3 * r] == i);
      CHECK(xs[3 * r + 1] == -i);
      CHECK(xs[3 * r + 2] == 2 * i);
      seen.insert(i);
    }
  }
  CHECK(seen.size() == 37);
  CHECK(std::set<i64>(seen.begin(), seen.end()).size() == 37);

  // A batch across two tables and computed values: [0 1 2] [3 | 10 11] [12 | 20 21] [22].
  const auto a = fgd::from_tensor_slices(fg::range<i64>(4));
  const auto b = fgd::from_tensor_slices(fg::range<i64>(10, 13));
  const auto c = fgd::range(20, 23).map([](const itensor& v) { return v + i64{0}; });
  CHECK(collect(a.concatenate(b).concatenate(c).batch(3)) ==
        std::vector<std::vector<i64>>{{0, 1, 2}, {3, 10, 11}, {12, 20, 21}, {22}});

  // A batch that is a whole table in order is that tensor itself: no copy.
  const itensor whole = fgd::from_tensor_slices(x).batch(37).make_iterator().next();
  CHECK(whole.data() == x.data());
}

TEST_CASE("datasets are values: copies share the pipeline, each loop is an independent pass", "[data]") {
  const auto ds = fgd::range(5).map([](const itensor& x) { return x * x; });
  const auto copy = ds;  // NOLINT: the copy is the point
  auto i1 = ds.make_iterator();
  auto i2 = copy.make_iterator();
  CHECK(i1.next().item() == 0);
  CHECK(i1.next().item() == 1);
  CHECK(i2.next().item() == 0);  // its own pass
  CHECK(scalars(ds) == std::vector<i64>{0, 1, 4, 9, 16});
  CHECK(i1.next().item() == 4);

  // A generator's lambda is copied for each pass: its count starts again.
  const auto gen = fgd::from_generator([n = i64{0}]() mutable -> std::optional<itensor> {
    if (n == 3) return std::nullopt;
    return itensor(n++);
  });
  CHECK(scalars(gen) == std::vector<i64>{0, 1, 2});
  CHECK(scalars(gen.repeat(2)) == std::vector<i64>{0, 1, 2, 0, 1, 2});
}

namespace {
struct sample {  // an element type of the user's own
  i64 id;
  std::string name;
};
}  // namespace

TEST_CASE("a map may return any copyable type, which later transformations and loops carry", "[data][map]") {
  const auto ds = fgd::range(6)
                      .map([](const itensor& x) { return sample{x.item(), "s" + std::to_string(x.item())}; })
                      .filter([](const sample& s) { return s.id % 2 == 1; })
                      .shuffle(3, 9)
                      .prefetch(2);
  std::vector<std::string> names;
  for (const sample& s : ds) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"s1", "s3", "s5"});
  CHECK(fgd::range(-5, 5).cardinality() == 10);
  CHECK(fgd::range(INT64_MIN, INT64_MAX, 1).cardinality() == INT64_MAX);  // no wrap to a negative count
}

TEST_CASE("cache replays the first complete pass without running the pipeline again", "[data]") {
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto ds = fgd::range(4).map([calls](const itensor& x) {
    ++*calls;
    return x + i64{1};
  });
  const auto cached = ds.cache();
  CHECK(scalars(cached.take(2)) == std::vector<i64>{1, 2});  // a pass stopped early stores nothing
  CHECK(*calls == 2);
  CHECK(scalars(cached.repeat(3)) == std::vector<i64>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(*calls == 6);
  CHECK(scalars(cached) == std::vector<i64>{1, 2, 3, 4});
  CHECK(*calls == 6);
}

TEST_CASE("map with num_parallel_calls = 4 runs on several threads and keeps the order", "[data][map][threads]") {
  std::mutex m;
  std::set<std::thread::id> threads;
  const auto f = [&](const itensor& x) {
    const i64 i = x.item();
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 13 * 20));
    {
      std::lock_guard<std::mutex> l(m);
      threads.insert(std::this_thread::get_id());
    }
    return std::make_tuple(x * x, x + i64{1});
  };
  std::vector<i64> squares, next;
  for (auto [sq, nx] : fgd::range(200).map(f, 4)) {
    squares.push_back(sq.item());
    next.push_back(nx.item());
  }
  REQUIRE(squares.size() == 200);
  for (i64 i = 0; i < 200; ++i) {
    CHECK(squares[static_cast<std::size_t>(i)] == i * i);
    CHECK(next[static_cast<std::size_t>(i)] == i + 1);
  }
  CHECK(threads.size() > 1);
  CHECK(threads.count(std::this_thread::get_id()) == 0);
  // Tuple elements unpack into the function's arguments, as in tf.data; autotune picks the threads.
  CHECK(scalars(fgd::zip(fgd::range(50), fgd::range(50)).map([](const itensor& a, const itensor& b) { return a + b; },
                                                               fgd::autotune)) ==
        scalars(fgd::range(0, 100, 2)));
}

namespace {
struct user_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Throws fg::value_error on element 5 (user_error when `own`), else returns x.
auto failing(bool own) {
  return [own](const itensor& x) {
    if (x.item() == 5) {
      if (own) throw user_error("user's error");
      throw fg::value_error("bad element");
    }
    return x;
  };
}
/// Runs a loop over ds, returning how many elements came before the exception it rethrows.
template <class D>
int count_until_throw(const D& ds, int& count) {
  count = 0;
  for (const auto& x : ds) {
    (void)x;
    ++count;
  }
  return count;
}
}  // namespace

TEST_CASE("an exception of a map function or generator reaches the loop, after the elements before it",
          "[data][map][threads]") {
  int n = 0;
  SECTION("map on the iterating thread") {
    CHECK_THROWS_MATCHES(count_until_throw(fgd::range(10).map(failing(false)), n), fg::value_error,
                         Catch::Message("fg::data::map: the function failed on element 5: bad element"));
    CHECK(n == 5);
  }
  SECTION("map on the prefetch thread") {
    CHECK_THROWS_MATCHES(count_until_throw(fgd::range(10).map(failing(false)).prefetch(2), n), fg::value_error,
                         Catch::Message("fg::data::map: the function failed on element 5: bad element"));
    CHECK(n == 5);
  }
  SECTION("parallel map") {
    CHECK_THROWS_MATCHES(count_until_throw(fgd::range(10).map(failing(false), 4), n), fg::value_error,
                         Catch::Message("fg::data::map: the function failed on element 5: bad element"));
    CHECK(n == 5);
  }
  SECTION("parallel map behind prefetch, with an exception type of the user's, unchanged") {
    CHECK_THROWS_MATCHES(count_until_throw(fgd::range(10).map(failing(true), 3).prefetch(1), n), user_error,
                         Catch::Message("user's error"));
    CHECK(n == 5);
  }
  SECTION("generator behind prefetch") {
    auto gen = fgd::from_generator([i = 0]() mutable -> std::optional<itensor> {
      if (i == 3) throw fg::index_error("no more");
      return itensor(i++);
    });
    CHECK_THROWS_MATCHES(count_until_throw(gen.prefetch(2), n), fg::index_error,
                         Catch::Message("fg::data::from_generator: the generator failed on element 3: no more"));
    CHECK(n == 3);
  }
  SECTION("the one-shot iterator goes on after a map error") {
    auto it = fgd::range(7).map(failing(false), 2).make_iterator();
    for (i64 i = 0; i < 5; ++i) CHECK(it.next().item() == i);
    CHECK_THROWS_AS(it.next(), fg::value_error);
    CHECK(it.next().item() == 6);
    CHECK_FALSE(it.get_next_as_optional().has_value());
  }
}

TEST_CASE("leaving a loop early stops prefetch and map threads promptly", "[data][threads]") {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto slow = [](const itensor& x) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return x;
  };
  int n = 0;
  for (const itensor& x : fgd::range(1000000).map(slow).prefetch(2)) {
    CHECK(x.item() == n);
    if (++n == 3) break;
  }
  n = 0;
  const auto endless = fgd::from_generator([i = i64{0}]() mutable { return std::optional<itensor>(itensor(i++)); });
  for (const itensor& x : endless.prefetch(2)) {
    CHECK(x.item() == n);
    if (++n == 5) break;
  }
  n = 0;
  for (const itensor& x : endless.map(slow, 4).prefetch(fgd::autotune)) {
    CHECK(x.item() == n);
    if (++n == 5) break;
  }
  {
    // The producer blocked on a full queue when the iterator goes away.
    auto it = endless.prefetch(1).prefetch(1).make_iterator();
    CHECK(it.next().item() == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("the one-shot iterator gives the elements, then throws fg::index_error: End of sequence", "[data]") {
  auto it = fgd::range(2).make_iterator();
  CHECK(it.next().item() == 0);
  CHECK(it.get_next_as_optional().value().item() == 1);
  CHECK_FALSE(it.get_next_as_optional().has_value());
  CHECK_THROWS_MATCHES(it.next(), fg::index_error, Catch::Message("fg::data::one_shot_iterator::next: End of sequence"));
  CHECK_THROWS_AS(it.next(), std::out_of_range);  // what TensorFlow's OutOfRangeError is in C++ terms
}

TEST_CASE("bad arguments are errors naming the op when the dataset is made", "[data][errors]") {
  using Catch::Contains;
  const auto r = fgd::range(10);
  CHECK_THROWS_MATCHES(fgd::from_tensor_slices(itensor(3)), fg::shape_error,
                       Catch::Message("fg::data::from_tensor_slices: component 0 has shape (), a scalar; slicing needs "
                                      "tensors of rank 1 or more (their first axis is the one sliced)"));
  CHECK_THROWS_MATCHES(fgd::from_tensor_slices(fg::zeros<float>({6, 10}), fg::zeros<float>({5})), fg::shape_error,
                       Catch::Message("fg::data::from_tensor_slices: the components' first dimensions differ: "
                                      "component 0 has shape (6, 10) and component 1 has shape (5,); every tensor must "
                                      "have the same number of rows"));
  CHECK_THROWS_WITH(fgd::from_tensor_slices(itensor()), Contains("fg::data::from_tensor_slices") && Contains("undefined"));
  CHECK_THROWS_MATCHES(r.batch(0), fg::value_error, Catch::Message("fg::data::batch: batch_size must be at least 1, got 0"));
  CHECK_THROWS_MATCHES(r.shuffle(0), fg::value_error,
                       Catch::Message("fg::data::shuffle: buffer_size must be at least 1, got 0"));
  CHECK_THROWS_MATCHES(r.shard(3, 3), fg::index_error,
                       Catch::Message("fg::data::shard: index 3 is out of range for 3 shards (valid: 0 to 2)"));
  CHECK_THROWS_WITH(r.shard(0, 0), Contains("fg::data::shard: num_shards must be at least 1"));
  CHECK_THROWS_WITH(r.repeat(-2), Contains("fg::data::repeat"));
  CHECK_THROWS_WITH(r.take(-2), Contains("fg::data::take"));
  CHECK_THROWS_WITH(r.skip(-2), Contains("fg::data::skip"));
  CHECK_THROWS_WITH(r.prefetch(0), Contains("fg::data::prefetch: buffer_size must be at least 1"));
  CHECK_THROWS_WITH(fgd::range(0, 5, 0), Contains("fg::data::range: step must not be 0"));
  CHECK_THROWS_WITH(r.map([](const itensor& x) { return x; }, 0), Contains("fg::data::map: num_parallel_calls"));
  CHECK_THROWS_WITH(r.map([n = 0](const itensor& x) mutable { return x + i64{n++}; }, 2),
                    Contains("fg::data::map") && Contains("mutable lambda"));
  CHECK_NOTHROW(r.map([n = 0](const itensor& x) mutable { return x + i64{n++}; }));
}

TEST_CASE("elements batch cannot stack, unbatch cannot split or filter cannot read are errors in the loop",
          "[data][errors]") {
  const auto ragged = fgd::from_generator([i = 0]() mutable -> std::optional<std::tuple<itensor, itensor>> {
    if (i == 4) return std::nullopt;
    ++i;
    return std::make_tuple(itensor{1}, i == 3 ? itensor{1, 2, 3} : itensor{1, 2});
  });
  auto it = ragged.batch(2).make_iterator();
  CHECK(std::get<1>(it.next()).shape() == fg::shape{2, 2});  // the first two elements have one shape
  CHECK_THROWS_MATCHES(
      ragged.batch(4).make_iterator().next(), fg::shape_error,
      Catch::Message("fg::data::batch: element 2 of the batch has shape (3,) but element 0 has shape (2,) (component 1 "
                     "of the elements); batch stacks elements of one shape: map them to one shape first"));
  CHECK_THROWS_WITH(fgd::range(3).unbatch().make_iterator().next(),
                    Catch::Contains("fg::data::unbatch: component 0 has shape ()"));
  CHECK_THROWS_WITH(fgd::range(3).filter([](const itensor& x) { return fg::stack({x, x}) > i64{0}; }).make_iterator().next(),
                    Catch::Contains("fg::data::filter: the predicate must return a scalar, got a tensor of shape (2,)"));
}

TEST_CASE("seed 001's synthetic dataset: range(n).map(batch function) gives (x, 3x + 2) batches", "[data]") {
  constexpr std::size_t batch_size = 16;
  const auto make_batch = [](const itensor& i) {
    const fg::tensor<float> x = fg::random::normal<float>({batch_size, 1}, static_cast<std::uint64_t>(i.item()));
    return std::make_tuple(x, fg::tensor<float>(3.f * x + 2.f));
  };
  const auto ds = fgd::range(20).map(make_batch).prefetch(2);
  CHECK(ds.cardinality() == 20);
  std::size_t n = 0;
  for (auto [x, y] : ds) {
    REQUIRE(x.shape() == fg::shape{batch_size, 1});
    REQUIRE(y.shape() == fg::shape{batch_size, 1});
    const fg::tensor<float> want_x = fg::random::normal<float>({batch_size, 1}, n);  // the batch's number is its seed
    CHECK(values(x) == values(want_x));
    for (std::size_t k = 0; k < batch_size; ++k) CHECK(y.data()[k] == Approx(3.f * x.data()[k] + 2.f).epsilon(1e-6));
    ++n;
  }
  CHECK(n == 20);
  // The same data as samples: unbatch, shuffle and batch again keep each (x, y) pair together.
  std::size_t rows = 0;
  for (auto [x, y] : ds.unbatch().shuffle(64, 1).batch(50)) {
    for (std::size_t k = 0; k < x.shape()[0]; ++k) CHECK(y.data()[k] == Approx(3.f * x.data()[k] + 2.f).epsilon(1e-6));
    rows += x.shape()[0];
  }
  CHECK(rows == 20 * batch_size);
}

TEST_CASE("the guide's pipelines: seed 002's shuffled MNIST batches and seed 001's mapped synthetic batches",
          "[data]") {
  namespace fgd = fg::data;
  // docs/guide.md, "Datasets", with 100 images instead of 60000.
  const fg::tensor<float> images = fg::random::uniform<float>({100, 28, 28, 1}, 1);
  std::vector<i64> label_values(100);
  std::iota(label_values.begin(), label_values.end(), i64{0});
  const itensor labels(fg::shape{100}, label_values);
  const auto dataset = fgd::from_tensor_slices(images, labels).shuffle(1000).batch(32).prefetch(fgd::autotune);
  std::vector<std::vector<i64>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    orders.emplace_back();
    for (auto [x, y] : dataset) {
      CHECK(x.shape() == fg::shape{y.shape()[0], 28, 28, 1});
      for (std::size_t k = 0; k < y.shape()[0]; ++k) {
        const i64 label = y.data()[k];
        orders.back().push_back(label);
        // image k of the batch is image `label` of the data
        CHECK(std::equal(x.data() + k * 784, x.data() + (k + 1) * 784, images.data() + label * 784));
      }
    }
    std::vector<i64> sorted = orders.back();
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == label_values);
  }
  CHECK(orders[0] != orders[1]);

  const std::size_t num_batches = 5, batch_size = 8;
  const fg::tensor<float> w = {{-2.f}, {4.f}, {1.f}};
  const fg::tensor<float> b = 0.5f;
  const auto synthetic = fgd::range(num_batches).map([&](const fg::tensor<std::int64_t>& i) {
    const fg::tensor<float> x = fg::random::normal<float>({batch_size, 3}, i.item());
    return std::make_tuple(x, fg::tensor<float>(fg::matmul(x, w) + b));
  }, 4);
  auto it = synthetic.make_iterator();
  auto [xs, ys] = it.next();
  REQUIRE(ys.shape() == fg::shape{batch_size, 1});
  for (std::size_t k = 0; k < batch_size; ++k) {
    const float* r = xs.data() + 3 * k;
    CHECK(ys.data()[k] == Approx(-2.f * r[0] + 4.f * r[1] + r[2] + 0.5f).epsilon(1e-5));
  }
}
