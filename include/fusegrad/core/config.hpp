#pragma once
/// \file Build-wide constants and the host/device function marker.

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define FG_HD __host__ __device__
#define FG_UNROLL _Pragma("unroll")
#else
#define FG_HD
#define FG_UNROLL
#endif
/// Note [device parameters]: a device functor (its expression kernel with leaf pointers and
/// strides, the output's dimensions) reaches the GPU as a kernel parameter. A loop that indexes
/// one of its arrays with a run-time index makes nvcc copy the whole functor into each thread's
/// local memory (hundreds of bytes to two kilobytes per thread, through the caches to DRAM),
/// which made every fusegrad kernel run at a few percent of the GPU's bandwidth. So the loops
/// over a shape's axes that device code runs go over all max_rank axes, unrolled (FG_UNROLL)
/// and guarded by the rank: each array element is then read at a constant offset, straight
/// from the parameter space. cuda/frames.py fails the build of any CUDA program whose kernels
/// hold such a copy.

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

/// The linkage of what a program built with FUSEGRAD_SEPARATE_ENGINES compiles in one source
/// file only (Note [separate engines], eager/engines.hpp): inline by default, so that every
/// unit that needs it defines it.
#if defined(FUSEGRAD_SEPARATE_ENGINES)
#define FG_ENGINES_INLINE
#else
#define FG_ENGINES_INLINE inline
#endif

/// Note [package mode]: FUSEGRAD_SEPARATE_ENGINES is package mode, what meson's
/// dependency('fusegrad'), `pkg-config fusegrad` and CMake's fusegrad::fusegrad pass: the
/// engines are compiled once, in libfusegrad (or in one source file of the program that
/// includes eager/engines.hpp), and every unit only declares them. Every unit built so keeps a
/// reference to fusegrad_package_mode_FUSEGRAD_SEPARATE_ENGINES_needs_libfusegrad, which only
/// that source file defines, so a program that defines the macro but links no engines fails to
/// link with a message that names the macro and the library. Units built header-only (no
/// macro) may share a program with units in package mode: they define the same engines inline,
/// and the program keeps one tape state. libfusegrad is compiled for the host: a device program
/// (FUSEGRAD_DEVICE) builds header-only, or compiles its own engines file with both macros and
/// says so with FUSEGRAD_DEVICE_ENGINES.
#if defined(FUSEGRAD_SEPARATE_ENGINES)
#if defined(FUSEGRAD_DEVICE) && !defined(FUSEGRAD_DEVICE_ENGINES)
#error "fusegrad: FUSEGRAD_DEVICE with FUSEGRAD_SEPARATE_ENGINES: libfusegrad's engines are compiled for the host. Build a device program header-only (meson: dependency('fusegrad-header-only'); pkg-config: fusegrad-header-only; CMake: fusegrad::header_only), or compile an engines file of its own with FUSEGRAD_DEVICE and define FUSEGRAD_DEVICE_ENGINES (docs/device.md)"
#endif
extern "C" const int fusegrad_package_mode_FUSEGRAD_SEPARATE_ENGINES_needs_libfusegrad;
namespace fusegrad::core {
// The reference every package-mode unit keeps (Note [package mode]).
[[gnu::used]] static const int* const package_mode_link_check =
    &fusegrad_package_mode_FUSEGRAD_SEPARATE_ENGINES_needs_libfusegrad;
}  // namespace fusegrad::core
#endif

/// Note [host simd]: the host evaluator runs xsimd batches only in optimised builds. Without
/// optimisation GCC 12 cannot compile xsimd 8's AVX-512BW kernels (its intrinsics are macros
/// then, and xsimd's casts through them fail), and a debug build gains nothing from SIMD; the
/// scalar path computes the same ops. Define FUSEGRAD_HOST_SIMD to 0 or 1 to choose.
#if !defined(FUSEGRAD_HOST_SIMD)
#if defined(__OPTIMIZE__)
#define FUSEGRAD_HOST_SIMD 1
#else
#define FUSEGRAD_HOST_SIMD 0
#endif
#endif

/// Inlines a small helper or lambda of the per-op hot path (recording one-element evaluations),
/// which GCC otherwise leaves out of line in some instantiations.
#if defined(__GNUC__)
#define FG_INLINE __attribute__((always_inline))
#else
#define FG_INLINE
#endif

/// Keeps a function that is not a template out of line where it would be inlined into many
/// instantiations (making a program, allocating a buffer), for compile time: a copy in each
/// instantiation is code the optimiser works through again, for no run time gained.
#if defined(__GNUC__)
#define FG_NOINLINE __attribute__((noinline))
#else
#define FG_NOINLINE
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
