#pragma once
/// \file fg::matmul: matrix products through OpenBLAS for float and double, a plain loop for
/// integers; batched, broadcast over a batch, and with vectors. Its gradient is two matmuls. It
/// runs through ops::run_boundary (Note [boundary ops]) from ops::matmul_rule
/// (ops/linalg_rules.hpp), which asks for a batch of products (dispatch::run_gemm,
/// eval/linalg.hpp): on a GPU the product runs there, with no host copy.

#include "../eval/linalg.hpp"
#include "../ops/linalg_rules.hpp"
#include "boundary.hpp"
#include "evaluate.hpp"
#include "reduce.hpp"
#include "reshape.hpp"

namespace fusegrad {

template <tensor_like A, tensor_like B>
tensor<value_type_of<A>> matmul(const A& a, const B& b, bool transpose_a = false, bool transpose_b = false);

/// The matrix product op(a) op(b), op transposing the last two axes when its flag is set.
/// Operands: matrices; batches of matrices (rank >= 3) with equal batch dimensions, or one side
/// a matrix applied to each batch element; a vector on either side (matrix x vector gives a
/// vector, vector x matrix too, vector x vector a scalar). float and double use OpenBLAS (cuBLAS on a GPU).
template <tensor_like A, tensor_like B>
tensor<value_type_of<A>> matmul(const A& a, const B& b, bool transpose_a, bool transpose_b) {
  using T = value_type_of<A>;
  static_assert(std::same_as<T, value_type_of<B>>,
                "fg::matmul: both operands need the same element type; convert one with fg::cast<T>(x)");
  static_assert(!std::same_as<T, bool>, "fg::matmul: bool tensors have no product; fg::cast<int32_t>(x) first");
  return ops::run_boundary<T>(ops::matmul_rule{.ta = transpose_a, .tb = transpose_b}, a, b);
}

/// The product of two float32 or float64 tensors, compiled once per program with
/// FUSEGRAD_SEPARATE_ENGINES (Note [shared op tables]): P is `extern` here, empty in the
/// engines' source file.
#define FG_SHARED_MATMUL(P, T)                                                                        \
  P template tensor<T> eager::boundary::run<T>(ops::matmul_rule, const eager::boundary::pack<T, T>&);
#if defined(FUSEGRAD_SEPARATE_ENGINES)
FG_SHARED_MATMUL(extern, float)
FG_SHARED_MATMUL(extern, double)
#endif
}  // namespace fusegrad
