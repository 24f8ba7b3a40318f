#pragma once
/// \file fg::matmul: matrix products through OpenBLAS for float and double, a plain loop for
/// integers; batched, broadcast over a batch, and with vectors. Its gradient is two matmuls. It
/// runs through ops::run_boundary (Note [boundary ops]) from eager::matmul_rule, which has a
/// device kernel: on a GPU the product runs there, with no host copy.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cblas.h>

#include "boundary.hpp"
#include "evaluate.hpp"
#include "reduce.hpp"
#include "reshape.hpp"

namespace fusegrad {

template <tensor_like A, tensor_like B>
tensor<value_type_of<A>> matmul(const A& a, const B& b, bool transpose_a = false, bool transpose_b = false);

namespace eager {
/// One product C (m x n) = op(A) op(B), row-major, where op transposes when the flag is set.
template <class T>
void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const T* a, const T* b, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, T(0));
    return;
  }
  const std::size_t lda = ta ? m : k, ldb = tb ? k : n;
  if constexpr (std::is_floating_point_v<T>) {
    const auto ca = ta ? CblasTrans : CblasNoTrans, cb = tb ? CblasTrans : CblasNoTrans;
    const auto im = static_cast<blasint>(m), in = static_cast<blasint>(n), ik = static_cast<blasint>(k);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ca, cb, im, in, ik, 1.0f, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
                  0.0f, c, in);
    else
      cblas_dgemm(CblasRowMajor, ca, cb, im, in, ik, 1.0, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
                  0.0, c, in);
  } else {  // signed integers: products and sums wrap around (Note [integer wraparound])
    std::fill(c, c + m * n, T(0));
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t p = 0; p < k; ++p) {
        const T av = ta ? a[p * lda + i] : a[i * lda + p];
        if (tb)
          for (std::size_t j = 0; j < n; ++j)
            c[i * n + j] = core::wrapping_add(c[i * n + j], core::wrapping_mul(av, b[j * ldb + p]));
        else
          for (std::size_t j = 0; j < n; ++j)
            c[i * n + j] = core::wrapping_add(c[i * n + j], core::wrapping_mul(av, b[p * ldb + j]));
      }
  }
}

/// The rules of fg::matmul (Note [boundary ops]). They stay at the eager floor, not in ops/,
/// because the kernels are BLAS on the host and the device evaluator's gemm on a GPU.
struct matmul_rule {
  static constexpr const char* name = "matmul";
  bool ta = false, tb = false;
  fg::shape sa{}, sb{};          // the operands' shapes
  fg::shape ma{}, mb{}, mc{};    // the operands and the result as (batches of) matrices
  std::size_t m = 0, n = 0, k = 0, batch = 1, step_a = 0, step_b = 0;

  fg::shape shape(const fg::shape& a, const fg::shape& b) {
    sa = a;
    sb = b;
    auto flags = [&] { return std::string(ta ? " with transpose_a" : "") + (tb ? " with transpose_b" : ""); };
    FG_CHECK(sa.rank() > 0 && sb.rank() > 0, shape_error, "fg::matmul: operands must have rank >= 1, got shapes ", sa,
             " and ", sb, "; multiply by a scalar with operator*");
    FG_CHECK(!(ta && sa.rank() == 1) && !(tb && sb.rank() == 1), shape_error,
             "fg::matmul: a transpose flag applies to a matrix, but the operand is a vector (shapes ", sa, " and ", sb,
             "); drop the flag");
    // A vector is a 1 x k matrix on the left and a k x 1 matrix on the right; same memory.
    const bool va = sa.rank() == 1, vb = sb.rank() == 1;
    ma = va ? fg::shape{1, sa[0]} : sa;
    mb = vb ? fg::shape{sb[0], 1} : sb;
    const std::size_t ka = ta ? ma[ma.rank() - 2] : ma[ma.rank() - 1];
    const std::size_t kb = tb ? mb[mb.rank() - 1] : mb[mb.rank() - 2];
    FG_CHECK(ka == kb, shape_error, "fg::matmul: inner dimensions do not match: shapes ", sa, " and ", sb, flags(),
             " give ", ka, " vs ", kb, "; the last axis of a must equal the second-to-last of b");
    if (ma.rank() > 2 && mb.rank() > 2) {
      bool same = ma.rank() == mb.rank();
      for (std::size_t d = 0; same && d + 2 < ma.rank(); ++d) same = ma[d] == mb[d];
      FG_CHECK(same, shape_error, "fg::matmul: batch dimensions of shapes ", sa, " and ", sb,
               " differ; give both the same batch dimensions, or make one side a single matrix");
    }
    const fg::shape& big = ma.rank() >= mb.rank() ? ma : mb;
    fg::shape out;
    for (std::size_t d = 0; d + 2 < big.rank(); ++d) out.push_back(big[d]);
    batch = out.elements();
    // A matrix against a batch uses the one matrix for every batch element; the batch is
    // flattened into one leading axis so the gradient's batch sum is over axis 0.
    auto flat = [&](const fg::shape& s) { return s.rank() <= 3 ? s : fg::shape{batch, s[s.rank() - 2], s[s.rank() - 1]}; };
    if ((ma.rank() == 2) != (mb.rank() == 2) && big.rank() > 3) {
      ma = flat(ma);
      mb = flat(mb);
    }
    const std::size_t ra = ma.rank(), rb = mb.rank();
    m = ta ? ma[ra - 1] : ma[ra - 2];
    k = ka;
    n = tb ? mb[rb - 2] : mb[rb - 1];
    FG_CHECK(std::max({m, n, k}) <= static_cast<std::size_t>(INT_MAX), shape_error, "fg::matmul: dimensions of ", ma,
             " and ", mb, " exceed what BLAS indexes (", INT_MAX, ")");
    step_a = ra > 2 ? m * k : 0;
    step_b = rb > 2 ? k * n : 0;
    mc = ra >= rb ? ma : mb;
    mc[mc.rank() - 2] = m;
    mc[mc.rank() - 1] = n;
    if (!va) out.push_back(m);
    if (!vb) out.push_back(n);
    return out;
  }
  template <class T>
  void host(T* c, const tensor<T>& a, const tensor<T>& b) const {
    for (std::size_t i = 0; i < batch; ++i) gemm<T>(ta, tb, m, n, k, a.data() + i * step_a, b.data() + i * step_b, c + i * m * n);
  }
  template <class T>
  void device(T* c, const tensor<T>& a, const tensor<T>& b) const {
    device_eval::gemm<T>(ta, tb, m, n, k, batch, a.data(), step_a, b.data(), step_b, c, a.device());
  }
  template <class T>
  std::pair<tensor<T>, tensor<T>> saved(const tensor<T>&, const tensor<T>& a, const tensor<T>& b) const { return {a, b}; }
  template <class T>
  std::array<tensor<T>, 2> backward(const tensor<T>& g, std::span<const bool> need, const std::pair<tensor<T>, tensor<T>>& ab) const {
    // C = op(A) op(B): each gradient is one product of g with the other operand, arranged so
    // that the transpose flags absorb every transpose (TensorFlow's MatMul gradient).
    auto as = [](const tensor<T>& t, const fg::shape& s) { return t.shape() == s ? t : reshape(t, s); };
    const tensor<T> a = as(ab.first, ma), b = as(ab.second, mb), gc = as(g, mc);
    std::array<tensor<T>, 2> r;
    if (need[0]) {
      r[0] = !ta ? matmul(gc, b, false, !tb) : (tb ? matmul(b, gc, true, true) : matmul(b, gc, false, true));
      if (r[0].rank() > a.rank()) r[0] = reduce_sum(r[0], axes(std::vector<long>{0}));  // a served every batch
      r[0] = as(r[0], sa);
    }
    if (need[1]) {
      r[1] = !tb ? matmul(a, gc, !ta, false) : (ta ? matmul(gc, a, true, true) : matmul(gc, a, true, false));
      if (r[1].rank() > b.rank()) r[1] = reduce_sum(r[1], axes(std::vector<long>{0}));
      r[1] = as(r[1], sb);
    }
    return r;
  }
};
}  // namespace eager

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
  return ops::run_boundary<T>(eager::matmul_rule{.ta = transpose_a, .tb = transpose_b}, a, b);
}
}  // namespace fusegrad
