"""Keras 3's .weights.h5 files, both ways, for tests/checkpoint_test.cpp ([keras_weights]).

    python3 keras_weights.py load ARCH PATH   # Keras loads PATH (written by fusegrad) and predicts
    python3 keras_weights.py save ARCH PATH   # Keras trains briefly, writes PATH and predicts
    python3 keras_weights.py tree ARCH PATH   # Keras writes PATH and prints its groups and datasets

ARCH is one of the architectures below, each written the same way in the C++ test:
  sequential  Conv2D(4, 3, relu), BatchNormalization, MaxPooling2D, Flatten, Dropout(0.25),
              Dense(5, tanh), Dense(3) on input (6, 6, 2)
  struct      a subclassed model with attributes dense1 = Dense(10, relu), dense2 = Dense(10) and
              norm = BatchNormalization, called as norm(dense2(dense2(dense1(x)))), on 6 features
              (fusegrad's struct model with members dense1, dense2, norm)
  embedding   Embedding(10, 4), Flatten, Dense(2) on 5 int32 indices
  mixed       (tree only) a subclassed model with attributes of every kind, in an order where
              Keras' sorting of attribute names matters: the test's keras_mixed

Both modes print the model's predictions (inference mode) on the fixed input of fixed_input(),
one row per line: "row v0 v1 ...", each value with 9 significant digits; tree prints each dataset
"D name (shape)" and group "G name [its name attribute]" as h5py reads them (the optimizer's group
left out), the reference data of the test's layout case. Exits with 77 when TensorFlow's Keras is
not importable.
"""
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
try:
    import numpy as np
    import keras
    import tensorflow  # noqa: F401  (the Keras of TensorFlow 2.21)
except ImportError as e:
    print(f"skipped: {e}", file=sys.stderr)
    sys.exit(77)

BATCH = 3


def fixed_input(arch):
    """The input the C++ test also makes: element k (row-major) is sin(0.37 k + 0.1), or for
    indices (7 k + 3) mod 10."""
    shape = {"sequential": (BATCH, 6, 6, 2), "struct": (BATCH, 6), "embedding": (BATCH, 5)}[arch]
    n = int(np.prod(shape))
    if arch == "embedding":
        return np.array([(7 * k + 3) % 10 for k in range(n)], dtype=np.int32).reshape(shape)
    return np.array([math.sin(0.37 * k + 0.1) for k in range(n)], dtype=np.float32).reshape(shape)


class StructModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense1 = keras.layers.Dense(10, activation="relu")
        self.dense2 = keras.layers.Dense(10)
        self.norm = keras.layers.BatchNormalization()

    def call(self, x, training=False):
        return self.norm(self.dense2(self.dense2(self.dense1(x))), training=training)


class Block(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.inner = keras.layers.Dense(2)

    def call(self, x):
        return self.inner(x)


class MixedModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.n_seq = keras.Sequential([keras.layers.Dense(3)])
        self.m_dense = keras.layers.Dense(3)
        self.m_list = [keras.layers.Dense(3)]
        self.m_drop = keras.layers.Dropout(0.1)
        self.a_dense = keras.layers.Dense(3)
        self.o_block = Block()
        self.p_vec = [Block()]
        self.w = self.add_weight(shape=(3,), initializer="ones", name="scale")

    def call(self, x):
        x = self.m_drop(self.m_list[0](self.m_dense(self.a_dense(x))))
        return self.p_vec[0](self.o_block(self.n_seq(x) * self.w))


def build(arch):
    if arch == "sequential":
        return keras.Sequential([
            keras.Input((6, 6, 2)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.25),
            keras.layers.Dense(5, activation="tanh"),
            keras.layers.Dense(3),
        ])
    if arch == "embedding":
        return keras.Sequential([
            keras.Input((5,), dtype="int32"),
            keras.layers.Embedding(10, 4),
            keras.layers.Flatten(),
            keras.layers.Dense(2),
        ])
    if arch == "mixed":
        m = MixedModel()
        m(np.zeros((1, 4), np.float32))
        return m
    if arch == "struct":
        m = StructModel()
        m(fixed_input(arch))  # a subclassed model makes its variables on its first call
        return m
    raise SystemExit(f"unknown architecture {arch!r}")


def print_predictions(model, arch):
    y = np.asarray(model(fixed_input(arch), training=False))
    for row in y.reshape(y.shape[0], -1):
        print("row " + " ".join(f"{v:.9g}" for v in row))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("load", "save", "tree"):
        raise SystemExit(__doc__)
    mode, arch, path = sys.argv[1:]
    keras.utils.set_random_seed(7)
    model = build(arch)
    if mode == "tree":
        import h5py

        model.save_weights(path)
        with h5py.File(path) as f:
            def show(name, obj):
                if name.startswith("optimizer"):
                    return
                if isinstance(obj, h5py.Dataset):
                    print(f"D {name} {tuple(obj.shape)}")
                else:
                    print(f"G {name} [{obj.attrs.get('name', '')}]")
            f.visititems(show)
        return
    if mode == "load":
        model.load_weights(path)
    else:
        # A little training, so that no variable keeps its initial value (batch normalization's
        # moving statistics included).
        x = fixed_input(arch)
        rng = np.random.default_rng(7)
        y = rng.normal(size=(BATCH,) + tuple(model(x).shape[1:])).astype(np.float32)
        model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
        model.fit(x, y, epochs=5, batch_size=BATCH, verbose=0)
        model.save_weights(path)
    print_predictions(model, arch)


if __name__ == "__main__":
    main()
