#pragma once
/// \file Build-wide constants and the host/device function marker.

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define FG_HD __host__ __device__
#else
#define FG_HD
#endif

namespace fusegrad {
namespace fg = ::fusegrad;

/// Signed index type used by kernels and strides.
using index_t = std::ptrdiff_t;

/// Largest rank an elementwise kernel handles; larger ranks raise fg::shape_error.
inline constexpr std::size_t max_rank = 8;

/// Unique identity of a tensor value, used by gradient tapes.
using tensor_id = std::uint64_t;
}  // namespace fusegrad

namespace fg = ::fusegrad;
