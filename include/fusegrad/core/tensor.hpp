#pragma once
/// \file fg::tensor<T>: an immutable, eagerly evaluated n-d array whose copies share one buffer.

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include "fwd.hpp"
#include "device.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "integer.hpp"
#include "shape.hpp"
#include "storage.hpp"

namespace fusegrad {

namespace core {
/// Note [integer scalars]: a C++ integer that becomes an element of an integer tensor (a tensor
/// made from it, or the scalar operand of an op such as `x + 3000000000LL`) must fit the
/// tensor's element type: where C++ would narrow it silently, fusegrad throws fg::value_error
/// naming the op, the value and the dtype, as TensorFlow raises TypeError. The check compiles to
/// nothing when every value of the scalar's type fits (an int meeting an int32 or int64 tensor),
/// and floating-point tensors take any integer (rounded to the nearest representable value).
template <class T, class S>
constexpr T checked_integer(S v, const char* op) {
  if constexpr (std::is_integral_v<S> && std::is_integral_v<T> && !std::is_same_v<S, bool> &&
                !std::is_same_v<T, bool>) {
    using W = std::conditional_t<std::is_signed_v<S>, long long, unsigned long long>;  // also for char types
    using L = std::numeric_limits<T>;
    if constexpr (std::cmp_less(W(std::numeric_limits<S>::min()), L::min()) ||
                  std::cmp_greater(W(std::numeric_limits<S>::max()), L::max())) {
      if (!std::in_range<T>(W(v))) [[unlikely]]
        throw value_error(cat("fg::", op, ": the C++ integer ", W(v), " does not fit dtype ", name(dtype_of<T>()),
                              " (", L::min(), " to ", L::max(),
                              "); use a wider element type, for example fg::cast<std::int64_t>(x)"));
    }
  }
  return static_cast<T>(v);
}

template <class T, class L>
void nested_shape(const L& l, shape& s, std::size_t depth) {
  if constexpr (!std::is_same_v<L, T>) {
    if (s.rank() == depth) s.push_back(l.size());
    FG_CHECK(s[depth] == l.size(), shape_error, "fg::tensor: ragged nested initializer list (dimension ",
             depth, " has lengths ", s[depth], " and ", l.size(), ")");
    for (const auto& sub : l) nested_shape<T>(sub, s, depth + 1);
  }
}
template <class U, class L, class T>
void nested_copy(const L& l, T*& out) {
  if constexpr (std::is_same_v<L, U>) *out++ = checked_integer<T>(l, "tensor");
  else
    for (const auto& sub : l) nested_copy<U>(sub, out);
}

/// A list element type U that may fill a tensor of T: the same type, or an arithmetic type that
/// converts without turning a floating value into an integer or bool.
template <class U, class T>
concept list_element = std::same_as<U, T> || (std::is_arithmetic_v<U> && !std::same_as<U, bool> &&
                                               !std::same_as<T, bool> &&
                                               !(std::is_floating_point_v<U> && !std::is_floating_point_v<T>));
}  // namespace core

// Note [moved-from objects]: a moved-from tensor is the undefined tensor (no buffer, the empty
// shape, id 0), so it can never stand for the value it gave away, not even as a gradient
// target or source. Every operation that needs a value throws fg::value_error naming itself
// (an op when it takes its operands, item() and numpy() through require_host, reshape, the tape's
// watch and gradient); `defined()` says false, and printing writes `tensor(undefined)`, as
// for an unconnected gradient. A moved-from fg::variable holds no state: each of its members
// throws fg::value_error naming itself (autodiff/variable.hpp).

/// An immutable n-d array of T with a dynamic shape, on a device; copies share the buffer.
template <class T>
class tensor {
  static_assert(element_type<T>, "fg::tensor<T>: T must be float, double, int32_t, int64_t or bool");

 public:
  using value_type = T;

  /// An undefined tensor (what a gradient with no connection returns); `defined()` is false.
  tensor() = default;
  tensor(const tensor&) = default;
  tensor& operator=(const tensor&) = default;
  /// Moving leaves the source undefined (Note [moved-from objects]).
  tensor(tensor&& o) noexcept : buf_(std::move(o.buf_)), shape_(o.shape_), id_(std::exchange(o.id_, 0)) {
    o.shape_ = {};
  }
  tensor& operator=(tensor&& o) noexcept {
    if (this != &o) {
      buf_ = std::move(o.buf_);
      shape_ = o.shape_;
      id_ = std::exchange(o.id_, 0);
      o.shape_ = {};
    }
    return *this;
  }

  /// A rank-0 tensor holding v (`fg::tensor<float> x = 3.0f;`).
  tensor(T v) : tensor(fg::shape{}, fg::device::cpu()) {  // NOLINT: implicit like tf.constant
    *buf_->data = v;
    place_new();
  }
  /// A rank-0 tensor from another arithmetic scalar; a floating scalar cannot make an integer tensor.
  template <class U>
    requires(std::is_arithmetic_v<U> && !std::same_as<U, T> && !std::same_as<U, bool> &&
             !(std::floating_point<U> && !std::floating_point<T>) && !std::same_as<T, bool>)
  tensor(U v) : tensor(core::checked_integer<T>(v, "tensor")) {}  // NOLINT: Note [integer scalars]

  /// From nested initializer lists: `fg::tensor<int> x = {{1, 2}, {3, 4}};`. The element type is
  /// deduced, so a braced element (`{{2.f}}`) is never read as a scalar: no ambiguity between ranks.
  template <class U> requires core::list_element<U, T>
  tensor(std::initializer_list<U> l) { from_list<U>(l); }
  template <class U> requires core::list_element<U, T>
  tensor(std::initializer_list<std::initializer_list<U>> l) { from_list<U>(l); }
  template <class U> requires core::list_element<U, T>
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<U>>> l) { from_list<U>(l); }
  template <class U> requires core::list_element<U, T>
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<U>>>> l) { from_list<U>(l); }
  template <class U> requires core::list_element<U, T>
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<U>>>>> l) { from_list<U>(l); }

  /// Copies `s.elements()` values from `data` (a raw row-major buffer).
  tensor(const fg::shape& s, const T* data) : tensor(s, device::cpu()) {
    std::copy(data, data + size(), buf_->data);
  }
  /// Takes the values of a std::vector laid out row-major in shape s.
  tensor(const fg::shape& s, const std::vector<T>& v) : tensor(s, device::cpu()) {
    FG_CHECK(v.size() == size(), shape_error, "fg::tensor: ", v.size(), " values cannot fill shape ", s,
             " (", s.elements(), " elements)");
    std::copy(v.begin(), v.end(), buf_->data);
  }
  /// Evaluates an xtensor expression or container (xt::xarray, xt::xtensor, views...).
  template <class E>
  tensor(const xt::xexpression<E>& e) {  // NOLINT: implicit, like numpy arrays into tf
    const auto& d = e.derived_cast();
    fg::shape s(d.shape().begin(), d.shape().end());
    *this = tensor(s, device::cpu());
    auto out = xt::adapt(buf_->data, size(), xt::no_ownership(), d.shape());
    out = d;
  }
  /// Evaluates a lazy expression: the whole elementwise chain runs in one fused pass.
  template <expression E>
  tensor(const E& e);  // NOLINT: defined in eager/evaluate.hpp
  /// Reads a variable's current value.
  tensor(const variable<T>& v);  // NOLINT: defined in autodiff/variable.hpp

  /// An uninitialised tensor of shape s on d (evaluators fill it before anyone sees it); a
  /// shape too large to count throws, naming `op` (Note [checked sizes]).
  tensor(const fg::shape& s, device d, const char* op = "tensor")
      : buf_(core::make_storage<T>(core::checked_bytes(s, sizeof(T), op) / sizeof(T), d)), shape_(s),
        id_(core::next_id()) {}
  /// A tensor over an existing buffer with a given identity (internal: views, variables).
  tensor(std::shared_ptr<core::storage<T>> b, const fg::shape& s, tensor_id id)
      : buf_(std::move(b)), shape_(s), id_(id) {}

  /// False for the undefined tensor (no buffer).
  bool defined() const noexcept { return static_cast<bool>(buf_); }
  const fg::shape& shape() const noexcept { return shape_; }
  std::size_t rank() const noexcept { return shape_.rank(); }
  /// Number of elements.
  std::size_t size() const noexcept { return shape_.elements(); }
  /// The element type's tag.
  static constexpr fg::dtype dtype() noexcept { return dtype_of<T>(); }
  /// Where the buffer lives.
  fg::device device() const noexcept { return buf_ ? buf_->dev : fg::device::cpu(); }
  /// Pointer to the first element (host or device memory, see device()).
  const T* data() const noexcept { return buf_ ? buf_->data : nullptr; }
  /// The identity gradient tapes know this value by.
  tensor_id id() const noexcept { return id_; }
  /// The shared buffer (internal).
  const std::shared_ptr<core::storage<T>>& buffer() const noexcept { return buf_; }

  /// The single element of a one-element tensor.
  T item() const {
    require_host("item");
    FG_CHECK(size() == 1, value_error, "fg::tensor::item: only one-element tensors convert to a scalar; this one has shape ",
             shape_, " (", size(), " elements)");
    return *buf_->data;
  }
  /// A copy of the values as an xtensor array (TensorFlow's `.numpy()`).
  xt::xarray<T> numpy() const {
    require_host("numpy");
    std::vector<std::size_t> s(shape_.begin(), shape_.end());
    xt::xarray<T> a = xt::adapt(buf_->data, size(), xt::no_ownership(), s);
    return a;
  }
  /// A zero-copy, read-only xtensor view of a host tensor's buffer.
  auto xview() const {
    require_host("xview");
    std::vector<std::size_t> s(shape_.begin(), shape_.end());
    return xt::adapt(static_cast<const T*>(buf_->data), size(), xt::no_ownership(), s);
  }
  /// Truth value of a one-element tensor (`if (x > 0)`); ambiguous for more elements.
  explicit operator bool() const {
    FG_CHECK(size() == 1, value_error, "the truth value of a tensor with ", size(), " elements (shape ", shape_,
             ") is ambiguous; use fg::reduce_any or fg::reduce_all");
    return static_cast<bool>(item());
  }
  /// The value of a one-element tensor as a C++ scalar (`int(num % 3)`). A floating value
  /// truncates toward zero; NaN, infinities and values outside an integer type's range give its
  /// minimum (INT_MIN for int, 0 for an unsigned type), as fg::cast does (Note [float to
  /// integer], Note [float to unsigned]).
  template <class U>
    requires(std::is_arithmetic_v<U> && !std::same_as<U, bool>)
  explicit operator U() const {
    if constexpr (std::is_floating_point_v<T> && core::signed_integer<U>) return core::float_to_integer<U>(item());
    else if constexpr (std::is_floating_point_v<T> && core::unsigned_integer<U>) return core::float_to_unsigned<U>(item());
    else return static_cast<U>(item());
  }

  /// Same values on the host.
  tensor cpu() const;
  /// Same values on GPU n.
  tensor gpu(int n = 0) const;
  /// Same values on device d.
  tensor to(fg::device d) const;

  /// Indexing and slicing (`x(1, 2)`, `x(fg::slice(0, 2), fg::all())`); defined in eager/indexing.hpp.
  template <class... I>
  tensor operator()(const I&... idx) const;

 private:
  /// Moves a tensor just made from C++ values to the default device (fg::device_scope).
  void place_new() {
    if (const fg::device d = default_device(); d.is_gpu()) *this = to(d);
  }
  void require_host(const char* what) const {
    FG_CHECK(defined(), value_error, "fg::tensor::", what, ": the tensor is undefined (an unconnected gradient?)");
    FG_CHECK(device().is_cpu(), device_error, "fg::tensor::", what, ": tensor is on ", device().str(),
             "; call .cpu() first");
  }
  template <class U, class L>
  void from_list(const L& l) {
    fg::shape s;
    core::nested_shape<U>(l, s, 0);
    *this = tensor(s, fg::device::cpu());
    T* out = buf_->data;
    core::nested_copy<U>(l, out);
    place_new();
  }

  std::shared_ptr<core::storage<T>> buf_;
  fg::shape shape_;
  tensor_id id_ = 0;
};

template <class T>
tensor<T> tensor<T>::to(fg::device d) const {
  FG_CHECK(defined(), value_error, "fg::tensor::to: the tensor is undefined");
  if (d == device()) return *this;
  tensor r(shape_, d);
  core::copy_between(r.buf_->data, d, buf_->data, device(), size() * sizeof(T));
  return r;
}
template <class T> tensor<T> tensor<T>::cpu() const { return to(fg::device::cpu()); }
template <class T> tensor<T> tensor<T>::gpu(int n) const { return to(fg::device::gpu(n)); }

template <class T> tensor(T) -> tensor<T>;
template <class T> tensor(std::initializer_list<T>) -> tensor<T>;
template <class T> tensor(std::initializer_list<std::initializer_list<T>>) -> tensor<T>;
}  // namespace fusegrad
