#!/usr/bin/env python3
"""The work of benchmarks/conv.cpp in TensorFlow (eager) and PyTorch, on the CPU: seed 000's
convolution layers (batch 64, 3x3 SAME, 28x28x1 -> 64, 14x14x64 -> 128, 7x7x128 -> 128), forward
and forward + both backprops, the 2x2 max pool after each, forward + backward, and the sparse
softmax cross-entropy's mean with its gradient with respect to the logits. Medians of repeated
calls after a warm-up, in milliseconds (microseconds for the cross-entropy), one line each.

Usage: nn_peers.py --threads N [--framework tf|torch|both]

TensorFlow runs NHWC with HWIO filters, as fusegrad does; PyTorch runs its default layout (NCHW
tensors, OIHW filters), as its users write it. A framework that is not installed is skipped
with a note. Each framework is given N intra-op threads (and one inter-op thread). Results stay
tensors (eager TensorFlow and PyTorch run CPU ops synchronously): no copy to numpy is timed.
"""
import sys

import peer_timing

LAYERS = [(64, 28, 28, 1, 64), (64, 14, 14, 64, 128), (64, 7, 7, 128, 128)]
CE_SHAPES = [(64, 10), (1024, 1000)]


def median_time(f, min_time=0.5, min_runs=5):
    """The median of f()'s wall time over at least min_runs calls and min_time seconds."""
    return peer_timing.median_time(f, min_time, min_runs, warmup=3)[0]


def report(framework, what, seconds, unit="ms"):
    scale = 1e3 if unit == "ms" else 1e6
    print(f"{framework:10s} {what:42s} {seconds * scale:10.3f} {unit}", flush=True)


def run_tf(threads):
    try:
        import tensorflow as tf
    except ImportError:
        print("tensorflow: not installed; skipped")
        return
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    print(f"# TensorFlow {tf.__version__}, {threads} intra-op threads, eager")
    rng = tf.random.Generator.from_seed(1)
    for i, (n, h, w, c, o) in enumerate(LAYERS):
        x = rng.uniform((n, h, w, c), -1, 1)
        f = rng.uniform((3, 3, c, o), -1, 1)
        dy = rng.uniform((n, h, w, o), -1, 1)

        def fwd():
            return tf.nn.conv2d(x, f, 1, "SAME")

        def fwd_bwd():
            y = tf.nn.conv2d(x, f, 1, "SAME")
            dx = tf.compat.v1.nn.conv2d_backprop_input((n, h, w, c), f, dy, [1, 1, 1, 1], "SAME")
            df = tf.compat.v1.nn.conv2d_backprop_filter(x, (3, 3, c, o), dy, [1, 1, 1, 1], "SAME")
            return y, dx, df

        report("tf", f"conv2d forward, layer {i}", median_time(fwd))
        report("tf", f"conv2d forward + both backprops, layer {i}", median_time(fwd_bwd))
        p = rng.uniform((n, h, w, o), -1, 1)
        py = tf.nn.max_pool2d(p, 2, 2, "VALID")

        def pool():
            y = tf.nn.max_pool2d(p, 2, 2, "VALID")
            dx = tf.raw_ops.MaxPoolGrad(orig_input=p, orig_output=y, grad=py, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                                        padding="VALID")
            return dx

        report("tf", f"max_pool2d forward + backward, layer {i}", median_time(pool))
    for b, k in CE_SHAPES:
        logits = rng.uniform((b, k), -4, 4)
        labels = tf.cast(rng.uniform((b,), 0, k - 0.5), tf.int64)

        def ce():
            with tf.GradientTape() as tape:
                tape.watch(logits)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
            return tape.gradient(loss, logits)

        report("tf", f"sparse CE + gradient, {b}x{k}", median_time(ce), "us")


def run_torch(threads):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch: not installed; skipped")
        return
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    print(f"# PyTorch {torch.__version__}, {torch.get_num_threads()} threads, NCHW")
    g = torch.Generator().manual_seed(1)
    for i, (n, h, w, c, o) in enumerate(LAYERS):
        x = torch.rand((n, c, h, w), generator=g) * 2 - 1
        f = torch.rand((o, c, 3, 3), generator=g) * 2 - 1
        dy = torch.rand((n, o, h, w), generator=g) * 2 - 1

        def fwd():
            with torch.no_grad():
                return F.conv2d(x, f, padding=1)

        def fwd_bwd():
            with torch.no_grad():
                y = F.conv2d(x, f, padding=1)
                dx, df, _ = torch.ops.aten.convolution_backward(dy, x, f, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                                [True, True, False])
            return y, dx, df

        report("torch", f"conv2d forward, layer {i}", median_time(fwd))
        report("torch", f"conv2d forward + both backprops, layer {i}", median_time(fwd_bwd))
        p = (torch.rand((n, o, h, w), generator=g) * 2 - 1).requires_grad_()
        with torch.no_grad():
            py = F.max_pool2d(p, 2, 2)

        def pool():
            y = F.max_pool2d(p, 2, 2)
            (dx,) = torch.autograd.grad(y, p, py)
            return dx

        report("torch", f"max_pool2d forward + backward, layer {i}", median_time(pool))
    for b, k in CE_SHAPES:
        logits = (torch.rand((b, k), generator=g) * 8 - 4).requires_grad_()
        labels = (torch.rand((b,), generator=g) * (k - 0.5)).long()

        def ce():
            loss = F.cross_entropy(logits, labels)
            (dl,) = torch.autograd.grad(loss, logits)
            return dl

        report("torch", f"sparse CE + gradient, {b}x{k}", median_time(ce), "us")


if __name__ == "__main__":
    sys.exit(peer_timing.main(__doc__.splitlines()[0], [("tf", run_tf), ("torch", run_torch)]))
