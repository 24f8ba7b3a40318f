// The convolution and pooling layers of seed 000's CNN on a batch of 64 (28x28x1 -> 64,
// 14x14x64 -> 128, 7x7x128 -> 128, 3x3 filters, SAME, stride 1, each followed by a 2x2 max pool
// of stride 2), float32, in one run:
// - fusegrad: fg::conv2d forward, and forward + conv2d_backprop_input + conv2d_backprop_filter
//   (what a training step runs per layer); float64 forward (the direct loops) on the last layer;
// - the peer: oneDNN called directly on the same NHWC/HWIO buffers with primitives built once
//   (fusegrad's own path minus its per-call work), and with format_tag::any, where the
//   primitives choose blocked layouts, timed with the reorders from and to NHWC/HWIO that an op
//   on fusegrad's buffers would pay and without them (a network kept in blocked layouts);
// - fg::max_pool2d and max_pool2d_grad (fusegrad's loops) against oneDNN's max
//   pooling forward and backward on NHWC (with its workspace);
// - the sparse softmax cross-entropy's mean and its gradient with respect to the logits, fused
//   (fg::sparse_softmax_cross_entropy_with_logits, one recorded op) against the same loss
//   composed of reduce_logsumexp, one_hot and a sum, both under a tape.
// Everything runs on `--threads=N` threads (1 by default; 0 for every core): fusegrad's
// setting, which its oneDNN calls follow, and OpenMP's, which the direct oneDNN calls read.
// benchmarks/nn_peers.py times the same work in TensorFlow and PyTorch.

#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <dnnl.hpp>
#include <omp.h>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>

#include "chain_input.hpp"
#include <unordered_map>
#include <vector>

namespace {

struct layer {
  long n, h, w, c, o;
};
constexpr std::array<layer, 3> layers{{{64, 28, 28, 1, 64}, {64, 14, 14, 64, 128}, {64, 7, 7, 128, 128}}};

/// 2 * multiply-adds of one 3x3 SAME convolution of the layer.
double conv_flops(const layer& l) { return 2.0 * l.n * l.h * l.w * l.o * l.c * 9; }

struct inputs {
  fg::tensor<float> x, w, dy;
};
inputs make_inputs(const layer& l) {
  const auto u = [](long a, long b, long c, long d, std::uint64_t seed) {
    return fg::random::uniform<float>(fg::shape{std::size_t(a), std::size_t(b), std::size_t(c), std::size_t(d)}, seed,
                                      -1.f, 1.f);
  };
  return {u(l.n, l.h, l.w, l.c, 1), u(3, 3, l.c, l.o, 2), u(l.n, l.h, l.w, l.o, 3)};
}

void rate(benchmark::State& state, double flops) {
  state.counters["flops"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

void fusegrad_conv_forward(benchmark::State& state) {
  const layer l = layers[state.range(0)];
  const inputs in = make_inputs(l);
  for (auto _ : state) {
    fg::tensor<float> y = fg::conv2d(in.x, in.w, 1, "SAME");
    benchmark::DoNotOptimize(y.data());
  }
  rate(state, conv_flops(l));
}

void fusegrad_conv_forward_backward(benchmark::State& state) {
  const layer l = layers[state.range(0)];
  const inputs in = make_inputs(l);
  for (auto _ : state) {
    fg::tensor<float> y = fg::conv2d(in.x, in.w, 1, "SAME");
    fg::tensor<float> dx = fg::conv2d_backprop_input(in.x.shape(), in.w, in.dy, 1, "SAME");
    fg::tensor<float> dw = fg::conv2d_backprop_filter(in.x, in.w.shape(), in.dy, 1, "SAME");
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(dx.data());
    benchmark::DoNotOptimize(dw.data());
  }
  rate(state, 3 * conv_flops(l));
}

void fusegrad_conv_forward_float64(benchmark::State& state) {
  const layer l = layers[state.range(0)];
  const inputs in = make_inputs(l);
  const fg::tensor<double> x = fg::cast<double>(in.x), w = fg::cast<double>(in.w);
  for (auto _ : state) {
    fg::tensor<double> y = fg::conv2d(x, w, 1, "SAME");
    benchmark::DoNotOptimize(y.data());
  }
  rate(state, conv_flops(l));
}

/// oneDNN's three convolutions of a layer, built once, on memory of the layouts `layout` picks.
struct onednn_layer {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream s{eng};
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights;
  // plain NHWC/HWIO memory on fusegrad's buffers
  dnnl::memory x, w, dy, y, dx, dw;

  onednn_layer(const layer& l, const inputs& in, fg::tensor<float>& y_out, fg::tensor<float>& dx_out,
               fg::tensor<float>& dw_out, dnnl::memory::format_tag layout) {
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::memory::desc src_plain({l.n, l.c, l.h, l.w}, f32, tag::nhwc),
        wei_plain({l.o, l.c, 3, 3}, f32, tag::hwio), dst_plain({l.n, l.o, l.h, l.w}, f32, tag::nhwc);
    const dnnl::memory::desc src({l.n, l.c, l.h, l.w}, f32, layout == tag::any ? tag::any : tag::nhwc),
        wei({l.o, l.c, 3, 3}, f32, layout == tag::any ? tag::any : tag::hwio),
        dst({l.n, l.o, l.h, l.w}, f32, layout == tag::any ? tag::any : tag::nhwc);
    const dnnl::memory::dims st{1, 1}, dil{0, 0}, pad{1, 1};
    const auto direct = dnnl::algorithm::convolution_direct;
    fwd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, src, wei, dst, st, dil, pad, pad),
        eng);
    bwd_data = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(direct, src, wei, dst, st, dil, pad, pad), eng, fwd);
    bwd_weights = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(direct, src, wei, dst, st, dil, pad, pad), eng, fwd);
    auto mem = [&](const dnnl::memory::desc& d, const float* p) { return dnnl::memory(d, eng, const_cast<float*>(p)); };
    x = mem(src_plain, in.x.data()), w = mem(wei_plain, in.w.data()), dy = mem(dst_plain, in.dy.data());
    y = mem(dst_plain, y_out.data()), dx = mem(src_plain, dx_out.data()), dw = mem(wei_plain, dw_out.data());
    stage_all();
  }

  /// Memory of layout d for plain: plain itself when the layouts agree, else a buffer made once.
  struct staged {
    dnnl::memory plain, inner;
    bool same;
  };
  staged stage(const dnnl::memory& plain, const dnnl::memory::desc& d) {
    const bool same = plain.get_desc() == d;
    return {plain, same ? plain : dnnl::memory(d, eng), same};
  }
  /// Reorders an input into its primitive's layout, when asked and when they differ.
  void in(staged& m, bool reorder) {
    if (reorder && !m.same) dnnl::reorder(m.plain, m.inner).execute(s, m.plain, m.inner);
  }
  void out(staged& m, bool reorder) {
    if (reorder && !m.same) dnnl::reorder(m.inner, m.plain).execute(s, m.inner, m.plain);
  }
  staged fx, fw, fy, ddy, dw_, ddx, wx, wdy, wdw;
  void stage_all() {
    fx = stage(x, fwd.src_desc()), fw = stage(w, fwd.weights_desc()), fy = stage(y, fwd.dst_desc());
    ddy = stage(dy, bwd_data.diff_dst_desc()), dw_ = stage(w, bwd_data.weights_desc());
    ddx = stage(dx, bwd_data.diff_src_desc());
    wx = stage(x, bwd_weights.src_desc()), wdy = stage(dy, bwd_weights.diff_dst_desc());
    wdw = stage(dw, bwd_weights.diff_weights_desc());
  }

  void forward(bool reorder) {
    in(fx, reorder), in(fw, reorder);
    dnnl::convolution_forward(fwd).execute(
        s, {{DNNL_ARG_SRC, fx.inner}, {DNNL_ARG_WEIGHTS, fw.inner}, {DNNL_ARG_DST, fy.inner}});
    out(fy, reorder);
    s.wait();
  }
  void backward(bool reorder) {
    in(ddy, reorder), in(dw_, reorder);
    dnnl::convolution_backward_data(bwd_data).execute(
        s, {{DNNL_ARG_DIFF_DST, ddy.inner}, {DNNL_ARG_WEIGHTS, dw_.inner}, {DNNL_ARG_DIFF_SRC, ddx.inner}});
    out(ddx, reorder);
    in(wx, reorder), in(wdy, reorder);
    dnnl::convolution_backward_weights(bwd_weights)
        .execute(s, {{DNNL_ARG_SRC, wx.inner}, {DNNL_ARG_DIFF_DST, wdy.inner}, {DNNL_ARG_DIFF_WEIGHTS, wdw.inner}});
    out(wdw, reorder);
    s.wait();
  }
};

/// oneDNN directly; state.range(1): 0 NHWC/HWIO, 1 blocked with reorders, 2 blocked without.
void onednn_conv(benchmark::State& state, bool with_backward) {
  const layer l = layers[state.range(0)];
  const inputs in = make_inputs(l);
  fg::tensor<float> y = fg::zeros<float>(in.dy.shape()), dx = fg::zeros<float>(in.x.shape()),
                    dw = fg::zeros<float>(in.w.shape());
  const bool blocked = state.range(1) > 0, reorder = state.range(1) == 1;
  onednn_layer o(l, in, y, dx, dw, blocked ? dnnl::memory::format_tag::any : dnnl::memory::format_tag::nhwc);
  state.SetLabel(std::string(blocked ? (reorder ? "blocked+reorders " : "blocked ") : "nhwc ") + o.fwd.impl_info_str());
  for (auto _ : state) {
    o.forward(reorder);
    if (with_backward) o.backward(reorder);
  }
  rate(state, (with_backward ? 3 : 1) * conv_flops(l));
}
void onednn_conv_forward(benchmark::State& state) { onednn_conv(state, false); }
void onednn_conv_forward_backward(benchmark::State& state) { onednn_conv(state, true); }

/// The conv layer's output size: what the 2x2 pool after it reads.
fg::tensor<float> pool_input(const layer& l) {
  return fg::random::uniform<float>(fg::shape{std::size_t(l.n), std::size_t(l.h), std::size_t(l.w), std::size_t(l.o)},
                                    4, -1.f, 1.f);
}

void fusegrad_max_pool(benchmark::State& state) {
  const fg::tensor<float> x = pool_input(layers[state.range(0)]);
  const bool with_backward = state.range(1) == 1;
  const fg::tensor<float> dy = fg::max_pool2d(x, 2, 2, "VALID");
  for (auto _ : state) {
    fg::tensor<float> y = fg::max_pool2d(x, 2, 2, "VALID");
    benchmark::DoNotOptimize(y.data());
    if (with_backward) {
      fg::tensor<float> dx = fg::max_pool2d_grad(x, dy, 2, 2, "VALID");
      benchmark::DoNotOptimize(dx.data());
    }
  }
  state.SetBytesProcessed(state.iterations() * x.size() * sizeof(float) * (with_backward ? 3 : 1));
}

void onednn_max_pool(benchmark::State& state) {
  const layer l = layers[state.range(0)];
  const fg::tensor<float> x = pool_input(l);
  const bool with_backward = state.range(1) == 1;
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl::memory::desc src({l.n, l.o, l.h, l.w}, f32, tag::nhwc), dst({l.n, l.o, l.h / 2, l.w / 2}, f32, tag::nhwc);
  const dnnl::memory::dims two{2, 2}, zero{0, 0};
  const dnnl::pooling_forward::primitive_desc fwd(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, src, dst, two, two,
                                  zero, zero),
      eng);
  const dnnl::pooling_backward::primitive_desc bwd(
      dnnl::pooling_backward::desc(dnnl::algorithm::pooling_max, src, dst, two, two, zero, zero), eng, fwd);
  fg::tensor<float> y =
      fg::zeros<float>(fg::shape{std::size_t(l.n), std::size_t(l.h / 2), std::size_t(l.w / 2), std::size_t(l.o)});
  fg::tensor<float> dx = fg::zeros<float>(x.shape());
  dnnl::memory xm(src, eng, const_cast<float*>(x.data())), ym(dst, eng, y.buffer()->data),
      dxm(src, eng, dx.buffer()->data), ws(fwd.workspace_desc(), eng);
  const dnnl::pooling_forward pf(fwd);
  const dnnl::pooling_backward pb(bwd);
  state.SetLabel(fwd.impl_info_str());
  for (auto _ : state) {
    pf.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_WORKSPACE, ws}});
    if (with_backward) pb.execute(s, {{DNNL_ARG_DIFF_DST, ym}, {DNNL_ARG_DIFF_SRC, dxm}, {DNNL_ARG_WORKSPACE, ws}});
    s.wait();
  }
  state.SetBytesProcessed(state.iterations() * x.size() * sizeof(float) * (with_backward ? 3 : 1));
}

/// Seeded logits of (batch, classes) and labels in [0, classes).
struct ce_inputs {
  fg::tensor<float> logits;
  fg::tensor<std::int64_t> labels;
};
ce_inputs make_ce(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0)), c = static_cast<std::size_t>(state.range(1));
  return {fg::random::uniform<float>(fg::shape{b, c}, 5, -4.f, 4.f),
          fg::cast<std::int64_t>(fg::random::uniform<float>(fg::shape{b}, 6, 0.f, static_cast<float>(c) - 0.5f))};
}

void fusegrad_sparse_ce_fused(benchmark::State& state) {
  const ce_inputs in = make_ce(state);
  for (auto _ : state) {
    fg::gradient_tape tape;
    tape.watch(in.logits);
    const fg::tensor<float> loss = fg::reduce_mean(fg::sparse_softmax_cross_entropy_with_logits(in.labels, in.logits));
    const fg::tensor<float> g = tape.gradient(loss, in.logits);
    benchmark::DoNotOptimize(g.data());
  }
}

void fusegrad_sparse_ce_composed(benchmark::State& state) {
  const ce_inputs in = make_ce(state);
  const long classes = state.range(1);
  for (auto _ : state) {
    fg::gradient_tape tape;
    tape.watch(in.logits);
    const fg::tensor<float> picked = fg::reduce_sum(fg::one_hot<float>(in.labels, classes) * in.logits, -1);
    const fg::tensor<float> loss = fg::reduce_mean(fg::reduce_logsumexp(in.logits, -1) - picked);
    const fg::tensor<float> g = tape.gradient(loss, in.logits);
    benchmark::DoNotOptimize(g.data());
  }
}

/// A tiny convolution: what a call costs beyond the arithmetic (runner, cache lookup, oneDNN memory objects).
void fusegrad_conv_tiny(benchmark::State& state) {
  const fg::tensor<float> x = fg::random::uniform<float>(fg::shape{1, 8, 8, 4}, 1),
                          w = fg::random::uniform<float>(fg::shape{3, 3, 4, 4}, 2);
  for (auto _ : state) {
    fg::tensor<float> y = fg::conv2d(x, w, 1, "SAME");
    benchmark::DoNotOptimize(y.data());
  }
}

// layer: 0, 1, 2 as in `layers`; layout: 0 NHWC/HWIO, 1 blocked with reorders, 2 blocked without;
// backward: 0 forward only, 1 forward and backward.
BENCHMARK(fusegrad_conv_forward)->ArgName("layer")->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(onednn_conv_forward)
    ->ArgNames({"layer", "layout"})
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(fusegrad_conv_forward_backward)->ArgName("layer")->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(onednn_conv_forward_backward)
    ->ArgNames({"layer", "layout"})
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(fusegrad_conv_forward_float64)->ArgName("layer")->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(fusegrad_max_pool)
    ->ArgNames({"layer", "backward"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(onednn_max_pool)
    ->ArgNames({"layer", "backward"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(fusegrad_conv_tiny)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK(fusegrad_sparse_ce_fused)->ArgNames({"batch", "classes"})->Args({64, 10})->Args({1024, 1000})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(fusegrad_sparse_ce_composed)->ArgNames({"batch", "classes"})->Args({64, 10})->Args({1024, 1000})
    ->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  omp_set_num_threads(chain_bench::threads_from_args(argc, argv));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
