#pragma once
/// \file fg::io's TensorBoard event files: TFRecord files (io/tfrecord.hpp) of the protobuf
/// messages TensorBoard reads (Event, Summary, Summary.Value, HistogramProto,
/// SummaryMetadata; Note [protobuf wire]), encoded and decoded by hand. Knows no models:
/// train/summary.hpp builds fg::summary's writers on it. Every failure throws fg::value_error
/// naming the function, the file and the record's offset.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "tfrecord.hpp"

namespace fusegrad::io {

// ---------------------------------------------------------------------------------------------
// The messages

/// TensorBoard's HistogramProto: the values' range, count, sum and sum of squares, and buckets:
/// bucket[i] values up to bucket_limit[i] (above bucket_limit[i - 1]).
struct histogram_proto {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit = {};
  std::vector<double> bucket = {};
  friend bool operator==(const histogram_proto&, const histogram_proto&) = default;
};

/// SummaryMetadata: the plugin that draws the value (plugin_data.plugin_name, its content) and
/// the text TensorBoard shows beside it.
struct summary_metadata {
  std::string plugin_name = {};
  std::string plugin_content = {};
  std::string display_name = {};
  std::string description = {};
  friend bool operator==(const summary_metadata&, const summary_metadata&) = default;
};

/// Summary.Value: a tag and one value (a scalar or a histogram; the others TensorBoard knows are
/// skipped when read).
struct summary_value {
  std::string tag = {};
  std::optional<float> simple_value = std::nullopt;
  std::optional<histogram_proto> histo = std::nullopt;
  std::optional<summary_metadata> metadata = std::nullopt;
  friend bool operator==(const summary_value&, const summary_value&) = default;
};

/// Event: when (seconds since the Unix epoch), at which step, and what: the file's version
/// (the first record of a file) or a Summary of values.
struct event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version = {};
  std::optional<std::vector<summary_value>> summary = std::nullopt;
  friend bool operator==(const event&, const event&) = default;
};

/// The file_version of the first record of every event file TensorBoard reads today.
inline constexpr const char* event_file_version = "brain.Event:2";

// Note [protobuf wire]: a protobuf message is a sequence of fields, each a key and a payload.
// The key is the varint (field_number << 3 | wire_type); a varint is 7 bits a byte, least
// significant first, the high bit set on every byte but the last. Wire types used here:
// 0 varint (int64: a negative value is its 64-bit two's complement, so ten bytes), 1 fixed64
// (double, little-endian IEEE), 2 length-delimited (a varint length, then bytes: strings,
// embedded messages, packed repeated fields), 5 fixed32 (float). Proto3 writes a scalar field
// only when it differs from its default (0, "", empty), and a reader fills in the defaults; a
// field in a `oneof` has presence instead, so Summary.Value's simple_value and histo are
// written even when 0 or empty (the oneof says which one the value is). A reader must accept
// fields in any order, skip the fields it does not know, take the last of a repeated scalar
// field, merge an embedded message given twice, and read a repeated double both packed (one
// length-delimited run, what proto3 writes) and unpacked (one fixed64 field per element).

namespace events_impl {
using tfrecord_impl::get_le;  // io/tfrecord.hpp's little-endian reader and writer
using tfrecord_impl::put_le;
enum wire : unsigned { wire_varint = 0, wire_fixed64 = 1, wire_bytes = 2, wire_fixed32 = 5 };

inline void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80u) {
    out.push_back(static_cast<char>((v & 0x7Fu) | 0x80u));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline void put_key(std::string& out, unsigned field, wire w) { put_varint(out, (std::uint64_t{field} << 3) | w); }
inline void put_double(std::string& out, unsigned field, double v) {
  put_key(out, field, wire_fixed64);
  put_le(out, std::bit_cast<std::uint64_t>(v), 8);
}
inline void put_bytes(std::string& out, unsigned field, std::string_view v) {
  put_key(out, field, wire_bytes);
  put_varint(out, v.size());
  out.append(v);
}
/// A proto3 scalar double: written only when it is not 0 (Note [protobuf wire]).
inline void put_double_if_set(std::string& out, unsigned field, double v) {
  if (v != 0 || std::signbit(v)) put_double(out, field, v);
}
inline void put_packed_doubles(std::string& out, unsigned field, const std::vector<double>& v) {
  if (v.empty()) return;
  std::string run;
  for (const double d : v) put_le(run, std::bit_cast<std::uint64_t>(d), 8);
  put_bytes(out, field, run);
}

inline std::string encode(const histogram_proto& h) {
  std::string out;
  put_double_if_set(out, 1, h.min);
  put_double_if_set(out, 2, h.max);
  put_double_if_set(out, 3, h.num);
  put_double_if_set(out, 4, h.sum);
  put_double_if_set(out, 5, h.sum_squares);
  put_packed_doubles(out, 6, h.bucket_limit);
  put_packed_doubles(out, 7, h.bucket);
  return out;
}
inline std::string encode(const summary_metadata& m) {
  std::string out;
  if (!m.plugin_name.empty() || !m.plugin_content.empty()) {  // PluginData plugin_data = 1
    std::string plugin;
    if (!m.plugin_name.empty()) put_bytes(plugin, 1, m.plugin_name);
    if (!m.plugin_content.empty()) put_bytes(plugin, 2, m.plugin_content);
    put_bytes(out, 1, plugin);
  }
  if (!m.display_name.empty()) put_bytes(out, 2, m.display_name);
  if (!m.description.empty()) put_bytes(out, 3, m.description);
  return out;
}
inline std::string encode(const summary_value& v) {
  std::string out;
  if (!v.tag.empty()) put_bytes(out, 1, v.tag);
  if (v.simple_value) {  // in the oneof: written even when 0
    put_key(out, 2, wire_fixed32);
    put_le(out, std::bit_cast<std::uint32_t>(*v.simple_value), 4);
  }
  if (v.histo) put_bytes(out, 5, encode(*v.histo));
  if (v.metadata) put_bytes(out, 9, encode(*v.metadata));
  return out;
}

/// A cursor over one message's bytes; errors name the file, the record and the offset inside
/// the record.
struct reader {
  std::string_view in;
  std::size_t at = 0;
  std::string_view where;  ///< "'<file>': the record at offset N"
  std::size_t base = 0;    ///< where `in` starts inside the record's data

  [[noreturn]] void fail(std::string_view what) const {
    throw value_error(core::cat("fg::io::decode_event: ", where, ": ", what, " at byte ", base + at,
                                " of its data (not an Event message)"));
  }
  bool done() const noexcept { return at >= in.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at >= in.size()) fail("a varint runs past the end");
      const auto b = static_cast<unsigned char>(in[at++]);
      if (shift == 63 && b > 1) fail("a varint is longer than 64 bits");
      v |= std::uint64_t{b & 0x7Fu} << shift;
      if (!(b & 0x80u)) return v;
    }
    fail("a varint is longer than ten bytes");
  }
  std::uint64_t fixed(int bytes) {
    if (in.size() - at < static_cast<std::size_t>(bytes)) fail("a fixed-width field runs past the end");
    const std::uint64_t v = get_le(in, at, bytes);
    at += static_cast<std::size_t>(bytes);
    return v;
  }
  double f64() { return std::bit_cast<double>(fixed(8)); }
  float f32() { return std::bit_cast<float>(static_cast<std::uint32_t>(fixed(4))); }
  std::string_view bytes() {
    const std::uint64_t n = varint();
    if (n > in.size() - at) fail("a length-delimited field runs past the end");
    const std::string_view s = in.substr(at, static_cast<std::size_t>(n));
    at += static_cast<std::size_t>(n);
    return s;
  }
  /// A reader of an embedded message's bytes `s`, which bytes() has just taken.
  reader sub(std::string_view s) const { return reader{s, 0, where, base + at - s.size()}; }
  void skip(unsigned w) {
    switch (w) {
      case wire_varint: varint(); return;
      case wire_fixed64: fixed(8); return;
      case wire_bytes: bytes(); return;
      case wire_fixed32: fixed(4); return;
      default: fail("a field of wire type " + std::to_string(w) + " (groups are not supported)");
    }
  }
  /// The next key: field number and wire type.
  std::pair<std::uint64_t, unsigned> key() {
    const std::uint64_t k = varint();
    if ((k >> 3) == 0) fail("a field number 0");
    return {k >> 3, static_cast<unsigned>(k & 7u)};
  }
  /// A double field, checking its wire type.
  double read_double(unsigned w) {
    if (w != wire_fixed64) fail("a double field of wire type " + std::to_string(w));
    return f64();
  }
  /// A repeated double, packed or not (Note [protobuf wire]).
  void read_doubles(unsigned w, std::vector<double>& out) {
    if (w == wire_fixed64) {
      out.push_back(f64());
      return;
    }
    if (w != wire_bytes) fail("a repeated double field of wire type " + std::to_string(w));
    reader r = sub(bytes());
    if (r.in.size() % 8 != 0) fail("a packed double field whose length is not a multiple of 8");
    while (!r.done()) out.push_back(r.f64());
  }
  std::string_view read_bytes(unsigned w) {
    if (w != wire_bytes) fail("a string or message field of wire type " + std::to_string(w));
    return bytes();
  }
};

inline void decode_into(reader r, histogram_proto& h) {
  while (!r.done()) {
    const auto [field, w] = r.key();
    switch (field) {
      case 1: h.min = r.read_double(w); break;
      case 2: h.max = r.read_double(w); break;
      case 3: h.num = r.read_double(w); break;
      case 4: h.sum = r.read_double(w); break;
      case 5: h.sum_squares = r.read_double(w); break;
      case 6: r.read_doubles(w, h.bucket_limit); break;
      case 7: r.read_doubles(w, h.bucket); break;
      default: r.skip(w);
    }
  }
}
inline void decode_into(reader r, summary_metadata& m) {
  while (!r.done()) {
    const auto [field, w] = r.key();
    if (field == 1) {
      reader p = r.sub(r.read_bytes(w));
      while (!p.done()) {
        const auto [pf, pw] = p.key();
        if (pf == 1) m.plugin_name = p.read_bytes(pw);
        else if (pf == 2) m.plugin_content = p.read_bytes(pw);
        else p.skip(pw);
      }
    } else if (field == 2) {
      m.display_name = r.read_bytes(w);
    } else if (field == 3) {
      m.description = r.read_bytes(w);
    } else {
      r.skip(w);
    }
  }
}
inline void decode_into(reader r, summary_value& v) {
  while (!r.done()) {
    const auto [field, w] = r.key();
    switch (field) {
      case 1: v.tag = r.read_bytes(w); break;
      case 2:
        if (w != wire_fixed32) r.fail("a float field of wire type " + std::to_string(w));
        v.simple_value = r.f32();
        v.histo.reset();  // the oneof holds the last value set
        break;
      case 5:
        if (!v.histo) v.histo.emplace();
        v.simple_value.reset();
        decode_into(r.sub(r.read_bytes(w)), *v.histo);
        break;
      case 9:
        if (!v.metadata) v.metadata.emplace();
        decode_into(r.sub(r.read_bytes(w)), *v.metadata);
        break;
      default: r.skip(w);
    }
  }
}
}  // namespace events_impl

/// The bytes of `e` as an Event message (Note [protobuf wire]).
inline std::string encode_event(const event& e) {
  using namespace events_impl;
  std::string out;
  put_double_if_set(out, 1, e.wall_time);
  if (e.step != 0) {
    put_key(out, 2, wire_varint);
    put_varint(out, static_cast<std::uint64_t>(e.step));
  }
  if (!e.file_version.empty()) put_bytes(out, 3, e.file_version);
  if (e.summary) {
    std::string s;
    for (const summary_value& v : *e.summary) put_bytes(s, 1, encode(v));
    put_bytes(out, 5, s);
  }
  return out;
}

/// The Event message in `bytes`; `where` names its record in errors ("'<file>': the record at
/// offset N"). Fields it does not know (graphs, tensors, images...) are skipped.
inline event decode_event(std::string_view bytes, std::string_view where = "an event") {
  using namespace events_impl;
  event e;
  reader r{bytes, 0, where, 0};
  while (!r.done()) {
    const auto [field, w] = r.key();
    if (field == 1) {
      e.wall_time = r.read_double(w);
    } else if (field == 2) {
      if (w != wire_varint) r.fail("an int64 field of wire type " + std::to_string(w));
      e.step = static_cast<std::int64_t>(r.varint());
    } else if (field == 3) {
      e.file_version = r.read_bytes(w);
    } else if (field == 5) {
      if (!e.summary) e.summary.emplace();
      reader s = r.sub(r.read_bytes(w));
      while (!s.done()) {
        const auto [sf, sw] = s.key();
        if (sf == 1) {
          e.summary->emplace_back();
          decode_into(s.sub(s.read_bytes(sw)), e.summary->back());
        } else {
          s.skip(sw);
        }
      }
    } else {
      r.skip(w);
    }
  }
  return e;
}

/// The events of the event file `path`, in order, the file_version record first (Note
/// [tfrecord reading]: a cut-short last record ends the read; a damaged one is an error).
inline std::vector<event> read_events(const std::string& path) {
  std::vector<event> out;
  for (const record& r : read_records(path))
    out.push_back(decode_event(r.data, core::cat("'", path, "': the record at offset ", r.offset)));
  return out;
}

}  // namespace fusegrad::io
