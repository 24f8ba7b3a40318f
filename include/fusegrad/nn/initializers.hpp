#pragma once
/// \file fg::nn::initializers: the initial values of a layer's variables, Keras 3's initializers
/// with its defaults and its names (a layer takes a name, "glorot_uniform", or an initializer
/// object, `he_normal({.seed = 3})`). The variance-scaling family (glorot_*, he_*, lecun_*)
/// computes fan_in and fan_out as Keras does (a kernel of shape (..., in, out) has fan_in =
/// in * the product of the leading dimensions, its receptive field) and draws from fg::random:
/// uniform in [-limit, limit), limit = sqrt(3 scale / n), or a normal with those beyond two
/// standard deviations redrawn and the standard deviation divided by 0.87962566103423978 (the
/// standard deviation of a unit normal so truncated), so that the values have variance scale / n.
/// Without a seed an initializer draws from this thread's generator (fg::random::set_seed);
/// with one, it gives the same values every time.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "../core/random.hpp"
#include "../eager/evaluate.hpp"
#include "../eval/creation.hpp"

namespace fusegrad::nn::initializers {

/// Keras' compute_fans: fan_in and fan_out of a variable of shape s.
struct fans {
  double in = 1, out = 1;
};
inline fans compute_fans(const fg::shape& s) {
  if (s.rank() == 0) return {};
  if (s.rank() == 1) return {static_cast<double>(s[0]), static_cast<double>(s[0])};
  double receptive = 1;
  for (std::size_t d = 0; d + 2 < s.rank(); ++d) receptive *= static_cast<double>(s[d]);
  return {static_cast<double>(s[s.rank() - 2]) * receptive, static_cast<double>(s[s.rank() - 1]) * receptive};
}

/// The options of a variance-scaling initializer.
struct seed_options {
  std::optional<std::uint64_t> seed = {};
};
/// The options of random_normal and truncated_normal (Keras' defaults).
struct normal_options {
  double mean = 0.0, stddev = 0.05;
  std::optional<std::uint64_t> seed = {};
};
/// The options of random_uniform (Keras' defaults).
struct uniform_options {
  double minval = -0.05, maxval = 0.05;
  std::optional<std::uint64_t> seed = {};
};

/// An initializer: what it draws, and from which seed. Built from Keras' name or by the
/// functions below.
class initializer {
 public:
  enum class kind { zeros, ones, constant, random_normal, random_uniform, truncated_normal, variance_scaling };
  enum class mode { fan_in, fan_out, fan_avg };
  enum class distribution { truncated_normal, untruncated_normal, uniform };

  /// The initializer Keras names `name` with its default options: "zeros", "ones",
  /// "random_normal", "random_uniform", "truncated_normal", "glorot_uniform", "glorot_normal",
  /// "he_normal", "he_uniform", "lecun_normal", "lecun_uniform".
  initializer(const char* name) : initializer(std::string(name)) {}  // NOLINT: Keras passes names
  initializer(const std::string& name);                             // NOLINT
  /// Every element `value` (Keras' Constant).
  static initializer constant(double value) {
    initializer i;
    i.kind_ = kind::constant;
    i.a_ = value;
    return i;
  }
  static initializer random_normal(normal_options o) { return drawn(kind::random_normal, o.mean, o.stddev, o.seed); }
  static initializer truncated_normal(normal_options o) {
    return drawn(kind::truncated_normal, o.mean, o.stddev, o.seed);
  }
  static initializer random_uniform(uniform_options o) {
    FG_CHECK(o.minval < o.maxval, value_error, "fg::nn::initializers::random_uniform: minval ", o.minval,
             " is not below maxval ", o.maxval);
    return drawn(kind::random_uniform, o.minval, o.maxval, o.seed);
  }
  /// Keras' VarianceScaling: variance scale / n, n the fan `m` says (at least 1).
  static initializer variance_scaling(double scale, mode m, distribution d, std::optional<std::uint64_t> seed) {
    FG_CHECK(scale > 0, value_error, "fg::nn::initializers::variance_scaling: scale must be positive, got ", scale);
    initializer i;
    i.kind_ = kind::variance_scaling;
    i.a_ = scale;
    i.mode_ = m;
    i.dist_ = d;
    i.seed_ = seed;
    return i;
  }

  /// Initial values of shape s and element type T.
  template <class T>
  tensor<T> operator()(const fg::shape& s) const {
    switch (kind_) {
      case kind::zeros: return fusegrad::zeros<T>(s);
      case kind::ones: return fusegrad::ones<T>(s);
      case kind::constant: return fusegrad::fill<T>(s, static_cast<T>(a_));
      case kind::random_normal: return normal<T>(s, a_, b_);
      case kind::truncated_normal: return truncated<T>(s, a_, b_);
      case kind::random_uniform: return uniform<T>(s, a_, b_);
      case kind::variance_scaling: break;
    }
    const fans f = compute_fans(s);
    const double n = mode_ == mode::fan_in ? f.in : mode_ == mode::fan_out ? f.out : (f.in + f.out) / 2;
    const double scale = a_ / std::max(1.0, n);
    switch (dist_) {
      case distribution::truncated_normal: return truncated<T>(s, 0.0, std::sqrt(scale) / 0.87962566103423978);
      case distribution::untruncated_normal: return normal<T>(s, 0.0, std::sqrt(scale));
      case distribution::uniform: break;
    }
    const double limit = std::sqrt(3.0 * scale);
    return uniform<T>(s, -limit, limit);
  }

  kind what() const noexcept { return kind_; }

 private:
  initializer() = default;
  static initializer drawn(kind k, double a, double b, std::optional<std::uint64_t> seed) {
    initializer i;
    i.kind_ = k;
    i.a_ = a;
    i.b_ = b;
    i.seed_ = seed;
    return i;
  }
  template <class T>
  tensor<T> normal(const fg::shape& s, double mean, double stddev) const {
    if (seed_) return fusegrad::random::normal<T>(s, *seed_, static_cast<T>(mean), static_cast<T>(stddev));
    return fusegrad::random::normal<T>(s, {.mean = static_cast<T>(mean), .stddev = static_cast<T>(stddev)});
  }
  template <class T>
  tensor<T> truncated(const fg::shape& s, double mean, double stddev) const {
    if (seed_) return fusegrad::random::truncated_normal<T>(s, *seed_, static_cast<T>(mean), static_cast<T>(stddev));
    return fusegrad::random::truncated_normal<T>(s, {.mean = static_cast<T>(mean), .stddev = static_cast<T>(stddev)});
  }
  template <class T>
  tensor<T> uniform(const fg::shape& s, double lo, double hi) const {
    if (seed_) return fusegrad::random::uniform<T>(s, *seed_, static_cast<T>(lo), static_cast<T>(hi));
    return fusegrad::random::uniform<T>(s, {.minval = static_cast<T>(lo), .maxval = static_cast<T>(hi)});
  }

  kind kind_ = kind::zeros;
  double a_ = 0, b_ = 0;  ///< constant; mean and stddev; minval and maxval; scale
  mode mode_ = mode::fan_avg;
  distribution dist_ = distribution::uniform;
  std::optional<std::uint64_t> seed_;
};

inline initializer zeros() { return "zeros"; }
inline initializer ones() { return "ones"; }
inline initializer constant(double value) { return initializer::constant(value); }
inline initializer random_normal(normal_options o = {}) { return initializer::random_normal(o); }
inline initializer truncated_normal(normal_options o = {}) { return initializer::truncated_normal(o); }
inline initializer random_uniform(uniform_options o = {}) { return initializer::random_uniform(o); }
/// Uniform, variance 1 / ((fan_in + fan_out) / 2): Keras' default kernel initializer.
inline initializer glorot_uniform(seed_options o = {}) {
  return initializer::variance_scaling(1.0, initializer::mode::fan_avg, initializer::distribution::uniform, o.seed);
}
inline initializer glorot_normal(seed_options o = {}) {
  return initializer::variance_scaling(1.0, initializer::mode::fan_avg, initializer::distribution::truncated_normal,
                                       o.seed);
}
inline initializer he_normal(seed_options o = {}) {
  return initializer::variance_scaling(2.0, initializer::mode::fan_in, initializer::distribution::truncated_normal,
                                       o.seed);
}
inline initializer he_uniform(seed_options o = {}) {
  return initializer::variance_scaling(2.0, initializer::mode::fan_in, initializer::distribution::uniform, o.seed);
}
inline initializer lecun_normal(seed_options o = {}) {
  return initializer::variance_scaling(1.0, initializer::mode::fan_in, initializer::distribution::truncated_normal,
                                       o.seed);
}
inline initializer lecun_uniform(seed_options o = {}) {
  return initializer::variance_scaling(1.0, initializer::mode::fan_in, initializer::distribution::uniform, o.seed);
}

inline initializer::initializer(const std::string& name) {
  if (name == "zeros") *this = drawn(kind::zeros, 0, 0, std::nullopt);
  else if (name == "ones") *this = drawn(kind::ones, 0, 0, std::nullopt);
  else if (name == "random_normal") *this = initializers::random_normal();
  else if (name == "truncated_normal") *this = initializers::truncated_normal();
  else if (name == "random_uniform") *this = initializers::random_uniform();
  else if (name == "glorot_uniform") *this = initializers::glorot_uniform();
  else if (name == "glorot_normal") *this = initializers::glorot_normal();
  else if (name == "he_normal") *this = initializers::he_normal();
  else if (name == "he_uniform") *this = initializers::he_uniform();
  else if (name == "lecun_normal") *this = initializers::lecun_normal();
  else if (name == "lecun_uniform") *this = initializers::lecun_uniform();
  else
    throw value_error("fg::nn::initializers: unknown initializer '" + name +
                      "'; Keras' names: zeros, ones, random_normal, random_uniform, truncated_normal, "
                      "glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, lecun_uniform");
}
}  // namespace fusegrad::nn::initializers
