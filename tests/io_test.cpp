// The IDX reader (fg::io::read_idx), fg::data::load_idx and the MNIST-layout loaders: small IDX
// files written here byte by byte (big-endian values computed by hand), plain and gzip-compressed,
// read back from files and from memory; every malformed file an error naming the file and the
// problem; and Fashion-MNIST checked against figures that tests/reference/fashion_mnist.py
// computes from the same files with gzip and numpy.
#include <catch2/catch.hpp>
#include <fusegrad/data/fashion_mnist.hpp>
#include <fusegrad/data/load_idx.hpp>
#include <fusegrad/data/mnist.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/io/idx.hpp>

#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace {
namespace fs = std::filesystem;
using bytes = std::vector<unsigned char>;

/// A fresh directory for one test case's files, removed afterwards.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static int serial = 0;
    path = fs::temp_directory_path() /
           ("fusegrad_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(serial++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
};

void write_plain(const fs::path& p, const bytes& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(f.good());
}
/// Through zlib's gzip writer, as gzip(1) would compress the bytes.
void write_gzip(const fs::path& p, const bytes& b) {
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!b.empty()) REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  REQUIRE(gzclose(f) == Z_OK);
}
bytes read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(f), {});
}
std::span<const std::byte> as_span(const bytes& b) { return std::as_bytes(std::span(b.data(), b.size())); }

/// The IDX header: two zero bytes, the type code, the rank, the dimensions big-endian.
bytes header(unsigned code, std::vector<std::uint32_t> dims) {
  bytes b = {0, 0, static_cast<unsigned char>(code), static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(d >> s));
  return b;
}
bytes cat(bytes a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
/// A value's bytes, most significant first (the encoder the large cases use; the small cases
/// spell their bytes out).
template <class T>
bytes big_endian(const std::vector<T>& v) {
  bytes b;
  for (T x : v) {
    using U = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                                 std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                    std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
    const U u = std::bit_cast<U>(x);
    for (int s = 8 * static_cast<int>(sizeof(T)) - 8; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(u >> s));
  }
  return b;
}

/// The message of the exception of type E that f throws (a test failure if it throws none).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no exception of the expected type was thrown");
  return {};
}

/// The same bytes read four ways: a plain file, a gzip file, and both as memory. All give the
/// same result (compared by the caller through `check`).
template <class Check>
void read_four_ways(const temp_dir& dir, const std::string& name, const bytes& b, Check check) {
  const fs::path plain = dir / name, gz = dir / (name + ".gz");
  write_plain(plain, b);
  write_gzip(gz, b);
  INFO(name << ", plain file");
  check(fg::io::read_idx(plain));
  INFO(name << ", gzip file");
  check(fg::io::read_idx(gz));
  INFO(name << ", plain bytes in memory");
  check(fg::io::read_idx(as_span(b)));
  INFO(name << ", gzip bytes in memory");
  check(fg::io::read_idx(as_span(read_file(gz))));
}

template <class T>
const std::vector<T>& values_of(const fg::io::idx_array& a) {
  REQUIRE(std::holds_alternative<std::vector<T>>(a.values));
  return std::get<std::vector<T>>(a.values);
}
template <class T>
std::vector<T> tensor_values(const fg::tensor<T>& t) {
  return std::vector<T>(t.data(), t.data() + t.size());
}
bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

/// Sets an environment variable for a scope, restoring it afterwards.
struct scoped_env {
  std::string name, old;
  bool had;
  scoped_env(std::string n, const std::string& value) : name(std::move(n)) {
    const char* o = std::getenv(name.c_str());
    had = o != nullptr;
    if (had) old = o;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~scoped_env() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};
}  // namespace

TEST_CASE("read_idx decodes each element type's big-endian values, plain and gzip, from files and memory", "[io]") {
  temp_dir dir;
  // uint8, shape (2, 3)
  read_four_ways(dir, "u8", cat(header(0x08, {2, 3}), {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}), [](const auto& a) {
    CHECK(a.type() == fg::io::idx_type::uint8);
    CHECK(a.shape == fg::shape{2, 3});
    CHECK(a.size() == 6);
    CHECK(values_of<std::uint8_t>(a) == std::vector<std::uint8_t>{0, 1, 127, 128, 254, 255});
  });
  // int8, shape (4,)
  read_four_ways(dir, "i8", cat(header(0x09, {4}), {0x80, 0xff, 0x00, 0x7f}), [](const auto& a) {
    CHECK(a.type() == fg::io::idx_type::int8);
    CHECK(a.shape == fg::shape{4});
    CHECK(values_of<std::int8_t>(a) == std::vector<std::int8_t>{-128, -1, 0, 127});
  });
  // int16, shape (3, 1): 0x8000 = -32768, 0xfffe = -2, 0x0102 = 258
  read_four_ways(dir, "i16", cat(header(0x0B, {3, 1}), {0x80, 0x00, 0xff, 0xfe, 0x01, 0x02}), [](const auto& a) {
    CHECK(a.type() == fg::io::idx_type::int16);
    CHECK(a.shape == fg::shape{3, 1});
    CHECK(values_of<std::int16_t>(a) == std::vector<std::int16_t>{-32768, -2, 258});
  });
  // int32, shape (2, 1, 2): 0x80000000, 0xffffffff = -1, 0x01020304 = 16909060, 0x7fffffff
  read_four_ways(dir, "i32",
                 cat(header(0x0C, {2, 1, 2}),
                     {0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04, 0x7f, 0xff, 0xff, 0xff}),
                 [](const auto& a) {
                   CHECK(a.type() == fg::io::idx_type::int32);
                   CHECK(a.shape == fg::shape{2, 1, 2});
                   CHECK(values_of<std::int32_t>(a) ==
                         std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min(), -1, 16909060,
                                                   std::numeric_limits<std::int32_t>::max()});
                 });
  // float32, shape (5,): 0x3f800000 = 1, 0xc0490fdb = -pi (float), 0x7f800000 = inf,
  // 0x00000001 = the smallest subnormal, 0x7fc00000 = NaN
  read_four_ways(dir, "f32",
                 cat(header(0x0D, {5}), {0x3f, 0x80, 0, 0, 0xc0, 0x49, 0x0f, 0xdb, 0x7f, 0x80, 0, 0, 0, 0, 0, 0x01,
                                         0x7f, 0xc0, 0, 0}),
                 [](const auto& a) {
                   CHECK(a.type() == fg::io::idx_type::float32);
                   CHECK(a.shape == fg::shape{5});
                   const auto& v = values_of<float>(a);
                   REQUIRE(v.size() == 5);
                   CHECK(v[0] == 1.f);
                   CHECK(v[1] == -3.14159274f);
                   CHECK(v[2] == std::numeric_limits<float>::infinity());
                   CHECK(v[3] == std::numeric_limits<float>::denorm_min());
                   CHECK(std::isnan(v[4]));
                 });
  // float64, shape (1, 3): 1, pi = 0x400921fb54442d18, -0.1 = 0xbfb999999999999a
  read_four_ways(dir, "f64",
                 cat(header(0x0E, {1, 3}), {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d,
                                            0x18, 0xbf, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}),
                 [](const auto& a) {
                   CHECK(a.type() == fg::io::idx_type::float64);
                   CHECK(a.shape == fg::shape{1, 3});
                   CHECK(values_of<double>(a) == std::vector<double>{1.0, 3.141592653589793, -0.1});
                 });
  CHECK(fg::io::name(fg::io::idx_type::int16) == "int16");
}

TEST_CASE("read_idx reads dimensions of several bytes, rank 8, empty arrays and files of megabytes", "[io]") {
  temp_dir dir;
  // (0x00000101, 0x00000003) = (257, 3), values i % 251
  std::vector<std::uint8_t> u(257 * 3);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = static_cast<std::uint8_t>(i % 251);
  bytes b = cat(header(0x08, {257, 3}), big_endian(u));
  CHECK(bytes(b.begin() + 4, b.begin() + 12) == bytes{0, 0, 1, 1, 0, 0, 0, 3});
  read_four_ways(dir, "dims", b, [&](const auto& a) {
    CHECK(a.shape == fg::shape{257, 3});
    CHECK(values_of<std::uint8_t>(a) == u);
  });
  // rank 8
  std::vector<std::int16_t> r8(2 * 3 * 2);
  for (std::size_t i = 0; i < r8.size(); ++i) r8[i] = static_cast<std::int16_t>(1000 * static_cast<int>(i) - 7000);
  read_four_ways(dir, "rank8", cat(header(0x0B, {1, 2, 1, 3, 1, 1, 2, 1}), big_endian(r8)), [&](const auto& a) {
    CHECK(a.shape == fg::shape{1, 2, 1, 3, 1, 1, 2, 1});
    CHECK(values_of<std::int16_t>(a) == r8);
  });
  // an empty array: a dimension of 0 and no values
  read_four_ways(dir, "empty", header(0x0D, {4, 0, 7}), [](const auto& a) {
    CHECK(a.shape == fg::shape{4, 0, 7});
    CHECK(values_of<float>(a).empty());
  });
  // 3 MB of uint8 and 1.2 MB of float32 and 2.4 MB of float64: more than the first buffer
  std::vector<std::uint8_t> big(3 * 1000 * 1000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>((i * 7 + i / 1000) % 256);
  read_four_ways(dir, "big_u8", cat(header(0x08, {3, 1000, 1000}), big_endian(big)), [&](const auto& a) {
    CHECK(a.shape == fg::shape{3, 1000, 1000});
    CHECK(values_of<std::uint8_t>(a) == big);
  });
  std::vector<float> bf(300000);
  for (std::size_t i = 0; i < bf.size(); ++i) bf[i] = static_cast<float>(i) * 0.25f - 1000.f;
  read_four_ways(dir, "big_f32", cat(header(0x0D, {300000}), big_endian(bf)), [&](const auto& a) {
    CHECK(values_of<float>(a) == bf);
  });
  std::vector<double> bd(300000);
  for (std::size_t i = 0; i < bd.size(); ++i) bd[i] = std::ldexp(static_cast<double>(i) + 0.1, static_cast<int>(i % 40) - 20);
  read_four_ways(dir, "big_f64", cat(header(0x0E, {600, 500}), big_endian(bd)), [&](const auto& a) {
    CHECK(a.shape == fg::shape{600, 500});
    CHECK(values_of<double>(a) == bd);
  });
}

TEST_CASE("read_idx reads a file of several gzip members as gzip does", "[io]") {
  temp_dir dir;
  const bytes whole = cat(header(0x0C, {2}), {0, 0, 1, 0, 0xff, 0xff, 0xff, 0xfe});
  const fs::path p1 = dir / "part1.gz", p2 = dir / "part2.gz";
  write_gzip(p1, bytes(whole.begin(), whole.begin() + 10));
  write_gzip(p2, bytes(whole.begin() + 10, whole.end()));
  const bytes joined = cat(read_file(p1), read_file(p2));
  write_plain(dir / "joined.gz", joined);
  for (const auto& a : {fg::io::read_idx(dir / "joined.gz"), fg::io::read_idx(as_span(joined))}) {
    CHECK(a.shape == fg::shape{2});
    CHECK(values_of<std::int32_t>(a) == std::vector<std::int32_t>{256, -2});
  }
}

TEST_CASE("load_idx<T> converts the values that T holds exactly and names the file and value otherwise", "[io]") {
  temp_dir dir;
  const fs::path u8 = dir / "u8.gz";
  write_gzip(u8, cat(header(0x08, {2, 2}), {0, 1, 200, 255}));
  const auto f = fg::data::load_idx<float>(u8);
  STATIC_REQUIRE(std::is_same_v<decltype(f), const fg::tensor<float>>);
  CHECK(f.shape() == fg::shape{2, 2});
  CHECK(tensor_values(f) == std::vector<float>{0, 1, 200, 255});
  CHECK(tensor_values(fg::data::load_idx<std::int64_t>(u8)) == std::vector<std::int64_t>{0, 1, 200, 255});
  CHECK(tensor_values(fg::data::load_idx<double>(u8)) == std::vector<double>{0, 1, 200, 255});
  std::string m = error_of<fg::value_error>([&] { fg::data::load_idx<bool>(u8); });
  CHECK_THAT(m, Catch::Contains(u8.string()) && Catch::Contains("uint8 value 200 at flat index 2") &&
                    Catch::Contains("does not fit bool"));

  const fs::path bits = dir / "bits";
  write_plain(bits, cat(header(0x09, {3}), {0, 1, 1}));
  CHECK(tensor_values(fg::data::load_idx<bool>(bits)) == std::vector<bool>{false, true, true});

  // float32: 1.5 = 0x3fc00000 is no integer
  const fs::path f32 = dir / "f32";
  write_plain(f32, cat(header(0x0D, {2}), {0x40, 0x00, 0, 0, 0x3f, 0xc0, 0, 0}));
  CHECK(tensor_values(fg::data::load_idx<double>(f32)) == std::vector<double>{2.0, 1.5});
  m = error_of<fg::value_error>([&] { fg::data::load_idx<std::int32_t>(f32); });
  CHECK_THAT(m, Catch::Contains("load_idx<int32>") && Catch::Contains(f32.string()) &&
                    Catch::Contains("float32 value 1.5 at flat index 1") && Catch::Contains("does not fit int32"));

  // float64: 1e10 = 0x4202a05f20000000 (an int64, not an int32), 0.1 = 0x3fb999999999999a (no
  // float), 1e300 = 0x7e37e43c8800759c (past float's range), inf, NaN
  const fs::path big = dir / "big";
  write_plain(big, cat(header(0x0E, {1}), {0x42, 0x02, 0xa0, 0x5f, 0x20, 0, 0, 0}));
  CHECK(tensor_values(fg::data::load_idx<std::int64_t>(big)) == std::vector<std::int64_t>{10000000000});
  CHECK(tensor_values(fg::data::load_idx<float>(big)) == std::vector<float>{1e10f});
  CHECK_THAT(error_of<fg::value_error>([&] { fg::data::load_idx<std::int32_t>(big); }),
             Catch::Contains("float64 value 1e+10") && Catch::Contains("does not fit int32"));
  const fs::path tenth = dir / "tenth";
  write_plain(tenth, cat(header(0x0E, {1}), {0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}));
  CHECK(tensor_values(fg::data::load_idx<double>(tenth)) == std::vector<double>{0.1});
  CHECK_THAT(error_of<fg::value_error>([&] { fg::data::load_idx<float>(tenth); }),
             Catch::Contains(tenth.string()) && Catch::Contains("does not fit float32"));
  const fs::path huge = dir / "huge";
  write_plain(huge, cat(header(0x0E, {1}), {0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c}));
  CHECK_THAT(error_of<fg::value_error>([&] { fg::data::load_idx<float>(huge); }),
             Catch::Contains("1e+300") && Catch::Contains("does not fit float32"));
  const fs::path special = dir / "special";
  write_plain(special, cat(header(0x0E, {2}), {0xff, 0xf0, 0, 0, 0, 0, 0, 0, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0}));
  const auto sp = tensor_values(fg::data::load_idx<float>(special));
  CHECK(sp[0] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(sp[1]));
  CHECK_THAT(error_of<fg::value_error>([&] { fg::data::load_idx<std::int64_t>(special); }),
             Catch::Contains("-inf at flat index 0"));

  // int32: 2^24 + 1 = 0x01000001 has no float, 2^24 has
  const fs::path i32 = dir / "i32";
  write_plain(i32, cat(header(0x0C, {2}), {0x01, 0, 0, 0, 0x01, 0, 0, 0x01}));
  CHECK_THAT(error_of<fg::value_error>([&] { fg::data::load_idx<float>(i32); }),
             Catch::Contains("int32 value 16777217 at flat index 1"));
  CHECK(tensor_values(fg::data::load_idx<double>(i32)) == std::vector<double>{16777216, 16777217});

  // float64 bounds of int32: -2^31 fits, 2^31 does not
  const fs::path edge = dir / "edge";
  write_plain(edge, cat(header(0x0E, {1}), {0xc1, 0xe0, 0, 0, 0, 0, 0, 0}));
  CHECK(tensor_values(fg::data::load_idx<std::int32_t>(edge)) ==
        std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min()});
  write_plain(edge, cat(header(0x0E, {1}), {0x41, 0xe0, 0, 0, 0, 0, 0, 0}));
  CHECK_THAT(error_of<fg::value_error>([&] { fg::data::load_idx<std::int32_t>(edge); }),
             Catch::Contains("2.14748e+09") && Catch::Contains("does not fit int32"));
}

TEST_CASE("load_idx without a type gives the tensor closest to the file's type", "[io]") {
  temp_dir dir;
  const auto check_int = [&](const std::string& name, const bytes& b, std::vector<std::int32_t> want) {
    write_gzip(dir / name, b);
    const fg::data::idx_tensor t = fg::data::load_idx(dir / name);
    REQUIRE(std::holds_alternative<fg::tensor<std::int32_t>>(t));
    CHECK(tensor_values(std::get<fg::tensor<std::int32_t>>(t)) == want);
  };
  check_int("u8", cat(header(0x08, {2}), {7, 250}), {7, 250});
  check_int("i8", cat(header(0x09, {2}), {0xf9, 5}), {-7, 5});
  check_int("i16", cat(header(0x0B, {1}), {0xfc, 0x18}), {-1000});
  check_int("i32", cat(header(0x0C, {1}), {0x7f, 0xff, 0xff, 0xff}), {2147483647});
  write_plain(dir / "f32", cat(header(0x0D, {1, 1}), {0x3e, 0x80, 0, 0}));  // 0.25
  const auto f = fg::data::load_idx(dir / "f32");
  REQUIRE(std::holds_alternative<fg::tensor<float>>(f));
  CHECK(std::get<fg::tensor<float>>(f).shape() == fg::shape{1, 1});
  CHECK(tensor_values(std::get<fg::tensor<float>>(f)) == std::vector<float>{0.25f});
  write_plain(dir / "f64", cat(header(0x0E, {1}), {0xbf, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}));  // -0.1
  const auto d = fg::data::load_idx(dir / "f64");
  REQUIRE(std::holds_alternative<fg::tensor<double>>(d));
  CHECK(same_bits(std::get<fg::tensor<double>>(d).data()[0], -0.1));
}

TEST_CASE("read_idx refuses a missing, short, long or malformed file, naming it and the problem", "[io]") {
  temp_dir dir;
  const auto plain_error = [&](const std::string& name, const bytes& b) {
    const fs::path p = dir / name;
    write_plain(p, b);
    const std::string m = error_of<fg::value_error>([&] { fg::io::read_idx(p); });
    CHECK_THAT(m, Catch::Contains("fg::io::read_idx: '" + p.string() + "'"));
    // The same bytes from memory give the same message.
    CHECK(error_of<fg::value_error>([&] { fg::io::read_idx(as_span(b), p.string()); }) == m);
    // And gzip-compressed, the same message too.
    const fs::path gz = dir / (name + ".gz");
    write_gzip(gz, b);
    const std::string mg = error_of<fg::value_error>([&] { fg::io::read_idx(gz); });
    CHECK(mg == "fg::io::read_idx: '" + gz.string() + "'" + m.substr(m.find("': ") + 1));
    return m;
  };
  SECTION("a missing file and a directory") {
    const std::string m = error_of<fg::value_error>([&] { fg::io::read_idx(dir / "nothing.gz"); });
    CHECK_THAT(m, Catch::Contains((dir / "nothing.gz").string()) && Catch::Contains("cannot open it") &&
                      Catch::Contains("No such file or directory"));
    CHECK_THAT(error_of<fg::value_error>([&] { fg::io::read_idx(dir.path); }),
               Catch::Contains(dir.path.string()) && Catch::Contains("it is a directory"));
  }
  SECTION("a header cut short") {
    CHECK_THAT(plain_error("empty", {}),
               Catch::Contains("the file ends inside the header: expected a 4-byte magic number, found 0 bytes"));
    CHECK_THAT(plain_error("magic3", {0, 0, 8}), Catch::Contains("found 3 bytes"));
    CHECK_THAT(plain_error("dims", {0, 0, 8, 3, 0, 0, 0, 2, 0}),
               Catch::Contains("the file ends inside the header: expected 3 dimension sizes (12 bytes), found 5 bytes"));
  }
  SECTION("a bad magic number") {
    CHECK_THAT(plain_error("magic", {1, 0, 8, 1, 0, 0, 0, 1, 5}),
               Catch::Contains("not an IDX file: the magic number must start with two zero bytes, found 0x01 0x00"));
    CHECK_THAT(plain_error("type", {0, 0, 7, 1, 0, 0, 0, 1, 5}),
               Catch::Contains("unknown element type code 0x07") && Catch::Contains("0x08 uint8"));
    CHECK_THAT(plain_error("type0a", {0, 0, 0x0a, 1, 0, 0, 0, 1, 5}), Catch::Contains("unknown element type code 0x0a"));
    CHECK_THAT(plain_error("rank0", {0, 0, 8, 0, 5}), Catch::Contains("the header gives rank 0; expected 1 to 8 dimensions"));
    CHECK_THAT(plain_error("rank9", cat(header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}), {5})),
               Catch::Contains("the header gives rank 9"));
  }
  SECTION("a file compressed twice reads as bytes that are no IDX file") {
    const fs::path inner = dir / "inner.gz", twice = dir / "twice.gz";
    write_gzip(inner, cat(header(0x08, {1}), {1}));
    write_gzip(twice, read_file(inner));
    CHECK_THAT(error_of<fg::value_error>([&] { fg::io::read_idx(twice); }),
               Catch::Contains(twice.string()) && Catch::Contains("found 0x1f 0x8b"));
  }
  SECTION("dimensions too large to count or past the limit, refused before allocating") {
    CHECK_THAT(plain_error("overflow", header(0x0E, {0xffffffff, 0xffffffff, 0xffffffff})),
               Catch::Contains("the dimensions (4294967295, 4294967295, 4294967295) of float64 values call for more "
                               "than 17179869184 bytes"));
    // 2^17 * 2^17 = 2^34 uint8 values fit the limit of 2^34 bytes; as int16 they do not
    CHECK_THAT(plain_error("limit", header(0x0B, {1u << 17, 1u << 17})),
               Catch::Contains("the dimensions (131072, 131072) of int16 values call for more than 17179869184 bytes"));
    // a zero dimension does not hide the others, as fg::shape counts
    CHECK_THAT(plain_error("zero", header(0x08, {0, 0xffffffff, 0xffffffff, 0xffffffff})),
               Catch::Contains("call for more than"));
  }
  SECTION("fewer values than the dimensions call for") {
    CHECK_THAT(plain_error("short", cat(header(0x08, {2, 3}), {1, 2, 3, 4, 5})),
               Catch::Contains("the file is truncated: its dimensions (2, 3) call for 6 uint8 values (6 bytes) after "
                               "the header, it holds 5"));
    CHECK_THAT(plain_error("short32", cat(header(0x0C, {3}), {0, 0, 0, 1, 0, 0, 0, 2, 0, 0})),
               Catch::Contains("call for 3 int32 values (12 bytes) after the header, it holds 2 and 2 bytes of another"));
    // a header that promises far more than the file holds
    CHECK_THAT(plain_error("promise", cat(header(0x0D, {1u << 30}), {0, 0, 0, 0})),
               Catch::Contains("call for 1073741824 float32 values (4294967296 bytes) after the header, it holds 1"));
  }
  SECTION("bytes after the values") {
    CHECK_THAT(plain_error("long", cat(header(0x08, {2}), {1, 2, 3, 4})),
               Catch::Contains("2 bytes follow the 2 uint8 values that the dimensions (2,) call for; the file must end "
                               "there"));
    CHECK_THAT(plain_error("long_empty", cat(header(0x0E, {0}), {1})), Catch::Contains("1 bytes follow the 0 float64"));
  }
}

TEST_CASE("read_idx reports a corrupt or cut gzip stream with zlib's message", "[io]") {
  temp_dir dir;
  std::vector<std::uint8_t> v(5000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>((i * i) % 253);
  const fs::path good = dir / "good.gz";
  write_gzip(good, cat(header(0x08, {50, 100}), big_endian(v)));
  const bytes gz = read_file(good);
  const auto both = [&](const std::string& name, const bytes& b) {
    const fs::path p = dir / name;
    write_plain(p, b);
    const std::string m = error_of<fg::value_error>([&] { fg::io::read_idx(p); });
    CHECK(error_of<fg::value_error>([&] { fg::io::read_idx(as_span(b), p.string()); }) == m);
    return m;
  };
  // The trailer's CRC-32 changed.
  bytes crc = gz;
  crc[crc.size() - 8] ^= 0x01;
  CHECK_THAT(both("crc.gz", crc), Catch::Contains("crc.gz': gzip error: incorrect data check"));
  // The trailer's length changed.
  bytes len = gz;
  len[len.size() - 1] ^= 0x01;
  CHECK_THAT(both("len.gz", len), Catch::Contains("gzip error: incorrect length check"));
  // A header with an unknown compression method.
  bytes method = gz;
  method[2] = 7;
  CHECK_THAT(both("method.gz", method), Catch::Contains("gzip error: unknown compression method"));
  // A stream that is cut or corrupt is reported as such even where its bytes start with a bad
  // header: the gzip error wins (Note [idx reading]); the file reader, which decompresses ahead,
  // and the memory reader agree.
  const fs::path bad_header = dir / "bad_header.gz";
  write_gzip(bad_header, cat({1, 0, 8, 1, 0, 0, 0, 2}, bytes(4000, 9)));
  bytes bh = read_file(bad_header);
  bh.resize(bh.size() - 3);
  CHECK_THAT(both("bad_header_cut.gz", bh), Catch::Contains("gzip error: unexpected end of file"));
  bh = read_file(bad_header);
  bh[bh.size() - 5] ^= 0x10;
  CHECK_THAT(both("bad_header_crc.gz", bh), Catch::Contains("gzip error: incorrect data check"));
  CHECK_THAT(both("bad_header.gz", read_file(bad_header)), Catch::Contains("found 0x01 0x00"));
  // Cut anywhere after the gzip magic bytes: an error, never a short array. Cuts inside the
  // compressed stream are zlib's "unexpected end of file".
  for (std::size_t k = 2; k < gz.size(); ++k) {
    INFO("cut at " << k << " of " << gz.size() << " bytes");
    const std::string m = both("cut.gz", bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(k)));
    CHECK_THAT(m, Catch::Contains("cut.gz'"));
    CHECK_THAT(m, Catch::Contains("gzip error: unexpected end of file"));
  }
  // Each single byte of the compressed data changed: an error or the original values (a change
  // that deflate ignores), never a crash.
  for (std::size_t k = 10; k + 8 < gz.size(); k += 7) {
    bytes b = gz;
    b[k] ^= 0x5a;
    try {
      const auto a = fg::io::read_idx(as_span(b));
      CHECK(values_of<std::uint8_t>(a) == v);
    } catch (const fg::value_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("IDX data in memory"));
    }
  }
}

namespace {
/// Writes an MNIST-layout directory: images (n, r, c) of value (i * 3 + j) % 256 and labels i % 10.
void write_mnist_split(const fs::path& dir, const std::string& split, std::uint32_t n, std::uint32_t r,
                       std::uint32_t c, bool gz, std::uint32_t labels) {
  std::vector<std::uint8_t> img(std::size_t{n} * r * c);
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = static_cast<std::uint8_t>((i * 3 + i / (r * c)) % 256);
  std::vector<std::uint8_t> lab(labels);
  for (std::size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<std::uint8_t>(i % 10);
  const std::string suffix = gz ? ".gz" : "";
  auto w = gz ? write_gzip : write_plain;
  w(dir / (split + "-images-idx3-ubyte" + suffix), cat(header(0x08, {n, r, c}), big_endian(img)));
  w(dir / (split + "-labels-idx1-ubyte" + suffix), cat(header(0x08, {labels}), big_endian(lab)));
}
}  // namespace

TEST_CASE("mnist::load_data reads the four files of a directory, .gz or plain, and checks they match", "[io][data]") {
  temp_dir dir;
  write_mnist_split(dir.path, "train", 5, 4, 3, true, 5);
  write_mnist_split(dir.path, "t10k", 2, 4, 3, false, 2);
  auto [train, test] = fg::data::mnist::load_data(dir.path);
  auto [x, y] = train;
  STATIC_REQUIRE(std::is_same_v<decltype(x), fg::tensor<std::int32_t>>);
  STATIC_REQUIRE(std::is_same_v<decltype(y), fg::tensor<std::int32_t>>);
  CHECK(x.shape() == fg::shape{5, 4, 3});
  CHECK(y.shape() == fg::shape{5});
  CHECK(test.images.shape() == fg::shape{2, 4, 3});
  CHECK(tensor_values(test.labels) == std::vector<std::int32_t>{0, 1});
  CHECK(tensor_values(y) == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  // image 1's first pixels: i = 12, 13, 14 give (36 + 1, 39 + 1, 42 + 1)
  CHECK(x.data()[12] == 37);
  CHECK(x.data()[13] == 40);
  CHECK(x.data()[14] == 43);
  // The .gz file is preferred to a plain one of the same name.
  write_plain(dir / "t10k-labels-idx1-ubyte.gz", cat(header(0x08, {2}), {7, 8}));
  CHECK(tensor_values(fg::data::mnist::load_data(dir.path).test.labels) == std::vector<std::int32_t>{7, 8});

  SECTION("a missing file") {
    fs::remove(dir / "train-labels-idx1-ubyte.gz");
    CHECK_THAT(error_of<fg::value_error>([&] { fg::data::mnist::load_data(dir.path); }),
               Catch::Contains("fg::data::mnist::load_data: no file '" + (dir / "train-labels-idx1-ubyte.gz").string() +
                               "' (nor '" + (dir / "train-labels-idx1-ubyte").string() + "')"));
  }
  SECTION("labels and images whose counts differ") {
    write_mnist_split(dir.path, "train", 5, 4, 3, true, 4);
    CHECK_THAT(error_of<fg::shape_error>([&] { fg::data::mnist::load_data(dir.path); }),
               Catch::Contains((dir / "train-labels-idx1-ubyte.gz").string() + "' holds 4 labels but '" +
                               (dir / "train-images-idx3-ubyte.gz").string() + "' holds 5 images"));
  }
  SECTION("images that are not of rank 3, labels that are not of rank 1") {
    write_gzip(dir / "train-images-idx3-ubyte.gz", cat(header(0x08, {5, 12}), bytes(60, 1)));
    CHECK_THAT(error_of<fg::shape_error>([&] { fg::data::mnist::load_data(dir.path); }),
               Catch::Contains((dir / "train-images-idx3-ubyte.gz").string() +
                               "' should hold images of shape (samples, rows, columns), found shape (5, 12)"));
    write_mnist_split(dir.path, "train", 5, 4, 3, true, 5);
    write_gzip(dir / "train-labels-idx1-ubyte.gz", cat(header(0x08, {5, 1}), bytes(5, 1)));
    CHECK_THAT(error_of<fg::shape_error>([&] { fg::data::mnist::load_data(dir.path); }),
               Catch::Contains("found shape (5, 1)"));
  }
  SECTION("test images of another size") {
    write_mnist_split(dir.path, "t10k", 2, 3, 4, false, 2);
    fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
    CHECK_THAT(error_of<fg::shape_error>([&] { fg::data::mnist::load_data(dir.path); }),
               Catch::Contains("the training images are 4x3 but the test images are 3x4"));
  }
  SECTION("float images") {
    write_plain(dir / "t10k-images-idx3-ubyte", cat(header(0x0D, {2, 4, 3}), bytes(4 * 24, 0x3f)));
    fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
    CHECK_THAT(error_of<fg::value_error>([&] { fg::data::mnist::load_data(dir.path); }),
               Catch::Contains("t10k-images-idx3-ubyte'") && Catch::Contains("does not fit int32"));
  }
}

TEST_CASE("fashion_mnist::load_data reads FUSEGRAD_DATASETS/fashion-mnist when the variable is set", "[io][data]") {
  temp_dir dir;
  fs::create_directories(dir / "fashion-mnist");
  write_mnist_split(dir / "fashion-mnist", "train", 3, 2, 2, true, 3);
  write_mnist_split(dir / "fashion-mnist", "t10k", 1, 2, 2, true, 1);
  {
    scoped_env env("FUSEGRAD_DATASETS", dir.path.string());
    CHECK(fg::data::fashion_mnist::default_directory() == dir / "fashion-mnist");
    const auto d = fg::data::fashion_mnist::load_data();
    CHECK(d.train.images.shape() == fg::shape{3, 2, 2});
    CHECK(d.test.labels.shape() == fg::shape{1});
  }
  {
    scoped_env env("FUSEGRAD_DATASETS", (dir / "elsewhere").string());
    CHECK_THAT(error_of<fg::value_error>([] { fg::data::fashion_mnist::load_data(); }),
               Catch::Contains("fg::data::fashion_mnist::load_data: no file '" +
                               (dir / "elsewhere" / "fashion-mnist" / "train-images-idx3-ubyte.gz").string()) &&
                   Catch::Contains("FUSEGRAD_DATASETS"));
  }
  {
    scoped_env env("FUSEGRAD_DATASETS", "");
    CHECK(fg::data::fashion_mnist::default_directory() == fs::path("/usr/share/datasets/fashion-mnist"));
  }
  CHECK(fg::data::fashion_mnist::class_names[9] == "Ankle boot");
}

TEST_CASE("Fashion-MNIST loads as tf.keras.datasets.fashion_mnist gives it", "[io][data][fashion_mnist]") {
  if (!std::getenv("FUSEGRAD_DATASETS") && !fs::exists("/usr/share/datasets/fashion-mnist")) {
    WARN("skipped: no /usr/share/datasets/fashion-mnist (Debian: dataset-fashion-mnist) and FUSEGRAD_DATASETS unset");
    return;
  }
  auto [train, test] = fg::data::fashion_mnist::load_data();
  auto [x, y] = train;
  REQUIRE(x.shape() == fg::shape{60000, 28, 28});
  REQUIRE(y.shape() == fg::shape{60000});
  REQUIRE(test.images.shape() == fg::shape{10000, 28, 28});
  REQUIRE(test.labels.shape() == fg::shape{10000});

  // The figures below are tests/reference/fashion_mnist.py's (gzip + numpy over the same files).
  struct reference {
    std::vector<std::int64_t> histogram, first_labels;
    std::int64_t label_weighted_sum, pixel_sum;
    double mean;
    std::int64_t image0_sum;
    std::vector<std::int32_t> image0_row14;
    std::int64_t last_image_sum, pixel_weighted_sum;
  };
  const reference train_ref{std::vector<std::int64_t>(10, 6000),
                            {9, 0, 0, 3, 0, 2, 7, 2, 5, 5},
                            1895485,
                            3431114169,
                            72.94035223214286,
                            76247,
                            {0, 0, 1, 4, 6, 7, 2, 0, 0, 0, 0, 0, 237, 226, 217, 223, 222, 219, 222, 221, 216, 223, 229, 215,
                             218, 255, 77, 0},
                            16684,
                            13790571862};
  const reference test_ref{std::vector<std::int64_t>(10, 1000),
                           {9, 2, 1, 1, 6, 1, 4, 6, 5, 7},
                           313349,
                           573469082,
                           73.14656658163265,
                           33456,
                           {0, 0, 0, 0, 0, 0, 2, 4, 1, 0, 0, 0, 98, 136, 110, 109, 110, 162, 135, 144, 149, 159, 167, 144,
                            158, 169, 119, 0},
                           24390,
                           2304878896};
  const auto check_split = [](const fg::data::labelled_images& s, const reference& r) {
    const std::int32_t* px = s.images.data();
    const std::int32_t* lb = s.labels.data();
    const std::size_t n = s.labels.size(), pixels = s.images.size();
    std::vector<std::int64_t> histogram(10, 0);
    std::int64_t weighted = 0;
    bool labels_in_range = true;
    for (std::size_t i = 0; i < n; ++i) {
      labels_in_range = labels_in_range && lb[i] >= 0 && lb[i] < 10;
      if (lb[i] >= 0 && lb[i] < 10) ++histogram[static_cast<std::size_t>(lb[i])];
      weighted += std::int64_t{lb[i]} * static_cast<std::int64_t>(i % 13 + 1);
    }
    CHECK(labels_in_range);
    CHECK(histogram == r.histogram);
    CHECK(std::vector<std::int64_t>(lb, lb + 10) == r.first_labels);
    CHECK(weighted == r.label_weighted_sum);
    std::int64_t sum = 0, pixel_weighted = 0, image0 = 0, last = 0;
    std::int32_t lo = 255, hi = 0;
    for (std::size_t i = 0; i < pixels; ++i) {
      sum += px[i];
      pixel_weighted += std::int64_t{px[i]} * static_cast<std::int64_t>(i % 7 + 1);
      lo = std::min(lo, px[i]);
      hi = std::max(hi, px[i]);
      if (i < 784) image0 += px[i];
      if (i >= pixels - 784) last += px[i];
    }
    CHECK(lo == 0);
    CHECK(hi == 255);
    CHECK(sum == r.pixel_sum);
    CHECK(static_cast<double>(sum) / static_cast<double>(pixels) == Approx(r.mean).epsilon(1e-15));
    CHECK(pixel_weighted == r.pixel_weighted_sum);
    CHECK(image0 == r.image0_sum);
    CHECK(last == r.last_image_sum);
    CHECK(std::vector<std::int32_t>(px + 14 * 28, px + 15 * 28) == r.image0_row14);
  };
  check_split(train, train_ref);
  check_split(test, test_ref);

  // What a user does next: scale to [0, 1] in float32.
  const fg::tensor<float> scaled = fg::cast<float>(test.images) / 255.f;
  CHECK(scaled.shape() == fg::shape{10000, 28, 28});
  CHECK(scaled.data()[14 * 28 + 12] == Approx(98.0 / 255.0).epsilon(1e-6));
}
