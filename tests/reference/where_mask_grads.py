"""Reference gradients for tests/unary_test.cpp and tests/binary_test.cpp ("[where_mask]"):
d/dv reduce_sum(where(mask, op(v), zeros_like(v))) where op's derivative is inf or nan at the
unselected elements, in TensorFlow (run with tensorflow 2.21: python3 where_mask_grads.py).

TensorFlow's sqrt, rsqrt and reciprocal gradients (the SqrtGrad, RsqrtGrad and ReciprocalGrad
kernels) give 0 where the incoming gradient is exactly 0, so where()'s zero upstream masks
their inf/nan derivative. The gradients of log, log1p, division, pow, tan and exp multiply or
divide the incoming gradient by the derivative, so a zero upstream still gives nan there."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf


def grad_where(f, v, mask, dtype):
    v = tf.constant(v, dtype=dtype)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(tf.where(mask(v), f(v), tf.zeros_like(v)))
    return tape.gradient(y, v).numpy()


def grad_where_binary(f, a, b, mask, dtype):
    a = tf.constant(a, dtype=dtype)
    b = tf.constant(b, dtype=dtype)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(a)
        tape.watch(b)
        y = tf.reduce_sum(tf.where(mask(a, b), f(a, b), tf.zeros_like(a)))
    return tape.gradient(y, a).numpy(), tape.gradient(y, b).numpy()


def show(name, values):
    print(f"{name:40s}", np.array2string(np.asarray(values), precision=17, separator=", "))


print("tensorflow", tf.__version__)
positive = lambda v: v > 0
for dtype in (tf.float32, tf.float64):
    print("==", dtype.name)
    # Changed in fusegrad to match: a zero upstream gives 0.
    show("sqrt at [-1, 0, 4], mask v > 0", grad_where(tf.sqrt, [-1.0, 0.0, 4.0], positive, dtype))
    show("rsqrt at [-1, 0, 4], mask v > 0", grad_where(tf.math.rsqrt, [-1.0, 0.0, 4.0], positive, dtype))
    show("reciprocal at [0, -0.0, 2], mask v > 0",
         grad_where(tf.math.reciprocal, [0.0, -0.0, 2.0], positive, dtype))
    # Kept as they are: TensorFlow gives nan at the unselected singular points.
    show("log at [0, 2], mask v > 0", grad_where(tf.math.log, [0.0, 2.0], positive, dtype))
    show("log1p at [-1, 1], mask v > -1", grad_where(tf.math.log1p, [-1.0, 1.0], lambda v: v > -1, dtype))
    show("tan at [inf, 0], mask v < 1", grad_where(tf.tan, [np.inf, 0.0], lambda v: v < 1, dtype))
    show("exp at [1000, 0], mask v < 1", grad_where(tf.exp, [1000.0, 0.0], lambda v: v < 1, dtype))
    da, db = grad_where_binary(tf.divide, [1.0, 1.0], [0.0, 2.0], lambda a, b: b != 0, dtype)
    show("divide a=[1, 1] b=[0, 2], mask b != 0: da", da)
    show("divide a=[1, 1] b=[0, 2], mask b != 0: db", db)
    da, db = grad_where_binary(tf.pow, [0.0, 4.0], [-1.0, 0.5], lambda a, b: a > 0, dtype)
    show("pow a=[0, 4] b=[-1, 0.5], mask a > 0: da", da)
    show("pow a=[0, 4] b=[-1, 0.5], mask a > 0: db", db)
