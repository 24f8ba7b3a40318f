#pragma once
/// \file fg::matmul: matrix products through OpenBLAS for float and double, a plain loop for
/// integers; batched, broadcast over a batch, and with vectors. Its gradient is two matmuls.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include <cblas.h>

#include "../autodiff/record_op.hpp"
#include "../eval/creation.hpp"
#include "evaluate.hpp"
#include "reduce.hpp"
#include "reshape.hpp"

namespace fusegrad {

template <tensor_like A, tensor_like B>
tensor<value_type_of<A>> matmul(const A& a, const B& b, bool transpose_a = false, bool transpose_b = false);

namespace detail {
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
          for (std::size_t j = 0; j < n; ++j) c[i * n + j] = wrapping_add(c[i * n + j], wrapping_mul(av, b[j * ldb + p]));
        else
          for (std::size_t j = 0; j < n; ++j) c[i * n + j] = wrapping_add(c[i * n + j], wrapping_mul(av, b[p * ldb + j]));
      }
  }
}

/// The product of two operands of rank >= 2 whose shapes matmul has checked: batch dimensions
/// equal, or one side a single matrix used for every batch element. Recorded.
template <class T>
tensor<T> matmul_matrices(const tensor<T>& a, const tensor<T>& b, bool ta, bool tb) {
  const fg::shape& sa = a.shape();
  const fg::shape& sb = b.shape();
  const std::size_t ra = sa.rank(), rb = sb.rank();
  const std::size_t m = ta ? sa[ra - 1] : sa[ra - 2], k = ta ? sa[ra - 2] : sa[ra - 1];
  const std::size_t n = tb ? sb[rb - 2] : sb[rb - 1];
  fg::shape out;
  const fg::shape& batch_from = ra >= rb ? sa : sb;
  for (std::size_t d = 0; d + 2 < batch_from.rank(); ++d) out.push_back(batch_from[d]);
  std::size_t batch = out.elements();
  out.push_back(m);
  out.push_back(n);
  FG_CHECK(std::max({m, n, k}) <= static_cast<std::size_t>(INT_MAX), shape_error, "fg::matmul: dimensions of ", sa,
           " and ", sb, " exceed what BLAS indexes (", INT_MAX, ")");
  tensor<T> c(out, a.device(), "matmul");
  const std::size_t step_a = ra > 2 ? m * k : 0, step_b = rb > 2 ? k * n : 0;
  if (c.device().is_gpu())
    device_eval::gemm<T>(ta, tb, m, n, k, batch, a.data(), step_a, b.data(), step_b, c.buffer()->data, c.device());
  else
    for (std::size_t i = 0; i < batch; ++i)
      gemm<T>(ta, tb, m, n, k, a.data() + i * step_a, b.data() + i * step_b, c.buffer()->data + i * m * n);
  record_op<T, 2>("matmul", {a.id(), b.id()}, c, [a, b, ta, tb](const tensor<T>& g, std::span<const bool> need) {
    // C = op(A) op(B): each gradient is one product of g with the other operand, arranged so
    // that the transpose flags absorb every transpose (TensorFlow's MatMul gradient).
    std::array<tensor<T>, 2> r;
    if (need[0]) {
      r[0] = !ta ? matmul(g, b, false, !tb) : (tb ? matmul(b, g, true, true) : matmul(b, g, false, true));
      if (r[0].rank() > a.rank()) r[0] = reduce_sum(r[0], axes(std::vector<long>{0}));  // a served every batch
    }
    if (need[1]) {
      r[1] = !tb ? matmul(a, g, !ta, false) : (ta ? matmul(g, a, true, true) : matmul(g, a, true, false));
      if (r[1].rank() > b.rank()) r[1] = reduce_sum(r[1], axes(std::vector<long>{0}));
    }
    return r;
  });
  return c;
}
}  // namespace detail

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
  tensor<T> at = eval(a);
  tensor<T> bt = eval(b);
  for (const auto* t : {&at, &bt})
    FG_CHECK(t->defined(), value_error, "fg::matmul: an operand is undefined (an unconnected gradient?)");
  detail::check_same_device("matmul", at.device(), bt.device());
  const fg::shape sa = at.shape(), sb = bt.shape();
  auto flags = [&] {
    return std::string(transpose_a ? " with transpose_a" : "") + (transpose_b ? " with transpose_b" : "");
  };
  FG_CHECK(sa.rank() > 0 && sb.rank() > 0, shape_error, "fg::matmul: operands must have rank >= 1, got shapes ", sa,
           " and ", sb, "; multiply by a scalar with operator*");
  FG_CHECK(!(transpose_a && sa.rank() == 1) && !(transpose_b && sb.rank() == 1), shape_error,
           "fg::matmul: a transpose flag applies to a matrix, but the operand is a vector (shapes ", sa, " and ", sb,
           "); drop the flag");
  const bool va = sa.rank() == 1, vb = sb.rank() == 1;
  if (va) at = reshape(at, fg::shape{1, sa[0]});
  if (vb) bt = reshape(bt, fg::shape{sb[0], 1});
  const fg::shape& ma = at.shape();
  const fg::shape& mb = bt.shape();
  const std::size_t ka = transpose_a ? ma[ma.rank() - 2] : ma[ma.rank() - 1];
  const std::size_t kb = transpose_b ? mb[mb.rank() - 1] : mb[mb.rank() - 2];
  FG_CHECK(ka == kb, shape_error, "fg::matmul: inner dimensions do not match: shapes ", sa, " and ", sb, flags(), " give ",
           ka, " vs ", kb, "; the last axis of a must equal the second-to-last of b");
  if (ma.rank() > 2 && mb.rank() > 2) {
    bool same = ma.rank() == mb.rank();
    for (std::size_t d = 0; same && d + 2 < ma.rank(); ++d) same = ma[d] == mb[d];
    FG_CHECK(same, shape_error, "fg::matmul: batch dimensions of shapes ", sa, " and ", sb,
             " differ; give both the same batch dimensions, or make one side a single matrix");
  }
  // A matrix against a batch uses the one matrix for every batch element; flatten the batch into
  // one leading axis so the gradient's batch sum is over axis 0.
  auto flat = [](const tensor<T>& t) {
    if (t.rank() <= 3) return t;
    const fg::shape& s = t.shape();
    std::size_t nb = 1;
    for (std::size_t d = 0; d + 2 < s.rank(); ++d) nb *= s[d];
    return reshape(t, fg::shape{nb, s[s.rank() - 2], s[s.rank() - 1]});
  };
  const bool mixed = (ma.rank() == 2) != (mb.rank() == 2);
  fg::shape out_batch;
  const fg::shape& big = ma.rank() >= mb.rank() ? ma : mb;
  for (std::size_t d = 0; d + 2 < big.rank(); ++d) out_batch.push_back(big[d]);
  tensor<T> c = mixed && big.rank() > 3 ? detail::matmul_matrices(flat(at), flat(bt), transpose_a, transpose_b)
                                         : detail::matmul_matrices(at, bt, transpose_a, transpose_b);
  fg::shape out = out_batch;
  if (!va) out.push_back(c.shape()[c.rank() - 2]);
  if (!vb) out.push_back(c.shape()[c.rank() - 1]);
  return out == c.shape() ? c : reshape(c, out);
}
}  // namespace fusegrad
