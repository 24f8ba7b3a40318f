#!/usr/bin/env python3
"""The work of benchmarks/mlp_train_step.cpp in PyTorch and TensorFlow, on the CPU: one training
step of a 784-256-256-10 MLP (batch 128, float32, relu hidden layers, sparse softmax
cross-entropy from logits, mean over the batch) with SGD (learning rate 0.01) and with Adam
(learning rate 1e-3, epsilon 1e-7, Keras' default). Medians of the wall time of repeated steps
after a warm-up, in milliseconds, one line per case, with the median CPU time of the process
(all its threads) beside it.

Usage: mlp_peers.py --threads N [--framework tf|torch|both]

PyTorch eager: nn.Sequential of nn.Linear and nn.ReLU, nn.CrossEntropyLoss, torch.optim.SGD and
Adam, zero_grad / backward / step. TensorFlow: a Keras Sequential of Dense layers, the
SparseCategoricalCrossentropy loss from logits, tf.GradientTape and the Keras optimizers'
apply_gradients, eagerly and with the same step wrapped in tf.function. A framework that is not
installed is skipped with a note. Each framework is given N intra-op threads (and one inter-op
thread). Each case makes its model afresh from the same fixed data and initial weights.
"""
import sys

import numpy as np

import peer_timing
from peer_timing import median_time

BATCH, IN, HIDDEN, CLASSES = 128, 784, 256, 10
SGD_LR, ADAM_LR, ADAM_EPS = 0.01, 1e-3, 1e-7


def report(framework, what, times):
    wall, cpu = times
    print(f"{framework:10s} {what:36s} {wall * 1e3:10.3f} ms  (CPU {cpu * 1e3:.3f} ms)", flush=True)


def problem():
    """Inputs, labels and initial weights (Glorot-uniform kernels of shape (in, out), small
    biases), fixed by the seed."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, IN), dtype=np.float32)
    y = rng.integers(0, CLASSES, BATCH).astype(np.int64)
    weights = []
    for fan_in, fan_out in [(IN, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, CLASSES)]:
        limit = np.sqrt(6 / (fan_in + fan_out))
        weights.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        weights.append(rng.uniform(-0.05, 0.05, fan_out).astype(np.float32))
    return x, y, weights


def run_torch(threads):
    try:
        import torch
    except ImportError:
        print("torch: not installed; skipped")
        return
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    print(f"# PyTorch {torch.__version__}, {torch.get_num_threads()} threads, eager")
    x_np, y_np, w = problem()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def make_model():
        model = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                                    torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES))
        with torch.no_grad():
            for layer, (k, b) in zip([model[0], model[2], model[4]], [w[0:2], w[2:4], w[4:6]]):
                layer.weight.copy_(torch.from_numpy(k.T.copy()))  # nn.Linear keeps (out, in)
                layer.bias.copy_(torch.from_numpy(b))
        return model

    loss_fn = torch.nn.CrossEntropyLoss()
    for name, make_opt in [("sgd", lambda p: torch.optim.SGD(p, lr=SGD_LR)),
                           ("adam", lambda p: torch.optim.Adam(p, lr=ADAM_LR, eps=ADAM_EPS))]:
        model = make_model()
        opt = make_opt(model.parameters())

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        report("torch", f"eager step, {name}", median_time(step))


def run_tf(threads):
    try:
        import tensorflow as tf
    except ImportError:
        print("tensorflow: not installed; skipped")
        return
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras = tf.keras
    print(f"# TensorFlow {tf.__version__} (Keras {keras.__version__}), {threads} intra-op threads")
    x_np, y_np, w = problem()
    x, y = tf.constant(x_np), tf.constant(y_np)

    def make_model():
        model = keras.Sequential([keras.Input((IN,)), keras.layers.Dense(HIDDEN, activation="relu"),
                                  keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(CLASSES)])
        model.set_weights(w)
        return model

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for name, make_opt in [("sgd", lambda: keras.optimizers.SGD(SGD_LR)),
                           ("adam", lambda: keras.optimizers.Adam(ADAM_LR, epsilon=ADAM_EPS))]:
        for mode in ("eager", "tf.function"):
            model = make_model()
            opt = make_opt()
            variables = model.trainable_variables

            def step():
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
                return loss

            f = step if mode == "eager" else tf.function(step)
            report("tf", f"{mode} step, {name}", median_time(f))


if __name__ == "__main__":
    sys.exit(peer_timing.main(__doc__.splitlines()[0], [("torch", run_torch), ("tf", run_tf)]))
