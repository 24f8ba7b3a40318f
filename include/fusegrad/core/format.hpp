#pragma once
/// \file numpy-compatible text for tensor contents, as TensorFlow prints them inside `tf.Tensor(...)`.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fusegrad::core {

/// Element types the formatter knows how to print.
template <class T>
concept printable_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                            std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
                            std::is_same_v<T, bool>;

/// The TensorFlow dtype name for T: "float32", "float64", "int32", "int64", "bool".
template <class T>
constexpr std::string_view dtype_name() {
  static_assert(printable_element<T>, "dtype_name: unsupported element type");
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else return "bool";
}

namespace format_impl {

// numpy's default print options.
inline constexpr std::size_t max_fraction_digits = 8;  ///< precision=8 with floatmode='maxprec'
inline constexpr std::size_t threshold = 1000;         ///< arrays with more elements are summarised
inline constexpr std::size_t edge_items = 3;           ///< items kept at each edge of a summarised axis
inline constexpr std::ptrdiff_t line_width = 75;       ///< linewidth

/// Text of `value` from std::to_chars; `precision` < 0 asks for the shortest round-trip form.
template <class T>
std::string to_text(T value, std::chars_format fmt, int precision = -1) {
  // Large enough for any double in fixed notation (309 integer digits) plus fraction and sign.
  std::array<char, 512> buf{};
  const auto res = precision < 0
                       ? std::to_chars(buf.data(), buf.data() + buf.size(), value, fmt)
                       : std::to_chars(buf.data(), buf.data() + buf.size(), value, fmt, precision);
  return std::string(buf.data(), res.ptr);
}

/// A number split as numpy's formatter sees it: `integer.fraction[e exponent]`.
struct number_parts {
  std::string integer;   ///< sign and integer digits (the mantissa's, in scientific form)
  std::string fraction;  ///< digits after the decimal point, possibly empty
  char exponent_sign = '+';
  std::string exponent;  ///< exponent digits, at least two; empty in positional form
};

/// Splits to_chars text such as "-1.25e+07" or "3.5" into its parts.
inline number_parts split_number(std::string_view text) {
  number_parts parts;
  const auto e = text.find('e');
  if (e != std::string_view::npos) {
    parts.exponent_sign = text[e + 1];
    parts.exponent = std::string(text.substr(e + 2));
    text = text.substr(0, e);
  }
  const auto dot = text.find('.');
  parts.integer = std::string(text.substr(0, dot));
  if (dot != std::string_view::npos) parts.fraction = std::string(text.substr(dot + 1));
  return parts;
}

/// Drops trailing zeros of a fraction (numpy's trim='.' keeps the point itself).
inline void trim_zeros(std::string& fraction) {
  fraction.erase(fraction.find_last_not_of('0') + 1);
}

/// Shortest round-trip digits of a finite value in positional form. With `capped`, more than
/// eight fractional digits are replaced by the value rounded to eight, as floatmode='maxprec' does.
template <class T>
number_parts positional(T value, bool capped) {
  // Digits come from the scientific form: fixed-notation to_chars may print the exact binary
  // value of large numbers (e.g. float 99999992 instead of 99999990), while numpy pads the
  // shortest digits with zeros.
  const number_parts sci = split_number(to_text(value, std::chars_format::scientific));
  const bool negative = sci.integer.front() == '-';
  const std::string digits = sci.integer.substr(negative ? 1 : 0) + sci.fraction;
  int exponent = 0;
  std::from_chars(sci.exponent.data(), sci.exponent.data() + sci.exponent.size(), exponent);
  if (sci.exponent_sign == '-') exponent = -exponent;

  number_parts parts;
  if (exponent >= 0) {
    const auto int_digits = static_cast<std::size_t>(exponent) + 1;
    parts.integer = digits.substr(0, int_digits);
    parts.integer.append(int_digits - parts.integer.size(), '0');
    if (digits.size() > int_digits) parts.fraction = digits.substr(int_digits);
  } else {
    parts.integer = "0";
    parts.fraction = std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  }
  if (negative) parts.integer.insert(0, 1, '-');
  if (capped && parts.fraction.size() > max_fraction_digits) {
    // Rounding the exact binary value (not the shortest digits) matches numpy's Dragon4 cutoff.
    parts = split_number(to_text(value, std::chars_format::fixed, static_cast<int>(max_fraction_digits)));
    trim_zeros(parts.fraction);
  }
  return parts;
}

/// Shortest round-trip scientific form of a finite value, mantissa capped at eight fractional
/// digits with trailing zeros trimmed.
template <class T>
number_parts scientific(T value) {
  number_parts parts = split_number(to_text(value, std::chars_format::scientific));
  if (parts.fraction.size() > max_fraction_digits) {
    parts = split_number(to_text(value, std::chars_format::scientific, static_cast<int>(max_fraction_digits)));
    trim_zeros(parts.fraction);
  }
  return parts;
}

/// numpy's scalar str(): positional for 0 and 1e-4 <= |x| < cutoff (1e16 for double, 1e6 for
/// float since numpy 2.3), scientific otherwise, always the full shortest round-trip digits.
template <class T>
std::string format_scalar(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    std::array<char, 24> buf{};  // int64 needs at most 20 characters
    return std::string(buf.data(), std::to_chars(buf.data(), buf.data() + buf.size(), value).ptr);
  } else {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    // numpy compares in double for both float widths.
    const double magnitude = std::fabs(static_cast<double>(value));
    const double large = std::is_same_v<T, float> ? 1e6 : 1e16;
    if (magnitude == 0.0 || (1e-4 <= magnitude && magnitude < large)) {
      const number_parts parts = positional(value, false);
      return parts.integer + "." + (parts.fraction.empty() ? "0" : parts.fraction);
    }
    // Shortest scientific to_chars output already has numpy's form: "1e-05", "1.5e+20".
    return to_text(value, std::chars_format::scientific);
  }
}

/// Pads `text` on the left with spaces to `width` characters.
inline std::string pad_left(std::string text, std::size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

/// numpy's IntegerFormat: every element right-aligned to the widest shown element.
template <class T>
class int_formatter {
 public:
  explicit int_formatter(const std::vector<T>& shown) {
    for (T v : shown) width_ = std::max(width_, format_scalar(v).size());
  }
  std::string operator()(T value) const { return pad_left(format_scalar(value), width_); }

 private:
  std::size_t width_ = 0;
};

/// numpy's BoolFormat: " True" always carries the space so it lines up with "False".
class bool_formatter {
 public:
  explicit bool_formatter(const std::vector<bool>&) {}
  std::string operator()(bool value) const { return value ? " True" : "False"; }
};

/// numpy's FloatingFormat for floatmode='maxprec', suppress=False, sign='-'.
template <class T>
class float_formatter {
 public:
  explicit float_formatter(const std::vector<T>& shown) {
    std::vector<T> finite;
    bool has_non_finite = false;
    bool has_negative_inf = false;
    for (T v : shown) {
      if (std::isfinite(v)) finite.push_back(v);
      else has_non_finite = true;
      if (std::isinf(v) && v < 0) has_negative_inf = true;
    }
    choose_notation(finite);
    if (exponential_) {
      for (T v : finite) {
        const number_parts p = scientific(v);
        pad_left_ = std::max(pad_left_, p.integer.size());
        precision_ = std::max(precision_, p.fraction.size());
        exponent_digits_ = std::max(exponent_digits_, p.exponent.size());
      }
      // 'e' and the exponent sign besides the digits; numpy only uses it to size nan and inf.
      if (!finite.empty()) pad_right_ = exponent_digits_ + 2 + precision_;
    } else {
      for (T v : finite) {
        const number_parts p = positional(v, true);
        pad_left_ = std::max(pad_left_, p.integer.size());
        pad_right_ = std::max(pad_right_, p.fraction.size());
      }
    }
    if (has_non_finite) {
      // nan and inf are right-aligned in the full field, which they may widen.
      const std::size_t offset = pad_right_ + 1;
      const std::size_t longest = has_negative_inf ? 4 : 3;
      if (longest > offset) pad_left_ = std::max(pad_left_, longest - offset);
    }
  }

  std::string operator()(T value) const {
    const std::size_t width = pad_left_ + pad_right_ + 1;
    if (std::isnan(value)) return pad_left("nan", width);
    if (std::isinf(value)) return pad_left(value < 0 ? "-inf" : "inf", width);
    if (exponential_) {
      // numpy asks Dragon4 for at least `precision_` digits, which continues with the exact
      // binary value's digits (visible for float32) rather than padding with zeros.
      number_parts p = split_number(to_text(value, std::chars_format::scientific, static_cast<int>(precision_)));
      if (p.exponent.size() < exponent_digits_) p.exponent.insert(0, exponent_digits_ - p.exponent.size(), '0');
      return pad_left(p.integer, pad_left_) + "." + p.fraction + "e" + p.exponent_sign + p.exponent;
    }
    number_parts p = positional(value, true);
    p.fraction.append(pad_right_ - p.fraction.size(), ' ');
    return pad_left(p.integer, pad_left_) + "." + p.fraction;
  }

 private:
  /// numpy switches to scientific notation on the nonzero finite magnitudes alone.
  void choose_notation(const std::vector<T>& finite) {
    bool any = false;
    T max_abs = 0;
    T min_abs = 0;
    for (T v : finite) {
      if (v == 0) continue;
      const T a = std::fabs(v);
      max_abs = any ? std::max(max_abs, a) : a;
      min_abs = any ? std::min(min_abs, a) : a;
      any = true;
    }
    // numpy >= 2.3 lowers the large-value cutoff to 10^min(8, decimal digits of T): 1e6 for
    // float32. Comparisons happen in T, as numpy does on the array's dtype.
    const T large = std::is_same_v<T, float> ? T(1e6) : T(1e8);
    exponential_ = any && (max_abs >= large || min_abs < T(1e-4) || T(max_abs / min_abs) > T(1000));
  }

  bool exponential_ = false;
  std::size_t pad_left_ = 0;
  std::size_t pad_right_ = 0;
  std::size_t precision_ = 0;
  std::size_t exponent_digits_ = 0;
};

/// The element formatter numpy picks for T.
template <class T>
using element_formatter =
    std::conditional_t<std::is_same_v<T, bool>, bool_formatter,
                       std::conditional_t<std::is_floating_point_v<T>, float_formatter<T>, int_formatter<T>>>;

/// Lays out a row-major array the way numpy's _formatArray does.
template <class T>
class array_printer {
 public:
  array_printer(const T* data, std::span<const std::size_t> shape, bool summarise)
      : data_(data), shape_(shape), strides_(row_major_strides(shape)), summarise_(summarise),
        element_(shown_elements()) {}

  /// The whole body; `indent` characters precede the opening bracket on its line.
  std::string print(std::size_t indent) const { return recurse(0, 0, indent + 1, line_width); }

 private:
  /// Elements between consecutive indices of each axis.
  static std::vector<std::size_t> row_major_strides(std::span<const std::size_t> shape) {
    std::vector<std::size_t> strides(shape.size(), 1);
    for (std::size_t a = shape.size(); a-- > 1;) strides[a - 1] = strides[a] * shape[a];
    return strides;
  }

  /// Whether `axis` is cut to its edge items.
  bool summarised(std::size_t axis) const { return summarise_ && shape_[axis] > 2 * edge_items; }

  /// The elements that will be printed: field widths depend on those alone.
  std::vector<T> shown_elements() const {
    std::vector<T> shown;
    collect(0, 0, shown);
    return shown;
  }

  /// Appends the shown elements below `axis`, starting at flat index `offset`.
  void collect(std::size_t axis, std::size_t offset, std::vector<T>& out) const {
    if (axis == shape_.size()) {
      out.push_back(data_[offset]);
      return;
    }
    const std::size_t n = shape_[axis];
    for (std::size_t i = 0; i < n; ++i) {
      if (summarised(axis) && i == edge_items) i = n - edge_items;
      collect(axis + 1, offset + i * strides_[axis], out);
    }
  }

  /// One nesting level; `hang` is the indent of continuation lines, `width` the columns left.
  std::string recurse(std::size_t axis, std::size_t offset, std::size_t hang, std::ptrdiff_t width) const {
    if (axis == shape_.size()) return element_(data_[offset]);
    const std::size_t n = shape_[axis];
    const bool summary = summarised(axis);
    const std::size_t leading = summary ? edge_items : 0;
    const std::size_t trailing = summary ? edge_items : n;
    const std::string hanging(hang, ' ');
    const auto child = [&](std::size_t i) {
      return recurse(axis + 1, offset + i * strides_[axis], hang + 1, width - 1);
    };

    std::string s;
    if (axis + 1 == shape_.size()) {
      // One column stays free for the closing bracket.
      const std::ptrdiff_t elem_width = width - 1;
      std::string line = hanging;
      const auto extend = [&](const std::string& word) {
        // Wrapping a word that already starts its line would not make it fit.
        const bool wrap = line.size() > hang && static_cast<std::ptrdiff_t>(line.size() + word.size()) > elem_width;
        if (wrap) {
          line.erase(line.find_last_not_of(' ') + 1);
          s += line + "\n";
          line = hanging;
        }
        line += word;
      };
      for (std::size_t i = 0; i < leading; ++i) {
        extend(child(i));
        line += ' ';
      }
      if (summary) {
        extend("...");
        line += ' ';
      }
      for (std::size_t i = n - trailing; i + 1 < n; ++i) {
        extend(child(i));
        line += ' ';
      }
      extend(child(n - 1));
      s += line;
    } else {
      // Blocks of rank k are separated by k - 1 blank lines.
      const std::string line_sep(shape_.size() - axis - 1, '\n');
      for (std::size_t i = 0; i < leading; ++i) s += hanging + child(i) + line_sep;
      if (summary) s += hanging + "..." + line_sep;
      for (std::size_t i = n - trailing; i + 1 < n; ++i) s += hanging + child(i) + line_sep;
      s += hanging + child(n - 1);
    }
    // The first line's indent stands for the brackets already printed by the enclosing levels.
  // Built step by step: GCC 12 warns (-Wrestrict, falsely) on "[" + s.substr(...) at -O3.
  std::string r(1, '[');
  r.append(s, hang);
  r += ']';
  return r;
  }

  const T* data_;
  std::span<const std::size_t> shape_;
  std::vector<std::size_t> strides_;
  bool summarise_;
  element_formatter<T> element_;  // declared last: built from the shown elements
};

}  // namespace format_impl

/// Writes a numpy-style body of a row-major array (what numpy's `str(np.array(...))` prints,
/// i.e. the part TensorFlow puts inside `tf.Tensor(...)`).
template <class T>
void format_array(std::ostream& os, const T* data, std::span<const std::size_t> shape, std::size_t indent = 0) {
  static_assert(printable_element<T>, "format_array: unsupported element type");
  if (shape.empty()) {
    os << format_impl::format_scalar(data[0]);
    return;
  }
  std::size_t size = 1;
  for (std::size_t extent : shape) size *= extent;
  if (size == 0) {
    os << "[]";
    return;
  }
  os << format_impl::array_printer<T>(data, shape, size > format_impl::threshold).print(indent);
}

}  // namespace fusegrad::core
