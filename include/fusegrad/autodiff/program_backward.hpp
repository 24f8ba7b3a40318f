#pragma once
/// \file The backward steps of programs (Note [programs], expr/program.hpp): over blocks of
/// host memory, over single elements, and op by op over tensors (recorded, for higher orders
/// and for the device).
/// Note [block backward]: a backward step that no tape records runs on the host in one pass
/// over memory: the iteration space is cut into blocks of grad_block elements; for each block
/// the program's ops run forward into small buffers that stay in cache, then its vjp rules run
/// in reverse, adding each contribution into the adjoint of the slot it belongs to, and those
/// of the leaf positions into the gradient of their input. So each input and each gradient is
/// read or written once, whatever the number of inputs and positions; the per-op loops are
/// compiled once per op and element type. The same order of operations runs on single
/// elements (point_backward, for scalar entries), so both give the same numbers.

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "../core/numerics.hpp"
#include "../core/small_vector.hpp"
#include "../eval/host_reduce.hpp"
#include "../expr/program.hpp"
#include "tape_state.hpp"

namespace fusegrad::autodiff {

/// Elements per block of a block backward step (Note [block backward]).
inline constexpr std::size_t grad_block = 256;

/// A distinct floating-point input of a recorded evaluation.
struct program_input {
  tensor_id id;
  fg::shape shape;
  dtype type;
};
/// Per leaf position: the index of its input, or none (an integer leaf).
inline constexpr std::uint8_t no_input = 0xff;

/// The eager ops a backward step replayed op by op needs besides the programs' own: supplied
/// by the floor that evaluates and records (eager/evaluate.hpp), so that autodiff calls it
/// without including it.
struct eager_services {
  /// a + b (one floating type), evaluated and recorded.
  core::any_tensor (*add)(const core::any_tensor& a, const core::any_tensor& b);
  /// t summed over its broadcast axes down to shape s, recorded.
  core::any_tensor (*sum_to)(const core::any_tensor& t, const fg::shape& s);
  /// t in shape s (same size), recorded.
  core::any_tensor (*reshape)(const core::any_tensor& t, const fg::shape& s);
  /// A rank-0 tensor of type d holding c, on device dev.
  core::any_tensor (*constant)(core::cell c, dtype d, fg::device dev);
  /// t broadcast to shape s, recorded.
  core::any_tensor (*broadcast)(const core::any_tensor& t, const fg::shape& s);
  /// One program op on tensors (expr::unit_program), evaluated and recorded.
  core::any_tensor (*apply)(const expr::op_table& op, const core::any_tensor* args);
};

/// dst[i] += src[i] for n elements of floating type d.
inline void add_into(dtype d, void* dst, const void* src, std::size_t n) {
  if (d == dtype::float32) {
    float* a = static_cast<float*>(dst);
    const float* b = static_cast<const float*>(src);
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + a[i];
  } else {
    double* a = static_cast<double*>(dst);
    const double* b = static_cast<const double*>(src);
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + a[i];
  }
}

/// A gradient tensor as the tape holds it (float or double; nothing otherwise).
inline any_grad to_any_grad(core::any_tensor&& t) {
  if (auto* f = std::get_if<tensor<float>>(&t)) return std::move(*f);
  if (auto* d = std::get_if<tensor<double>>(&t)) return std::move(*d);
  return {};
}
inline core::any_tensor from_any_grad(const any_grad& g) {
  if (auto* f = std::get_if<tensor<float>>(&g)) return *f;
  if (auto* d = std::get_if<tensor<double>>(&g)) return *d;
  return {};
}

/// n values of T, uninitialised: inline up to N, on the heap beyond (per-slot scratch arrays
/// of a backward step; a scalar entry's step runs on every recorded op).
template <class T, std::size_t N>
class slot_array {
 public:
  explicit slot_array(std::size_t n) : heap_(n > N ? new T[n] : nullptr) {}
  T& operator[](std::size_t i) noexcept { return heap_ ? heap_[i] : inline_[i]; }
  const T& operator[](std::size_t i) const noexcept { return heap_ ? heap_[i] : inline_[i]; }

 private:
  std::array<T, N> inline_;
  std::unique_ptr<T[]> heap_;
};
using slot_flags = slot_array<std::uint8_t, 32>;

/// Which slots of p carry a gradient to a needed input: leaf positions of needed inputs, and
/// the floating results of ops with such an operand.
inline slot_flags gradient_slots(const expr::program& p, const std::uint8_t* input_of, std::span<const bool> needed) {
  slot_flags needs(p.slots());
  for (std::size_t s = 0; s < p.leaves; ++s) needs[s] = input_of[s] != no_input && needed[input_of[s]];
  std::size_t s = p.first_instr();
  for (const expr::instr& in : p.code) {
    bool any = false;
    for (std::size_t j = 0; j < in.op->arity; ++j) any = any || needs[in.args[j]];
    needs[s++] = any && (in.op->result == dtype::float32 || in.op->result == dtype::float64);
  }
  return needs;
}

/// Reads a host tensor's elements over an iteration space it broadcasts to, a block at a time.
class broadcast_reader {
 public:
  broadcast_reader() = default;
  broadcast_reader(const void* data, std::size_t elem, const fg::shape& s, const fg::shape& iter, unsigned char* splat)
      : base_(static_cast<const unsigned char*>(data)), elem_(elem), iter_(iter) {
    if (s.elements() == iter.elements()) {
      mode_ = mode::direct;
    } else if (s.elements() == 1) {
      mode_ = mode::splat;
      splat_ = splat;
      for (std::size_t i = 0; i < grad_block; ++i) std::memcpy(splat + i * elem, base_, elem);
    } else {
      mode_ = mode::strided;
      const auto cs = core::contiguous_strides(s);
      const std::size_t off = iter.rank() - s.rank();
      for (std::size_t d = 0; d < iter.rank(); ++d) strides_[d] = d < off || s[d - off] == 1 ? 0 : cs[d - off];
    }
  }
  /// The n elements from flat position start of the iteration space: in the tensor, or copied to buf.
  /// A strided read goes run by run along the innermost axis: a run that the tensor holds
  /// contiguously is returned in place when it covers all n (a bias over a batch's rows), else
  /// copied at once; a run over a broadcast axis is one element repeated.
  const void* read(std::size_t start, std::size_t n, unsigned char* buf) const {
    if (mode_ == mode::direct) return base_ + start * elem_;
    if (mode_ == mode::splat) return splat_;
    const std::size_t r = iter_.rank(), last = r - 1;
    std::array<std::size_t, max_rank> idx{};
    index_t off = 0;
    std::size_t rest = start;
    for (std::size_t d = r; d-- > 0;) {
      idx[d] = rest % iter_[d];
      rest /= iter_[d];
      off += static_cast<index_t>(idx[d]) * strides_[d];
    }
    const index_t step = strides_[last];
    if (step == 1 && n <= iter_[last] - idx[last]) return base_ + off * static_cast<index_t>(elem_);
    for (std::size_t i = 0; i < n;) {
      const std::size_t run = std::min(n - i, iter_[last] - idx[last]);
      unsigned char* to = buf + i * elem_;
      const unsigned char* from = base_ + off * static_cast<index_t>(elem_);
      if (step == 1) {
        std::memcpy(to, from, run * elem_);
      } else if (step == 0) {
        for (std::size_t j = 0; j < run; ++j) copy_element(to + j * elem_, from);
      } else {
        for (std::size_t j = 0; j < run; ++j) copy_element(to + j * elem_, from + static_cast<index_t>(j) * step * static_cast<index_t>(elem_));
      }
      i += run;
      off += static_cast<index_t>(run) * step;
      idx[last] += run;
      // Carry into the outer axes.
      for (std::size_t d = r; d-- > 0 && idx[d] == iter_[d];) {
        off -= strides_[d] * static_cast<index_t>(iter_[d]);
        idx[d] = 0;
        if (d == 0) break;
        ++idx[d - 1];
        off += strides_[d - 1];
      }
    }
    return buf;
  }

 private:
  void copy_element(unsigned char* to, const unsigned char* from) const {
    if (elem_ == 4) std::memcpy(to, from, 4);
    else if (elem_ == 8) std::memcpy(to, from, 8);
    else std::memcpy(to, from, elem_);
  }
  enum class mode { direct, splat, strided };
  const unsigned char* base_ = nullptr;
  const unsigned char* splat_ = nullptr;
  std::size_t elem_ = 0;
  fg::shape iter_;
  mode mode_ = mode::direct;
  std::array<index_t, max_rank> strides_{};
};

/// Whether keep (of iter's rank) keeps a suffix of iter's axes and reduces the others (a
/// bias's shape against a batch of rows).
inline bool keeps_suffix(const fg::shape& keep, const fg::shape& iter) {
  std::size_t d = keep.rank();
  while (d > 0 && keep[d - 1] == iter[d - 1]) --d;
  for (std::size_t e = 0; e < d; ++e)
    if (keep[e] != 1) return false;
  return true;
}

/// t (shape iter) summed down to target, which broadcasts to iter.
template <class T>
tensor<T> sum_host_to(const tensor<T>& t, const fg::shape& iter, const fg::shape& target) {
  const fg::shape keep = core::padded_to_rank(target, iter.rank());
  using A = typename ops::sum_reducer<T>::acc;
  std::vector<A> acc(keep.elements(), A(0));
  const std::size_t n = iter.elements(), width = keep.elements();
  if (n <= host::detail::reduce_block && width > 0 && keeps_suffix(keep, iter)) {
    // One block of reduce_host (Note [parallel reductions]): the rows added in order, the
    // same bits, without copying each row to a buffer first.
    // Groups of 8 columns: a loop of fixed length, which -O2 vectorizes.
    const T* x = t.data();
    A* a = acc.data();
    const std::size_t by8 = width / 8 * 8;
    for (std::size_t r = 0; r < n / width; ++r) {
      const T* row = x + r * width;
      std::size_t j = 0;
      for (; j < by8; j += 8)
        for (std::size_t k = 0; k < 8; ++k) a[j + k] += static_cast<A>(row[j + k]);
      for (; j < width; ++j) a[j] += static_cast<A>(row[j]);
    }
  } else {
    host::reduce_host<ops::sum_reducer<T>>(expr::leaf<T>{t}, iter, keep, acc.data());
  }
  tensor<T> r(target, fg::device::cpu());
  for (std::size_t i = 0; i < acc.size(); ++i) r.buffer()->data[i] = static_cast<T>(acc[i]);
  return r;
}

/// The gradients of a program's inputs for upstream gradient g (a host tensor broadcasting to
/// iter) in one pass over host memory (Note [block backward]). leaves: the tensors at the leaf
/// positions (on the host); literals: the literals' values.
inline void block_backward(const expr::program& p, std::span<const core::any_tensor> leaves,
                           std::span<const core::cell> literals, const std::uint8_t* input_of,
                           std::span<const program_input> inputs, const fg::shape& iter, const core::any_tensor& g,
                           std::span<const bool> needed, std::span<any_grad> grads) {
  const slot_flags needs = gradient_slots(p, input_of, needed);
  if (!needs[p.result()]) return;
  ++core::counters().passes;
  const std::size_t n = iter.elements(), slots = p.slots(), first = p.first_instr();
  const dtype gt = p.types[p.result()];

  // Each needed input's gradient: written in place when it has the iteration space's size,
  // else over the whole space first and summed down at the end. Made on the calling thread,
  // whose counters count buffers.
  core::small_vector<core::any_tensor, 2> out;
  core::small_vector<unsigned char*, 2> dest;
  core::small_vector<std::uint8_t, 2> direct;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const bool d = inputs[k].shape.elements() == n;
    direct.push_back(d);
    core::any_tensor t;
    if (needed[k]) {
      const fg::shape& s = d ? inputs[k].shape : iter;
      if (inputs[k].type == dtype::float32) t = tensor<float>(s, fg::device::cpu());
      else t = tensor<double>(s, fg::device::cpu());
    }
    dest.push_back(static_cast<unsigned char*>(const_cast<void*>(core::data_of(t))));
    out.push_back(std::move(t));
  }

  // Threads take contiguous ranges of blocks, each with a workspace of its own: blocks write
  // disjoint parts of the gradients, and every per-op loop starts at a block's start as on one
  // thread, so each thread count gives the same bits (Note [intra-op pool]).
  const std::size_t blocks = (n + grad_block - 1) / grad_block;
  core::parallel_for(blocks, n, [&](std::size_t b0, std::size_t b1) {
    constexpr std::size_t cell_bytes = grad_block * 8;
    // One workspace: per slot a value buffer (leaves: for broadcast reads; literals: splats),
    // per op slot an adjoint buffer, and one for the upstream gradient (two: splat and read).
    const std::size_t ws_cells = 2 * slots + 3;
    std::unique_ptr<unsigned char[]> ws(new unsigned char[ws_cells * cell_bytes]);
    auto value_buf = [&](std::size_t s) { return ws.get() + s * cell_bytes; };
    auto adjoint_buf = [&](std::size_t s) { return ws.get() + (slots + s) * cell_bytes; };
    unsigned char* g_buf = ws.get() + 2 * slots * cell_bytes;
    unsigned char* g_splat = g_buf + cell_bytes;
    unsigned char* scratch = g_splat + cell_bytes;

    core::small_vector<broadcast_reader, 8> readers;
    for (std::size_t s = 0; s < p.leaves; ++s)
      readers.push_back(broadcast_reader(core::data_of(leaves[s]), core::size_of(p.types[s]),
                                         core::shape_of(leaves[s]), iter, value_buf(s)));
    core::small_vector<const void*, 16> value;
    for (std::size_t s = 0; s < slots; ++s) value.push_back(nullptr);
    for (std::size_t c = 0; c < p.literals; ++c) {
      const std::size_t s = p.leaves + c, e = core::size_of(p.types[s]);
      for (std::size_t i = 0; i < grad_block; ++i) std::memcpy(value_buf(s) + i * e, literals[c].bytes, e);
      value[s] = value_buf(s);
    }
    for (std::size_t s = first; s < slots; ++s) value[s] = value_buf(s);
    const broadcast_reader g_reader(core::data_of(g), core::size_of(gt), core::shape_of(g), iter, g_splat);

    core::small_vector<std::uint8_t, 16> written;
    for (std::size_t s = 0; s < slots; ++s) written.push_back(false);
    core::small_vector<std::uint8_t, 2> in_written;
    for (std::size_t k = 0; k < inputs.size(); ++k) in_written.push_back(false);
    for (std::size_t start = b0 * grad_block; start < std::min(n, b1 * grad_block); start += grad_block) {
      const std::size_t m = std::min(grad_block, n - start);
      for (std::size_t s = 0; s < p.leaves; ++s) value[s] = readers[s].read(start, m, value_buf(s));
      const void* gv = g_reader.read(start, m, g_buf);
      // Every op but the last: the result's value is no vjp rule's operand.
      for (std::size_t k = 0; k + 1 < p.code.size(); ++k) {
        const expr::instr& in = p.code[k];
        const void* args[expr::max_arity] = {value[in.args[0]], value[in.args[1]], value[in.args[2]]};
        in.op->forward(args, value_buf(first + k), m);
      }
      for (std::size_t s = 0; s < slots; ++s) written[s] = false;
      for (std::size_t k = 0; k < inputs.size(); ++k) in_written[k] = false;
      // The contribution c of slot s: into its adjoint, or its input's gradient for a leaf.
      auto target = [&](std::size_t s, bool& acc) -> unsigned char* {
        if (s < p.leaves) {
          const std::size_t k = input_of[s];
          acc = in_written[k];
          in_written[k] = true;
          return dest[k] + start * core::size_of(inputs[k].type);
        }
        acc = written[s];
        written[s] = true;
        return adjoint_buf(s);
      };
      if (p.code.empty()) {
        bool acc;
        unsigned char* d = target(0, acc);
        std::memcpy(d, gv, m * core::size_of(gt));
      }
      for (std::size_t k = p.code.size(); k-- > 0;) {
        const std::size_t s = first + k;
        if (!needs[s]) continue;
        const void* a = s == p.result() ? gv : (written[s] ? adjoint_buf(s) : nullptr);
        if (!a) continue;
        const expr::instr& in = p.code[k];
        const void* args[expr::max_arity] = {value[in.args[0]], value[in.args[1]], value[in.args[2]]};
        for (std::size_t j = 0; j < in.op->arity; ++j) {
          if (!needs[in.args[j]] || !in.op->vjp[j]) continue;
          bool acc;
          unsigned char* d = target(in.args[j], acc);
          if (!acc) {
            in.op->vjp[j](a, args, d, m);
          } else {
            in.op->vjp[j](a, args, scratch, m);
            add_into(in.op->args[j], d, scratch, m);
          }
        }
      }
      for (std::size_t k = 0; k < inputs.size(); ++k)
        if (needed[k] && !in_written[k])
          std::memset(dest[k] + start * core::size_of(inputs[k].type), 0, m * core::size_of(inputs[k].type));
    }
  });
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!needed[k]) continue;
    if (!direct[k]) {
      if (auto* f = std::get_if<tensor<float>>(&out[k])) out[k] = sum_host_to(*f, iter, inputs[k].shape);
      else out[k] = sum_host_to(std::get<tensor<double>>(out[k]), iter, inputs[k].shape);
    }
    grads[k] = to_any_grad(std::move(out[k]));
  }
}

/// a + b for two elements of floating type d.
inline core::cell add_cells(dtype d, core::cell a, core::cell b) {
  if (d == dtype::float32) return core::cell::of(a.as<float>() + b.as<float>());
  return core::cell::of(a.as<double>() + b.as<double>());
}

/// The backward step of a program of one op over leaves (a statement of scalar code) on single
/// elements: each needed input's gradient, a cell of its type, into sum[k] where has[k] is set
/// (has all false on entry), the op's operands in order. point_backward's first case; a scalar
/// entry's step runs it directly (Note [scalar entries]), so it is inlined into both.
FG_INLINE inline void one_op_point_backward(const expr::program& p, const core::cell* leaf_values,
                                            const std::uint8_t* input_of, const dtype* input_types, core::cell g,
                                            std::span<const bool> needed, core::cell* sum, bool* has) {
  const expr::instr& in = p.code[0];
  if (in.op->result != dtype::float32 && in.op->result != dtype::float64) return;
  const core::cell args[expr::max_arity] = {leaf_values[in.args[0]], leaf_values[in.args[1]],
                                            leaf_values[in.args[2]]};
  for (std::size_t j = 0; j < in.op->arity; ++j) {
    const std::uint8_t k = input_of[in.args[j]];
    if (k == no_input || !needed[k] || !in.op->point_vjp[j]) continue;
    const core::cell c = in.op->point_vjp[j](g, args);
    sum[k] = has[k] ? autodiff::add_cells(input_types[k], c, sum[k]) : c;
    has[k] = true;
  }
}

/// block_backward on one element: leaf and literal values as cells, gradients as cells of
/// their input's type (nullopt where none), in the same order of operations.
inline void point_backward(const expr::program& p, const core::cell* leaf_values, const core::cell* literals,
                           const std::uint8_t* input_of, const dtype* input_types, core::cell g,
                           std::span<const bool> needed, std::span<std::optional<core::cell>> grads) {
  if (p.code.size() == 1 && p.literals == 0) {
    core::cell sum[expr::max_arity];
    bool has[expr::max_arity] = {};
    one_op_point_backward(p, leaf_values, input_of, input_types, g, needed, sum, has);
    for (std::size_t k = 0; k < grads.size(); ++k)
      if (has[k]) grads[k] = grads[k] ? autodiff::add_cells(input_types[k], sum[k], *grads[k]) : sum[k];
    return;
  }
  const slot_flags needs = gradient_slots(p, input_of, needed);
  if (!needs[p.result()]) return;
  const std::size_t slots = p.slots(), first = p.first_instr();
  slot_array<core::cell, 32> value(slots), adj(slots);
  slot_flags written(slots);
  for (std::size_t s = first; s < slots; ++s) written[s] = 0;
  for (std::size_t s = 0; s < first; ++s) value[s] = s < p.leaves ? leaf_values[s] : literals[s - p.leaves];
  for (std::size_t k = 0; k + 1 < p.code.size(); ++k) {  // the result's value is not needed
    const expr::instr& in = p.code[k];
    const core::cell args[expr::max_arity] = {value[in.args[0]], value[in.args[1]], value[in.args[2]]};
    value[first + k] = in.op->point_forward(args);
  }
  auto add_to = [&](std::size_t s, core::cell c) {
    if (s < p.leaves) {
      const std::size_t k = input_of[s];
      grads[k] = grads[k] ? autodiff::add_cells(input_types[k], c, *grads[k]) : c;
    } else {
      adj[s] = written[s] ? autodiff::add_cells(p.types[s], c, adj[s]) : c;
      written[s] = true;
    }
  };
  if (p.code.empty()) add_to(0, g);
  for (std::size_t k = p.code.size(); k-- > 0;) {
    const std::size_t s = first + k;
    if (!needs[s]) continue;
    if (s != p.result() && !written[s]) continue;
    const core::cell a = s == p.result() ? g : adj[s];
    const expr::instr& in = p.code[k];
    const core::cell args[expr::max_arity] = {value[in.args[0]], value[in.args[1]], value[in.args[2]]};
    for (std::size_t j = 0; j < in.op->arity; ++j)
      if (needs[in.args[j]] && in.op->point_vjp[j]) add_to(in.args[j], in.op->point_vjp[j](a, args));
  }
}

/// The values of a program's slots evaluated op by op as eager tensors (recorded), literals as
/// rank-0 tensors on the leaves' device.
inline core::small_vector<core::any_tensor, 16> replay_forward(const expr::program& p,
                                                               std::span<const core::any_tensor> leaves,
                                                               std::span<const core::cell> literals,
                                                               const eager_services& sv) {
  core::small_vector<core::any_tensor, 16> value;
  const fg::device dev = leaves.empty() ? fg::device::cpu() : core::device_of(leaves[0]);
  for (std::size_t s = 0; s < p.leaves; ++s) value.push_back(leaves[s]);
  for (std::size_t c = 0; c < p.literals; ++c) value.push_back(sv.constant(literals[c], p.types[p.leaves + c], dev));
  for (const expr::instr& in : p.code) {
    const core::any_tensor args[expr::max_arity] = {value[in.args[0]],
                                                    in.op->arity > 1 ? value[in.args[1]] : core::any_tensor{},
                                                    in.op->arity > 2 ? value[in.args[2]] : core::any_tensor{}};
    value.push_back(sv.apply(*in.op, args));
  }
  return value;
}

/// The program evaluated op by op: its result as an eager tensor.
inline core::any_tensor run_op_by_op(const expr::program& p, std::span<const core::any_tensor> leaves,
                               std::span<const core::cell> literals, const eager_services& sv) {
  return replay_forward(p, leaves, literals, sv)[p.result()];
}

/// The backward step of a program op by op over eager tensors: its forward values recomputed,
/// then each op's vjp rules evaluated as eager expressions, so that a recording tape records
/// every step (higher orders), and device tensors stay on their device.
inline void replay_backward(const expr::program& p, std::span<const core::any_tensor> leaves,
                            std::span<const core::cell> literals, const std::uint8_t* input_of,
                            std::span<const program_input> inputs, const fg::shape& iter, core::any_tensor g,
                            std::span<const bool> needed, std::span<any_grad> grads, const eager_services& sv) {
  const slot_flags needs = gradient_slots(p, input_of, needed);
  if (!needs[p.result()]) return;
  core::small_vector<core::any_tensor, 16> value = autodiff::replay_forward(p, leaves, literals, sv);
  core::small_vector<core::any_tensor, 16> adj;
  for (std::size_t s = 0; s < value.size(); ++s) adj.push_back({});
  core::small_vector<core::any_tensor, 2> in_grad;
  for (std::size_t k = 0; k < inputs.size(); ++k) in_grad.push_back({});
  auto add_to = [&](std::size_t s, core::any_tensor c) {
    if (core::shape_of(c) != core::shape_of(value[s])) c = sv.sum_to(c, core::shape_of(value[s]));
    core::any_tensor& a = s < p.leaves ? in_grad[input_of[s]] : adj[s];
    a = std::holds_alternative<std::monostate>(a) ? std::move(c) : sv.add(c, a);
  };
  const std::size_t first = p.first_instr();
  // The evaluation ran over iter, which the expression broadcasts to and g broadcasts from.
  if (core::shape_of(g) != iter) g = sv.broadcast(g, iter);
  adj[p.result()] = g;
  if (p.code.empty()) add_to(0, g);
  for (std::size_t k = p.code.size(); k-- > 0;) {
    const std::size_t s = first + k;
    if (!needs[s] || std::holds_alternative<std::monostate>(adj[s])) continue;
    const expr::instr& in = p.code[k];
    const core::any_tensor args[expr::max_arity] = {value[in.args[0]],
                                                    in.op->arity > 1 ? value[in.args[1]] : core::any_tensor{},
                                                    in.op->arity > 2 ? value[in.args[2]] : core::any_tensor{}};
    for (std::size_t j = 0; j < in.op->arity; ++j) {
      if (!needs[in.args[j]] || !in.op->vjp_rule[j]) continue;
      const expr::rule_program& rule = *in.op->vjp_rule[j]();
      const core::any_tensor rule_in[expr::max_arity + 1] = {adj[s], args[0], args[1], args[2]};
      core::any_tensor c = rule.pass >= 0 ? rule_in[rule.pass]
                                          : run_op_by_op(rule.p, std::span(rule_in, in.op->arity + 1), rule.literals, sv);
      if (core::checking_numerics()) [[unlikely]]  // Note [numerics checks]
        if (const core::nonfinite f = core::find_nonfinite(c))
          throw value_error(core::cat("fg::debugging: the gradient of '", in.op->name, "' for its operand ", j,
                                      " (shape ", core::shape_of(args[j]), ") holds ", f.words(),
                                      " values (check_numerics)"));
      add_to(in.args[j], std::move(c));
    }
    adj[s] = {};  // released as soon as its contributions are made
  }
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (needed[k]) grads[k] = to_any_grad(std::move(in_grad[k]));
}
}  // namespace fusegrad::autodiff
