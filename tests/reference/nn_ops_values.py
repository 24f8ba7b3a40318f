"""Reference values for tests/nn_ops_test.cpp: TensorFlow's activations, softmax and
log_softmax, the three cross-entropies (with logits of +-1e4), l2_normalize, bias_add, moments,
batch_normalization and FusedBatchNormV3 in both modes, with gradients, on the fixed inputs
below (run with tensorflow 2.21 and keras 3: python3 nn_ops_values.py). Each line is a name and
the values, row-major, ready to paste into a C++ initializer list (float32 values end in f)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
import keras


def show(name, values, dtype):
    flat = np.asarray(values).ravel()
    def literal(v):
        t = f"{float(v):.9g}" if dtype == tf.float32 else repr(float(v))
        t = t if any(c in t for c in ".e") else t + ".0"
        return t + "f" if dtype == tf.float32 else t

    text = ", ".join(literal(v) for v in flat)
    print(f"{name}: {text}")


def value_and_grad(f, xs, w):
    """f(*xs) and the gradients of sum(f(*xs) * w) with respect to each of xs."""
    with tf.GradientTape(persistent=True) as tape:
        for x in xs:
            tape.watch(x)
        y = f(*xs)
        s = tf.reduce_sum(y * w)
    return y, [tape.gradient(s, x) for x in xs]


print("tensorflow", tf.__version__, "keras", keras.__version__)

# Activations, values and d/dx sum(f(x)) (the kinks at -3, 0, 3 and 6 included).
act_x = [-20.0, -3.5, -3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 3.0, 6.0, 6.5, 20.0]
activations = {
    "leaky_relu": lambda x: tf.nn.leaky_relu(x, alpha=0.2),
    "leaky_relu_0.01": lambda x: tf.nn.leaky_relu(x, alpha=0.01),
    "elu": tf.nn.elu,
    "selu": tf.nn.selu,
    "gelu": lambda x: tf.nn.gelu(x, approximate=False),
    "gelu_approximate": lambda x: tf.nn.gelu(x, approximate=True),
    "silu": tf.nn.silu,
    "relu6": tf.nn.relu6,
    "softsign": tf.nn.softsign,
    "hard_sigmoid": keras.activations.hard_sigmoid,
    "erf": tf.math.erf,
    "erfc": tf.math.erfc,
}
for dtype in (tf.float32, tf.float64):
    x = tf.constant(act_x, dtype=dtype)
    for name, f in activations.items():
        y, (g,) = value_and_grad(f, [x], tf.ones_like(x))
        show(f"{name} {dtype.name} value", y, dtype)
        show(f"{name} {dtype.name} grad", g, dtype)
# TensorFlow's float64 gelu casts its constants 0.7071067811865476 and 0.044715 from float32
# tensors (math_ops.cast of a Python float), so it is off by about 1e-9; fusegrad keeps them
# double: the same formulas with the exact constants, and their derivatives, in double.
import math

c, a, k = 0.7071067811865476, 0.044715, 0.7978845608028654
gelu_exact = [0.5 * v * math.erfc(-v * c) for v in act_x]
gelu_exact_grad = [0.5 * math.erfc(-v * c) + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in act_x]
tanh_u = [math.tanh(k * (v + a * v ** 3)) for v in act_x]
gelu_tanh = [0.5 * v * (1 + t) for v, t in zip(act_x, tanh_u)]
gelu_tanh_grad = [0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * a * v * v) for v, t in zip(act_x, tanh_u)]
show("gelu float64 exact value", gelu_exact, tf.float64)
show("gelu float64 exact grad", gelu_exact_grad, tf.float64)
show("gelu_approximate float64 exact value", gelu_tanh, tf.float64)
show("gelu_approximate float64 exact grad", gelu_tanh_grad, tf.float64)
# TensorFlow's leaky_relu takes alpha as a float32 attribute, so in float64 it multiplies by
# 0.20000000298...; fusegrad keeps alpha a double: numpy's values with the exact alpha.
xd = np.array(act_x)
for alpha in (0.2, 0.01):
    show(f"leaky_relu alpha {alpha} float64 exact value", np.where(xd > 0, xd, alpha * xd), tf.float64)
    show(f"leaky_relu alpha {alpha} float64 exact grad", np.where(xd > 0, 1.0, alpha), tf.float64)

f32 = tf.float32
# softmax and log_softmax over both axes, and a row of +-1e4.
logits = tf.constant([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]], dtype=f32)
for axis in (-1, 0):
    show(f"softmax axis {axis}", tf.nn.softmax(logits, axis=axis), f32)
    show(f"log_softmax axis {axis}", tf.nn.log_softmax(logits, axis=axis), f32)
big = tf.constant([[1e4, 0.0, -1e4]], dtype=f32)
show("softmax big", tf.nn.softmax(big), f32)
show("log_softmax big", tf.nn.log_softmax(big), f32)
w2 = tf.constant([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=f32)
for name, f in (("softmax", tf.nn.softmax), ("log_softmax", tf.nn.log_softmax)):
    _, (g,) = value_and_grad(lambda x: f(x, axis=0), [logits], w2)
    show(f"{name} axis 0 grad", g, f32)

# softmax cross-entropy: rows that are distributions, on axis -1 and (transposed) axis 0.
labels = tf.constant([[0.1, 0.6, 0.3], [0.0, 0.0, 1.0]], dtype=f32)
wrow = tf.constant([1.0, -2.0], dtype=f32)
y, (gl, gx) = value_and_grad(lambda z, x: tf.nn.softmax_cross_entropy_with_logits(z, x), [labels, logits], wrow)
show("softmax_ce", y, f32)
show("softmax_ce grad labels", gl, f32)
show("softmax_ce grad logits", gx, f32)
show("softmax_ce axis 0", tf.nn.softmax_cross_entropy_with_logits(tf.transpose(labels), tf.transpose(logits), axis=0),
     f32)
big_logits = tf.constant([[1e4, 0.0], [-1e4, 0.0], [1e4, 0.0]], dtype=f32)
big_labels = tf.constant([[0.0, 1.0], [1.0, 0.0], [0.25, 0.75]], dtype=f32)
y, (gx,) = value_and_grad(lambda x: tf.nn.softmax_cross_entropy_with_logits(big_labels, x), [big_logits],
                          tf.ones([3], f32))
show("softmax_ce big", y, f32)
show("softmax_ce big grad logits", gx, f32)

# sparse softmax cross-entropy: rank 2 and rank 3 logits, and +-1e4.
sparse_labels = tf.constant([2, 0], dtype=tf.int32)
y, (gx,) = value_and_grad(lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(sparse_labels, x), [logits], wrow)
show("sparse_ce", y, f32)
show("sparse_ce grad logits", gx, f32)
logits3 = tf.constant([[[0.5, -1.0, 2.0], [3.0, 0.0, -2.0]], [[1.0, 1.0, 1.0], [-0.5, 4.0, 0.25]]], dtype=f32)
labels3 = tf.constant([[1, 0], [2, 1]], dtype=tf.int64)
show("sparse_ce rank 3", tf.nn.sparse_softmax_cross_entropy_with_logits(labels3, logits3), f32)
big_sparse = tf.constant([1, 0, 0], dtype=tf.int32)
y, (gx,) = value_and_grad(lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(big_sparse, x), [big_logits],
                          tf.ones([3], f32))
show("sparse_ce big", y, f32)
show("sparse_ce big grad logits", gx, f32)
try:
    tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([1, 10, 2]), tf.zeros([3, 10]))
except tf.errors.InvalidArgumentError as e:
    print("sparse_ce out of range:", e.message.splitlines()[0])

# sigmoid cross-entropy, with the logit 0 (where the gradient is sigmoid(0) - z) and +-1e4.
sig_logits = tf.constant([-1e4, 1e4, 0.0, -2.5, 3.0, 1e4], dtype=f32)
sig_labels = tf.constant([0.0, 1.0, 0.3, 1.0, 0.0, 0.0], dtype=f32)
y, (gl, gx) = value_and_grad(lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(z, x), [sig_labels, sig_logits],
                             tf.ones([6], f32))
show("sigmoid_ce", y, f32)
show("sigmoid_ce grad labels", gl, f32)
show("sigmoid_ce grad logits", gx, f32)

# l2_normalize and bias_add.
l2x = tf.constant([[3.0, 4.0], [0.0, 0.0], [1.0, -2.0]], dtype=f32)
show("l2_normalize axis 1", tf.math.l2_normalize(l2x, axis=1), f32)
show("l2_normalize axis 0", tf.math.l2_normalize(l2x, axis=0), f32)
show("l2_normalize all", tf.math.l2_normalize(l2x, axis=[0, 1]), f32)
value = tf.reshape(tf.range(12, dtype=f32) * 0.5, [1, 2, 2, 3])
bias = tf.constant([1.0, -2.0, 0.25], dtype=f32)
show("bias_add", tf.nn.bias_add(value, bias), f32)

# moments and batch_normalization.
mx = tf.reshape(tf.constant([0.5, -1.0, 2.0, 3.5, 0.0, 1.25, -2.0, 4.0, 1.0, -0.5, 2.5, 0.75], dtype=f32), [2, 3, 2])
for axes in ([0, 2], [1], [0, 1, 2]):
    m, v = tf.nn.moments(mx, axes=axes)
    show(f"moments {axes} mean", m, f32)
    show(f"moments {axes} variance", v, f32)
bx = tf.constant([[0.5, -1.0, 2.0], [3.5, 0.0, 1.25]], dtype=f32)
bmean = tf.constant([1.0, -0.5, 0.25], dtype=f32)
bvar = tf.constant([0.5, 2.0, 1.5], dtype=f32)
boff = tf.constant([0.1, 0.2, -0.3], dtype=f32)
bscale = tf.constant([2.0, 0.5, -1.0], dtype=f32)
show("batch_normalization", tf.nn.batch_normalization(bx, bmean, bvar, boff, bscale, 1e-3), f32)
show("batch_normalization no offset or scale", tf.nn.batch_normalization(bx, bmean, bvar, None, None, 1e-3), f32)

# FusedBatchNormV3, NHWC: training (factor 1 and 0.3) and inference, with the gradients of
# sum(y * w) in training.
fx = tf.reshape(tf.constant([0.5, -1.0, 2.0, 3.5, 0.0, 1.25, -2.0, 4.0, 1.0, -0.5, 2.5, 0.75,
                             1.5, 0.25, -0.75, 2.0, -3.0, 0.5, 1.0, 1.75, -1.25, 0.0, 2.25, 3.0], dtype=f32),
                [2, 2, 2, 3])
fw = tf.reshape(tf.constant([((i * 7) % 5 - 2) * 0.5 for i in range(24)], dtype=f32), [2, 2, 2, 3])
empty = tf.constant([], dtype=f32)
for name, mean, var, factor, training in (("training", empty, empty, 1.0, True),
                                           ("training factor 0.3", bmean, bvar, 0.3, True),
                                           ("inference", bmean, bvar, 1.0, False)):
    def bn(x, s, o):
        return tf.raw_ops.FusedBatchNormV3(x=x, scale=s, offset=o, mean=mean, variance=var, epsilon=1e-3,
                                           exponential_avg_factor=factor, data_format="NHWC", is_training=training)
    out = bn(fx, bscale, boff)
    show(f"fused_batch_norm {name} y", out.y, f32)
    show(f"fused_batch_norm {name} batch_mean", out.batch_mean, f32)
    show(f"fused_batch_norm {name} batch_variance", out.batch_variance, f32)
    if training:  # in inference the reserve spaces are left unwritten
        show(f"fused_batch_norm {name} reserve_space_1", out.reserve_space_1, f32)
        show(f"fused_batch_norm {name} reserve_space_2", out.reserve_space_2, f32)
    _, (gx, gs, go) = value_and_grad(lambda x, s, o: bn(x, s, o).y, [fx, bscale, boff], fw)
    show(f"fused_batch_norm {name} grad x", gx, f32)
    show(f"fused_batch_norm {name} grad scale", gs, f32)
    show(f"fused_batch_norm {name} grad offset", go, f32)
