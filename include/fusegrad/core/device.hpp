#pragma once
/// \file fg::device: where a tensor's buffer lives, and fg::device_scope, the tf.device of fusegrad.

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
  /// Parses "/cpu:0", "/gpu:1", "gpu", "/device:GPU:0" (TensorFlow's spellings).
  static device parse(std::string_view s) {
    std::string t;
    for (char c : s) t += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (t.starts_with("/device:")) t = "/" + t.substr(8);
    if (!t.starts_with("/")) t = "/" + t;
    auto num = [&](std::size_t pos) {
      if (pos >= t.size()) return 0;
      FG_CHECK(t[pos] == ':' && pos + 1 < t.size(), device_error, "fg::device: cannot parse '", s,
               "'; expected \"/cpu:0\" or \"/gpu:N\"");
      int n = 0;
      for (std::size_t i = pos + 1; i < t.size(); ++i) {
        FG_CHECK(t[i] >= '0' && t[i] <= '9', device_error, "fg::device: cannot parse '", s,
                 "'; expected \"/cpu:0\" or \"/gpu:N\"");
        n = n * 10 + (t[i] - '0');
      }
      return n;
    };
    if (t.starts_with("/cpu")) return cpu();
    FG_CHECK(t.starts_with("/gpu"), device_error, "fg::device: cannot parse '", s,
             "'; expected \"/cpu:0\" or \"/gpu:N\"");
    return gpu(num(4));
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
