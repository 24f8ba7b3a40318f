#!/usr/bin/env python3
"""The peers of benchmarks/fused_chain, fused_backward and tape_overhead, timed the same way:
single-threaded float32, the chain y = log(1 + exp(x)) * sigmoid(x) + x * x over N values
uniform in [-4, 4], forward and forward + backward of sum(y); and 10000 scalar ops
`y = y * a; y = y + b` recorded on a tape and differentiated (benchmarks/tape_overhead runs
100000; 10000 keeps the peers' run short). Contenders, each skipped with a note when its
package is missing: JAX (jit), TensorFlow (eager, and tf.function), PyTorch (eager).

Prints one line per measurement, `peer NAME/N CPU_SECONDS_PER_ITERATION`, then what was skipped.
Times are CPU time of the process (time.process_time), the median of REPS rounds of a loop long
enough to take about MIN_TIME seconds, like Google Benchmark's CPU column.

Usage: peers.py [--sizes 1000000,10000000] [--min-time 0.2] [--reps 3] [--only jax,tensorflow,torch]
"""
import argparse
import os
import statistics
import sys
import time

# One thread for every library, set before any of them is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

SCALAR_OPS = 10000  # two ops per loop turn
SCALE, SHIFT = 0.999, 0.001


def cpu_time_per_iter(fn, min_time, reps):
    """Median over reps of the CPU seconds one call of fn takes, each round timing enough calls
    to last about min_time seconds."""
    fn()  # warm-up: compilation, allocator, caches
    start = time.process_time()
    fn()
    one = max(time.process_time() - start, 1e-6)
    calls = max(1, int(min_time / one))
    rounds = []
    for _ in range(reps):
        start = time.process_time()
        for _ in range(calls):
            fn()
        rounds.append((time.process_time() - start) / calls)
    return statistics.median(rounds)


def chain_input(n):
    import numpy as np
    return np.random.default_rng(20240601).uniform(-4.0, 4.0, n).astype(np.float32)


def jax_rows(sizes, min_time, reps):
    import jax
    import jax.numpy as jnp

    def chain(x):
        return jnp.log(1 + jnp.exp(x)) * jax.nn.sigmoid(x) + x * x

    forward = jax.jit(chain)
    backward = jax.jit(jax.value_and_grad(lambda x: jnp.sum(chain(x))))
    for n in sizes:
        x = jnp.asarray(chain_input(n))
        yield f"jax_jit_forward/{n}", cpu_time_per_iter(lambda: forward(x).block_until_ready(), min_time, reps)
        yield f"jax_jit_forward_backward/{n}", cpu_time_per_iter(
            lambda: jax.block_until_ready(backward(x)), min_time, reps)


def tensorflow_rows(sizes, min_time, reps):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    def chain(x):
        return tf.math.log(1 + tf.exp(x)) * tf.sigmoid(x) + x * x

    def value_and_grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(chain(x))
        return loss, tape.gradient(loss, x)

    graph_forward = tf.function(chain)
    graph_backward = tf.function(value_and_grad)
    for n in sizes:
        x = tf.constant(chain_input(n))
        yield f"tf_eager_forward/{n}", cpu_time_per_iter(lambda: chain(x).numpy(), min_time, reps)
        yield f"tf_function_forward/{n}", cpu_time_per_iter(lambda: graph_forward(x).numpy(), min_time, reps)
        yield f"tf_eager_forward_backward/{n}", cpu_time_per_iter(
            lambda: value_and_grad(x)[1].numpy(), min_time, reps)
        yield f"tf_function_forward_backward/{n}", cpu_time_per_iter(
            lambda: graph_backward(x)[1].numpy(), min_time, reps)

    a, b, x0 = tf.constant(SCALE), tf.constant(SHIFT), tf.constant(0.5)

    def scalar_ops():
        with tf.GradientTape() as tape:
            tape.watch(x0)
            y = x0
            for _ in range(SCALAR_OPS // 2):
                y = y * a
                y = y + b
        return tape.gradient(y, x0).numpy()

    yield "tf_eager_tape_per_op_forward_backward", cpu_time_per_iter(scalar_ops, min_time, 1) / SCALAR_OPS


def torch_rows(sizes, min_time, reps):
    import torch
    torch.set_num_threads(1)

    def chain(x):
        return torch.log(1 + torch.exp(x)) * torch.sigmoid(x) + x * x

    for n in sizes:
        x = torch.from_numpy(chain_input(n))
        with torch.no_grad():
            yield f"torch_eager_forward/{n}", cpu_time_per_iter(lambda: chain(x), min_time, reps)
        xg = x.clone().requires_grad_(True)

        def forward_backward():
            loss = chain(xg).sum()
            return torch.autograd.grad(loss, xg)

        yield f"torch_eager_forward_backward/{n}", cpu_time_per_iter(forward_backward, min_time, reps)

    a, b = torch.tensor(SCALE), torch.tensor(SHIFT)
    x0 = torch.tensor(0.5, requires_grad=True)

    def scalar_ops():
        y = x0
        for _ in range(SCALAR_OPS // 2):
            y = y * a
            y = y + b
        return torch.autograd.grad(y, x0)

    yield "torch_eager_tape_per_op_forward_backward", cpu_time_per_iter(scalar_ops, min_time, 1) / SCALAR_OPS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", default="jax,tensorflow,torch")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    peers = {"jax": jax_rows, "tensorflow": tensorflow_rows, "torch": torch_rows}
    skipped = []
    for name in args.only.split(","):
        try:
            for row, seconds in peers[name](sizes, args.min_time, args.reps):
                print(f"peer {row} {seconds:.9g}", flush=True)
        except ImportError as e:
            skipped.append(f"{name} ({e})")
    for s in skipped:
        print(f"skipped {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
