"""Reference values for tests/creation_test.cpp ("range of floating values"): tf.range over a
start that is not 0, whose values TensorFlow computes as start + i * delta with the product
rounded before the sum (run with tensorflow 2.21: python3 range_values.py). Computed as one
fused multiply-add, the float64 values at i = 3, 5 and 7 and the float32 value at i = 9 differ
in the last bit."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

for dtype, suffix in ((tf.float64, ""), (tf.float32, "f")):
    values = tf.range(0.1, 3.0, 0.3, dtype=dtype).numpy()
    print(dtype.name, ", ".join(repr(float(v)) + suffix for v in values))
