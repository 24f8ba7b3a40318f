#!/usr/bin/env python3
"""Writes one small program per public header of fusegrad into OUTDIR: each includes that header
first (and only the headers its first lines say it is used with), calls what it declares, checks
the result and returns 0. Built and linked by tests/headers/meson.build, so a header that does
not compile on its own, or that declares what nothing it includes defines, fails the suite.

Usage: make_programs.py OUTDIR [NAME...]   (with names: print the file names it writes)"""
import pathlib
import sys

EAGER = "fusegrad/eager/evaluate.hpp"  # defines tensor(expression) and eval()

# header -> (other headers the program includes, body of main; `ok` is what main returns)
PROGRAMS = {
    "fusegrad/fusegrad.hpp": ([], "fg::tensor<float> x = {1.f, 2.f};\n"
                              "fg::gradient_tape t; t.watch(x);\n"
                              "fg::tensor<float> y = fg::sum(fg::exp(x));\n"
                              "ok = std::abs(t.gradient(y, x).data()[1] - std::exp(2.f)) < 1e-5f;"),
    "fusegrad/nn.hpp": ([], "fg::tensor<float> x = fg::reshape(fg::tensor<float>{1.f, -4.f, 3.f, 2.f}, {1, 2, 2, 1});\n"
                        "fg::tensor<float> f = fg::reshape(fg::tensor<float>{2.f}, {1, 1, 1, 1});\n"
                        "fg::tensor<float> y = fg::max_pool2d(fg::relu6(fg::conv2d(x, f, 1, \"SAME\")), 2, 2, \"VALID\");\n"
                        "ok = y.item() == 6.f && fg::softmax(fg::tensor<float>{0.f, 0.f}).data()[1] == 0.5f;"),
    "fusegrad/core/any_tensor.hpp": ([], "fusegrad::core::any_tensor a = fg::tensor<int>(fg::shape{2}, fg::device::cpu());\n"
                                     "ok = fusegrad::core::shape_of(a) == fg::shape{2} && fusegrad::core::cell::of(2.5).as<double>() == 2.5;"),
    "fusegrad/core/config.hpp": ([], "ok = fg::max_rank == 8;"),
    "fusegrad/core/device.hpp": ([], "ok = fg::device::gpu(1).str() == \"/gpu:1\";"),
    "fusegrad/core/dtype.hpp": ([], "ok = fg::name(fg::dtype_of<float>()) == \"float32\";"),
    "fusegrad/core/error.hpp": ([], "try { throw fg::shape_error(\"s\"); } catch (const std::invalid_argument&) { ok = true; }"),
    "fusegrad/core/format.hpp": ([], "ok = fusegrad::core::format_impl::format_scalar(1.5) == \"1.5\";"),
    "fusegrad/core/fwd.hpp": ([], "ok = fusegrad::core::next_id() != fusegrad::core::next_id();"),
    "fusegrad/core/integer.hpp": ([], "ok = fusegrad::core::wrapping_add(2147483647, 1) == -2147483647 - 1 &&\n"
                                  "     fusegrad::core::float_to_integer<int>(1e10) == -2147483647 - 1;"),
    "fusegrad/core/host_allocator.hpp": ([], "std::vector<int, fusegrad::core::host_allocator<int>> v(1000, 3);\nok = v[999] == 3;"),
    "fusegrad/core/parallel.hpp": ([], "fg::config::set_intra_op_parallelism_threads(2);\n"
                                   "std::vector<int> v(300000, 0);  // above core::parallel_threshold: split on the pool\n"
                                   "fusegrad::core::parallel_for(v.size(), v.size(), [&](std::size_t b, std::size_t e) { for (std::size_t i = b; i < e; ++i) ++v[i]; });\n"
                                   "ok = fg::config::get_intra_op_parallelism_threads() == 2 && v[0] == 1 && v[299999] == 1;"),
    "fusegrad/core/printing.hpp": ([], "ok = fg::numpy_str(fg::tensor<int>{1, 2}) == \"[1 2]\";"),
    "fusegrad/core/random.hpp": ([], "ok = fg::random::uniform<float>({10}, 3).size() == 10;"),
    "fusegrad/core/shape.hpp": ([], "ok = fg::shape{2, 3}.elements() == 6;"),
    "fusegrad/core/small_vector.hpp": ([], "fusegrad::core::small_vector<int, 2> v;\n"
                                       "for (int i = 0; i < 5; ++i) v.push_back(i);\nok = v.size() == 5 && v[4] == 4;"),
    "fusegrad/core/storage.hpp": ([], "auto s = fusegrad::core::make_storage<float>(4, fg::device::cpu());\nok = s->data != nullptr;"),
    "fusegrad/core/tensor.hpp": ([], "fg::tensor<int> x = {{1, 2}, {3, 4}};\nok = x.shape() == fg::shape{2, 2} && x.data()[3] == 4;"),
    "fusegrad/expr/node.hpp": ([], "fg::tensor<float> x = 2.f;\nfg::expr::leaf<float> l{x};\nok = fg::expr::leaf_count<decltype(l)>::value == 1;"),
    "fusegrad/expr/kernel.hpp": ([], "fg::tensor<float> x = {1.f, 2.f};\n"
                                "auto k = fg::expr::make_kernel(fg::expr::leaf<float>{x}, x.shape());\n"
                                "ok = k.eval(fg::expr::flat_access{1}) == 2.f;"),
    "fusegrad/expr/gradient.hpp": ([], "fg::tensor<float> x = 2.f;\n"
                                  "auto pg = fg::expr::position_grads(fg::expr::leaf<float>{x}, fg::expr::literal<float>{3.f});\n"
                                  "ok = std::get<0>(pg).value == 3.f;"),
    "fusegrad/expr/program.hpp": ([], "fg::expr::program p;\np.types.push_back(fg::dtype::float32);\nok = p.slots() == 1;"),
    "fusegrad/ops/common.hpp": ([], "ok = fg::tensor_like<fg::tensor<float>> && !fg::tensor_like<int>;"),
    "fusegrad/ops/unary.hpp": ([EAGER], "fg::tensor<float> y = fg::exp(fg::tensor<float>(0.f));\nok = y.item() == 1.f;"),
    "fusegrad/ops/binary.hpp": ([EAGER], "fg::tensor<int> y = fg::tensor<int>{7, -7} / 2;\nok = y.data()[0] == 3 && y.data()[1] == -4;"),
    "fusegrad/ops/reducers.hpp": ([], "using fusegrad::ops::max_reducer;\n"
                                  "const float nan = std::numeric_limits<float>::quiet_NaN();\n"
                                  "ok = fusegrad::ops::sum_reducer<int>::combine(2147483647, 1) == -2147483647 - 1 &&\n"
                                  "     std::isnan(max_reducer<float>::combine(nan, 1.f)) && std::isnan(max_reducer<float>::combine(1.f, nan)) &&\n"
                                  "     max_reducer<float>::combine(1.f, 2.f) == 2.f && fusegrad::ops::prod_reducer<double>::identity() == 1.0;"),
    "fusegrad/ops/strided_walk.hpp": ([], "fusegrad::ops::strided_walk w;  // the transpose of a 2 x 3 matrix\n"
                                     "w.push(3, 1);\nw.push(2, 3);\nconst int src[6] = {0, 1, 2, 3, 4, 5};\nint dst[6];\n"
                                     "fusegrad::ops::copy_walk(w, src, dst);\nok = dst[1] == 3 && dst[4] == 2;"),
    "fusegrad/ops/boundary.hpp": (["fusegrad/eager/boundary.hpp"], "struct twice {  // a boundary op given by its rules: 2x of a one-element tensor\n  const char* name = \"twice\";\n  fg::shape shape(const fg::shape& s) { return s; }\n  void host(float* out, const fg::tensor<float>& x) const { out[0] = 2.f * x.data()[0]; }\n  std::array<fg::tensor<float>, 1> backward(const fg::tensor<float>& g, std::span<const bool>) const { return {g}; }\n};\n"
                                 "ok = fusegrad::ops::run_boundary<float>(twice{}, fg::tensor<float>(3.f)).item() == 6.f;"),
    "fusegrad/ops/shape_rules.hpp": (["fusegrad/eager/boundary.hpp"], "fg::tensor<int> x = {{1, 2}, {3, 4}};\n"
                                    "ok = fusegrad::ops::run_boundary<int>(fusegrad::ops::transpose_rule{.perm = {1, 0}}, x).data()[1] == 3;"),
    "fusegrad/ops/indexing_rules.hpp": (["fusegrad/eager/boundary.hpp"], "fg::tensor<int> x = {10, 20, 30};\n"
                                       "fg::tensor<int> y = fusegrad::ops::run_boundary<int>(fusegrad::ops::gather_rule(0), x, fg::tensor<int>{2, 0});\n"
                                       "fg::tensor<float> h = fusegrad::ops::run_boundary<float>(fusegrad::ops::one_hot_rule<float>{.depth = 3}, fg::tensor<int>{1});\n"
                                       "ok = y.data()[0] == 30 && h.data()[1] == 1.f && h.data()[2] == 0.f;"),
    "fusegrad/ops/scan_rules.hpp": (["fusegrad/eager/boundary.hpp"], "fg::tensor<int> y = fusegrad::ops::run_boundary<int>(fusegrad::ops::cumprod_rule(0, false, true), fg::tensor<int>{2, 3, 4});\n"
                                   "ok = y.data()[0] == 24 && y.data()[2] == 4;"),
    "fusegrad/ops/window.hpp": ([], "const fg::padding_spec same(\"SAME\");  // height 6, window 3, stride 2: one pad, after\n"
                                "const auto a = fusegrad::ops::plan_window_axis(\"op\", \"height\", 6, 3, 2, 1, same, 0, 0, [] { return std::string(); });\n"
                                "ok = a.out == 3 && a.before == 0 && a.after == 1 && fg::size2d(2).w == 2;"),
    "fusegrad/ops/conv_rules.hpp": ([], "const auto g = fusegrad::ops::plan_conv({}, fg::shape{1, 6, 5, 2}, fg::shape{3, 3, 2, 4}, {2, 1, \"SAME\"});\n"
                                    "ok = g.output() == fg::shape{1, 3, 3, 4} && g.pt == 0 && g.pb == 1 && g.pl == 1;"),
    "fusegrad/ops/pool_rules.hpp": ([], "const auto g = fusegrad::ops::plan_pool(\"max_pool2d\", fusegrad::ops::pool_kind::max, fg::shape{1, 5, 4, 2}, {3, 2, \"SAME\"});\n"
                                    "ok = g.output() == fg::shape{1, 3, 2, 2} && g.pt == 1 && g.pl == 0 && g.pr == 1;"),
    "fusegrad/eval/conv.hpp": ([], "fusegrad::ops::conv_request r;  // a 2 x 2 diagonal filter over a 3 x 3 image\n"
                               "r.g = fusegrad::ops::plan_conv({}, fg::shape{1, 3, 3, 1}, fg::shape{2, 2, 1, 1}, {});\n"
                               "const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, f[4] = {1, 0, 0, 1};\nfloat y[4];\n"
                               "fusegrad::ops::run_conv<float>(r, x, f, y, fg::device::cpu());\n"
                               "ok = y[0] == 6.f && y[3] == 14.f;"),
    "fusegrad/eval/host_dnnl.hpp": ([], "fusegrad::ops::conv_request r;  // the gradient of a 1 x 1 conv: x^T dy over pixels\n"
                                    "r.pass = fusegrad::ops::conv_pass::backward_filter;\n"
                                    "r.g = fusegrad::ops::plan_conv({}, fg::shape{1, 1, 2, 1}, fg::shape{1, 1, 1, 1}, {});\n"
                                    "const float x[2] = {2, 3}, dy[2] = {5, 7};\nfloat df[1];\n"
                                    "fusegrad::host::run_conv(r, x, dy, df);\nok = df[0] == 31.f;"),
    "fusegrad/eval/host_conv.hpp": ([], "fusegrad::ops::conv_request r;  // the input's gradient of a 1 x 1 conv to two channels\n"
                                    "r.pass = fusegrad::ops::conv_pass::backward_data;\n"
                                    "r.g = fusegrad::ops::plan_conv({}, fg::shape{1, 1, 1, 1}, fg::shape{1, 1, 1, 2}, {});\n"
                                    "const double f[2] = {2, 3}, dy[2] = {5, 7};\ndouble dx[1];\n"
                                    "fusegrad::host::conv_direct(r, f, dy, dx);\nok = dx[0] == 31.0;"),
    "fusegrad/eval/pool.hpp": ([], "const fusegrad::ops::pool_request r{fusegrad::ops::pool_kind::max, fusegrad::ops::pool_pass::forward,\n"
                               "    fusegrad::ops::plan_pool(\"max_pool2d\", fusegrad::ops::pool_kind::max, fg::shape{1, 2, 2, 1}, {2, 2})};\n"
                               "const float x[4] = {1, 4, 3, 2};\nfloat y[1];\n"
                               "fusegrad::ops::run_pool<float>(r, x, nullptr, y, fg::device::cpu());\nok = y[0] == 4.f;"),
    "fusegrad/eval/host_pool.hpp": ([], "const fusegrad::ops::pool_request r{fusegrad::ops::pool_kind::avg, fusegrad::ops::pool_pass::backward,\n"
                                    "    fusegrad::ops::plan_pool(\"avg_pool2d\", fusegrad::ops::pool_kind::avg, fg::shape{1, 2, 2, 1}, {2, 2})};\n"
                                    "const double g[1] = {8};\ndouble dx[4];\n"
                                    "fusegrad::host::run_pool(r, nullptr, g, dx);\nok = dx[0] == 2.0 && dx[3] == 2.0;"),
    "fusegrad/eager/conv.hpp": ([], "const fg::tensor<float> x = fg::reshape(fg::tensor<float>{1.f, 2.f, 3.f, 4.f}, {1, 2, 2, 1});\n"
                                "const fg::tensor<float> f = fg::reshape(fg::tensor<float>{2.f}, {1, 1, 1, 1});\n"
                                "ok = fg::conv2d(x, f, 1, \"VALID\").data()[3] == 8.f &&\n"
                                "     fg::conv2d_transpose(x, f, {1, 2, 2, 1}, 1).data()[2] == 6.f;"),
    "fusegrad/eager/pooling.hpp": ([], "const fg::tensor<float> x = fg::reshape(fg::tensor<float>{1.f, 4.f, 3.f, 2.f}, {1, 2, 2, 1});\n"
                                   "ok = fg::max_pool2d(x, 2, 2, \"VALID\").item() == 4.f && fg::avg_pool2d(x, 2, 2, \"VALID\").item() == 2.5f &&\n"
                                   "     fg::global_max_pool2d(x).data()[0] == 4.f;"),
    "fusegrad/eval/creation.hpp": ([], "ok = fg::ones<float>({3}).data()[2] == 1.f && fg::linspace<double>(0, 1, 3).data()[1] == 0.5;"),
    "fusegrad/eval/device_hooks.hpp": ([], "ok = fg::num_gpus() == 0;"),
    "fusegrad/eval/host.hpp": ([], "fg::tensor<float> x = {1.f, 2.f, 3.f};\nfloat out[3];\n"
                               "fusegrad::host::evaluate_host(fg::expr::leaf<float>{x}, x.shape(), out);\nok = out[2] == 3.f;"),
    "fusegrad/eval/host_reduce.hpp": ([], "fg::tensor<float> x = {1.f, 2.f, 3.f};\ndouble acc = 0;\n"
                                      "fusegrad::host::reduce_host<fusegrad::ops::sum_reducer<float>>(fg::expr::leaf<float>{x}, x.shape(), fg::shape{1}, &acc);\n"
                                      "ok = acc == 6;"),
    "fusegrad/ops/linalg_rules.hpp": ([], "fusegrad::ops::matmul_rule r{.ta = true};\n"
                                      "const fg::shape s = r.shape(fg::shape{5, 3, 2}, fg::shape{3, 4});  // a batch against one matrix\n"
                                      "const auto& p = r.product();\n"
                                      "ok = s == fg::shape{5, 2, 4} && p.m == 2 && p.k == 3 && p.n == 4 && p.batch == 5 &&\n"
                                      "     p.step_a == 6 && p.step_b == 0;"),
    "fusegrad/eval/linalg.hpp": ([], "const int a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {1, -1};  // [[1,2],[3,4],[5,6]] x [1,-1]\n"
                                 "int c[3];\n"
                                 "fusegrad::dispatch::run_gemm<int>({.m = 3, .n = 1, .k = 2}, a, b, c, fg::device::cpu());\n"
                                 "ok = c[0] == -1 && c[1] == -1 && c[2] == -1;"),
    "fusegrad/eval/host_linalg.hpp": ([], "float fa[4] = {1.f, 2.f, 3.f, 4.f}, fc[4];\n"
                                      "fusegrad::host::gemm<float>(true, false, 2, 2, 2, fa, fa, fc);  // a^T a\n"
                                      "ok = fc[0] == 10.f && fc[1] == 14.f && fc[2] == 14.f && fc[3] == 20.f;"),
    "fusegrad/eval/host_sgemm.hpp": ([], "float a[6] = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, b[2] = {1.f, -1.f}, c[3];  // [[1,2],[3,4],[5,6]] x [1,-1]\n"
                                     "fusegrad::host::sgemm(false, false, 3, 1, 2, a, b, c);\n"
                                     "ok = c[0] == -1.f && c[1] == -1.f && c[2] == -1.f;"),
    "fusegrad/eval/host_openmp.hpp": ([], "fg::config::set_intra_op_parallelism_threads(1);\n"
                                      "fusegrad::host::onednn::follow_threads();  // a no-op where libgomp is not loaded\n"
                                      "ok = fg::config::get_intra_op_parallelism_threads() == 1 && (omp_get_max_threads == nullptr || omp_get_max_threads() == 1);"),
    "fusegrad/eval/dispatch.hpp": ([], "fg::tensor<float> x = {1.f, 2.f};\nfloat out[2];\n"
                                   "fusegrad::dispatch::run_elementwise(fg::expr::leaf<float>{x}, x.shape(), fg::device::cpu(), out);\nok = out[1] == 2.f;"),
    "fusegrad/autodiff/id_table.hpp": ([], "fusegrad::autodiff::id_map<long> m;\nm[5] = 7;\nok = *m.find(5) == 7;"),
    "fusegrad/autodiff/tape_state.hpp": ([], "ok = !fusegrad::autodiff::recording();"),
    "fusegrad/autodiff/record_op.hpp": ([], "fusegrad::autodiff::record_op<float, 1>(\"op\", {1}, fg::tensor<float>(2.f), [](const fg::tensor<float>& g, auto) { return std::array{g}; });\nok = true;"),
    "fusegrad/autodiff/program_backward.hpp": ([], "ok = fusegrad::autodiff::add_cells(fg::dtype::float32, fusegrad::core::cell::of(1.f), fusegrad::core::cell::of(2.f)).as<float>() == 3.f;"),
    "fusegrad/autodiff/program_entry.hpp": ([], "ok = fusegrad::autodiff::scalar_entry::bytes(fusegrad::expr::program{}) > 0;"),
    "fusegrad/autodiff/gradient_tape.hpp": ([EAGER], "fg::tensor<float> x = 3.f;\nfg::gradient_tape t; t.watch(x);\n"
                                            "fg::tensor<float> y = x * x;\nok = t.gradient(y, x).item() == 6.f;"),
    "fusegrad/autodiff/tape_walk.hpp": ([EAGER], "fg::tensor<float> x = {1.f, 2.f};\nfg::gradient_tape t; t.watch(x);\n"
                                        "fg::tensor<float> y = x * x * x;\nok = t.gradient(y, x).data()[1] == 12.f;"),
    "fusegrad/autodiff/variable.hpp": ([EAGER], "fg::variable<float> v(2.f);\nv.assign_add(1.f);\nok = v.value().item() == 3.f;"),
    "fusegrad/autodiff/custom_gradient.hpp": ([EAGER], "auto f = fg::custom_gradient([](const fg::tensor<float>& x) {\n"
                                              "  auto g = [](const fg::tensor<float>& dy) -> fg::tensor<float> { return dy * 2.f; };\n"
                                              "  return std::make_pair(fg::tensor<float>(x * 1.f), g); });\n"
                                              "fg::tensor<float> x = 1.f;\nfg::gradient_tape t; t.watch(x);\n"
                                              "fg::tensor<float> y = f(x);\nok = t.gradient(y, x).item() == 2.f;"),
    "fusegrad/autodiff/functional.hpp": ([EAGER], "auto g = fg::gradients_function([](const fg::tensor<float>& x) { return x * x; });\n"
                                         "ok = g(3.f)[0].item() == 6.f;"),
    "fusegrad/autodiff/jacobian.hpp": ([EAGER], "fg::tensor<float> x = {1.f, 2.f};\nfg::gradient_tape t; t.watch(x);\n"
                                       "fg::tensor<float> y = x * x;\nfg::tensor<float> j = t.jacobian(y, x);\n"
                                       "ok = j.shape() == fg::shape{2, 2} && j.data()[3] == 4.f && j.data()[1] == 0.f;"),
    "fusegrad/eager/evaluate.hpp": ([], "fg::tensor<float> x = {1.f, 2.f};\nfg::tensor<float> y = x + x;\nok = y.data()[1] == 4.f;"),
    "fusegrad/eager/program_of.hpp": ([EAGER], "fg::tensor<float> x = 1.f;\n"
                                      "ok = fusegrad::eager::program_of<decltype(fg::exp(x) + 1.f)>().code.size() == 2;"),
    "fusegrad/eager/saved_derivative.hpp": ([EAGER], "fg::tensor<float> x = 1.f;\n"
                                            "ok = fusegrad::eager::has_costly_op<decltype(fg::exp(x) * x)>::value;"),
    "fusegrad/eager/device_backward.hpp": ([EAGER], "ok = true;  // empty without FUSEGRAD_DEVICE"),
    "fusegrad/eager/stop_gradient.hpp": (["fusegrad/autodiff/gradient_tape.hpp"], "fg::tensor<float> x = 2.f;\nfg::gradient_tape t; t.watch(x);\n"
                                         "fg::tensor<float> y = x * fg::stop_gradient(x);\nok = t.gradient(y, x).item() == 2.f;"),
    "fusegrad/eager/boundary.hpp": ([], "struct twice {  // a boundary op given by its rules: 2x of a one-element tensor\n  const char* name = \"twice\";\n  fg::shape shape(const fg::shape& s) { return s; }\n  void host(float* out, const fg::tensor<float>& x) const { out[0] = 2.f * x.data()[0]; }\n  std::array<fg::tensor<float>, 1> backward(const fg::tensor<float>& g, std::span<const bool>) const { return {g}; }\n};\n"
                                   "try { fusegrad::ops::run_boundary<float>(twice{}, fg::tensor<float>()); } catch (const fg::value_error&) { ok = true; }\n"
                                   "ok = ok && fusegrad::ops::run_boundary<float>(twice{}, fg::tensor<float>(3.f) + 1.f).item() == 8.f;"),
    "fusegrad/eager/epilogue.hpp": ([EAGER, "fusegrad/autodiff/gradient_tape.hpp"],
                                   "fg::tensor<float> x = 3.f, y = 6.f;  // y: 2x, made by hand\n"
                                   "fg::gradient_tape t; t.watch(x);\n"
                                   "fusegrad::eager::epilogue(\"twice\", y, {x.shape()}, {x.id()}, [](const fg::tensor<float>& g, auto) {\n"
                                   "  return std::array{fg::tensor<float>(g * 2.f)};\n"
                                   "});\n"
                                   "bool reported = false, recorded = false;\n"
                                   "fusegrad::eager::epilogue(fg::tensor<int>{1}, [&](auto&&...) { reported = true; }, [&](auto&&) { recorded = true; });\n"
                                   "ok = t.gradient(y, x).item() == 2.f && !reported && !recorded;"),
    "fusegrad/eager/training.hpp": ([], "fg::variable<float> w(fg::tensor<float>{1.f, 2.f}, \"w\");\n"
                                   "fg::apply_gradient_descent(w, 0.5, fg::tensor<float>{2.f, -2.f});\n"
                                   "ok = w.peek().data()[0] == 0.f && w.peek().data()[1] == 3.f;"),
    "fusegrad/eager/nn_ops.hpp": ([], "ok = fg::tensor<float>(fg::relu6(fg::tensor<float>(7.f))).item() == 6.f;"),
    "fusegrad/nn/dense.hpp": ([], "fusegrad::nn::dense d(2, {.activation = \"relu\", .kernel_initializer = fusegrad::nn::initializers::constant(1.0)});\n"
                              "ok = d(fg::tensor<float>{{1.f, -3.f}}).data()[0] == 0.f && d.count_params() == 6;"),
    "fusegrad/nn/embedding.hpp": ([], "fusegrad::nn::embedding e(4, 2, {.embeddings_initializer = fusegrad::nn::initializers::constant(0.5)});\n"
                                  "const fg::tensor<float> y = e(fg::tensor<std::int64_t>{{3, 0, 3}});\n"
                                  "bool threw = false;\ntry { e(fg::tensor<int>{4}); } catch (const fg::index_error&) { threw = true; }\n"
                                  "ok = threw && y.shape() == fg::shape{1, 3, 2} && y.data()[5] == 0.5f && e.count_params() == 8;"),
    "fusegrad/nn/regularizers.hpp": (["fusegrad/autodiff/gradient_tape.hpp"], "fg::tensor<double> w = {0.5, -2.0};\n"
                                     "fg::gradient_tape t; t.watch(w);\n"
                                     "fg::tensor<double> r = fusegrad::nn::regularizers::l1_l2(0.1, 0.5)(w);  // 0.1 * 2.5 + 0.5 * 4.25\n"
                                     "ok = std::abs(r.item() - 2.375) < 1e-12 && std::abs(t.gradient(r, w).data()[1] + 2.1) < 1e-12 &&\n"
                                     "     fusegrad::nn::regularizers::regularizer(\"l2\").l2_factor() == 0.01;"),
    "fusegrad/nn/model.hpp": ([], "std::vector<fg::variable<float>> m{{fg::tensor<float>{1.f}, \"w\"}, {fg::tensor<float>{2.f}, \"u\"}};\n"
                              "const auto vars = fusegrad::nn::named_variables(m);  // a vector of variables is a model\n"
                              "ok = vars.size() == 2 && vars[1].name == \"1\" && fusegrad::nn::trainable_variables(m).size() == 2;"),
    "fusegrad/nn/sequential.hpp": (["fusegrad/nn/dense.hpp"], "fusegrad::nn::sequential s{fusegrad::nn::dense(2), fusegrad::nn::dense(1)};\n"
                                   "ok = s(fg::ones<float>({3, 4})).shape() == fg::shape{3, 1} && s.layer_name(1) == \"dense_1\";"),
    "fusegrad/nn/weight_sites.hpp": (["fusegrad/nn/dense.hpp"], "fusegrad::nn::sequential s{fusegrad::nn::dense(2)};\n"
                                     "(void)s(fg::ones<float>({1, 3}));\n"
                                     "const auto keras = fusegrad::nn::impl::sites_of(s, true), own = fusegrad::nn::impl::sites_of(s, false);\n"
                                     "ok = keras.layers.size() == 1 && keras.layers[0].where == \"layers/dense/vars\" && own.layers.size() == 1 &&\n"
                                     "     fusegrad::nn::impl::keras_snake_case(\"MaxPooling2D\") == \"max_pooling2d\";"),
    "fusegrad/nn/summary.hpp": (["fusegrad/nn/dense.hpp", "sstream"], "fusegrad::nn::dense d(3);\n"
                                "(void)d(fg::ones<float>({2, 4}));\n"
                                "std::ostringstream os;\n"
                                "fusegrad::nn::impl::summary_table(os, \"m\", {{\"d\", &d}});\n"
                                "ok = os.str().find(\"(None, 3)\") != std::string::npos && fusegrad::nn::impl::grouped(1290) == \"1,290\";"),
    "fusegrad/nn/losses.hpp": ([], "ok = fusegrad::nn::losses::mean_squared_error()(fg::tensor<float>{{1.f, 2.f}}, fg::tensor<float>{{2.f, 4.f}}).item() == 2.5f;"),
    "fusegrad/nn/metrics.hpp": ([], "fusegrad::nn::metrics::mean m;\nm(0.0);\nok = m(5.0).item() == 2.5f;"),
    "fusegrad/nn/optimizers/adam.hpp": ([], "fg::variable<float> w(fg::tensor<float>{1.f}, \"w\");\n"
                                        "fusegrad::optimizers::adam opt({.learning_rate = 0.1});\n"
                                        "opt.apply_gradients(std::vector{fg::tensor<float>{1.f}}, std::vector{w});\n"
                                        "ok = std::abs(w.peek().item() - 0.9f) < 1e-5f && opt.variables().size() == 3;"),
    "fusegrad/eager/engines.hpp": ([], "fusegrad::autodiff::install_entry_engines();\n"
                                  "ok = fusegrad::autodiff::engines().fused != nullptr && fusegrad::autodiff::engines().services != nullptr;"),
    "fusegrad/eager/reshape.hpp": ([], "ok = fg::reshape(fg::tensor<int>{1, 2, 3, 4}, {2, -1}).shape() == fg::shape{2, 2};"),
    "fusegrad/eager/reduce.hpp": ([], "fg::tensor<float> x = {{1.f, 2.f}, {3.f, 4.f}};\n"
                                  "ok = fg::reduce_sum(x, 1).data()[1] == 7.f && fg::reduce_max(x).item() == 4.f;"),
    "fusegrad/eager/shape_ops.hpp": ([], "fg::tensor<int> x = {{1, 2}, {3, 4}};\nok = fg::transpose(x).data()[1] == 3;"),
    "fusegrad/eager/indexing.hpp": ([], "fg::tensor<int> x = {10, 20, 30};\n"
                                    "ok = fg::gather(x, fg::tensor<int>{2, 0}).data()[0] == 30 && x(1).item() == 20;"),
    "fusegrad/eager/linalg.hpp": ([], "fg::tensor<float> a = {{1.f, 2.f}, {3.f, 4.f}};\nok = fg::matmul(a, a).data()[0] == 7.f;"),
    "fusegrad/eager/scan.hpp": ([], "ok = fg::cumsum(fg::tensor<int>{1, 2, 3}).data()[2] == 6;"),
    "fusegrad/core/numerics.hpp": ([], "const float v[3] = {1.f, NAN, INFINITY};\nconst auto f = fusegrad::core::find_nonfinite(v, 3);\nok = f.nan && f.inf && std::string(f.words()) == \"Inf and NaN\";"),
    "fusegrad/eager/debugging.hpp": ([], "fg::tensor<float> x = {1.f, 2.f};\nfg::tensor<float> y = fg::debugging::check_numerics(x, \"x\");\n"
                                     "bool threw = false;\ntry { fg::debugging::check_numerics(fg::tensor<float>({NAN}), \"m\"); } catch (const fg::value_error&) { threw = true; }\n"
                                     "ok = threw && y.data()[1] == 2.f;"),
    "fusegrad/eager/activations.hpp": ([], "fg::tensor<float> x = {-1.f, 0.f, 2.f};\n"
                                       "fg::tensor<float> y = fg::leaky_relu(x) + fg::relu6(x * 4.f) + fg::gelu(x);\n"
                                       "ok = std::abs(y.data()[0] - (-0.2f - 0.158655f)) < 1e-5f && std::abs(y.data()[2] - (8.f + 1.9545f)) < 1e-4f;"),
    "fusegrad/eager/bias_add.hpp": ([], "fg::tensor<float> v = {{1.f, 2.f}, {3.f, 4.f}};\n"
                                    "fg::tensor<float> y = fg::bias_add(v, fg::tensor<float>{10.f, 20.f});\n"
                                    "ok = y.data()[3] == 24.f;"),
    "fusegrad/eager/softmax.hpp": ([], "fg::tensor<double> x = {{1.0, 1.0}, {0.0, 1e4}};\n"
                                   "fg::tensor<double> s = fg::softmax(x), l = fg::log_softmax(x);\n"
                                   "ok = s.data()[0] == 0.5 && s.data()[3] == 1.0 && l.data()[2] == -1e4;"),
    "fusegrad/eager/cross_entropy.hpp": ([], "fg::tensor<float> logits = {{1e4f, 0.f}};\n"
                                         "fg::tensor<float> x = fg::sparse_softmax_cross_entropy_with_logits(fg::tensor<int>{1}, logits);\n"
                                         "fg::tensor<float> y = fg::softmax_cross_entropy_with_logits(fg::tensor<float>{{0.f, 1.f}}, logits);\n"
                                         "fg::tensor<float> z = fg::sigmoid_cross_entropy_with_logits(fg::tensor<float>{0.f}, fg::tensor<float>{-1e4f});\n"
                                         "ok = x.item() == 1e4f && y.item() == 1e4f && z.item() == 0.f;"),
    "fusegrad/eager/normalization.hpp": ([], "fg::tensor<float> x = {{3.f, 4.f}, {1.f, 1.f}};\n"
                                         "fg::tensor<float> n = fg::l2_normalize(x, 1);\n"
                                         "const auto m = fg::moments(x, 0);\n"
                                         "const auto b = fg::fused_batch_norm(fg::reshape(x, {1, 1, 2, 2}), fg::tensor<float>(), fg::tensor<float>());\n"
                                         "ok = n.data()[1] == 0.8f && m.mean.data()[0] == 2.f && m.variance.data()[1] == 2.25f &&\n"
                                         "     b.batch_variance.data()[0] == 2.f && b.saved_variance.data()[0] == 1.f;"),
    "fusegrad/eager/dropout.hpp": ([], "fg::tensor<float> x(fg::shape{1000}, std::vector<float>(1000, 1.f));\n"
                                   "fg::tensor<float> a = fg::dropout(x, 0.5, 3), b = fg::dropout(x, 0.5, 3);\n"
                                   "bool same = true;\nint kept = 0;\n"
                                   "for (std::size_t i = 0; i < 1000; ++i) same = same && a.data()[i] == b.data()[i], kept += a.data()[i] == 2.f;\n"
                                   "ok = same && kept > 400 && kept < 600 && fg::dropout(x, 0.0, 3).id() == x.id();"),
    "fusegrad/data.hpp": ([], "const auto ds = fg::data::from_tensor_slices(fg::tensor<int>{{1, 2}, {3, 4}, {5, 6}}).batch(2);\n"
                          "int total = 0;\nfor (const fg::tensor<int>& b : ds) total += static_cast<int>(b.shape()[0]);\n"
                          "ok = total == 3 && ds.cardinality() == 2 && fg::data::range(5).batch(2).cardinality() == 3;"),
    "fusegrad/io/idx.hpp": ([], "const unsigned char b[] = {0, 0, 8, 1, 0, 0, 0, 2, 7, 9};\n"
                            "const auto a = fusegrad::io::read_idx(std::as_bytes(std::span(b)));\n"
                            "ok = a.shape == fg::shape{2} && std::get<std::vector<std::uint8_t>>(a.values)[1] == 9;"),
    "fusegrad/io/hdf5.hpp": ([], "const std::string p = (std::filesystem::temp_directory_path() / \"fusegrad_hdf5_header.h5\").string();\n"
                             "fg::io::write_hdf5(p, {{\"a/b\", fg::tensor<float>{1.f, 2.f}}, {\"c\", fg::tensor<bool>(true)}});\n"
                             "const fg::io::named_tensors t = fg::io::read_hdf5(p);\nstd::filesystem::remove(p);\n"
                             "ok = std::get<fg::tensor<float>>(t.at(\"a/b\")).data()[1] == 2.f && std::get<fg::tensor<bool>>(t.at(\"c\")).item();"),
    "fusegrad/train.hpp": ([], "fg::variable<float> x(1.f);\nfg::train::checkpoint c{{\"x\", x}};\n"
                           "ok = c.objects().size() == 1 && c.save_counter() == 0;"),
    "fusegrad/io/tfrecord.hpp": ([], "const auto got = fg::io::parse_records(fg::io::frame_record(\"abc\") + fg::io::frame_record(\"\"));\n"
                                "ok = fg::io::crc32c(\"123456789\") == 0xE3069283u && got.size() == 2 && got[0].data == \"abc\";"),
    "fusegrad/io/events.hpp": ([], "const std::string r = fg::io::frame_record(fg::io::encode_event({.wall_time = 1.5, .step = 3, .file_version = \"brain.Event:2\"}));\n"
                              "const auto got = fg::io::parse_records(r);\n"
                              "ok = fg::io::crc32c(\"123456789\") == 0xE3069283u && got.size() == 1 && fg::io::decode_event(got[0].data).step == 3;"),
    "fusegrad/train/summary.hpp": (["filesystem"], "const std::string d = (std::filesystem::temp_directory_path() / \"fusegrad_summary_header\").string();\n"
                                  "{ const fg::summary::file_writer w = fg::summary::create_file_writer(d); auto s = w.as_default();\n"
                                  "  ok = fg::summary::scalar(\"x\", 1.f, 0) && fg::summary::histogram(\"h\", fg::tensor<float>{1.f, 2.f}, 0);\n"
                                  "  w.close(); ok = ok && fg::io::read_events(w.path()).size() == 3; }\nstd::filesystem::remove_all(d);"),
    "fusegrad/train/tensorboard.hpp": (["filesystem"], "const std::string d = (std::filesystem::temp_directory_path() / \"fusegrad_tensorboard_header\").string();\n"
                                      "{ fg::nn::callbacks::tensorboard tb({.log_dir = d}); tb.on_train_begin({});\n"
                                      "  tb.on_epoch_end(0, {{\"loss\", 0.5}, {\"val_loss\", 0.7}}); tb.on_train_end({}); }\n"
                                      "ok = std::filesystem::is_directory(d + \"/train\") && std::filesystem::is_directory(d + \"/validation\");\nstd::filesystem::remove_all(d);"),
    "fusegrad/eager/check_gradients.hpp": ([], "auto r = fg::testing::check_gradients([](const std::vector<fg::tensor<double>>& in) {\n"
                                           "  return fg::tensor<double>(fg::sin(in[0])); }, {fg::tensor<double>{0.5, 1.0}});\n"
                                           "ok = r.max_error < 1e-6;"),
}


def name_of(header):
    return header.replace("fusegrad/", "").replace("/", "_").replace(".hpp", "") + "_header"


def main():
    out = pathlib.Path(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "--list":
        for h in sorted(PROGRAMS):
            print(name_of(h) + ".cpp")
        return 0
    if len(sys.argv) > 2 and sys.argv[2] == "--headers":
        for h in sorted(PROGRAMS):
            print(h)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for h, (extra, body) in sorted(PROGRAMS.items()):
        lines = [f"// Generated by tests/headers/make_programs.py: {h} on its own.", f"#include <{h}>"]
        lines += [f"#include <{e}>" for e in extra]
        lines += ["#include <array>", "#include <cmath>", "#include <string>", "#include <vector>", "", "namespace fg = fusegrad;", "",
                  "int main() {", "  bool ok = false;"]
        lines += ["  " + l for l in body.split("\n")]
        lines += ["  return ok ? 0 : 1;", "}", ""]
        text = "\n".join(lines)
        path = out / (name_of(h) + ".cpp")
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
