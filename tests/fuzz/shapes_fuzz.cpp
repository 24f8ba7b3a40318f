// libFuzzer target: shape and index arithmetic. The input bytes choose a tensor's shape (small
// dimensions, or sizes large enough to overflow a count) and a sequence of shape ops with their
// arguments: reshape, broadcast_to, transpose, tile, slicing, gather, expand_dims, squeeze,
// concat. Each op either gives a result that a plain loop over indices confirms, or throws one of
// fusegrad's documented errors; anything else (another exception, a crash, a sanitizer report)
// is a defect. Built by tests/fuzz/run.sh with clang's -fsanitize=fuzzer,address,undefined.
#include <fusegrad/fusegrad.hpp>

#include "fuzz_bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <new>
#include <vector>

namespace {

/// The fuzz input read as small numbers and dimensions.
struct bytes : fuzz::byte_reader {
  long small(long lo, long hi) { return lo + static_cast<long>(u8() % static_cast<unsigned>(hi - lo + 1)); }
  /// A dimension: mostly small, sometimes huge (the overflow checks' business).
  std::size_t dim() {
    const std::uint8_t b = u8();
    if (b < 240) return b % 5;
    return std::size_t{1} << (32 + b % 31);
  }
};

[[noreturn]] void defect(const char* what) {
  std::fprintf(stderr, "fusegrad shapes fuzz: %s\n", what);
  std::abort();
}

/// The flat offset of multi-index idx in a contiguous tensor of shape s.
std::size_t offset(const fg::shape& s, const std::vector<std::size_t>& idx) {
  std::size_t o = 0;
  for (std::size_t d = 0; d < s.rank(); ++d) o = o * s[d] + idx[d];
  return o;
}
/// Calls f(multi-index, flat index) for every element of shape s in row-major order.
template <class F>
void for_each_index(const fg::shape& s, F&& f) {
  const std::size_t n = s.elements();
  std::vector<std::size_t> idx(s.rank(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    f(idx, k);
    for (std::size_t d = s.rank(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

void check(bool ok, const char* what) {
  if (!ok) defect(what);
}

/// Whether an op may make a result of shape s here: when the product of its nonzero dimensions
/// overflows (fusegrad must refuse it before allocating) or is small. A valid but huge shape
/// would be allocated for real, which tests the machine, not fusegrad (and AddressSanitizer
/// aborts on such a request instead of failing it); an empty tensor with huge dimensions would
/// lead a later op (gather, tile) to one.
bool may_make(const fg::shape& s) {
  std::size_t n = 1;
  for (std::size_t d : s)
    if (d != 0 && __builtin_mul_overflow(n, d, &n)) return true;
  return n <= (std::size_t{1} << 16);
}

/// One op on x chosen by the input, its result checked against a loop over indices.
fg::tensor<float> step(bytes& in, const fg::tensor<float>& x) {
  const fg::shape& s = x.shape();
  const float* xd = x.data();
  switch (in.u8() % 9) {
    case 0: {  // reshape to a shape with the same or another element count; -1 sometimes
      fg::shape t;
      const long r = in.small(0, 4);
      for (long d = 0; d < r; ++d) t.push_back(in.dim());
      if (!may_make(t)) return x;
      const fg::tensor<float> y = fg::reshape(x, t);
      check(y.size() == x.size(), "reshape changed the element count");
      for (std::size_t k = 0; k < y.size(); ++k) check(y.data()[k] == xd[k], "reshape moved an element");
      return y;
    }
    case 1: {  // broadcast_to
      fg::shape t;
      const long extra = in.small(0, 2);
      for (long d = 0; d < extra; ++d) t.push_back(in.dim());
      for (std::size_t d = 0; d < s.rank(); ++d) t.push_back(in.u8() % 3 == 0 ? in.dim() : s[d]);
      if (!may_make(t)) return x;
      const fg::tensor<float> y = fg::broadcast_to(x, t);
      check(y.shape() == t, "broadcast_to gave another shape");
      for_each_index(t, [&](const std::vector<std::size_t>& idx, std::size_t k) {
        std::vector<std::size_t> src(s.rank());
        for (std::size_t d = 0; d < s.rank(); ++d) src[d] = s[d] == 1 ? 0 : idx[idx.size() - s.rank() + d];
        check(y.data()[k] == xd[offset(s, src)], "broadcast_to read the wrong element");
      });
      return y;
    }
    case 2: {  // transpose by a permutation the input picks (not always a valid one)
      std::vector<long> perm(s.rank());
      for (std::size_t d = 0; d < s.rank(); ++d) perm[d] = static_cast<long>(d);
      for (std::size_t d = 0; d < s.rank(); ++d) std::swap(perm[d], perm[in.u8() % s.rank()]);
      if (in.u8() % 8 == 0 && !perm.empty()) perm[0] = in.small(-6, 6);
      const fg::tensor<float> y = fg::transpose(x, perm);
      for_each_index(y.shape(), [&](const std::vector<std::size_t>& idx, std::size_t k) {
        std::vector<std::size_t> src(s.rank());
        for (std::size_t d = 0; d < s.rank(); ++d) src[static_cast<std::size_t>(perm[d] < 0 ? perm[d] + long(s.rank()) : perm[d])] = idx[d];
        check(y.data()[k] == xd[offset(s, src)], "transpose read the wrong element");
      });
      return y;
    }
    case 3: {  // tile
      std::vector<long> m(s.rank());
      for (auto& v : m) v = in.u8() < 250 ? in.small(0, 3) : static_cast<long>(in.dim());
      fg::shape t;
      for (std::size_t d = 0; d < s.rank(); ++d) {
        std::size_t td;
        t.push_back(__builtin_mul_overflow(s[d], static_cast<std::size_t>(m[d]), &td) ? SIZE_MAX : td);
      }
      if (!may_make(t)) return x;
      const fg::tensor<float> y = fg::tile(x, m);
      for_each_index(y.shape(), [&](const std::vector<std::size_t>& idx, std::size_t k) {
        std::vector<std::size_t> src(s.rank());
        for (std::size_t d = 0; d < s.rank(); ++d) src[d] = idx[d] % s[d];
        check(y.data()[k] == xd[offset(s, src)], "tile read the wrong element");
      });
      return y;
    }
    case 4: {  // a slice of the first axis: start, stop, step (never 0 unless the input says so)
      if (s.rank() == 0) return x;
      const long a = in.small(-6, 6), b = in.small(-6, 6);
      long st = in.small(-3, 3);
      if (st == 0 && in.u8() % 4 != 0) st = 1;
      const fg::tensor<float> y = s.rank() == 1 ? x(fg::slice(a, b, st)) : x(fg::slice(a, b, st), fg::all());
      // numpy's rule for the first axis.
      const long n = static_cast<long>(s[0]);
      auto clamp = [&](long v) {
        if (v < 0) v += n;
        if (st > 0) return std::min(std::max(v, 0L), n);
        return std::min(std::max(v, -1L), n - 1);
      };
      std::vector<long> rows;
      for (long i = clamp(a); st > 0 ? i < clamp(b) : i > clamp(b); i += st) rows.push_back(i);
      check(y.shape()[0] == rows.size(), "a slice kept another number of rows");
      const std::size_t inner = s.rank() == 0 ? 1 : x.size() / std::max<std::size_t>(s[0], 1);
      for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t j = 0; j < inner; ++j)
          check(y.data()[r * inner + j] == xd[static_cast<std::size_t>(rows[r]) * inner + j], "a slice read the wrong element");
      return y;
    }
    case 5: {  // gather along an axis with indices the input picks (some out of range)
      if (s.rank() == 0) return x;
      const long axis = in.small(0, static_cast<long>(s.rank()) - 1);
      std::vector<int> idx(in.small(0, 4));
      for (auto& v : idx) v = static_cast<int>(in.small(-2, 5));
      const fg::tensor<int> it(fg::shape{idx.size()}, idx);
      const fg::tensor<float> y = fg::gather(x, it, axis);
      for_each_index(y.shape(), [&](const std::vector<std::size_t>& yi, std::size_t k) {
        std::vector<std::size_t> src(s.rank());
        for (std::size_t d = 0; d < s.rank(); ++d)
          src[d] = d == static_cast<std::size_t>(axis) ? static_cast<std::size_t>(idx[yi[d]]) : yi[d];
        check(y.data()[k] == xd[offset(s, src)], "gather read the wrong element");
      });
      return y;
    }
    case 6:  // expand_dims at an axis the input picks
      return fg::expand_dims(x, in.small(-6, 6));
    case 7: {  // squeeze every axis of size 1
      const fg::tensor<float> y = fg::squeeze(x);
      check(y.size() == x.size(), "squeeze changed the element count");
      return y;
    }
    default: {  // concat x with itself along an axis
      const long axis = in.small(-4, 4);
      const fg::tensor<float> y = fg::concat({x, x}, axis);
      check(y.size() == 2 * x.size(), "concat made another number of elements");
      return y;
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bytes in{data, size};
  try {
    fg::shape s;
    const long r = in.small(0, 4);
    for (long d = 0; d < r; ++d) s.push_back(in.dim());
    if (!may_make(s)) return 0;
    std::size_t n = 1;
    for (std::size_t d : s)
      if (__builtin_mul_overflow(n, d, &n)) {
        (void)fg::zeros<float>(s);  // must throw: the count overflows
        defect("zeros accepted a shape whose element count overflows");
      }
    fg::tensor<float> x = fg::reshape(fg::range<float>(0.f, static_cast<float>(n)), s);
    const long ops = in.small(1, 6);
    for (long k = 0; k < ops && x.size() <= 4096; ++k) x = step(in, x);
  } catch (const fg::shape_error&) {
  } catch (const fg::value_error&) {
  } catch (const fg::index_error&) {
  } catch (const fg::out_of_memory&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusegrad shapes fuzz: undocumented exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
