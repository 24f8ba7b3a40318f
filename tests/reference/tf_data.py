#!/usr/bin/env python3
"""Reference values of tests/data_test.cpp from tf.data as shipped with TensorFlow 2.21 (on the
CPU): the deterministic transformations only (shuffle's order is TensorFlow's own generator, so
the test checks shuffle by its properties instead).

1. seed 004's walk without shuffle: from_tensor_slices(arange(60).reshape(6, 10)).batch(4).repeat(2);
2. range with steps, take, skip, shard, unbatch, enumerate, zip, filter, concatenate, cache,
   batch of a tuple and batch with drop_remainder;
3. cardinality of a list of pipelines (-1 is tf.data.INFINITE_CARDINALITY, -2 UNKNOWN_CARDINALITY).

Each line prints a name and the values as C++ initializer lists, e.g. {0, 1, 2}.

Run by hand: python3 tests/reference/tf_data.py"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def cxx(values):
    """A nested list of numbers as a C++ initializer list."""
    if isinstance(values, (list, tuple)):
        return "{" + ", ".join(cxx(v) for v in values) + "}"
    return str(values)


def elements(ds):
    """The elements of ds as nested Python lists."""
    out = []
    for e in ds:
        if isinstance(e, tuple):
            out.append([np.asarray(c).tolist() for c in e])
        else:
            out.append(np.asarray(e).tolist())
    return out


def show(name, ds):
    print(f"{name}: {cxx(elements(ds))}")


def main():
    print("TensorFlow", tf.__version__)
    d = np.arange(0, 60).reshape([6, 10])
    walk = tf.data.Dataset.from_tensor_slices(d).batch(4).repeat(2)
    print("seed 004 walk batch sizes:", cxx([int(b.shape[0]) for b in walk]))
    show("seed 004 walk (no shuffle)", walk)
    print("seed 004 walk with shuffle(3), batch sizes:",
          cxx([int(b.shape[0]) for b in tf.data.Dataset.from_tensor_slices(d).shuffle(3).batch(4).repeat(2)]))

    r = tf.data.Dataset.range
    show("range(2, 11, 3)", r(2, 11, 3))
    show("range(10, 0, -3)", r(10, 0, -3))
    show("range(5, 2)", r(5, 2))
    show("range(10).take(3)", r(10).take(3))
    show("range(10).take(-1)", r(10).take(-1))
    show("range(10).skip(7)", r(10).skip(7))
    # padded_batch: elements fill([x], x) of lengths 1..4 (tf.data's own example), and rank 2
    ragged = r(1, 6).map(lambda x: tf.fill([x], x))
    show("fill([x], x) for x in 1..5, padded_batch(2)", ragged.padded_batch(2))
    show("padded_batch(2, padded_shapes=[6], padding_values=-1)", ragged.padded_batch(2, padded_shapes=[6], padding_values=tf.constant(-1, tf.int64)))
    show("padded_batch(2, drop_remainder=True)", ragged.padded_batch(2, drop_remainder=True))
    grid = r(1, 4).map(lambda x: tf.reshape(tf.range(x * (4 - x)), [x, 4 - x]))
    show("range(x * (4 - x)) as (x, 4 - x) for x in 1..3, padded_batch(3)", grid.padded_batch(3))
    pairs = r(1, 4).map(lambda x: (tf.fill([x], x), tf.cast(tf.fill([4 - x, 1], x), tf.float32)))
    for i, (a, b) in enumerate(pairs.padded_batch(3, padding_values=(tf.constant(0, tf.int64), 0.5))):
        print(f"pairs padded_batch(3) component 0: {cxx(a.numpy().tolist())}, component 1: {cxx(b.numpy().tolist())}")
    show("range(10).skip(-1)", r(10).skip(-1))
    show("range(10).shard(3, 1)", r(10).shard(3, 1))
    show("range(10).filter(x % 3 == 0)", r(10).filter(lambda x: x % 3 == 0))
    show("range(3).repeat(2)", r(3).repeat(2))
    show("range(3).concatenate(range(5, 7))", r(3).concatenate(r(5, 7)))
    show("range(3).enumerate(5)", r(3).map(lambda x: x * 10).enumerate(5))
    show("zip(range(3), range(10, 15))", tf.data.Dataset.zip(r(3), r(10, 15)))
    show("range(7).batch(3)", r(7).batch(3))
    show("range(7).batch(3, drop_remainder=True)", r(7).batch(3, drop_remainder=True))
    show("range(7).batch(3).unbatch().batch(2)", r(7).batch(3).unbatch().batch(2))
    pairs = tf.data.Dataset.from_tensor_slices((np.arange(10).reshape(5, 2), np.arange(5) * 1.5))
    show("from_tensor_slices((arange(10).reshape(5, 2), arange(5) * 1.5)).batch(2)", pairs.batch(2))
    show("range(5).map(2x).cache().repeat(2)", r(5).map(lambda x: 2 * x).cache().repeat(2))

    cases = {
        "range(10)": r(10),
        "range(10).repeat()": r(10).repeat(),
        "range(10).repeat(3)": r(10).repeat(3),
        "range(0).repeat()": r(0).repeat(),
        "range(10).filter(x < 5)": r(10).filter(lambda x: x < 5),
        "range(10).filter(x < 5).repeat()": r(10).filter(lambda x: x < 5).repeat(),
        "range(10).filter(x < 5).repeat(2)": r(10).filter(lambda x: x < 5).repeat(2),
        "range(10).batch(3)": r(10).batch(3),
        "range(10).batch(3, drop_remainder=True)": r(10).batch(3, drop_remainder=True),
        "range(10).repeat().batch(3)": r(10).repeat().batch(3),
        "range(10).take(3)": r(10).take(3),
        "range(10).take(30)": r(10).take(30),
        "range(10).repeat().take(30)": r(10).repeat().take(30),
        "range(10).skip(3)": r(10).skip(3),
        "range(10).skip(30)": r(10).skip(30),
        "range(10).skip(-1)": r(10).skip(-1),
        "range(10).repeat().skip(3)": r(10).repeat().skip(3),
        "range(10).shard(3, 0)": r(10).shard(3, 0),
        "range(10).shard(3, 1)": r(10).shard(3, 1),
        "range(10).shard(3, 2)": r(10).shard(3, 2),
        "range(10).shuffle(4)": r(10).shuffle(4),
        "range(10).map(x)": r(10).map(lambda x: x),
        "range(10).cache()": r(10).cache(),
        "range(10).prefetch(2)": r(10).prefetch(2),
        "range(10).enumerate()": r(10).enumerate(),
        "zip(range(10), range(4))": tf.data.Dataset.zip(r(10), r(4)),
        "zip(range(10), range(4).repeat())": tf.data.Dataset.zip(r(10), r(4).repeat()),
        "zip(range(10).repeat(), range(4).filter(x < 2))": tf.data.Dataset.zip(r(10).repeat(), r(4).filter(lambda x: x < 2)),
        "range(10).batch(3).unbatch()": r(10).batch(3).unbatch(),
        "range(10).concatenate(range(4))": r(10).concatenate(r(4)),
        "range(10).concatenate(range(4).repeat())": r(10).concatenate(r(4).repeat()),
        "range(10).repeat().filter(x < 5)": r(10).repeat().filter(lambda x: x < 5),
        "range(10).filter(x < 5).take(3)": r(10).filter(lambda x: x < 5).take(3),
        "range(10).filter(x < 5).skip(3)": r(10).filter(lambda x: x < 5).skip(3),
        "range(10).filter(x < 5).batch(3)": r(10).filter(lambda x: x < 5).batch(3),
        "range(10).filter(x < 5).shard(3, 0)": r(10).filter(lambda x: x < 5).shard(3, 0),
        "zip(range(3), range(10).filter(x < 5))": tf.data.Dataset.zip(r(3), r(10).filter(lambda x: x < 5)),
        "range(0).filter(x < 5)": r(0).filter(lambda x: x < 5),
        "range(10).repeat().unbatch() of batch": r(10).batch(2).repeat().unbatch(),
        "from_generator": tf.data.Dataset.from_generator(lambda: iter([1, 2]), output_types=tf.int64),
    }
    for name, ds in cases.items():
        print(f"cardinality {name}: {int(ds.cardinality())}")


if __name__ == "__main__":
    main()
