// TensorBoard logs: CRC32C against its published check values, the TFRecord framing and the
// protobuf encoding against the bytes TensorBoard's own protobuf classes and record writer make
// (tests/reference/read_events.py --reference-bytes), fg::summary's writers read back with
// fg::io::read_events, histograms against hand computations (TensorFlow 2's rule, Note [summary
// histogram]), flushing as TensorFlow's writer flushes, damaged files, the tensorboard fit
// callback against fit's history, and the files read by TensorBoard's EventAccumulator
// (tests/reference/read_events.py).
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/train.hpp>

#include "file_helpers.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {
/// A scratch directory of this file's tests (tests/file_helpers.hpp).
struct scratch_dir : fg_test::scratch_dir {
  explicit scratch_dir(const std::string& name) : fg_test::scratch_dir("fusegrad_summary_test", name) {}
};
using fg_test::read_bytes;
using fg_test::write_bytes;
std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}
/// The event files in `dir` (names with "tfevents", as TensorBoard takes them), sorted.
std::vector<std::string> event_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
/// The one value of a summary event.
const fg::io::summary_value& value_of(const fg::io::event& e) {
  REQUIRE(e.summary.has_value());
  REQUIRE(e.summary->size() == 1);
  return e.summary->front();
}
/// (tag, step) -> scalar, from a file's events.
std::map<std::pair<std::string, std::int64_t>, float> scalars_in(const std::string& file) {
  std::map<std::pair<std::string, std::int64_t>, float> out;
  for (const fg::io::event& e : fg::io::read_events(file))
    if (e.summary)
      for (const fg::io::summary_value& v : *e.summary)
        if (v.simple_value) out[{v.tag, e.step}] = *v.simple_value;
  return out;
}
}  // namespace

TEST_CASE("summary: CRC32C gives its published check values, and the mask TFRecord applies", "[summary]") {
  using fg::io::crc32c;
  // The check value of CRC-32C (Castagnoli): the CRC of the nine ASCII digits.
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros, of ones, ascending and descending.
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) up[i] = static_cast<char>(i), down[i] = static_cast<char>(31 - i);
  CHECK(crc32c(zeros) == 0x8A9136AAu);
  CHECK(crc32c(ones) == 0x62A8AB43u);
  CHECK(crc32c(up) == 0x46DD794Eu);
  CHECK(crc32c(down) == 0x113FDB5Cu);
  // A CRC continued over more bytes is the CRC of the whole.
  CHECK(crc32c("56789", crc32c("1234")) == 0xE3069283u);
  // The mask by hand: 0xE3069283 >> 15 = 0x0001C60D, 0xE3069283 << 17 = 0x25060000 (mod 2^32),
  // their OR 0x2507C60D, plus 0xA282EAD8 = 0xC78AB0E5 (mod 2^32).
  CHECK(fg::io::mask_crc(0xE3069283u) == 0xC78AB0E5u);
  CHECK(fg::io::masked_crc32c("123456789") == 0xC78AB0E5u);
  CHECK(fg::io::unmask_crc(0xC78AB0E5u) == 0xE3069283u);
  for (const std::uint32_t c : {0u, 1u, 0xFFFFFFFFu, 0x5D7E0A11u, 0x80000000u})
    CHECK(fg::io::unmask_crc(fg::io::mask_crc(c)) == c);
}

TEST_CASE("summary: events are framed and encoded byte for byte as TensorBoard's protobuf classes make them",
          "[summary]") {
  // tests/reference/read_events.py --reference-bytes: the same events serialized by
  // TensorBoard's generated protobuf classes and framed by its RecordWriter.
  const std::vector<std::string> want = {
      "1800000000000000a37f4b220900000040fc54d9411a0d627261696e2e4576656e743a32eced8f9d",
      "1a00000000000000129bd82d09000000000000f83f10032a0d0a0b0a046c6f7373150000803ed054b255",
      "8e00000000000000c67db15209000000000000004010ffffffffffffffffff012a780a760a01682a7109000000000000f03f11000000000000"
      "1c4019000000000000144021000000000080304029000000000010534032200000000000000440000000000000104000000000000016400000"
      "000000001c403a200000000000000040000000000000f03f000000000000f03f000000000000f03f90fcfe01",
      "3a000000000000001295eae209000000000000024010ac022a2c0a230a047a65726f15000000004a160a090a077363616c6172731a096d"
      "65616e206c6f73730a050a01652a00d6e267a3",
  };
  using fg::io::event;
  using fg::io::summary_value;
  const fg::io::histogram_proto h{.min = 1, .max = 7, .num = 5, .sum = 16.5, .sum_squares = 76.25,
                                  .bucket_limit = {2.5, 4, 5.5, 7}, .bucket = {2, 1, 1, 1}};
  const std::vector<event> events = {
      {.wall_time = 1700000000.0, .file_version = "brain.Event:2"},
      {.wall_time = 1.5, .step = 3, .summary = std::vector<summary_value>{{.tag = "loss", .simple_value = 0.25f}}},
      {.wall_time = 2.0, .step = -1, .summary = std::vector<summary_value>{{.tag = "h", .histo = h}}},
      {.wall_time = 2.25,
       .step = 300,
       .summary = std::vector<summary_value>{
           {.tag = "zero",
            .simple_value = 0.0f,
            .metadata = fg::io::summary_metadata{.plugin_name = "scalars", .description = "mean loss"}},
           {.tag = "e", .histo = fg::io::histogram_proto{}}}},
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    CAPTURE(i);
    const std::string bytes = fg::io::frame_record(fg::io::encode_event(events[i]));
    CHECK(bytes == from_hex(want[i]));
    // And back: the records parse, and the messages decode to what was encoded.
    const std::vector<fg::io::record> r = fg::io::parse_records(from_hex(want[i]));
    REQUIRE(r.size() == 1);
    CHECK(fg::io::decode_event(r[0].data) == events[i]);
  }
  // A reader accepts what proto3 writers may also write: an unpacked repeated double, a default
  // written out, fields out of order, and fields it does not know (skipped).
  std::string value;
  value += from_hex("2a");                              // histo, field 5, length-delimited
  value += from_hex("1b");                              // 27 bytes:
  value += from_hex("31") + std::string(8, '\0');       //   bucket_limit = 0.0, unpacked (field 6, fixed64)
  value += from_hex("31000000000000f03f");              //   bucket_limit = 1.0, unpacked
  value += from_hex("0900000000000000c0");              //   min = -2.0
  value += from_hex("0a046c6f7373");                    // tag "loss", after histo
  value += from_hex("7803");                            // field 15, a varint: unknown to Summary.Value
  std::string ev = from_hex("2a") + char(value.size() + 2) + from_hex("0a") + char(value.size()) + value;
  ev += from_hex("7a03616263");  // Event field 15 (bytes), unknown: skipped
  const event got = fg::io::decode_event(ev);
  const summary_value& v = value_of(got);
  CHECK(v.tag == "loss");
  REQUIRE(v.histo.has_value());
  CHECK(v.histo->bucket_limit == std::vector<double>{0.0, 1.0});
  CHECK(v.histo->min == -2.0);
  CHECK(!v.simple_value.has_value());
  CHECK_THROWS_WITH(fg::io::decode_event(from_hex("1a0568"), "'f': the record at offset 12"),
                    Catch::Contains("'f': the record at offset 12") && Catch::Contains("runs past the end"));
}

TEST_CASE("summary: scalars and histograms written by a file writer read back", "[summary]") {
  scratch_dir dir("roundtrip");
  const double t0 = now_seconds();
  const fg::summary::file_writer w = fg::summary::create_file_writer(dir / "logs/run1");
  CHECK(fs::is_directory(dir.path / "logs/run1"));  // made with its parents
  {
    auto scope = w.as_default();
    CHECK(fg::summary::scalar("loss", 0.5f, 0));                                  // a float
    CHECK(fg::summary::scalar("loss", 0.1, 1));                                   // a double, stored as float32
    CHECK(fg::summary::scalar("accuracy", fg::tensor<float>(0.75f), 1));          // a 0-d tensor
    CHECK(fg::summary::scalar("accuracy", fg::tensor<double>(1.0 / 3.0), 2));     // a 0-d float64 tensor
    CHECK(fg::summary::scalar("zero", 0, std::int64_t{1} << 40));                 // 0 is written (a oneof), big steps
    CHECK(fg::summary::histogram("h", fg::tensor<float>{{1.f, 2.f, 2.5f}, {4.f, 7.f, 2.f}}, 5, 4));
    CHECK(fg::summary::scalar("negative", -2.5f, -3));
  }
  w.close();
  const double t1 = now_seconds();

  // The file's name is TensorFlow's: events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string name = fs::path(w.path()).filename().string();
  CAPTURE(name);
  const std::regex pattern("events\\.out\\.tfevents\\.(\\d{10})\\." + std::regex_replace(std::string(host), std::regex("[.]"), "\\.") +
                           "\\." + std::to_string(::getpid()) + "\\.\\d+\\.v2");
  std::smatch m;
  REQUIRE(std::regex_match(name, m, pattern));
  CHECK(fs::path(w.path()).parent_path() == dir.path / "logs/run1");
  CHECK(event_files(dir.path / "logs/run1") == std::vector<std::string>{w.path()});

  const std::vector<fg::io::event> events = fg::io::read_events(w.path());
  REQUIRE(events.size() == 8);
  // The first record: the file's version, stamped with the second of the name.
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(!events[0].summary.has_value());
  CHECK(events[0].wall_time == std::stod(m[1].str()));
  CHECK(events[0].step == 0);
  // Then each summary in its own event, in order, with wall times from the clock, not going back.
  for (std::size_t i = 1; i < events.size(); ++i) {
    CAPTURE(i);
    CHECK(events[i].file_version.empty());
    CHECK(events[i].wall_time >= events[i - 1].wall_time);
    CHECK(events[i].wall_time >= std::floor(t0));
    CHECK(events[i].wall_time <= t1);
    CHECK(!value_of(events[i]).metadata.has_value());
  }
  const std::vector<std::pair<std::string, std::int64_t>> tags = {
      {"loss", 0}, {"loss", 1}, {"accuracy", 1}, {"accuracy", 2}, {"zero", std::int64_t{1} << 40}, {"h", 5}, {"negative", -3}};
  for (std::size_t i = 0; i < tags.size(); ++i) {
    CHECK(value_of(events[i + 1]).tag == tags[i].first);
    CHECK(events[i + 1].step == tags[i].second);
  }
  CHECK(value_of(events[1]).simple_value == 0.5f);
  CHECK(value_of(events[2]).simple_value == 0.1f);
  CHECK(value_of(events[3]).simple_value == 0.75f);
  CHECK(value_of(events[4]).simple_value == static_cast<float>(1.0 / 3.0));
  CHECK(value_of(events[5]).simple_value == 0.0f);
  CHECK(value_of(events[7]).simple_value == -2.5f);

  // The histogram of {1, 2, 2.5, 4, 7, 2} in 4 buckets, by hand: width (7 - 1) / 4 = 1.5, edges
  // 1, 2.5, 4, 5.5, 7; floor((x - 1) / 1.5) puts 1, 2, 2 in bucket 0, 2.5 in 1, 4 in 2, and 7
  // (index 4) in the last, 3. (tf.summary.histogram gives [[1, 2.5, 3], [2.5, 4, 1], [4, 5.5, 1],
  // [5.5, 7, 1]].)
  const fg::io::summary_value& hv = value_of(events[6]);
  REQUIRE(hv.histo.has_value());
  REQUIRE(!hv.simple_value.has_value());
  CHECK(hv.histo->min == 1.0);
  CHECK(hv.histo->max == 7.0);
  CHECK(hv.histo->num == 6.0);
  CHECK(hv.histo->sum == 18.5);
  CHECK(hv.histo->sum_squares == 1 + 4 + 6.25 + 16 + 49 + 4);
  CHECK(hv.histo->bucket_limit == std::vector<double>{2.5, 4.0, 5.5, 7.0});
  CHECK(hv.histo->bucket == std::vector<double>{3, 1, 1, 1});
}

TEST_CASE("summary: histogram buckets follow TensorFlow 2's rule", "[summary]") {
  using fg::summary::make_histogram;
  SECTION("integers 0..9 in 5 buckets: width 1.8, two in each") {
    std::vector<double> v(10);
    for (int i = 0; i < 10; ++i) v[i] = i;
    const fg::io::histogram_proto h = make_histogram(fg::tensor<double>(fg::shape{10}, v), 5);
    CHECK(h.bucket == std::vector<double>{2, 2, 2, 2, 2});
    CHECK(h.bucket_limit == std::vector<double>{1.8, 3.6, 5.4, 7.2, 9.0});
    CHECK(h.sum == 45);
    CHECK(h.sum_squares == 285);
  }
  SECTION("1000 normal values in the default 30 buckets, against numpy-style counting") {
    const unsigned seed = 20261127;
    CAPTURE(seed);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(1.f, 3.f);
    std::vector<float> v(1000);
    for (float& x : v) x = normal(rng);
    const fg::io::histogram_proto h = make_histogram(fg::tensor<float>(fg::shape{1000}, v));
    const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    const double width = (hi - lo) / 30;
    // numpy.histogram's counting: bucket i holds lo + i w <= x < lo + (i + 1) w, the last one
    // closed on the right at hi.
    std::vector<double> counts(30, 0.0);
    for (const float x : v)
      for (int i = 0; i < 30; ++i)
        if (x >= lo + i * width && (x < lo + (i + 1) * width || i == 29)) {
          counts[i] += 1;
          break;
        }
    CHECK(h.bucket == counts);
    REQUIRE(h.bucket_limit.size() == 30);
    for (int i = 0; i < 29; ++i) CHECK(h.bucket_limit[i] == lo + (i + 1) * width);
    CHECK(h.bucket_limit[29] == hi);  // the last edge is the maximum exactly
    CHECK(h.min == lo);
    CHECK(h.max == hi);
    CHECK(h.num == 1000);
    double sum = 0, squares = 0;
    for (const float x : v) sum += x, squares += static_cast<double>(x) * x;
    CHECK(h.sum == Approx(sum).epsilon(1e-12));
    CHECK(h.sum_squares == Approx(squares).epsilon(1e-12));
  }
  SECTION("one value: every edge at it, all in the last bucket (tf.summary.histogram of {3, 3})") {
    const fg::io::histogram_proto h = make_histogram(fg::tensor<float>{3.f, 3.f}, 3);
    CHECK(h.bucket_limit == std::vector<double>{3, 3, 3});
    CHECK(h.bucket == std::vector<double>{0, 0, 2});
    CHECK(h.min == 3);
    CHECK(h.max == 3);
  }
  SECTION("no values: empty buckets at 0; no buckets asked: none") {
    const fg::io::histogram_proto h = make_histogram(fg::tensor<float>(fg::shape{0}, std::vector<float>{}), 3);
    CHECK(h.bucket_limit == std::vector<double>{0, 0, 0});
    CHECK(h.bucket == std::vector<double>{0, 0, 0});
    CHECK(h.num == 0);
    const fg::io::histogram_proto none = make_histogram(fg::tensor<float>{1.f, 2.f}, 0);
    CHECK(none.bucket.empty());
    CHECK(none.num == 2);
  }
  SECTION("bad input: a clear error naming the summary") {
    scratch_dir dir("bad_histogram");
    const fg::summary::file_writer w = fg::summary::create_file_writer(dir.path.string());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(w.histogram("weights", fg::tensor<float>{1.f, nan, 2.f}, 0),
                      Catch::Contains("fg::summary::histogram: 'weights': 1 of the 3 values are NaN or infinite"));
    CHECK_THROWS_WITH(w.histogram("weights", fg::tensor<float>{1.f}, 0, -1),
                      Catch::Contains("'weights': buckets must be 0 or more, got -1"));
    CHECK_THROWS_WITH(w.scalar("loss", fg::tensor<float>{1.f, 2.f}, 0),
                      Catch::Contains("fg::summary::scalar: 'loss': the value must be a scalar (a 0-d tensor), got shape (2,)"));
    CHECK_THROWS_WITH(w.scalar("", 1.f, 0), Catch::Contains("the summary's name is empty"));
    w.close();
    CHECK(fg::io::read_events(w.path()).size() == 1);  // nothing written but the version
  }
}

TEST_CASE("summary: the default writer and the default step, per thread", "[summary]") {
  scratch_dir dir("defaults");
  // No default writer: nothing is written, and false says so (as tf.summary does), step or not.
  CHECK_FALSE(fg::summary::scalar("loss", 1.f, 0));
  CHECK_FALSE(fg::summary::scalar("loss", 1.f));
  CHECK_FALSE(fg::summary::histogram("h", fg::tensor<float>{1.f}, 0));
  CHECK_FALSE(fg::summary::default_writer());

  fg::summary::file_writer a = fg::summary::create_file_writer(dir / "a"), b = fg::summary::create_file_writer(dir / "b");
  CHECK(a.path() != b.path());
  {
    auto sa = a.as_default();
    CHECK(fg::summary::default_writer() == a);
    // A writer but no step: an error naming the summary and the fixes.
    CHECK_THROWS_WITH(fg::summary::scalar("loss", 1.f),
                      Catch::Contains("fg::summary::scalar: 'loss': no step given and no default step set") &&
                          Catch::Contains("set_step"));
    CHECK_THROWS_WITH(fg::summary::histogram("weights", fg::tensor<float>{1.f}),
                      Catch::Contains("fg::summary::histogram: 'weights': no step given"));
    CHECK(fg::summary::scalar("x", 1.f, 0));  // to a
    {
      auto sb = b.as_default(7);  // b, and step 7 inside
      CHECK(fg::summary::scalar("x", 2.f));
      CHECK(fg::summary::experimental::get_step() == 7);
    }
    CHECK_FALSE(fg::summary::experimental::get_step().has_value());  // restored
    fg::summary::experimental::set_step(5);
    CHECK(fg::summary::scalar("x", 3.f));  // to a, at the default step 5
    {
      auto sb = b.as_default(9);
      CHECK(fg::summary::scalar("x", 4.f));
    }
    CHECK(fg::summary::experimental::get_step() == 5);
    CHECK(fg::summary::scalar("x", 5.f, 6));  // a step given wins
    // Another thread has a default writer and step of its own: none.
    bool wrote = true;
    std::optional<std::int64_t> step = 0;
    std::thread([&] {
      wrote = fg::summary::scalar("x", 1.f, 0);
      step = fg::summary::experimental::get_step();
    }).join();
    CHECK_FALSE(wrote);
    CHECK_FALSE(step.has_value());
    // A copy is the same writer.
    const fg::summary::file_writer copy = a;
    CHECK(copy == a);
    CHECK(copy.scalar("y", 6.f, 8));
    CHECK(fg::summary::scalar(copy, "y", 7.f, 9));
    fg::summary::experimental::set_step(std::nullopt);
  }
  CHECK_FALSE(fg::summary::default_writer());
  CHECK_FALSE(fg::summary::scalar("x", 1.f, 0));
  a.close();
  b.close();
  CHECK(a.closed());
  using key = std::pair<std::string, std::int64_t>;
  CHECK(scalars_in(a.path()) == std::map<key, float>{{{"x", 0}, 1.f}, {{"x", 5}, 3.f}, {{"x", 6}, 5.f}, {{"y", 8}, 6.f}, {{"y", 9}, 7.f}});
  CHECK(scalars_in(b.path()) == std::map<key, float>{{{"x", 7}, 2.f}, {{"x", 9}, 4.f}});
  // A closed writer refuses to be written to or made the default.
  CHECK_THROWS_WITH(a.scalar("x", 1.f, 0), Catch::Contains("'x': the writer of '" + (dir / "a") + "' is closed"));
  CHECK_THROWS_WITH((void)a.as_default(), Catch::Contains("is closed"));
  const fg::summary::file_writer empty;
  CHECK_THROWS_WITH(empty.flush(), Catch::Contains("fg::summary::file_writer::flush: an empty fg::summary::file_writer"));
  CHECK_THROWS_WITH(empty.scalar("x", 1.f, 0), Catch::Contains("fg::summary::scalar: an empty fg::summary::file_writer"));
}

TEST_CASE("summary: records are flushed as TensorFlow's writer flushes them", "[summary]") {
  scratch_dir dir("flush");
  const auto on_disk = [](const fg::summary::file_writer& w) { return fg::io::read_records(w.path()).size(); };
  SECTION("more than max_queue pending, flush() and close()") {
    // tf.summary.create_file_writer(d, max_queue=3) leaves the file at its version record for
    // three scalars and writes all four with the fourth.
    const fg::summary::file_writer w = fg::summary::create_file_writer(dir.path.string(), {.max_queue = 3});
    CHECK(on_disk(w) == 1);  // the version record, at once
    for (int i = 0; i < 3; ++i) {
      w.scalar("x", 1.f, i);
      CHECK(on_disk(w) == 1);
    }
    w.scalar("x", 1.f, 3);
    CHECK(on_disk(w) == 5);
    w.scalar("x", 1.f, 4);
    w.histogram("h", fg::tensor<float>{1.f, 2.f}, 4);
    CHECK(on_disk(w) == 5);
    w.flush();
    CHECK(on_disk(w) == 7);
    w.scalar("x", 1.f, 5);
    CHECK(on_disk(w) == 7);
    w.close();
    CHECK(on_disk(w) == 8);
    w.close();  // a second close does nothing
  }
  SECTION("max_queue = 0 writes every record at once") {
    const fg::summary::file_writer w = fg::summary::create_file_writer(dir.path.string(), {.max_queue = 0});
    w.scalar("x", 1.f, 0);
    CHECK(on_disk(w) == 2);
  }
  SECTION("the last handle's destruction flushes and closes") {
    std::string path;
    {
      const fg::summary::file_writer w = fg::summary::create_file_writer(dir.path.string());
      path = w.path();
      auto s = w.as_default();  // the scope holds the writer too
      fg::summary::scalar("x", 1.f, 0);
      CHECK(fg::io::read_records(path).size() == 1);
    }
    CHECK(fg::io::read_records(path).size() == 2);
  }
  SECTION("a write flush_millis after the last flush writes") {
    const fg::summary::file_writer w =
        fg::summary::create_file_writer(dir.path.string(), {.max_queue = 100, .flush_millis = 300});
    w.scalar("x", 1.f, 0);
    CHECK(on_disk(w) == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    CHECK(on_disk(w) == 1);  // nothing flushes without a write
    w.scalar("x", 1.f, 1);
    CHECK(on_disk(w) == 3);
  }
  SECTION("two writers in one directory get files of their own") {
    const fg::summary::file_writer a = fg::summary::create_file_writer(dir.path.string()),
                                   b = fg::summary::create_file_writer(dir.path.string(), {.filename_suffix = ".mine"});
    CHECK(a.path() != b.path());
    CHECK(b.path().ends_with(".mine"));
    CHECK(event_files(dir.path).size() == 2);
  }
}

TEST_CASE("summary: a file cut short reads to its last whole record; a damaged one is an error", "[summary]") {
  scratch_dir dir("damage");
  const fg::summary::file_writer w = fg::summary::create_file_writer(dir.path.string());
  for (int i = 0; i < 4; ++i) w.scalar("loss", 1.f / static_cast<float>(i + 1), i);
  w.histogram("h", fg::tensor<float>{1.f, 2.f, 4.f}, 4);
  w.close();
  const std::string bytes = read_bytes(w.path());
  const std::vector<fg::io::record> whole = fg::io::read_records(w.path());
  REQUIRE(whole.size() == 6);
  std::vector<std::size_t> ends;  // where each record ends
  for (std::size_t i = 0; i < whole.size(); ++i) ends.push_back(whole[i].offset + 12 + whole[i].data.size() + 4);
  CHECK(ends.back() == bytes.size());
  CHECK(whole[0].offset == 0);
  for (std::size_t i = 1; i < whole.size(); ++i) CHECK(whole[i].offset == ends[i - 1]);

  // Cut at every byte, as a writer killed part-way leaves it: the records wholly before the cut.
  const std::string cut = dir / "cut";
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    const auto want = static_cast<std::size_t>(std::count_if(ends.begin(), ends.end(), [&](std::size_t e) { return e <= n; }));
    bool complete = false;
    const std::vector<fg::io::record> got = fg::io::parse_records(bytes.substr(0, n), cut, &complete);
    INFO("cut at " << n);
    REQUIRE(got.size() == want);
    CHECK(complete == (n == 0 || std::find(ends.begin(), ends.end(), n) != ends.end()));
    if (n % 7 == 0 || n == bytes.size()) {  // and through a file
      write_bytes(cut, bytes.substr(0, n));
      CHECK(fg::io::read_events(cut).size() == want);
    }
  }
  const std::vector<fg::io::event> cut_events = fg::io::read_events(cut);
  CHECK(cut_events.size() == 6);

  // A changed byte of record 2's data, of its length, or of its data CRC: an error naming the
  // file and the record's offset.
  const std::string off = std::to_string(whole[2].offset);
  const std::vector<std::pair<std::size_t, std::string>> damage = {
      {whole[2].offset + 12 + 3, "the CRC32C of its " + std::to_string(whole[2].data.size()) + " data bytes does not match"},
      {whole[2].offset + 1, "the CRC32C of its length does not match"},
      {whole[2].offset + 9, "the CRC32C of its length does not match"},
      {ends[2] - 2, "data bytes does not match"},
  };
  for (const auto& [at, what] : damage) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    const std::string p = dir / "bad";
    write_bytes(p, bad);
    CAPTURE(at);
    CHECK_THROWS_AS(fg::io::read_events(p), fg::value_error);
    CHECK_THROWS_WITH(fg::io::read_records(p),
                      Catch::Contains("fg::io::read_records: '" + p + "': the record at offset " + off + " is corrupt") &&
                          Catch::Contains(what));
  }
  // The last record damaged but whole: an error too, not a cut.
  {
    std::string bad = bytes;
    bad[ends[4] + 14] ^= 0x01;
    write_bytes(dir / "bad_last", bad);
    CHECK_THROWS_WITH(fg::io::read_records(dir / "bad_last"),
                      Catch::Contains("the record at offset " + std::to_string(whole[5].offset) + " is corrupt"));
  }
  // Whole records whose data is not an Event: an error naming the file and the record.
  write_bytes(dir / "garbage", fg::io::frame_record("") + fg::io::frame_record("\x0a\x05"));
  CHECK_THROWS_WITH(fg::io::read_events(dir / "garbage"),
                    Catch::Contains("'" + (dir / "garbage") + "': the record at offset 16") &&
                        Catch::Contains("not an Event message"));
  CHECK_THROWS_WITH(fg::io::read_events(dir / "absent"), Catch::Contains("'" + (dir / "absent") + "': cannot open it"));
}

TEST_CASE("summary: errors writing name the path", "[summary]") {
  scratch_dir dir("errors");
  write_bytes(dir / "file", "not a directory");
  CHECK_THROWS_WITH(fg::summary::create_file_writer(dir / "file/logs"),
                    Catch::Contains("fg::summary::create_file_writer: '" + (dir / "file/logs") + "': cannot make the directory"));
  CHECK_THROWS_WITH(fg::summary::create_file_writer(dir / "file"),
                    Catch::Contains("'" + (dir / "file") + "': cannot make the directory"));
  CHECK_THROWS_WITH(fg::summary::create_file_writer(""), Catch::Contains("the log directory is empty"));
  CHECK_THROWS_WITH(fg::summary::create_file_writer(dir / "ok", {.max_queue = -1}), Catch::Contains("max_queue must be 0 or more"));
  CHECK_THROWS_AS(fg::nn::callbacks::tensorboard({.update_freq = 0}), fg::value_error);
  CHECK_THROWS_WITH(fg::nn::callbacks::tensorboard({.update_freq = "weekly"}), Catch::Contains("got \"weekly\""));
}

namespace {
/// Two classes of points, and a small classifier with fixed weights, compiled.
struct tiny_data {
  fg::tensor<float> x;
  fg::tensor<std::int64_t> y;
};
tiny_data two_classes(std::size_t n, std::uint64_t seed) {
  const fg::tensor<float> x = fg::random::normal<float>({n, 3}, seed);
  std::vector<std::int64_t> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = x.data()[3 * i] + 0.5f * x.data()[3 * i + 1] > 0;
  return {x, fg::tensor<std::int64_t>(fg::shape{n}, y)};
}
fg::nn::sequential tiny_classifier(const fg::tensor<float>& x) {
  namespace nn = fg::nn;
  nn::sequential model{nn::dense(4, {.activation = "relu"}), nn::dense(2)};
  model(x);
  std::uint64_t seed = 7;
  for (fg::variable<float>& v : nn::trainable_variables(model)) v.assign(fg::random::uniform<float>(v.shape(), seed++, -0.5f, 0.5f));
  model.compile({.optimizer = fg::optimizers::sgd({.learning_rate = 0.05}),
                 .loss = nn::losses::sparse_categorical_crossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return model;
}
}  // namespace

TEST_CASE("summary: the tensorboard callback writes fit's epoch logs to train/ and validation/", "[summary][fit]") {
  namespace nn = fg::nn;
  scratch_dir dir("callback");
  const tiny_data d = two_classes(48, 1), v = two_classes(16, 2);
  nn::sequential model = tiny_classifier(d.x);
  const std::string logs = dir / "logs";
  std::vector<nn::logs> batch_logs;
  const nn::history h = model.fit(
      d.x, d.y,
      {.batch_size = 16, .epochs = 2, .verbose = 0,
       .callbacks = {nn::callbacks::tensorboard({.log_dir = logs, .histogram_freq = 1, .update_freq = 2}),
                     nn::callbacks::lambda_callback({.on_batch_end = [&](std::int64_t, const nn::logs& l) { batch_logs.push_back(l); }})},
       .validation_data = std::pair{v.x, v.y}, .shuffle = false});
  REQUIRE(h["loss"].size() == 2);
  REQUIRE(batch_logs.size() == 6);  // 3 batches an epoch

  const std::vector<std::string> train = event_files(fs::path(logs) / "train"), val = event_files(fs::path(logs) / "validation");
  REQUIRE(train.size() == 1);
  REQUIRE(val.size() == 1);
  const auto ts = scalars_in(train[0]), vs = scalars_in(val[0]);
  using key = std::pair<std::string, std::int64_t>;
  for (std::int64_t e = 0; e < 2; ++e) {
    CAPTURE(e);
    // Keras' names: epoch_<log> at step = the epoch's index; val_ logs in validation/, unprefixed.
    CHECK(ts.at(key{"epoch_loss", e}) == static_cast<float>(h["loss"][e]));
    CHECK(ts.at(key{"epoch_accuracy", e}) == static_cast<float>(h["accuracy"][e]));
    CHECK(ts.at(key{"epoch_learning_rate", e}) == 0.05f);
    CHECK(vs.at(key{"epoch_loss", e}) == static_cast<float>(h["val_loss"][e]));
    CHECK(vs.at(key{"epoch_accuracy", e}) == static_cast<float>(h["val_accuracy"][e]));
  }
  // update_freq = 2: every second batch's logs, at the count of batches trained (2, 4, 6).
  for (std::int64_t b : {2, 4, 6}) {
    CAPTURE(b);
    CHECK(ts.at(key{"batch_loss", b}) == static_cast<float>(batch_logs[b - 1].at("loss")));
    CHECK(ts.at(key{"batch_accuracy", b}) == static_cast<float>(batch_logs[b - 1].at("accuracy")));
  }
  CHECK(ts.size() == 3 * 2 + 2 * 3);
  CHECK(vs.size() == 2 * 2);  // nothing else in validation/, and no val_ tag anywhere
  // histogram_freq = 1: each variable's histogram at each epoch, in train/.
  std::map<std::string, std::vector<std::int64_t>> histograms;
  for (const fg::io::event& e : fg::io::read_events(train[0]))
    if (e.summary && e.summary->front().histo) histograms[e.summary->front().tag].push_back(e.step);
  const std::vector<std::int64_t> both = {0, 1};
  CHECK(histograms == std::map<std::string, std::vector<std::int64_t>>{{"sequential/dense/bias/histogram", both},
                                                                        {"sequential/dense/kernel/histogram", both},
                                                                        {"sequential/dense_1/bias/histogram", both},
                                                                        {"sequential/dense_1/kernel/histogram", both}});

  // Training without validation makes no validation/ run; a second fit writes new files.
  nn::sequential again = tiny_classifier(d.x);
  const std::string logs2 = dir / "logs2";
  const auto tb = std::make_shared<nn::callbacks::tensorboard>(nn::callbacks::tensorboard_options{.log_dir = logs2});
  again.fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {tb}});
  again.fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {tb}});
  CHECK(event_files(fs::path(logs2) / "train").size() == 2);
  CHECK_FALSE(fs::exists(fs::path(logs2) / "validation"));
}

TEST_CASE("summary: TensorBoard's EventAccumulator reads what fusegrad wrote", "[summary]") {
  scratch_dir dir("tensorboard");
  const fg::summary::file_writer w = fg::summary::create_file_writer(dir / "run");
  {
    auto s = w.as_default();
    for (int step = 0; step < 3; ++step) {
      fg::summary::scalar("loss", 1.f / static_cast<float>(step + 3), step);
      fg::summary::scalar("lr", 0.1 * step, step);
    }
    fg::summary::histogram("weights", fg::random::normal<float>({200}, 9), 2);
    fg::summary::histogram("same", fg::tensor<double>{0.5, 0.5, 0.5}, 2, 5);
  }
  w.close();

  // tests/reference/read_events.py prints what TensorBoard reads.
  fs::path script;
  for (const fs::path& p : {fs::path(__FILE__).parent_path() / "reference/read_events.py", fs::path("tests/reference/read_events.py"),
                            fs::path("../tests/reference/read_events.py")})
    if (fs::exists(p)) {
      script = p;
      break;
    }
  if (script.empty()) {
    WARN("skipped: tests/reference/read_events.py not found from " << fs::current_path());
    return;
  }
  const std::string out = dir / "tensorboard.txt";
  const int rc = std::system(("python3 '" + script.string() + "' '" + (dir / "run") + "' > '" + out + "' 2>&1").c_str());
  const std::string text = read_bytes(out);
  INFO(text);
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 127) {
    WARN("skipped: python3 is not installed");
    return;
  }
  REQUIRE(rc == 0);
  if (text.find("skipped: tensorboard is not installed") != std::string::npos) {
    WARN("skipped: tensorboard is not installed (pip install tensorboard)");
    return;
  }
  // What fusegrad's reader reads, in TensorBoard's words.
  std::vector<std::string> want = {"file_version 2.0"};
  std::vector<std::vector<double>> want_numbers;
  std::vector<std::string> got;
  std::vector<std::vector<double>> got_numbers;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, tag, step;
    words >> kind >> tag;
    if (kind == "file_version") {
      got.push_back(kind + " " + tag);
      got_numbers.emplace_back();
      continue;
    }
    words >> step;
    got.push_back(kind + " " + tag + " " + step);
    std::vector<double> numbers;
    for (std::string x; words >> x;) numbers.push_back(std::strtod(x.c_str(), nullptr));
    got_numbers.push_back(numbers);
  }
  want_numbers.emplace_back();
  // read_events.py prints scalars then histograms, each sorted by tag, in step order.
  std::map<std::string, std::vector<std::pair<std::string, std::vector<double>>>> scalars, histos;
  for (const fg::io::event& e : fg::io::read_events(w.path())) {
    if (!e.summary) continue;
    const fg::io::summary_value& v = e.summary->front();
    const std::string head = v.tag + " " + std::to_string(e.step);
    if (v.simple_value) {
      scalars[v.tag].push_back({"scalar " + head, {e.wall_time, static_cast<double>(*v.simple_value)}});
    } else {
      const fg::io::histogram_proto& hp = *v.histo;
      std::vector<double> n = {e.wall_time, hp.min, hp.max, hp.num, hp.sum, hp.sum_squares, static_cast<double>(hp.bucket.size())};
      n.insert(n.end(), hp.bucket_limit.begin(), hp.bucket_limit.end());
      n.insert(n.end(), hp.bucket.begin(), hp.bucket.end());
      histos[v.tag].push_back({"histogram " + head, n});
    }
  }
  for (const auto* group : {&scalars, &histos})
    for (const auto& [tag, entries] : *group)
      for (const auto& [line, n] : entries) {
        want.push_back(line);
        want_numbers.push_back(n);
      }
  CHECK(got == want);
  REQUIRE(got_numbers.size() == want_numbers.size());
  for (std::size_t i = 0; i < got_numbers.size(); ++i) {
    CAPTURE(want[i]);
    CHECK(got_numbers[i] == want_numbers[i]);  // every number exactly (Python's repr reads back)
  }
  CHECK(std::count_if(want.begin(), want.end(), [](const std::string& s) { return s.starts_with("histogram"); }) == 2);
}
