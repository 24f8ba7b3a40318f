#pragma once
/// \file fg::random: tensors of normal, uniform and truncated normal values, reproducible across
/// runs, platforms and standard libraries (Note [random numbers]).
///
/// Note [random numbers]: every value comes from Philox-4x32-10, the counter-based generator of
/// Salmon, Moraes, Dror and Shaw ("Parallel random numbers: as easy as 1, 2, 3", SC 2011). It
/// maps a 128-bit counter and a 64-bit key to 128 random bits through ten rounds; each round
/// multiplies two counter words by fixed constants, keeps the high and low halves of the products
/// and XORs the high halves with the other two words and the key; the key grows by two fixed
/// constants (the Weyl sequence) between rounds. Being a pure function, it needs no state:
///
///   bits of element i = philox(counter = {i low 32 bits, i high 32 bits, attempt, stream},
///                              key = {seed low 32 bits, seed high 32 bits})
///
/// so element i depends only on the seed, its flat (row-major) index and the distribution
/// (`stream`), never on the shape or on how the work is split between threads or devices.
/// `attempt` numbers the redraws of the rejection methods. From the four 32-bit words:
///   - uniform floats: the top 24 bits of word 0 (float) or 53 bits of words 0-1 (double) make a
///     fraction u in [0, 1), and the value is minval + u * (maxval - minval), computed in double
///     with one rounding (std::fma, so that compilers cannot contract it differently) and kept
///     below maxval should rounding reach it;
///   - uniform integers: words 0-1 and 2-3 are two 64-bit candidates x; with r = maxval - minval,
///     a candidate below (2^64 - r) mod r is rejected (so every residue is equally likely) and the
///     value is minval + x mod r; when both are rejected the next attempt is drawn;
///   - normals: the Box-Muller transform z = sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1) and u2 in
///     [0, 1) taken from 32-bit words (float) or 53-bit pairs (double), computed in double, and
///     the value is mean + stddev * z, again with one rounding;
///   - truncated normals: each block gives Box-Muller pairs (z cos, z sin): two pairs for float,
///     one for double; the first with |z| < 2 is kept, otherwise the next attempt is drawn.
/// The integer stream and the uniform values are exact and identical everywhere. Normal values go
/// through the platform's log, sqrt and cos, which IEEE platforms may round differently in the
/// last bit of a double; float results, rounded from double, are practically always identical.
///
/// The forms without a seed take one from their thread's generator: the n-th such call on a
/// thread uses the n-th output of SplitMix64 (Steele, Lea and Flood, "Fast splittable
/// pseudorandom number generators", OOPSLA 2014) started from that thread's seed, which is
/// fg::random::default_seed until fg::random::set_seed changes it.

#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>

#include "error.hpp"
#include "shape.hpp"
#include "tensor.hpp"

namespace fusegrad::random {

/// The seed every thread's generator starts from, so that programs without set_seed repeat.
inline constexpr std::uint64_t default_seed = 0;

/// Mean and standard deviation for the seedless normal and truncated_normal forms.
template <class T = float>
struct normal_options {
  T mean = T(0);    ///< centre of the distribution
  T stddev = T(1);  ///< standard deviation (before truncation), at least 0
};

/// Bounds [minval, maxval) for the seedless uniform form; integer tensors must give maxval.
template <class T = float>
struct uniform_options {
  T minval = T(0);                         ///< smallest value (inclusive)
  std::optional<T> maxval = std::nullopt;  ///< bound (exclusive); 1 when absent for floating tensors
};

namespace detail {

/// Four 32-bit words: a Philox counter or output block.
using block = std::array<std::uint32_t, 4>;
/// Two 32-bit words: a Philox key.
using key = std::array<std::uint32_t, 2>;

/// Philox-4x32-10 (Note [random numbers]): 128 random bits for a counter and a key.
constexpr block philox4x32_10(block ctr, key k) noexcept {
  constexpr std::uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;  // round multipliers
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;  // key increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += w0;
      k[1] += w1;
    }
    const std::uint64_t p0 = m0 * ctr[0];
    const std::uint64_t p1 = m1 * ctr[2];
    ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ k[0], static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ k[1], static_cast<std::uint32_t>(p0)};
  }
  return ctr;
}

/// One step of SplitMix64: advances `state` and returns the next output.
constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Which distribution a block feeds, so that one seed gives unrelated values to each.
enum class stream : std::uint32_t { uniform = 0, normal = 1, truncated_normal = 2 };

/// The block for element i of a draw with `seed`.
constexpr block draw(std::uint64_t seed, std::uint64_t i, std::uint32_t attempt, stream s) noexcept {
  return philox4x32_10({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), attempt,
                        static_cast<std::uint32_t>(s)},
                       {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
}

/// 64 bits from two words, the first the high half.
constexpr std::uint64_t join(std::uint32_t hi, std::uint32_t lo) noexcept {
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

/// A fraction in [0, 1) from 53 random bits.
constexpr double unit53(std::uint64_t bits) noexcept { return static_cast<double>(bits >> 11) * 0x1p-53; }

/// The normals one block gives (Note [random numbers]): 4 for float, 2 for double; returns the count.
template <class T>
std::size_t block_normals(const block& b, std::array<double, 4>& z) {
  constexpr double two_pi = 2 * std::numbers::pi;
  auto pair = [&](double u1, double u2, std::size_t at) {
    const double r = std::sqrt(-2 * std::log(u1));
    z[at] = r * std::cos(two_pi * u2);
    z[at + 1] = r * std::sin(two_pi * u2);
  };
  if constexpr (std::same_as<T, float>) {
    // u1 = (w + 1/2) / 2^32 lies in (0, 1), so the logarithm is finite.
    pair((b[0] + 0.5) * 0x1p-32, b[1] * 0x1p-32, 0);
    pair((b[2] + 0.5) * 0x1p-32, b[3] * 0x1p-32, 2);
    return 4;
  } else {
    pair(unit53(join(b[0], b[1])) + 0x1p-54, unit53(join(b[2], b[3])), 0);
    return 2;
  }
}

/// A tensor of shape s whose element i is f(i), computed on the host and placed on the default
/// device (fg::device_scope): the values do not depend on the device.
template <class T, class F>
tensor<T> generate(const fg::shape& s, const char* op, F f) {
  tensor<T> t(s, fg::device::cpu(), op);  // checks the size (Note [checked sizes])
  const std::size_t n = t.size();
  T* out = t.buffer()->data;
  for (std::size_t i = 0; i < n; ++i) out[i] = f(static_cast<std::uint64_t>(i));
  return t.to(default_device());
}

/// False for every T: lets a static_assert fire only when its template is used.
template <class T> inline constexpr bool always_false = false;

/// The state of this thread's generator: SplitMix64's state, started at the thread's seed.
inline std::uint64_t& thread_state() {
  thread_local std::uint64_t state = default_seed;
  return state;
}
/// The seed for the next seedless draw on this thread.
inline std::uint64_t next_seed() { return splitmix64(thread_state()); }

/// Checks normal parameters: finite mean, finite stddev >= 0; float or double only.
template <class T>
void check_normal(T mean, T stddev, const char* op) {
  static_assert(std::floating_point<T>,
                "fg::random: normal and truncated_normal make float or double tensors; for integers use "
                "fg::random::uniform<int32_t>(shape, seed, minval, maxval) or fg::cast a float draw");
  FG_CHECK(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0, value_error, "fg::random::", op,
           ": mean (", mean, ") must be finite and stddev (", stddev, ") finite and at least 0");
}

/// Checks uniform bounds: minval < maxval, finite for floating types.
template <class T>
void check_uniform(T minval, T maxval) {
  static_assert(std::floating_point<T> || std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t>,
                "fg::random::uniform makes float, double, int32_t or int64_t tensors");
  if constexpr (std::floating_point<T>) {
    FG_CHECK(std::isfinite(minval) && std::isfinite(maxval), value_error,
             "fg::random::uniform: minval (", minval, ") and maxval (", maxval, ") must be finite");
    FG_CHECK(std::isfinite(static_cast<double>(maxval) - static_cast<double>(minval)), value_error,
             "fg::random::uniform: the range [", minval, ", ", maxval, ") is wider than a double can hold");
  }
  FG_CHECK(minval < maxval, value_error, "fg::random::uniform: minval (", minval, ") must be less than maxval (",
           maxval, "); values are drawn from [minval, maxval)");
}

/// Normal values for checked parameters (Note [random numbers]).
template <class T>
tensor<T> normal_unchecked(const fg::shape& s, std::uint64_t seed, T mean, T stddev) {
  return generate<T>(s, "random::normal", [=](std::uint64_t i) {
    std::array<double, 4> z{};
    block_normals<T>(draw(seed, i, 0, stream::normal), z);
    return static_cast<T>(std::fma(static_cast<double>(stddev), z[0], static_cast<double>(mean)));
  });
}

/// Truncated normal values for checked parameters: the first |z| < 2 of each element's blocks.
template <class T>
tensor<T> truncated_normal_unchecked(const fg::shape& s, std::uint64_t seed, T mean, T stddev) {
  return generate<T>(s, "random::truncated_normal", [=](std::uint64_t i) {
    std::array<double, 4> z{};
    for (std::uint32_t attempt = 0;; ++attempt) {
      const std::size_t count = block_normals<T>(draw(seed, i, attempt, stream::truncated_normal), z);
      for (std::size_t j = 0; j < count; ++j)
        if (std::fabs(z[j]) < 2)
          return static_cast<T>(std::fma(static_cast<double>(stddev), z[j], static_cast<double>(mean)));
    }
  });
}

/// Uniform values for checked bounds (Note [random numbers]).
template <class T>
tensor<T> uniform_unchecked(const fg::shape& s, std::uint64_t seed, T minval, T maxval) {
  if constexpr (std::floating_point<T>) {
    const double lo = minval, width = static_cast<double>(maxval) - lo;
    const T below_max = std::nextafter(maxval, minval);
    return generate<T>(s, "random::uniform", [=](std::uint64_t i) {
      const block b = draw(seed, i, 0, stream::uniform);
      const double u = std::same_as<T, float> ? (b[0] >> 8) * 0x1p-24 : unit53(join(b[0], b[1]));
      const T v = static_cast<T>(std::fma(u, width, lo));
      return v < maxval ? v : below_max;
    });
  } else {
    // Unsigned arithmetic: maxval - minval may exceed the signed range (int64 bounds far apart).
    const std::uint64_t lo = static_cast<std::uint64_t>(static_cast<std::int64_t>(minval));
    const std::uint64_t r = static_cast<std::uint64_t>(static_cast<std::int64_t>(maxval)) - lo;
    const std::uint64_t reject_below = (0 - r) % r;  // (2^64 - r) mod r
    return generate<T>(s, "random::uniform", [=](std::uint64_t i) {
      for (std::uint32_t attempt = 0;; ++attempt) {
        const block b = draw(seed, i, attempt, stream::uniform);
        for (const std::uint64_t x : {join(b[0], b[1]), join(b[2], b[3])})
          if (x >= reject_below) return static_cast<T>(static_cast<std::int64_t>(lo + x % r));
      }
    });
  }
}
}  // namespace detail

/// Seeds this thread's generator, which the forms without a seed draw from, and restarts it.
inline void set_seed(std::uint64_t seed) noexcept { detail::thread_state() = seed; }

/// Normal values (tf.random.normal); the same seed always gives the same tensor.
template <class T = float>
tensor<T> normal(const fg::shape& s, std::uint64_t seed, T mean = T(0), T stddev = T(1)) {
  detail::check_normal(mean, stddev, "normal");
  return detail::normal_unchecked(s, seed, mean, stddev);
}
/// Normal values from this thread's generator (see set_seed).
template <class T = float>
tensor<T> normal(const fg::shape& s, normal_options<T> o = {}) {
  detail::check_normal(o.mean, o.stddev, "normal");
  return detail::normal_unchecked(s, detail::next_seed(), o.mean, o.stddev);
}

/// Normal values with those beyond 2 stddev from the mean redrawn (tf.random.truncated_normal).
template <class T = float>
tensor<T> truncated_normal(const fg::shape& s, std::uint64_t seed, T mean = T(0), T stddev = T(1)) {
  detail::check_normal(mean, stddev, "truncated_normal");
  return detail::truncated_normal_unchecked(s, seed, mean, stddev);
}
/// Truncated normal values from this thread's generator (see set_seed).
template <class T = float>
tensor<T> truncated_normal(const fg::shape& s, normal_options<T> o = {}) {
  detail::check_normal(o.mean, o.stddev, "truncated_normal");
  return detail::truncated_normal_unchecked(s, detail::next_seed(), o.mean, o.stddev);
}

/// Uniform values in [minval, maxval) (tf.random.uniform), floating tensors.
template <class T = float>
  requires std::floating_point<T>
tensor<T> uniform(const fg::shape& s, std::uint64_t seed, T minval = T(0), T maxval = T(1)) {
  detail::check_uniform(minval, maxval);
  return detail::uniform_unchecked(s, seed, minval, maxval);
}
/// Uniform integers in [minval, maxval), every value equally likely.
template <class T>
  requires(!std::floating_point<T>)
tensor<T> uniform(const fg::shape& s, std::uint64_t seed, T minval, T maxval) {
  detail::check_uniform(minval, maxval);
  return detail::uniform_unchecked(s, seed, minval, maxval);
}
/// Integer tensors need maxval, as in TensorFlow; this overload only says so.
template <class T>
  requires(!std::floating_point<T>)
tensor<T> uniform(const fg::shape&, std::uint64_t, T = T(0)) {
  static_assert(detail::always_false<T>,
                "fg::random::uniform: integer tensors need maxval: uniform<int32_t>(shape, seed, minval, maxval)");
  return {};
}
/// Uniform values in [0, 1) from this thread's generator (see set_seed); floating tensors.
template <class T = float>
tensor<T> uniform(const fg::shape& s) {
  static_assert(std::floating_point<T>,
                "fg::random::uniform: integer tensors need maxval: "
                "uniform<int32_t>(shape, {.minval = 0, .maxval = 10})");
  return detail::uniform_unchecked(s, detail::next_seed(), T(0), T(1));
}
/// Uniform values in [o.minval, o.maxval) from this thread's generator (see set_seed).
template <class T = float>
tensor<T> uniform(const fg::shape& s, uniform_options<T> o) {
  if constexpr (!std::floating_point<T>)
    FG_CHECK(o.maxval.has_value(), value_error,
             "fg::random::uniform: integer tensors need maxval, as in "
             "uniform<int32_t>(shape, {.minval = 0, .maxval = 10})");
  const T maxval = o.maxval.value_or(T(1));
  detail::check_uniform(o.minval, maxval);
  return detail::uniform_unchecked(s, detail::next_seed(), o.minval, maxval);
}
}  // namespace fusegrad::random
