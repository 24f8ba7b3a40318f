#pragma once
/// \file A tensor of any element type, and one element of any type: what type-erased code
/// (programs, tape entries) passes around.

#include <cstdint>
#include <cstring>
#include <variant>

#include "tensor.hpp"

namespace fusegrad::core {

/// A tensor of one of fusegrad's element types, or nothing.
using any_tensor =
    std::variant<std::monostate, tensor<float>, tensor<double>, tensor<std::int32_t>, tensor<std::int64_t>, tensor<bool>>;

/// The shape of t (the scalar shape for nothing).
inline const fg::shape& shape_of(const any_tensor& t) {
  static const fg::shape none;
  return std::visit(
      [](const auto& x) -> const fg::shape& {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return none;
        else return x.shape();
      },
      t);
}
/// The device of t (the host for nothing).
inline fg::device device_of(const any_tensor& t) {
  return std::visit(
      [](const auto& x) {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return fg::device::cpu();
        else return x.device();
      },
      t);
}
/// The first element's address of t (null for nothing).
inline const void* data_of(const any_tensor& t) {
  return std::visit(
      [](const auto& x) -> const void* {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return nullptr;
        else return x.data();
      },
      t);
}
/// The identity of t (0 for nothing).
inline tensor_id id_of(const any_tensor& t) {
  return std::visit(
      [](const auto& x) -> tensor_id {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return 0;
        else return x.id();
      },
      t);
}

/// A new tensor of element type t and shape s on device d, uninitialised, with identity `id`
/// (a new one for 0).
inline any_tensor make_any_tensor(dtype t, const fg::shape& s, fg::device d = fg::device::cpu(), tensor_id id = 0) {
  any_tensor r;
  const auto make = [&]<class T>(std::type_identity<T>) {
    tensor<T> x(s, d);
    if (id != 0) x = tensor<T>(x.buffer(), s, id);
    r = std::move(x);
  };
  switch (t) {
    case dtype::float32: make(std::type_identity<float>{}); break;
    case dtype::float64: make(std::type_identity<double>{}); break;
    case dtype::int32: make(std::type_identity<std::int32_t>{}); break;
    case dtype::int64: make(std::type_identity<std::int64_t>{}); break;
    case dtype::boolean: make(std::type_identity<bool>{}); break;
  }
  return r;
}

/// Bytes per element of d.
constexpr std::size_t size_of(dtype d) noexcept {
  switch (d) {
    case dtype::float32: case dtype::int32: return 4;
    case dtype::float64: case dtype::int64: return 8;
    case dtype::boolean: return sizeof(bool);
  }
  return 8;
}

/// One element of any element type, held as its bytes (uninitialised until set: arrays of
/// cells are scratch space on hot paths).
struct cell {
  alignas(8) unsigned char bytes[8];
  template <class T> static cell of(T v) noexcept {
    cell c;
    std::memcpy(c.bytes, &v, sizeof(T));
    return c;
  }
  template <class T> T as() const noexcept {
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }
};
}  // namespace fusegrad::core
