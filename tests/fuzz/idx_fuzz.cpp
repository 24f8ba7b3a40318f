// libFuzzer target: the IDX reader. The input is a file's bytes, plain or gzip-compressed, read
// two ways that must agree: fg::io::read_idx from memory (inflate) and from a file with these
// bytes (gzopen/gzread): the same shape, type and values bit for bit, or fg::value_error with
// the same message. A plain input's values are compared with a decoding of the bytes written
// here; each array is converted to every element type by fg::data::idx_to_tensor, which keeps
// exactly what it converts or refuses with fg::value_error. Any other exception, a crash or a
// sanitizer report is a defect. Built by tests/fuzz/run.sh with clang's
// -fsanitize=fuzzer,address,undefined, linked with -lz.
#include <fusegrad/data/load_idx.hpp>
#include <fusegrad/io/idx.hpp>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "fuzz_bytes.hpp"

namespace {

static_assert(std::endian::native == std::endian::little, "check_plain reads values as little-endian bits");

[[noreturn]] void defect(const std::string& what) {
  std::fprintf(stderr, "fusegrad idx fuzz: %s\n", what.c_str());
  std::abort();
}
void check(bool ok, const std::string& what) {
  if (!ok) defect(what);
}

/// The file the path reader reads: one per process, removed at exit.
const std::string& scratch_path() {
  static const std::string p = [] {
    std::string s = fuzz::scratch_dir() + "/fusegrad_idx_fuzz_" + std::to_string(::getpid()) + ".idx";
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return s;
  }();
  return p;
}

/// A read's outcome: the array, or the error's message (out_of_memory as "out of memory: ...").
struct outcome {
  std::optional<fg::io::idx_array> array;
  std::string error;
};
template <class F>
outcome attempt(F f) {
  try {
    return {f(), {}};
  } catch (const fg::value_error& e) {
    return {std::nullopt, e.what()};
  } catch (const fg::out_of_memory& e) {
    return {std::nullopt, std::string("out of memory: ") + e.what()};
  }
}

bool same_values(const fg::io::idx_array& a, const fg::io::idx_array& b) {
  if (a.values.index() != b.values.index() || !(a.shape == b.shape)) return false;
  return std::visit(
      [&](const auto& va) {
        const auto& vb = std::get<std::decay_t<decltype(va)>>(b.values);
        return va.size() == vb.size() && (va.empty() || std::memcmp(va.data(), vb.data(), va.size() * sizeof va[0]) == 0);
      },
      a.values);
}

/// The values of a plain input decoded here, most significant byte first, as the element type's bits.
template <class E>
void check_plain(const std::vector<E>& v, const std::uint8_t* data, std::size_t size, std::size_t offset) {
  check(offset + v.size() * sizeof(E) == size, "the values do not fill the input up to its end");
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t u = 0;
    for (std::size_t k = 0; k < sizeof(E); ++k) u = (u << 8) | data[offset + i * sizeof(E) + k];
    std::uint64_t got = 0;
    std::memcpy(&got, &v[i], sizeof(E));  // little-endian host: the low bytes
    check(got == u, "a value differs from the bytes' big-endian decoding");
  }
}

/// idx_to_tensor<T> keeps each value exactly or refuses the array.
template <class T>
void check_conversion(const fg::io::idx_array& a) {
  try {
    const fg::tensor<T> t = fg::data::idx_to_tensor<T>(a, "fuzz");
    check(t.shape() == a.shape, "idx_to_tensor changed the shape");
    std::visit(
        [&](const auto& v) {
          for (std::size_t i = 0; i < v.size(); ++i) {
            const double want = static_cast<double>(v[i]), got = static_cast<double>(t.data()[i]);
            check(got == want || (std::isnan(want) && std::isnan(got)), "idx_to_tensor changed a value");
          }
        },
        a.values);
  } catch (const fg::value_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = scratch_path();
  const outcome mem = attempt([&] { return fg::io::read_idx(std::as_bytes(std::span(data, size)), path); });

  std::FILE* f = std::fopen(path.c_str(), "wb");
  check(f != nullptr, "cannot write the scratch file");
  check(std::fwrite(data, 1, size, f) == size && std::fclose(f) == 0, "cannot write the scratch file");
  const outcome file = attempt([&] { return fg::io::read_idx(path); });

  if (mem.array.has_value() != file.array.has_value())
    defect("memory and file readers disagree: " + (mem.array ? "file: " + file.error : "memory: " + mem.error));
  if (!mem.array) {
    check(mem.error == file.error, "the readers' messages differ:\n  memory: " + mem.error + "\n  file:   " + file.error);
    check(mem.error.find(path) != std::string::npos || mem.error.starts_with("out of memory"),
          "an error that does not name the file: " + mem.error);
    return 0;
  }
  const fg::io::idx_array& a = *mem.array;
  check(same_values(a, *file.array), "memory and file readers give different arrays");
  check(a.shape.rank() >= 1 && a.shape.rank() <= fg::max_rank, "a rank outside 1..max_rank");
  check(a.size() == a.shape.elements(), "the value count differs from the shape's");
  check(static_cast<unsigned>(a.type()) == (size >= 3 ? data[2] : 0u) || (size >= 2 && data[0] == 0x1f),
        "the type differs from the header's");
  if (size >= 2 && !(data[0] == 0x1f && data[1] == 0x8b)) {  // plain: decode the bytes here
    const std::size_t offset = 4 + 4 * a.shape.rank();
    std::visit([&](const auto& v) { check_plain(v, data, size, offset); }, a.values);
  }
  if (a.size() <= 4096) {
    check_conversion<float>(a);
    check_conversion<double>(a);
    check_conversion<std::int32_t>(a);
    check_conversion<std::int64_t>(a);
    check_conversion<bool>(a);
  }
  return 0;
}
