#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which defines the runner, and
/// <fusegrad/eager/linalg.hpp>, which defines fg::matmul.) The rules of fg::matmul (Note
/// [boundary ops]): its shape rule, the batch of matrix products it asks an evaluator to run
/// (gemm_request, run by dispatch::run_gemm: BLAS on the host, the device evaluator's gemm on a
/// GPU), and its backward, two matmuls.

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "common.hpp"

namespace fusegrad::ops {
/// `batch` row-major products C_p = op(A_p) op(B_p), op transposing when its flag is set: A_p is
/// m x k and B_p k x n after op; A_p starts step_a elements after A_{p-1} (0: one matrix for
/// every product), B_p step_b after B_{p-1}, C_p m * n after C_{p-1}.
struct gemm_request {
  bool ta = false, tb = false;
  std::size_t m = 0, n = 0, k = 0, batch = 1, step_a = 0, step_b = 0;
};

/// The rules of fg::matmul.
struct matmul_rule {
  static constexpr const char* name = "matmul";
  bool ta = false, tb = false;
  fg::shape sa{}, sb{};        // the operands' shapes
  fg::shape ma{}, mb{}, mc{};  // the operands and the result as (batches of) matrices
  gemm_request product_{};

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
    gemm_request& r = product_;
    r.ta = ta;
    r.tb = tb;
    r.batch = out.elements();
    // A matrix against a batch uses the one matrix for every batch element; the batch is
    // flattened into one leading axis so the gradient's batch sum is over axis 0.
    auto flat = [&](const fg::shape& s) {
      return s.rank() <= 3 ? s : fg::shape{r.batch, s[s.rank() - 2], s[s.rank() - 1]};
    };
    if ((ma.rank() == 2) != (mb.rank() == 2) && big.rank() > 3) {
      ma = flat(ma);
      mb = flat(mb);
    }
    const std::size_t ra = ma.rank(), rb = mb.rank();
    r.m = ta ? ma[ra - 1] : ma[ra - 2];
    r.k = ka;
    r.n = tb ? mb[rb - 2] : mb[rb - 1];
    FG_CHECK(std::max({r.m, r.n, r.k}) <= static_cast<std::size_t>(INT_MAX), shape_error,
             "fg::matmul: dimensions of ", ma, " and ", mb, " exceed what BLAS indexes (", INT_MAX, ")");
    r.step_a = ra > 2 ? r.m * r.k : 0;
    r.step_b = rb > 2 ? r.k * r.n : 0;
    mc = ra >= rb ? ma : mb;
    mc[mc.rank() - 2] = r.m;
    mc[mc.rank() - 1] = r.n;
    if (!va) out.push_back(r.m);
    if (!vb) out.push_back(r.n);
    return out;
  }
  /// What the runner asks an evaluator to run (Note [boundary ops], step 5).
  const gemm_request& product() const { return product_; }
  template <class T>
  std::pair<tensor<T>, tensor<T>> saved(const tensor<T>&, const tensor<T>& a, const tensor<T>& b) const {
    return {a, b};
  }
  template <class T>
  std::array<tensor<T>, 2> backward(const tensor<T>& g, std::span<const bool> need,
                                    const std::pair<tensor<T>, tensor<T>>& ab) const {
    // C = op(A) op(B): each gradient is one product of g with the other operand, arranged so
    // that the transpose flags absorb every transpose (TensorFlow's MatMul gradient).
    auto as = [](const tensor<T>& t, const fg::shape& s) { return t.shape() == s ? t : reshape(t, s); };
    std::array<tensor<T>, 2> r;
    if (g.size() == 0) {
      // Each gradient element sums g's elements times the other operand's, and g has none: zeros,
      // without the products (a matrix that served 2^40 empty batch elements would otherwise get
      // a (2^40, k, n) product to sum; Note [empty results]).
      if (need[0]) r[0] = fill<T>(sa, T(0), g.device());
      if (need[1]) r[1] = fill<T>(sb, T(0), g.device());
      return r;
    }
    const tensor<T> a = as(ab.first, ma), b = as(ab.second, mb), gc = as(g, mc);
    if (need[0]) {
      r[0] = !ta ? matmul(gc, b, false, !tb) : (tb ? matmul(b, gc, true, true) : matmul(b, gc, false, true));
      if (r[0].rank() > a.rank()) r[0] = reduce_sum(r[0], 0L);  // a served every batch
      r[0] = as(r[0], sa);
    }
    if (need[1]) {
      r[1] = !tb ? matmul(a, gc, !ta, false) : (ta ? matmul(gc, a, true, true) : matmul(gc, a, true, false));
      if (r[1].rank() > b.rank()) r[1] = reduce_sum(r[1], 0L);
      r[1] = as(r[1], sb);
    }
    return r;
  }
};
}  // namespace fusegrad::ops
