"""Reference values for tests/reduce_test.cpp ("reduce_logsumexp's gradient is softmax"):
tf.reduce_logsumexp over axis 1 and its gradient for a matrix whose rows hold large, small and
mixed values (run with tensorflow 2.21: python3 logsumexp_grads.py)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

x = tf.constant([[1.0, 2.0, 3.0], [1000.0, 1000.0, 999.0], [-1000.0, -999.0, -1001.0], [0.5, -0.25, 4.0]],
                dtype=tf.float64)
w = tf.constant([1.0, -2.0, 0.5, 3.0], dtype=tf.float64)
with tf.GradientTape() as tape:
    tape.watch(x)
    r = tf.reduce_logsumexp(x, axis=1)
    y = tf.reduce_sum(r * w)
g = tape.gradient(y, x)
print("value", ", ".join(repr(float(v)) for v in r.numpy()))
print("grad", ", ".join(repr(float(v)) for v in g.numpy().ravel()))
