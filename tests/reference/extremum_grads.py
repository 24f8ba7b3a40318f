"""Reference gradients for tests/reduce_test.cpp ("max and min share the gradient among ties"):
tf.reduce_max and tf.reduce_min over rows with ties, in TensorFlow 2.21 (run with
python3 extremum_grads.py). TensorFlow's gradient is indicators / count * upstream."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [5.0, 1.0, 0.0]], dtype=tf.float32)
w = tf.constant([0.7, 1.3, -2.0], dtype=tf.float32)
with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    ymax = tf.reduce_sum(tf.reduce_max(x, axis=1) * w)
    ymin = tf.reduce_sum(tf.reduce_min(x, axis=0, keepdims=True) * w)
for name, y in (("max", ymax), ("min", ymin)):
    print(name, ", ".join(repr(float(v)) + "f" for v in tape.gradient(y, x).numpy().ravel()))
