#pragma once
/// \file fg::io::write_hdf5 / read_hdf5 / list_hdf5 / read_hdf5_attributes / read_hdf5_groups:
/// named tensors in an
/// HDF5 file (the C library, serial build: `pkg-config hdf5`). A name with '/' is a dataset
/// inside groups ("model/dense/kernel"). Element types are stored as numpy stores them, so h5py
/// reads the files as they are: float32, float64, int32, int64 as little-endian IEEE floats and
/// two's-complement integers, bool as h5py's bool (an 8-bit enum FALSE = 0, TRUE = 1); a rank-0
/// tensor is a scalar dataset, an empty one a dataset with a zero dimension. Writing is atomic
/// (Note [hdf5 writing]); reading checks the whole file before it returns (Note [hdf5
/// reading]). Every failure throws fg::value_error naming the function, the file, the dataset
/// and what was wrong. Calls from several threads are serialised (Note [hdf5 lock]). Knows no
/// models: train/checkpoint.hpp builds checkpoints on it.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../core/tensor.hpp"
#include "atomic_file.hpp"
#include "hdf5_handles.hpp"

namespace fusegrad::io {

/// A tensor of any of fusegrad's element types, as read from a file.
using any_tensor =
    std::variant<tensor<float>, tensor<double>, tensor<std::int32_t>, tensor<std::int64_t>, tensor<bool>>;
/// Tensors by name, in name order: what write_hdf5 takes and read_hdf5 gives.
using named_tensors = std::map<std::string, any_tensor>;

/// The element type of t.
inline fg::dtype dtype_of(const any_tensor& t) {
  return std::visit([](const auto& x) { return x.dtype(); }, t);
}
/// The shape of t.
inline const fg::shape& shape_of(const any_tensor& t) {
  return std::visit([](const auto& x) -> const fg::shape& { return x.shape(); }, t);
}

/// A dataset's name, element type and shape, as list_hdf5 gives them without reading values.
struct tensor_info {
  std::string name = {};
  fg::dtype dtype = fg::dtype::float32;
  fg::shape shape = {};
};

/// The root attribute write_hdf5 sets on every file, and its value: the layout's version.
inline constexpr const char* hdf5_format_attribute = "fusegrad_format";
inline constexpr const char* hdf5_format = "named_tensors/1";
/// The root attribute that sums up the file's names and attributes (Note [hdf5 reading]).
inline constexpr const char* hdf5_manifest_attribute = "fusegrad_manifest";
/// The attribute of each dataset that holds the checksum of its values (Note [hdf5 reading]).
inline constexpr const char* hdf5_checksum_attribute = "fusegrad_checksum";

/// write_hdf5's options.
struct hdf5_write_options {
  /// String attributes of the root group (the names starting "fusegrad_" are reserved).
  std::map<std::string, std::string> attributes = {};
  /// Groups to make, each with its string attributes, besides those the dataset names make: a
  /// group may be empty ("layers/flatten/vars") or carry attributes (a Keras layer's name). Named
  /// as datasets are; a group's name is no dataset's.
  std::map<std::string, std::map<std::string, std::string>> groups = {};
  /// Called after each dataset is written (in memory), with its name and how many are written
  /// so far. What it throws abandons the write as any failure does: the file under `path` stays
  /// as it was.
  std::function<void(const std::string& name, std::size_t written)> after_dataset = {};
};

// Note [hdf5 writing]: write_hdf5 has HDF5 build the whole file in memory (its "core" driver,
// with no file behind it), takes the image and writes it with io::write_atomically (Note
// [atomic file]), which has HDF5 open the written file before it is renamed into place. So
// every failure of the disk (full, a quota, a file size limit) is met by fusegrad's code, which
// removes its temporary file and leaves the old file untouched; HDF5's own writer cannot
// recover from a failed write (its file stays half-closed, and HDF5 1.10 crashes at process exit
// when it closes it again). The cost is memory: the image, about the size of the tensors,
// exists twice while it is taken.
//
// Note [hdf5 reading]: before anything is returned, every object in the file is checked: only
// groups and datasets, reached by hard links; element types float32/64, int32/64 (any byte
// order) or h5py's bool enum; a scalar or simple dataspace of rank <= fg::max_rank; a stored
// size that fits the shape; bool values 0 or 1. HDF5 checksums the file's metadata (write_hdf5
// asks for the 1.8 format, whose headers carry checksums) but not the values, and it passes
// over a damaged continuation of an object header without a word, losing the links or
// attributes it held. So write_hdf5 adds its own: each dataset's fusegrad_checksum (of its
// values) and the root's fusegrad_manifest (the count and a checksum of the dataset names and
// root attributes), written before any dataset so that it lies in the root header's first,
// checked chunk. A file that carries fusegrad_format must carry both, and they must match:
// flipped bytes anywhere in a file written by write_hdf5 come back as an error, never as wrong
// numbers or missing names. Files from elsewhere (h5py) carry neither and are read as they are.

namespace impl {
/// The checksum of `bytes` bytes of values of `element` bytes each, over their little-endian
/// bytes, 8 at a time: h = rotl((h ^ word) * odd, 29). Each step is a bijection of the word
/// given h and of h given the word, so a change within any one word always changes the sum.
inline std::uint64_t hdf5_checksum(const void* data, std::size_t bytes, std::size_t element = 1) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ bytes;
  for (std::size_t i = 0; i < bytes; i += 8) {
    std::uint64_t w = 0;
    if (std::endian::native == std::endian::little && i + 8 <= bytes)
      std::memcpy(&w, p + i, 8);
    else
      for (std::size_t j = 0, k = i; j < 8 && k < bytes; ++j, ++k)
        w |= std::uint64_t{std::endian::native == std::endian::little ? p[k]
                                                                      : p[k - k % element + element - 1 - k % element]}
             << (8 * j);
    h = std::rotl((h ^ w) * 0xff51afd7ed558ccdULL, 29);
  }
  return h ^ (h >> 31);
}

/// The manifest of a file with these (sorted) dataset names and root string attributes (the
/// manifest itself left out): "<count> <checksum in hex>".
inline std::string hdf5_manifest(const std::vector<std::string>& names,
                                 const std::map<std::string, std::string>& attrs) {
  std::string all;
  const auto put = [&](const std::string& s) {
    for (int b = 0; b < 64; b += 8) all += static_cast<char>((std::uint64_t{s.size()} >> b) & 0xff);
    all += s;
  };
  for (const std::string& n : names) put(n);
  all += '\x01';
  for (const auto& [k, v] : attrs)
    if (k != hdf5_manifest_attribute) put(k), put(v);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hdf5_checksum(all.data(), all.size())));
  return std::to_string(names.size()) + " " + hex;
}

/// Checks one name of a write: one or more non-empty parts separated by '/', none "." or "..".
inline void hdf5_check_name(std::string_view op, const std::string& path, const std::string& n, const char* what) {
  bool ok = !n.empty() && n.front() != '/' && n.back() != '/' && n.find("//") == std::string::npos;
  for (std::size_t b = 0; ok && b <= n.size();) {
    const std::size_t e = std::min(n.find('/', b), n.size());
    const std::string_view part(n.data() + b, e - b);
    ok = part != "." && part != "..";
    b = e + 1;
  }
  if (!ok)
    hdf5_fail(op, path, "bad ", what, " name '", n,
              "': a name is one or more non-empty parts separated by '/', none of them '.' or '..'");
}

/// Checks the names of a write (hdf5_check_name), that no dataset's name is another's group ("a"
/// beside "a/b") or one of the groups asked for, and that every tensor is defined.
inline void hdf5_check_names(std::string_view op, const std::string& path, const named_tensors& tensors,
                             const std::map<std::string, std::map<std::string, std::string>>& groups = {}) {
  for (const auto& [g, attrs] : groups) {
    hdf5_check_name(op, path, g, "group");
    for (std::size_t slash = 0; slash != std::string::npos;) {  // g and each group above it
      slash = g.find('/', slash + 1);
      if (const std::string above = g.substr(0, slash); tensors.count(above))
        hdf5_fail(op, path, "dataset name '", above, "' is also the group '", g,
                  "' or above it: a name cannot be both a dataset and a group");
    }
    for (const auto& a : attrs)
      if (a.first.starts_with("fusegrad_"))
        hdf5_fail(op, path, "group '", g, "': the attribute name '", a.first, "' is reserved");
  }
  for (const auto& [n, t] : tensors) {
    hdf5_check_name(op, path, n, "dataset");
    if (const auto j = tensors.lower_bound(n + "/"); j != tensors.end() && j->first.starts_with(n + "/"))
      hdf5_fail(op, path, "dataset name '", n, "' is also the group of '", j->first,
                "': a name cannot be both a dataset and a group");
    if (!std::visit([](const auto& x) { return x.defined(); }, t))
      hdf5_fail(op, path, "dataset '", n, "': the tensor is undefined");
  }
}

/// Writes one dataset (and the checksum of its values) under `name`, making its groups.
template <class T>
void hdf5_write_dataset(hid_t file, hid_t lcpl, const std::string& name, const tensor<T>& value, std::string_view op,
                        const std::string& path) {
  static_assert(sizeof(bool) == 1, "fg::io: bool datasets need a one-byte bool");
  const tensor<T> t = value.device() == fg::device::cpu() ? value : value.cpu();
  std::array<hsize_t, max_rank> dims{};
  for (std::size_t d = 0; d < t.rank(); ++d) dims[d] = t.shape()[d];
  const int rank = static_cast<int>(t.rank());
  hdf5_id space(rank ? H5Screate_simple(rank, dims.data(), nullptr) : H5Screate(H5S_SCALAR), H5Sclose);
  hdf5_id ftype = hdf5_type(tensor<T>::dtype(), true), mtype = hdf5_type(tensor<T>::dtype(), false);
  if (!space || !ftype || !mtype) hdf5_fail(op, path, "dataset '", name, "': cannot make its type", hdf5_reason());
  hdf5_id dset(H5Dcreate2(file, name.c_str(), ftype.get(), space.get(), lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!dset) hdf5_fail(op, path, "cannot create dataset '", name, "'", hdf5_reason());
  if (t.size() && H5Dwrite(dset.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data()) < 0)
    hdf5_fail(op, path, "cannot write dataset '", name, "'", hdf5_reason());
  const std::uint64_t sum = hdf5_checksum(t.data(), t.size() * sizeof(T), sizeof(T));
  hdf5_id one(H5Screate(H5S_SCALAR), H5Sclose);
  hdf5_id attr(H5Acreate2(dset.get(), hdf5_checksum_attribute, H5T_STD_U64LE, one.get(), H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose);
  if (!attr || H5Awrite(attr.get(), H5T_NATIVE_UINT64, &sum) < 0 || attr.close() < 0 || dset.close() < 0)
    hdf5_fail(op, path, "cannot write dataset '", name, "'", hdf5_reason());
}

/// Appends the names of every dataset under `group`, each checked to be a dataset or a group
/// reached by a hard link (Note [hdf5 reading]).
inline void hdf5_walk(hid_t group, const std::string& prefix, std::vector<std::string>& out,
                      std::vector<std::string>& groups, int depth, std::string_view op, const std::string& path) {
  const std::string where = prefix.empty() ? std::string("the root group") : "group '" + prefix + "'";
  if (depth > 64) hdf5_fail(op, path, where, " is nested more than 64 groups deep (a cycle of links?)");
  H5G_info_t info;
  if (H5Gget_info(group, &info) < 0) hdf5_fail(op, path, "cannot list ", where, ": the file is corrupt", hdf5_reason());
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
    if (n < 0 ||
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT) < 0)
      hdf5_fail(op, path, "cannot list ", where, ": the file is corrupt", hdf5_reason());
    const std::string full = prefix.empty() ? name : prefix + "/" + name;
    H5L_info_t link;
    if (H5Lget_info(group, name.c_str(), &link, H5P_DEFAULT) < 0)
      hdf5_fail(op, path, "cannot read link '", full, "': the file is corrupt", hdf5_reason());
    if (link.type != H5L_TYPE_HARD)
      hdf5_fail(op, path, "'", full, "' is a ", link.type == H5L_TYPE_SOFT ? "soft" : "external",
                " link; only datasets and groups are read");
    hdf5_id obj(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!obj) hdf5_fail(op, path, "cannot open '", full, "': the file is corrupt", hdf5_reason());
    const H5I_type_t t = H5Iget_type(obj.get());
    if (t == H5I_GROUP) {
      groups.push_back(full);
      hdf5_walk(obj.get(), full, out, groups, depth + 1, op, path);
    }
    else if (t == H5I_DATASET)
      out.push_back(full);
    else
      hdf5_fail(op, path, "'", full, "' is neither a dataset nor a group (a named datatype?)");
  }
}

/// What an open file holds: its dataset names (sorted), its root string attributes, whether
/// write_hdf5 wrote it (then its manifest has been checked), and its groups' names (sorted).
struct hdf5_contents {
  std::vector<std::string> names;
  std::map<std::string, std::string> attributes;
  bool checked = false;
  std::vector<std::string> groups = {};
};

inline hdf5_contents hdf5_read_contents(hid_t file, std::string_view op, const std::string& path) {
  hdf5_contents c{{}, hdf5_strings(file, op, path), false};
  hdf5_walk(file, "", c.names, c.groups, 0, op, path);
  std::sort(c.names.begin(), c.names.end());
  std::sort(c.groups.begin(), c.groups.end());
  const auto m = c.attributes.find(hdf5_manifest_attribute);
  if (m != c.attributes.end()) {
    if (m->second != hdf5_manifest(c.names, c.attributes))
      hdf5_fail(op, path, "its datasets and attributes do not match its manifest (", c.names.size(),
                " datasets found): the file is corrupt");
    c.checked = true;
  } else if (c.attributes.count(hdf5_format_attribute)) {
    hdf5_fail(op, path, "the attribute ", hdf5_manifest_attribute, " is missing: the file is corrupt");
  }
  return c;
}

/// A dataset's element type and shape, checked (Note [hdf5 reading]).
inline tensor_info hdf5_inspect(hid_t dset, const std::string& name, std::string_view op, const std::string& path) {
  hdf5_id type(H5Dget_type(dset), H5Tclose), space(H5Dget_space(dset), H5Sclose);
  if (!type || !space) hdf5_fail(op, path, "dataset '", name, "': cannot read its type or shape", hdf5_reason());
  const std::optional<fg::dtype> d = hdf5_dtype(type.get());
  if (!d)
    hdf5_fail(op, path, "dataset '", name, "': unsupported element type ", hdf5_describe(type.get()),
              " (fusegrad reads float32, float64, int32, int64 and bool)");
  tensor_info info{name, *d, {}};
  const H5S_class_t c = H5Sget_simple_extent_type(space.get());
  if (c == H5S_NULL) hdf5_fail(op, path, "dataset '", name, "' has no value (a null dataspace)");
  if (c != H5S_SCALAR) {
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || static_cast<std::size_t>(rank) > max_rank)
      hdf5_fail(op, path, "dataset '", name, "' has rank ", rank, "; fusegrad's tensors have rank at most ", max_rank);
    std::array<hsize_t, max_rank> dims{};
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    std::uint64_t elements = 1;
    for (int k = 0; k < rank; ++k) {
      if (dims[k] && __builtin_mul_overflow(elements, dims[k], &elements))
        hdf5_fail(op, path, "dataset '", name, "' has more elements than memory can address");
      info.shape.push_back(static_cast<std::size_t>(dims[k]));
    }
  }
  hdf5_id plist(H5Dget_create_plist(dset), H5Pclose);
  if (plist && H5Pget_layout(plist.get()) != H5D_CHUNKED) {  // a chunked (compressed) size may be anything
    const hsize_t stored = H5Dget_storage_size(dset), want = info.shape.elements() * H5Tget_size(type.get());
    if (stored != 0 && stored != want)
      hdf5_fail(op, path, "dataset '", name, "' stores ", stored, " bytes but its shape ", info.shape, " needs ", want,
                ": the file is corrupt");
  }
  H5Eclear2(H5E_DEFAULT);
  return info;
}

/// A dataset's values, checked (Note [hdf5 reading]); `checked` asks for its checksum.
template <class T>
tensor<T> hdf5_read_values(hid_t dset, const tensor_info& info, bool checked, std::string_view op,
                           const std::string& path) {
  tensor<T> t(info.shape, fg::device::cpu(), "fg::io::read_hdf5");
  T* data = const_cast<T*>(t.data());  // a new buffer that no one else holds yet
  hdf5_id mtype = hdf5_type(tensor<T>::dtype(), false);
  if (t.size() && (!mtype || H5Dread(dset, mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0))
    hdf5_fail(op, path, "dataset '", info.name, "': cannot read its values: the file is truncated or corrupt",
              hdf5_reason());
  if constexpr (std::is_same_v<T, bool>) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < t.size(); ++i)
      if (bytes[i] > 1)
        hdf5_fail(op, path, "dataset '", info.name, "': bool value ", static_cast<unsigned>(bytes[i]), " at element ",
                  i, ": the file is corrupt");
  }
  const htri_t has = H5Aexists(dset, hdf5_checksum_attribute);
  if (has > 0) {
    hdf5_id attr(H5Aopen(dset, hdf5_checksum_attribute, H5P_DEFAULT), H5Aclose);
    hdf5_id atype(attr ? H5Aget_type(attr.get()) : -1, H5Tclose);
    std::uint64_t stored = 0;
    if (!atype || H5Tget_class(atype.get()) != H5T_INTEGER || H5Tget_size(atype.get()) != 8 ||
        H5Aread(attr.get(), H5T_NATIVE_UINT64, &stored) < 0)
      hdf5_fail(op, path, "dataset '", info.name, "': its checksum is unreadable: the file is corrupt", hdf5_reason());
    if (stored != hdf5_checksum(data, t.size() * sizeof(T), sizeof(T)))
      hdf5_fail(op, path, "dataset '", info.name, "': the values do not match their checksum: the file is corrupt");
  } else if (checked || has < 0) {
    hdf5_fail(op, path, "dataset '", info.name, "': its checksum is missing: the file is corrupt", hdf5_reason());
  }
  H5Eclear2(H5E_DEFAULT);
  return t;
}

/// Opens dataset `name` of an open file.
inline hdf5_id hdf5_open_dataset(hid_t file, const std::string& name, std::string_view op, const std::string& path) {
  hdf5_id dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset) hdf5_fail(op, path, "cannot open dataset '", name, "': the file is corrupt", hdf5_reason());
  return dset;
}
}  // namespace impl

/// Writes `tensors` to the HDF5 file `path`, replacing any file of that name, atomically: on any
/// failure the file under `path` is left as it was and no temporary file remains (Note [hdf5
/// writing]). The directory must exist. Each dataset carries the checksum of its values; the
/// root group carries fusegrad_format = "named_tensors/1", the manifest (Note [hdf5 reading])
/// and the given string attributes; o.groups are made with theirs. Tensors on a GPU are copied
/// to the host first.
inline void write_hdf5(const std::string& path, const named_tensors& tensors, const hdf5_write_options& o = {}) {
  constexpr std::string_view op = "fg::io::write_hdf5";
  impl::hdf5_check_names(op, path, tensors, o.groups);
  for (const auto& a : o.attributes)
    if (a.first.starts_with("fusegrad_")) impl::hdf5_fail(op, path, "the attribute name '", a.first, "' is reserved");
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!target.has_filename()) impl::hdf5_fail(op, path, "the path names a directory, not a file");
  if (!std::filesystem::is_directory(dir, ec))
    impl::hdf5_fail(op, path, "the directory '", dir.string(), "' does not exist");
  std::map<std::string, std::string> attrs = o.attributes;
  attrs[hdf5_format_attribute] = hdf5_format;
  std::vector<std::string> names;
  std::size_t bytes = 0;
  for (const auto& [name, t] : tensors) {
    names.push_back(name);
    bytes += std::visit([](const auto& x) { return x.size() * sizeof(*x.data()); }, t);
  }
  const std::string manifest = impl::hdf5_manifest(names, attrs);

  std::string image;
  {
    impl::hdf5_session session;
    // Links and attributes stay in their object's header, which HDF5 checksums, however many
    // there are (the "dense" storage HDF5 moves them to past 8 keeps them in a heap whose blocks
    // carry no checksum, and damaged blocks crash HDF5 1.10's reader).
    impl::hdf5_id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose), fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose),
        gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose), lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    const auto compact = [](hid_t p) {
      return H5Pset_link_phase_change(p, 65535, 65535) >= 0 && H5Pset_attr_phase_change(p, 65535, 65535) >= 0;
    };
    if (!fapl || !fcpl || !gcpl || !lcpl ||
        H5Pset_fapl_core(fapl.get(), std::max<std::size_t>(bytes + (bytes >> 4), 1 << 16), 0) < 0 ||
        H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 || !compact(fcpl.get()) ||
        !compact(gcpl.get()) || H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8) < 0)
      impl::hdf5_fail(op, path, "cannot set up HDF5", impl::hdf5_reason());
    impl::hdf5_id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose);
    if (!file) impl::hdf5_fail(op, path, "cannot create the file in memory", impl::hdf5_reason());
    // The manifest first: it must lie in the root header's first chunk (Note [hdf5 reading]).
    if (!impl::hdf5_set_string(file.get(), hdf5_manifest_attribute, manifest))
      impl::hdf5_fail(op, path, "cannot write attributes", impl::hdf5_reason());
    for (const auto& [k, v] : attrs)
      if (!impl::hdf5_set_string(file.get(), k, v))
        impl::hdf5_fail(op, path, "cannot write attribute '", k, "'", impl::hdf5_reason());
    std::set<std::string> groups;
    // Makes the groups of `name` up to (without) its part ending at `end`; `attrs` go on the last.
    const auto make_groups = [&](const std::string& name, std::size_t end,
                                 const std::map<std::string, std::string>* attrs) {
      for (std::size_t slash = std::min(name.find('/'), end); slash != std::string::npos;
           slash = slash == end ? std::string::npos : std::min(name.find('/', slash + 1), end)) {
        const std::string g = name.substr(0, slash);
        if (!groups.insert(g).second) continue;
        impl::hdf5_id made(H5Gcreate2(file.get(), g.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT), H5Gclose);
        bool ok = static_cast<bool>(made);
        if (ok && attrs && slash == end)
          for (const auto& [k, v] : *attrs) ok = ok && impl::hdf5_set_string(made.get(), k, v);
        if (!ok || made.close() < 0) impl::hdf5_fail(op, path, "cannot create group '", g, "'", impl::hdf5_reason());
      }
    };
    for (const auto& [g, a] : o.groups) make_groups(g, g.size(), &a);
    std::size_t written = 0;
    for (const auto& entry : tensors) {  // not a structured binding: clang before 16 cannot capture one
      const std::string& name = entry.first;
      make_groups(name, name.rfind('/'), nullptr);
      std::visit([&](const auto& x) { impl::hdf5_write_dataset(file.get(), lcpl.get(), name, x, op, path); },
                 entry.second);
      if (o.after_dataset) o.after_dataset(name, ++written);
    }
    const ssize_t size = H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(file.get(), nullptr, 0);
    if (size >= 0) image.resize(static_cast<std::size_t>(size));
    if (size < 0 || H5Fget_file_image(file.get(), image.data(), image.size()) != size || file.close() < 0)
      impl::hdf5_fail(op, path, "cannot take the file's image", impl::hdf5_reason());
  }
  impl::hdf5_fix_superblock(image);
  write_atomically(path, image, op, [&](const std::string& written) {  // the image opens
    impl::hdf5_session session;
    impl::hdf5_id f(H5Fopen(written.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f || f.close() < 0) impl::hdf5_fail(op, path, "the file HDF5 made does not open", impl::hdf5_reason());
  });
}

/// Reads every dataset of the HDF5 file `path`, by name ("model/dense/kernel"), after checking
/// the whole file (Note [hdf5 reading]): a missing, truncated or corrupt file, an unsupported
/// element type or rank throws value_error naming the file and the dataset. Tensors are on the
/// host.
inline named_tensors read_hdf5(const std::string& path) {
  constexpr std::string_view op = "fg::io::read_hdf5";
  impl::hdf5_session session;
  impl::hdf5_id file = impl::hdf5_open(op, path);
  const impl::hdf5_contents c = impl::hdf5_read_contents(file.get(), op, path);
  named_tensors out;
  for (const std::string& name : c.names) {
    impl::hdf5_id dset = impl::hdf5_open_dataset(file.get(), name, op, path);
    const tensor_info info = impl::hdf5_inspect(dset.get(), name, op, path);
    const auto read = [&]<class T>(std::type_identity<T>) {
      out.emplace(name, impl::hdf5_read_values<T>(dset.get(), info, c.checked, op, path));
    };
    switch (info.dtype) {
      case fg::dtype::float32: read(std::type_identity<float>{}); break;
      case fg::dtype::float64: read(std::type_identity<double>{}); break;
      case fg::dtype::int32: read(std::type_identity<std::int32_t>{}); break;
      case fg::dtype::int64: read(std::type_identity<std::int64_t>{}); break;
      case fg::dtype::boolean: read(std::type_identity<bool>{}); break;
    }
  }
  return out;
}

/// The name, element type and shape of every dataset of the HDF5 file `path`, in name order,
/// without reading values (all else is checked as read_hdf5 checks it).
inline std::vector<tensor_info> list_hdf5(const std::string& path) {
  constexpr std::string_view op = "fg::io::list_hdf5";
  impl::hdf5_session session;
  impl::hdf5_id file = impl::hdf5_open(op, path);
  std::vector<tensor_info> out;
  for (const std::string& name : impl::hdf5_read_contents(file.get(), op, path).names)
    out.push_back(impl::hdf5_inspect(impl::hdf5_open_dataset(file.get(), name, op, path).get(), name, op, path));
  return out;
}

/// Every group of the HDF5 file `path` but the root, by name ("layers/dense/vars"), in name
/// order, each with its string attributes (those of other types passed over); the file checked as
/// list_hdf5 checks it. With list_hdf5 it gives a file's whole tree.
inline std::map<std::string, std::map<std::string, std::string>> read_hdf5_groups(const std::string& path) {
  constexpr std::string_view op = "fg::io::read_hdf5_groups";
  impl::hdf5_session session;
  impl::hdf5_id file = impl::hdf5_open(op, path);
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const std::string& name : impl::hdf5_read_contents(file.get(), op, path).groups) {
    impl::hdf5_id g(H5Gopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g) impl::hdf5_fail(op, path, "cannot open group '", name, "': the file is corrupt", impl::hdf5_reason());
    out.emplace(name, impl::hdf5_strings(g.get(), op, path));
  }
  return out;
}

/// The string attributes of the root group of the HDF5 file `path` (attributes of other types
/// are passed over), the file checked as list_hdf5 checks it.
inline std::map<std::string, std::string> read_hdf5_attributes(const std::string& path) {
  constexpr std::string_view op = "fg::io::read_hdf5_attributes";
  impl::hdf5_session session;
  impl::hdf5_id file = impl::hdf5_open(op, path);
  return impl::hdf5_read_contents(file.get(), op, path).attributes;
}
}  // namespace fusegrad::io
