// libFuzzer target: the HDF5 reader on damaged checkpoints. A file that fg::io::write_hdf5 wrote
// (the datasets and root attributes of a small checkpoint: float32, float64, int32, int64 and
// bool values, a scalar and a 4-d one among them) is damaged as the input says, then read back
// with read_hdf5, list_hdf5 and read_hdf5_attributes. Note [hdf5 reading] promises that damage
// anywhere in such a file comes back as an error, never as other values or missing names: each
// reader must either give exactly what was written or throw fg::value_error naming the file.
// Any other outcome, a crash or a sanitizer report is a defect.
//
// The input is a list of edits: its first byte chooses whether the file is cut short, at the
// offset its next two bytes give (little-endian, modulo the file's size); then each group of
// three bytes is an offset (two bytes, modulo the size) and a byte XORed into the file there.
// Built by tests/fuzz/run.sh with clang's -fsanitize=fuzzer,address,undefined and HDF5; run with
// -detect_leaks=0, since HDF5 1.10 keeps a few bytes after each metadata checksum that fails.
#include <fusegrad/io/hdf5.hpp>
#include <hdf5.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "fuzz_bytes.hpp"

namespace {

[[noreturn]] void defect(const std::string& what) {
  std::fprintf(stderr, "fusegrad hdf5 fuzz: %s\n", what.c_str());
  std::abort();
}
void check(bool ok, const std::string& what) {
  if (!ok) defect(what);
}

/// A per-process scratch path, removed at exit.
std::string scratch(const char* what) {
  return fuzz::scratch_dir() + "/fusegrad_hdf5_fuzz_" + std::to_string(::getpid()) + "_" + what + ".h5";
}

template <class T>
fg::tensor<T> counting(fg::shape s, double start, double step) {
  std::vector<T> v(s.elements());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(start + step * static_cast<double>(i));
  return fg::tensor<T>(s, v);
}

/// What the undamaged file holds.
const fg::io::named_tensors& written() {
  static const fg::io::named_tensors t = {
      {"model/conv/kernel", counting<float>({2, 2, 1, 3}, -1.5, 0.25)},
      {"model/dense/bias", counting<float>({3}, 0.125, 1.0)},
      {"model/dense/kernel", counting<double>({3, 2}, 1e-3, -7.5)},
      {"optimizer/iteration", fg::tensor<std::int64_t>(std::int64_t{42})},
      {"step", counting<std::int32_t>({2}, -7, 9)},
      {"mask", fg::tensor<bool>({true, false, true})},
  };
  return t;
}
const std::map<std::string, std::string>& attributes() {
  static const std::map<std::string, std::string> a = {{"content", "fusegrad checkpoint"}};
  return a;
}

/// The undamaged file's bytes, written once per process.
const std::string& good_bytes() {
  static const std::string bytes = [] {
    const std::string path = scratch("good");
    fg::io::write_hdf5(path, written(), {.attributes = attributes()});
    std::ifstream in(path, std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(path.c_str());
    check(!b.empty(), "write_hdf5 wrote an empty file");
    return b;
  }();
  return bytes;
}

bool same(const fg::io::any_tensor& a, const fg::io::any_tensor& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        const auto& y = std::get<std::decay_t<decltype(x)>>(b);
        return x.shape() == y.shape() &&
               (x.size() == 0 || std::memcmp(x.data(), y.data(), x.size() * sizeof(*x.data())) == 0);
      },
      a);
}

/// Runs one reader: true when it returned (its result then checked by `ok`), false when it threw
/// value_error naming the file; any other exception is a defect.
template <class Read, class Ok>
bool attempt(const char* reader, const std::string& path, Read read, Ok ok) {
  try {
    check(ok(read()), std::string(reader) + " read a damaged file with other contents");
    return true;
  } catch (const fg::value_error& e) {
    check(std::string(e.what()).find(path) != std::string::npos,
          std::string(reader) + ": an error that does not name the file: " + e.what());
    return false;
  } catch (const fg::out_of_memory&) {
    return false;
  } catch (const std::exception& e) {
    defect(std::string(reader) + ": not a value_error: " + e.what());
  }
}

}  // namespace

// HDF5 keeps freed blocks on its own free lists only up to 64 KiB a list; each file open
// allocates larger ones (its metadata cache among them), which are returned to the allocator at
// close and, under AddressSanitizer, unmapped and faulted in again at the next open. Without
// limits the lists keep them: twice the inputs a second, and the same reads. (A block on HDF5's
// lists is still allocated as AddressSanitizer sees it, so a use of it after HDF5 frees it goes
// unreported; the default limits already keep every smaller block so.)
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes = good_bytes();
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  if (size >= 3) {
    if (data[0] & 1) bytes.resize((static_cast<std::size_t>(data[1]) | static_cast<std::size_t>(data[2]) << 8) % n);
    i = 3;
  }
  for (; i + 3 <= size; i += 3) {
    const std::size_t at = (static_cast<std::size_t>(data[i]) | static_cast<std::size_t>(data[i + 1]) << 8) % n;
    if (at < bytes.size()) bytes[at] = static_cast<char>(bytes[at] ^ data[i + 2]);
  }
  static const std::string path = [] {
    std::string p = scratch("input");
    std::atexit([] { std::remove(scratch("input").c_str()); });
    return p;
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    check(static_cast<bool>(out.flush()), "cannot write the scratch file");
  }

  const bool all = attempt("read_hdf5", path, [&] { return fg::io::read_hdf5(path); }, [](const fg::io::named_tensors& t) {
    if (t.size() != written().size()) return false;
    for (const auto& [name, value] : written())
      if (!t.count(name) || !same(t.at(name), value)) return false;
    return true;
  });
  const bool listed = attempt("list_hdf5", path, [&] { return fg::io::list_hdf5(path); }, [](const auto& infos) {
    if (infos.size() != written().size()) return false;
    for (const fg::io::tensor_info& info : infos) {
      const auto it = written().find(info.name);
      if (it == written().end() || info.dtype != fg::io::dtype_of(it->second) || !(info.shape == fg::io::shape_of(it->second)))
        return false;
    }
    return true;
  });
  // The values are read only by read_hdf5: list_hdf5 may read what read_hdf5 refuses, not the
  // other way round.
  check(!all || listed, "read_hdf5 read a file that list_hdf5 refused");
  const bool attrs = attempt("read_hdf5_attributes", path, [&] { return fg::io::read_hdf5_attributes(path); },
                             [](const std::map<std::string, std::string>& a) {
                               for (const auto& [k, v] : attributes())
                                 if (!a.count(k) || a.at(k) != v) return false;
                               return true;
                             });
  check(!listed || attrs, "list_hdf5 read a file whose root attributes did not read");
  return 0;
}
