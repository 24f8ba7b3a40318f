#pragma once
/// \file Build-wide constants and the host/device function marker.

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define FG_HD __host__ __device__
#else
#define FG_HD
#endif

/// Note [flatten]: fused host loops are marked flatten so the whole chain, SIMD math included,
/// inlines into one loop. Sanitizer and unoptimised builds skip it (instrumenting one huge
/// function per expression makes them compile very slowly); define FUSEGRAD_NO_FLATTEN to
/// skip it elsewhere.
#if !defined(FUSEGRAD_NO_FLATTEN)
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define FUSEGRAD_NO_FLATTEN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define FUSEGRAD_NO_FLATTEN 1
#endif
#endif
#endif

#if defined(__GNUC__) && !defined(FUSEGRAD_NO_FLATTEN)
#define FG_FLATTEN [[gnu::flatten]]
#else
#define FG_FLATTEN
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
