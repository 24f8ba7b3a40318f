#pragma once
/// \file fg::device: where a tensor's buffer lives, and fg::device_scope, the tf.device of fusegrad.

#include <limits>
#include <ostream>
#include <string>
#include <string_view>

#include "error.hpp"

namespace fusegrad {

/// A memory space: the host ("/cpu:0") or one GPU ("/gpu:N").
struct device {
  enum class kind { cpu, gpu };
  kind type = kind::cpu;
  int index = 0;

  /// The host.
  static constexpr device cpu() { return {kind::cpu, 0}; }
  /// GPU number n.
  static constexpr device gpu(int n = 0) { return {kind::gpu, n}; }
  /// Parses "/cpu:0", "/gpu:1", "gpu", "/device:GPU:0" (TensorFlow's spellings, any case);
  /// anything else (an index that is not a number or does not fit an int, a host index other
  /// than 0, trailing text) throws fg::device_error naming the string.
  static device parse(std::string_view s) {
    const auto fail = [&](const char* why) {
      return device_error(core::cat("fg::device: cannot parse '", s, "': ", why,
                                    "; expected \"/cpu:0\" or \"/gpu:N\""));
    };
    std::string t;
    for (char c : s) t += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (t.starts_with("/device:")) t = "/" + t.substr(8);
    if (!t.starts_with("/")) t = "/" + t;
    const bool host = t.starts_with("/cpu");
    if (!host && !t.starts_with("/gpu")) throw fail("unknown device type");
    const std::string_view rest = std::string_view(t).substr(4);
    int n = 0;
    if (!rest.empty()) {
      if (rest[0] != ':' || rest.size() == 1) throw fail("the device type must be followed by ':' and an index");
      for (const char c : rest.substr(1)) {
        if (c < '0' || c > '9') throw fail("the index is not a decimal number");
        const int d = c - '0';
        if (n > (std::numeric_limits<int>::max() - d) / 10) throw fail("the index is too large");
        n = n * 10 + d;
      }
    }
    if (host) {
      if (n != 0) throw fail("there is one host device, /cpu:0");
      return cpu();
    }
    return gpu(n);
  }
  bool is_cpu() const noexcept { return type == kind::cpu; }
  bool is_gpu() const noexcept { return type == kind::gpu; }
  friend bool operator==(const device&, const device&) = default;
  /// "/cpu:0" or "/gpu:N".
  std::string str() const { return (is_cpu() ? "/cpu:" : "/gpu:") + std::to_string(index); }
  friend std::ostream& operator<<(std::ostream& os, const device& d) { return os << d.str(); }
};

namespace core {
inline device& current_device_ref() {
  thread_local device d = device::cpu();
  return d;
}
}  // namespace core

/// The device new tensors land on in this thread (set by fg::device_scope).
inline device default_device() { return core::current_device_ref(); }

/// Places new tensors and op results on a device while alive, like `with tf.device(...)`.
class device_scope {
 public:
  explicit device_scope(device d) : saved_(core::current_device_ref()) {
    core::current_device_ref() = d;
  }
  explicit device_scope(std::string_view s) : device_scope(device::parse(s)) {}
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;
  ~device_scope() { core::current_device_ref() = saved_; }

 private:
  device saved_;
};
}  // namespace fusegrad
