#!/usr/bin/env python3
"""The MNIST programs of examples/ (mnist_mlp.cpp, mnist_cnn.cpp) in Keras, TensorFlow eager and
PyTorch, on Fashion-MNIST read from Debian's dataset-fashion-mnist files (or DIR), on the CPU.

  mnist_peers.py accuracy mlp|cnn [--threads N] [--dir DIR]
      The program's full run in Keras (TensorFlow 2.21's): seed 004's MLP (784-256-256-10, relu,
      sparse softmax cross-entropy from logits, Adam 1e-3, batch 128, 5 epochs, shuffled) or seed
      000's CNNModel (conv 64/128/128 3x3 same relu he_normal, each with a 2x2 max pool, flatten,
      dense 128 relu, dense 10 softmax, categorical cross-entropy on one-hot labels, Adam, batch
      64, 3 epochs, validated on the test images), with model.fit. Prints each epoch's line and
      the final test accuracy.
  mnist_peers.py epoch mlp|cnn [--threads N] [--framework keras|tf|torch|all] [--device cpu|cuda] [--dir DIR]
      The wall time of one training epoch over the 60000 images (mlp: batch 128; cnn: batch 64),
      for each framework: Keras' fit (verbose 0, no validation), a TensorFlow eager loop
      (GradientTape and apply_gradients over a tf.data pipeline of the same batches) and a
      PyTorch eager loop (nn.Sequential, zero_grad / backward / step). Each runs one untimed
      warm-up epoch over 20 batches first. A framework that is not installed is skipped with a
      note. Each is given N intra-op threads and one inter-op thread. With --device cuda the
      PyTorch loop alone runs, on the GPU (the data copied there once, before the timing), as the
      reference beside build/cuda/cuda_mnist_cnn.

Compare with `build/examples/mnist_mlp --full`, `build/examples/mnist_cnn --full` and
`build/benchmarks/mnist_epoch` (docs/benchmarks.md)."""
import argparse
import gzip
import os
import subprocess
import sys
import time

import numpy as np


def load(directory):
    def read(name, offset):
        with gzip.open(os.path.join(directory, name + ".gz"), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    out = []
    for split, count in (("train", 60000), ("t10k", 10000)):
        images = read(f"{split}-images-idx3-ubyte", 16).reshape(count, 28, 28).astype(np.float32) / 255
        labels = read(f"{split}-labels-idx1-ubyte", 8).astype(np.int64)
        out.append((images, labels))
    return out


def keras_model(kind):
    import tensorflow as tf

    L = tf.keras.layers
    if kind == "mlp":
        return tf.keras.Sequential([tf.keras.Input((784,)), L.Dense(256, activation="relu"),
                                    L.Dense(256, activation="relu"), L.Dense(10)])
    he = "he_normal"
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        L.Conv2D(64, 3, kernel_initializer=he, activation="relu", padding="same", name="conv1"),
        L.MaxPool2D((2, 2), strides=2, padding="valid", name="pool1"),
        L.Conv2D(128, 3, kernel_initializer=he, activation="relu", padding="same", name="conv2"),
        L.MaxPool2D((2, 2), strides=2, padding="valid", name="pool2"),
        L.Conv2D(128, 3, kernel_initializer=he, activation="relu", padding="same", name="conv3"),
        L.MaxPool2D((2, 2), strides=2, padding="valid", name="pool3"),
        L.Flatten(),
        L.Dense(128, activation="relu", kernel_initializer=he),
        L.Dense(10, activation="softmax", kernel_initializer=he)])


def keras_loss(kind):
    import tensorflow as tf

    if kind == "mlp":
        return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return tf.keras.losses.CategoricalCrossentropy()


def inputs(kind, images, labels):
    """The program's x and y: flat rows and labels (mlp), or NHWC images and one-hot rows (cnn)."""
    if kind == "mlp":
        return images.reshape(-1, 784), labels
    return images[..., None], np.eye(10, dtype=np.float32)[labels]


def accuracy(kind, data):
    import tensorflow as tf

    (x, y), (xt, yt) = [inputs(kind, *d) for d in data]
    tf.keras.utils.set_random_seed(1)
    model = keras_model(kind)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss=keras_loss(kind), metrics=["accuracy"])
    if kind == "mlp":
        model.fit(x, y, batch_size=128, epochs=5, verbose=2)
    else:
        model.fit(x, y, batch_size=64, epochs=3, verbose=2, validation_data=(xt, yt))
    _, acc = model.evaluate(xt, yt, verbose=0)
    print(f"keras {kind}: test accuracy {acc:.4f}")


def epoch_keras(kind, x, y, batch):
    import tensorflow as tf

    model = keras_model(kind)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss=keras_loss(kind))
    model.fit(x[:20 * batch], y[:20 * batch], batch_size=batch, epochs=1, verbose=0)
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    return time.perf_counter() - t0


def epoch_tf(kind, x, y, batch):
    import tensorflow as tf

    model, loss_fn, opt = keras_model(kind), keras_loss(kind), tf.keras.optimizers.Adam(1e-3)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    def run(n):
        for xb, yb in tf.data.Dataset.from_tensor_slices((x[:n], y[:n])).batch(batch).prefetch(2):
            step(xb, yb)

    run(20 * batch)
    t0 = time.perf_counter()
    run(len(x))
    return time.perf_counter() - t0


def epoch_torch(kind, x, y, batch, device="cpu"):
    import torch
    from torch import nn

    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        xs, ys = torch.from_numpy(x), torch.from_numpy(y)
        loss_fn = nn.CrossEntropyLoss()
    else:  # NCHW, PyTorch's native layout; softmax + categorical cross-entropy as log_softmax + NLL
        model = nn.Sequential(nn.Conv2d(1, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(1152, 128), nn.ReLU(), nn.Linear(128, 10))
        xs = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
        ys = torch.from_numpy(y.argmax(1))
        loss_fn = nn.CrossEntropyLoss()
    model, xs, ys = model.to(device), xs.to(device), ys.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

    def run(n):
        for i in range(0, n, batch):
            opt.zero_grad()
            loss_fn(model(xs[i:i + batch]), ys[i:i + batch]).backward()
            opt.step()

    run(20 * batch)
    if device != "cpu":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    run(len(xs))
    if device != "cpu":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["accuracy", "epoch"])
    ap.add_argument("kind", choices=["mlp", "cnn"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--framework", choices=["keras", "tf", "torch", "all"], default="all")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dir", default=os.environ.get("FUSEGRAD_DATASETS", "/usr/share/datasets/fashion-mnist"))
    args = ap.parse_args()
    if args.what == "epoch" and args.framework == "all" and args.device == "cpu":
        # One process each: TensorFlow's and PyTorch's copies of LLVM clash in one process.
        for fw in ("keras", "tf", "torch"):
            subprocess.run([sys.executable, __file__, "epoch", args.kind, "--framework", fw, "--threads",
                            str(args.threads), "--dir", args.dir], check=False)
        return 0
    data = load(args.dir)
    tf = None
    # TensorFlow only when asked for: imported beside PyTorch, their LLVM copies clash.
    if args.what == "accuracy" or (args.framework in ("keras", "tf") and args.device == "cpu"):
        try:
            import tensorflow as tf

            tf.config.threading.set_intra_op_parallelism_threads(args.threads)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except ImportError:
            tf = None
    if args.what == "accuracy":
        if tf is None:
            print("skipped: tensorflow is not installed")
            return 0
        accuracy(args.kind, data)
        return 0
    x, y = inputs(args.kind, *data[0])
    batch = 128 if args.kind == "mlp" else 64
    if args.device == "cuda":
        import torch

        secs = epoch_torch(args.kind, x, y, batch, "cuda")
        print(f"pytorch eager, {args.kind}, {torch.cuda.get_device_name()}: one epoch {secs:.2f} s", flush=True)
        return 0
    for name, run, module in (("keras fit", epoch_keras, "tensorflow"), ("tensorflow eager", epoch_tf, "tensorflow"),
                              ("pytorch eager", epoch_torch, "torch")):
        if args.framework not in ("all", name.split()[0].replace("tensorflow", "tf").replace("pytorch", "torch")):
            continue
        try:
            __import__(module)
        except ImportError:
            print(f"{name}: skipped ({module} is not installed)")
            continue
        if module == "torch":
            import torch

            torch.set_num_threads(args.threads)
            torch.set_num_interop_threads(1)
        print(f"{name}, {args.kind}, {args.threads} thread(s): one epoch {run(args.kind, x, y, batch):.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
