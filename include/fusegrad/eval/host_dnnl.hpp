#pragma once
/// \file The definitions of the host convolutions that eval/conv.hpp declares: float32 through
/// oneDNN's convolution primitives, reading and writing fusegrad's NHWC and HWIO buffers in
/// place; float64 through the direct loops of eval/host_conv.hpp (oneDNN 2.6 has no f64
/// convolution on CPUs). The one header that includes <dnnl.hpp>: eval/conv.hpp includes it in
/// header-only use; with FUSEGRAD_SEPARATE_ENGINES the compiled library's one source file that
/// includes it defines these functions (their linkage is FG_ENGINES_INLINE, core/config.hpp).
///
/// Note [dnnl primitives]: one oneDNN CPU engine serves the process, and each thread has its own
/// stream. Building a primitive descriptor costs tens of microseconds to milliseconds (oneDNN
/// picks and JIT-compiles an implementation), so each primitive is built once per geometry and
/// pass and kept in a small cache keyed by every parameter (a mutex guards it; at 256 entries it
/// is emptied rather than managed). Cached primitives are shared between threads, which oneDNN
/// allows only with scratchpad_mode::user: each execution then gets its scratch memory from a
/// per-thread block here, which also holds the reordered operands of Note [dnnl layouts].
///
/// Note [dnnl layouts]: fusegrad's buffers are NHWC data and HWIO filters, and a primitive built
/// on those layouts runs on them in place. On an AVX2 machine oneDNN 2.6 runs such primitives
/// through im2col and GEMM ("gemm:jit"), which scaled badly over threads: for
/// seed 000's layers (batch 64, 3x3 SAME) on 2 busy cores with OMP_WAIT_POLICY=passive, forward
/// and both backprops of 14x14x64 -> 128 took 241 ms that way against 159 ms through the blocked
/// layouts oneDNN prefers (chosen with format_tag::any), the reorders from and to NHWC/HWIO
/// counted, and 554 ms against 75 ms for 28x28x1 -> 64; 7x7x128 -> 128 took the same either way
/// (benchmarks/conv.cpp; with OpenMP's default spinning the GEMM path was 4 to 20 times slower
/// still). So a pass whose in-place primitive is GEMM-based is built on the
/// preferred layouts, with a reorder for each operand whose layout differs; where the in-place
/// primitive is a direct kernel (as oneDNN's NHWC kernels for AVX-512 are meant to be), or GEMM
/// is all oneDNN has for the geometry either way, the in-place primitive is kept. So it is where
/// the input or the output has fewer than 8 channels: the blocked layouts pad the channels to
/// their block, and on the idle machine, one thread, 28x28x1 -> 64 took 11.2 ms forward and
/// both backprops in place against 24.6 ms through the blocked layouts (9.8 against 17.0 ms on
/// two threads), where 14x14x64 -> 128 took 104 against 105 ms (78.5 against 49.3 on two).

#include <algorithm>
#include <array>
#include <cstddef>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "conv.hpp"
#include "host_conv.hpp"
#include "host_openmp.hpp"

#include "../core/parallel.hpp"

namespace fusegrad::host {
namespace onednn {
/// The process's oneDNN CPU engine (Note [dnnl primitives]).
inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
/// This thread's stream on it.
inline dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

/// A per-thread block of at least n bytes, 64-byte aligned: scratchpads and reordered operands.
inline char* scratch(std::size_t n) {
  struct block {
    void* p = nullptr;
    std::size_t size = 0;
    ~block() { ::operator delete(p, std::align_val_t{64}); }
  };
  thread_local block b;
  if (n > b.size) {
    ::operator delete(b.p, std::align_val_t{64});
    b.p = nullptr;
    b.size = 0;
    b.p = ::operator new(n, std::align_val_t{64});
    b.size = n;
  }
  return static_cast<char*>(b.p);
}

/// One operand of a convolution: its layout in fusegrad's buffer (nhwc or hwio), the layout the
/// primitive reads or writes, and the reorder between them when they differ (Note [dnnl layouts]).
struct conv_operand {
  int arg = 0;
  dnnl::memory::desc plain, inner;
  std::optional<dnnl::reorder> reorder;
  std::size_t offset = 0;  ///< where the reordered copy lies in the per-thread block
};

/// A built convolution primitive, its operands a, b (read) and out (written), and the per-thread
/// block it needs: the reordered copies, then one scratchpad that the primitive and the reorders
/// share (they run one after another).
struct conv_primitive {
  dnnl::primitive prim;
  std::array<conv_operand, 3> ops;
  std::size_t scratch_offset = 0, scratch_size = 0, block_size = 0;
};

inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// The primitive descriptor of the pass Prim runs, on the given memory descriptors, hinted by a forward one
/// of the same layouts.
template <class Prim, class PD = typename Prim::primitive_desc>
PD conv_pd(const dnnl::memory::desc& src, const dnnl::memory::desc& wei, const dnnl::memory::desc& dst,
           const ops::conv_geometry& g) {
  const dnnl::memory::dims strides{g.sh, g.sw}, dilates{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl}, pad_r{g.pb, g.pr};
  const auto direct = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, src, wei, dst, strides, dilates, pad_l,
                                      pad_r),
      user_scratchpad(), engine());
  if constexpr (std::is_same_v<Prim, dnnl::convolution_forward>)
    return fwd;
  else if constexpr (std::is_same_v<Prim, dnnl::convolution_backward_data>)
    return PD(dnnl::convolution_backward_data::desc(direct, src, wei, dst, strides, dilates, pad_l, pad_r),
              user_scratchpad(), engine(), fwd);
  else
    return PD(dnnl::convolution_backward_weights::desc(direct, src, wei, dst, strides, dilates, pad_l, pad_r),
              user_scratchpad(), engine(), fwd);
}

/// Builds pass r.pass, a primitive of type Prim (Note [dnnl layouts]): on nhwc/hwio memory
/// unless oneDNN can run it there only through im2col and GEMM and has a direct kernel on the
/// layouts it prefers; then on those, with reorders.
template <class Prim>
std::shared_ptr<const conv_primitive> build_pass(const ops::conv_request& r, std::array<int, 3> args) {
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  const ops::conv_geometry& g = r.g;
  auto d = [](std::size_t v) { return static_cast<dnnl::memory::dim>(v); };
  const dnnl::memory::dims src_dims{d(g.n), d(g.c), d(g.h), d(g.w)}, wei_dims{d(g.o), d(g.c), d(g.kh), d(g.kw)},
      dst_dims{d(g.n), d(g.o), d(g.oh), d(g.ow)};
  const dnnl::memory::desc src(src_dims, f32, tag::nhwc), wei(wei_dims, f32, tag::hwio), dst(dst_dims, f32, tag::nhwc);
  auto gemm = [](const auto& pd) { return std::string(pd.impl_info_str()).find("gemm") != std::string::npos; };
  typename Prim::primitive_desc pd = conv_pd<Prim>(src, wei, dst, g);
  // Blocked layouts pad the channels to the block (8 or 16 here): with fewer channels the padded
  // copies cost more than GEMM does (Note [dnnl layouts]).
  if (gemm(pd) && g.c >= 8 && g.o >= 8) {
    auto preferred =
        conv_pd<Prim>(dnnl::memory::desc(src_dims, f32, tag::any), dnnl::memory::desc(wei_dims, f32, tag::any),
                      dnnl::memory::desc(dst_dims, f32, tag::any), g);
    if (!gemm(preferred)) pd = preferred;  // else GEMM either way: keep the one with no reorders
  }
  // The operands in the order of ops::conv_pass: the two read, then the one written.
  std::array<dnnl::memory::desc, 3> plain, inner;
  switch (r.pass) {
    case ops::conv_pass::forward:
      plain = {src, wei, dst};
      inner = {pd.src_desc(), pd.weights_desc(), pd.dst_desc()};
      break;
    case ops::conv_pass::backward_data:
      plain = {wei, dst, src};
      inner = {pd.weights_desc(), pd.diff_dst_desc(), pd.diff_src_desc()};
      break;
    case ops::conv_pass::backward_filter:
      plain = {src, dst, wei};
      inner = {pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc()};
      break;
  }
  auto p = std::make_shared<conv_primitive>();
  p->prim = Prim(pd);
  std::size_t at = 0, scratch = pd.scratchpad_desc().get_size();
  auto aligned = [](std::size_t n) { return (n + 63) / 64 * 64; };
  for (std::size_t i = 0; i < 3; ++i) {
    conv_operand& o = p->ops[i];
    o.arg = args[i];
    o.plain = plain[i];
    o.inner = inner[i];
    if (o.inner == o.plain) continue;
    const dnnl::reorder::primitive_desc rpd =
        i < 2 ? dnnl::reorder::primitive_desc(engine(), o.plain, engine(), o.inner, user_scratchpad())
              : dnnl::reorder::primitive_desc(engine(), o.inner, engine(), o.plain, user_scratchpad());
    o.reorder = dnnl::reorder(rpd);
    o.offset = at;
    at += aligned(o.inner.get_size());
    scratch = std::max(scratch, rpd.scratchpad_desc().get_size());
  }
  p->scratch_offset = at;
  p->scratch_size = scratch;
  p->block_size = at + aligned(scratch);
  return p;
}

/// Builds the primitive r asks for.
inline std::shared_ptr<const conv_primitive> build_conv(const ops::conv_request& r) {
  switch (r.pass) {
    case ops::conv_pass::forward:
      return build_pass<dnnl::convolution_forward>(r, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST});
    case ops::conv_pass::backward_data:
      return build_pass<dnnl::convolution_backward_data>(r, {DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC});
    case ops::conv_pass::backward_filter:
      break;
  }
  return build_pass<dnnl::convolution_backward_weights>(r, {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS});
}

using conv_key = std::array<long, 19>;

/// The cached primitive for r, built on first use (Note [dnnl primitives]).
inline std::shared_ptr<const conv_primitive> conv_primitive_for(const ops::conv_request& r) {
  static std::mutex m;
  static std::map<conv_key, std::shared_ptr<const conv_primitive>> cache;
  const ops::conv_geometry& g = r.g;
  auto l = [](std::size_t v) { return static_cast<long>(v); };
  // oneDNN sizes a primitive's work split for the thread count when it builds it, so the count
  // is part of the key (Note [thread count followers]).
  const conv_key key{static_cast<long>(core::intra_op_threads()),
                     static_cast<long>(r.pass),
                     l(g.n),
                     l(g.h),
                     l(g.w),
                     l(g.c),
                     l(g.o),
                     l(g.kh),
                     l(g.kw),
                     l(g.oh),
                     l(g.ow),
                     g.sh,
                     g.sw,
                     g.dh,
                     g.dw,
                     g.pt,
                     g.pb,
                     g.pl,
                     g.pr};
  {
    const std::lock_guard<std::mutex> lock(m);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto p = build_conv(r);  // outside the lock: two threads may both build one, and one is kept
  const std::lock_guard<std::mutex> lock(m);
  if (cache.size() >= 256) cache.clear();
  return cache.emplace(key, std::move(p)).first->second;
}

/// Runs the float32 convolution r on oneDNN.
inline void conv(const ops::conv_request& r, const float* a, const float* b, float* out) {
  try {
    follow_threads();  // before the lookup: a primitive is built for the thread count of its caller
    const std::shared_ptr<const conv_primitive> p = conv_primitive_for(r);
    dnnl::engine& e = engine();
    dnnl::stream& s = stream();
    char* block = scratch(p->block_size);
    std::unordered_map<int, dnnl::memory> scratch_arg;
    if (p->scratch_size > 0)
      scratch_arg.emplace(DNNL_ARG_SCRATCHPAD,
                          dnnl::memory(dnnl::memory::desc({static_cast<dnnl::memory::dim>(p->scratch_size)},
                                                          dnnl::memory::data_type::u8, dnnl::memory::format_tag::a),
                                       e, block + p->scratch_offset));
    const std::array<float*, 3> data{const_cast<float*>(a), const_cast<float*>(b), out};
    std::unordered_map<int, dnnl::memory> args = scratch_arg;
    std::array<dnnl::memory, 3> plain, inner;
    for (std::size_t i = 0; i < 3; ++i) {
      const conv_operand& o = p->ops[i];
      plain[i] = dnnl::memory(o.plain, e, data[i]);
      inner[i] = o.reorder ? dnnl::memory(o.inner, e, block + o.offset) : plain[i];
      args.emplace(o.arg, inner[i]);
      if (i < 2 && o.reorder) {
        std::unordered_map<int, dnnl::memory> ra = scratch_arg;
        ra.emplace(DNNL_ARG_FROM, plain[i]);
        ra.emplace(DNNL_ARG_TO, inner[i]);
        o.reorder->execute(s, ra);
      }
    }
    p->prim.execute(s, args);
    if (const conv_operand& o = p->ops[2]; o.reorder) {
      std::unordered_map<int, dnnl::memory> ra = scratch_arg;
      ra.emplace(DNNL_ARG_FROM, inner[2]);
      ra.emplace(DNNL_ARG_TO, plain[2]);
      o.reorder->execute(s, ra);
    }
    s.wait();
  } catch (const dnnl::error& err) {
    throw std::runtime_error(core::cat("fg::conv2d: oneDNN failed (", err.what(), ") on input ", r.g.input(),
                                       ", filters ", r.g.filter(), ", output ", r.g.output()));
  }
}
}  // namespace onednn

FG_ENGINES_INLINE void run_conv(const ops::conv_request& r, const float* a, const float* b, float* out) {
  onednn::conv(r, a, b, out);
}
FG_ENGINES_INLINE void run_conv(const ops::conv_request& r, const double* a, const double* b, double* out) {
  conv_direct(r, a, b, out);
}
}  // namespace fusegrad::host
