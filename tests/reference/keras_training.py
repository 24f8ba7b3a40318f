#!/usr/bin/env python3
"""Reference values of tests/nn_training_test.cpp from Keras 3 as shipped with TensorFlow 2.21
(tf.keras, float32, on the CPU):

1. optimizers: the variable after each of five apply_gradients steps for SGD (plain, momentum,
   Nesterov, clipnorm, clipvalue, global_clipnorm), Adam (plain, AMSGrad), AdamW, RMSprop and
   Adagrad, plus Adam's slot variables (momentum, velocity) after the five steps;
2. losses: sparse/categorical/binary cross-entropy (logits and probabilities, label smoothing,
   reductions "sum_over_batch_size", "sum" and None), mean squared/absolute error, Huber and
   KL divergence, with and without sample weights;
3. metrics: Mean, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
   TopKCategoricalAccuracy;
4. initializers: fan_in/fan_out of a Dense and a Conv2D kernel and the glorot_uniform limit,
   he_normal and lecun_normal standard deviations (no random values);
5. model.summary() text of a Dense and a Conv2D Sequential model.

All inputs are written literally below. Float values are printed with '%.9g' (they round-trip
through float32) and vectors as C++ initializer lists, e.g. {1.0f, -2.0f}.

Run by hand: python3 tests/reference/keras_training.py"""
import io
import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

keras = tf.keras


def f32(v):
    """A float32 value as a C++ float literal that round-trips."""
    v = float(np.float32(v))
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    s = "%.9g" % v
    if not any(c in s for c in ".e"):
        s += ".0"
    return s + "f"


def init_list(t):
    """A tensor (any shape) as a flat C++ initializer list."""
    return "{" + ", ".join(f32(e) for e in np.asarray(t, dtype=np.float32).reshape(-1)) + "}"


def show(name, t):
    a = np.asarray(t)
    if a.ndim == 0:
        print("%s: %s" % (name, f32(a)))
    else:
        print("%s: shape %s %s" % (name, tuple(a.shape), init_list(a)))


def guarded(name, fn):
    """Runs one item; if this Keras version rejects it, says so and goes on."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - report and continue
        print("%s: ERROR in this Keras version: %s: %s" % (name, type(e).__name__, e))


# ---------------------------------------------------------------------------------------------
# 1. Optimizers
# ---------------------------------------------------------------------------------------------
W0 = [1.0, -2.0, 3.0, 0.5]
U0 = [0.5, 0.5]
U_GRAD = [0.3, -0.1]


def grad_w(k):
    """g_k = [0.1*(k+1), -0.2, 0.3*(-1)**k, -0.4 + 0.15*k], rounded to float32."""
    return np.array([0.1 * (k + 1), -0.2, 0.3 * (-1) ** k, -0.4 + 0.15 * k], np.float32)


def run_optimizer(name, make_opt, with_u=False, print_slots=False):
    def body():
        opt = make_opt()
        w = tf.Variable(np.array(W0, np.float32), name="w")
        u = tf.Variable(np.array(U0, np.float32), name="u") if with_u else None
        print("// %s: %s" % (name, opt.get_config()))
        for k in range(5):
            pairs = [(tf.constant(grad_w(k)), w)]
            if with_u:
                pairs.append((tf.constant(np.array(U_GRAD, np.float32)), u))
            opt.apply_gradients(pairs)
            line = "%s step %d: w %s" % (name, k + 1, init_list(w.numpy()))
            if with_u:
                line += "  u %s" % init_list(u.numpy())
            print(line)
        if print_slots:
            for v in opt.variables:
                show("%s slot %s" % (name, v.path), v.numpy())
        print()

    guarded(name, body)


def optimizers():
    print("=== 1. optimizers ===")
    print("// w0 = %s" % init_list(W0))
    for k in range(5):
        print("// g_%d = %s" % (k, init_list(grad_w(k))))
    print()
    O = keras.optimizers
    run_optimizer("sgd", lambda: O.SGD(learning_rate=0.1))
    run_optimizer("sgd_momentum", lambda: O.SGD(learning_rate=0.1, momentum=0.9))
    run_optimizer("sgd_nesterov", lambda: O.SGD(learning_rate=0.1, momentum=0.9, nesterov=True))
    run_optimizer("adam", lambda: O.Adam(learning_rate=0.1), print_slots=True)
    run_optimizer("adam_amsgrad", lambda: O.Adam(learning_rate=0.1, amsgrad=True))
    run_optimizer("adamw", lambda: O.AdamW(learning_rate=0.1, weight_decay=0.004))
    run_optimizer("rmsprop", lambda: O.RMSprop(learning_rate=0.1))
    run_optimizer("adagrad", lambda: O.Adagrad(learning_rate=0.1))
    run_optimizer("sgd_clipnorm", lambda: O.SGD(learning_rate=0.1, clipnorm=0.25))
    run_optimizer("sgd_clipvalue", lambda: O.SGD(learning_rate=0.1, clipvalue=0.25))
    # two variables: u = [0.5, 0.5] with gradient [0.3, -0.1] at every step
    run_optimizer("sgd_global_clipnorm",
                  lambda: O.SGD(learning_rate=0.1, global_clipnorm=0.25), with_u=True)


# ---------------------------------------------------------------------------------------------
# 2. Losses
# ---------------------------------------------------------------------------------------------
def loss_item(name, loss_obj, y_true, y_pred, sample_weight=None):
    def body():
        kwargs = {} if sample_weight is None else {"sample_weight": tf.constant(sample_weight)}
        show(name, loss_obj(tf.constant(y_true), tf.constant(y_pred), **kwargs).numpy())

    guarded(name, body)


def losses():
    print("=== 2. losses ===")
    L = keras.losses
    labels = np.array([2, 0, 1], np.int32)
    onehot = np.eye(3, dtype=np.float32)[labels]
    logits = np.array([[1.0, 2.0, 3.0], [1e4, 0.0, -1e4], [0.5, 0.5, -1.0]], np.float32)
    probs = np.array([[0.1, 0.2, 0.7], [1.0, 0.0, 0.0], [0.3, 0.6, 0.1]], np.float32)
    print("// labels {2, 0, 1}; logits %s; probabilities %s" % (init_list(logits), init_list(probs)))

    loss_item("sparse_cce logits mean", L.SparseCategoricalCrossentropy(from_logits=True),
              labels, logits)
    loss_item("sparse_cce logits sum",
              L.SparseCategoricalCrossentropy(from_logits=True, reduction="sum"), labels, logits)
    loss_item("sparse_cce logits none",
              L.SparseCategoricalCrossentropy(from_logits=True, reduction=None), labels, logits)
    loss_item("sparse_cce probs mean", L.SparseCategoricalCrossentropy(from_logits=False),
              labels, probs)
    loss_item("sparse_cce probs none",
              L.SparseCategoricalCrossentropy(from_logits=False, reduction=None), labels, probs)

    loss_item("cce logits mean", L.CategoricalCrossentropy(from_logits=True), onehot, logits)
    loss_item("cce logits none", L.CategoricalCrossentropy(from_logits=True, reduction=None),
              onehot, logits)
    loss_item("cce probs mean", L.CategoricalCrossentropy(from_logits=False), onehot, probs)
    loss_item("cce probs none", L.CategoricalCrossentropy(from_logits=False, reduction=None),
              onehot, probs)
    loss_item("cce logits label_smoothing 0.1 mean",
              L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), onehot, logits)
    loss_item("cce logits label_smoothing 0.1 none",
              L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, reduction=None),
              onehot, logits)

    b_true = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], np.float32)
    b_logits = np.array([[-1.0, 2.0], [0.5, 1e4], [3.0, -2.0]], np.float32)
    b_probs = np.array([[0.2, 0.9], [0.6, 0.0], [1.0, 0.3]], np.float32)
    print("// binary y_true %s; logits %s; probabilities %s"
          % (init_list(b_true), init_list(b_logits), init_list(b_probs)))
    loss_item("bce logits mean", L.BinaryCrossentropy(from_logits=True), b_true, b_logits)
    loss_item("bce logits none", L.BinaryCrossentropy(from_logits=True, reduction=None),
              b_true, b_logits)
    loss_item("bce probs mean", L.BinaryCrossentropy(from_logits=False), b_true, b_probs)
    loss_item("bce probs none", L.BinaryCrossentropy(from_logits=False, reduction=None),
              b_true, b_probs)

    r_true = np.array([[0.0, 1.0], [1.0, 0.5]], np.float32)
    r_pred = np.array([[0.25, 0.5], [2.0, 0.5]], np.float32)
    k_true = np.array([[0.2, 0.8], [0.5, 0.5]], np.float32)
    k_pred = np.array([[0.4, 0.6], [0.9, 0.1]], np.float32)
    sw = np.array([1.0, 0.5], np.float32)
    print("// regression y_true %s y_pred %s; kld y_true %s y_pred %s; sample_weight %s"
          % (init_list(r_true), init_list(r_pred), init_list(k_true), init_list(k_pred),
             init_list(sw)))
    for name, make, yt, yp in (("mse", L.MeanSquaredError, r_true, r_pred),
                               ("mae", L.MeanAbsoluteError, r_true, r_pred),
                               ("huber delta 1", lambda **kw: L.Huber(delta=1.0, **kw),
                                r_true, r_pred),
                               ("kld", L.KLDivergence, k_true, k_pred)):
        loss_item(name + " mean", make(), yt, yp)
        loss_item(name + " none", make(reduction=None), yt, yp)
        loss_item(name + " sample_weight mean", make(), yt, yp, sw)
        loss_item(name + " sample_weight sum", make(reduction="sum"), yt, yp, sw)
    print()


# ---------------------------------------------------------------------------------------------
# 3. Metrics
# ---------------------------------------------------------------------------------------------
def metrics():
    print("=== 3. metrics ===")
    M = keras.metrics

    def mean():
        m = M.Mean()
        m.update_state(0)
        m.update_state(5)
        show("Mean after 0, 5", m.result().numpy())
        m.update_state([8, 9])
        show("Mean after [8, 9]", m.result().numpy())

    guarded("Mean", mean)

    labels = np.array([2, 0, 1, 1], np.int32)
    onehot = np.eye(3, dtype=np.float32)[labels]
    preds = np.array([[0.1, 0.2, 0.7], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4], [0.2, 0.5, 0.3]],
                     np.float32)

    def one(name, metric, y_true, y_pred):
        def body():
            metric.update_state(tf.constant(y_true), tf.constant(y_pred))
            show(name, metric.result().numpy())

        guarded(name, body)

    one("SparseCategoricalAccuracy", M.SparseCategoricalAccuracy(), labels, preds)
    one("Accuracy", M.Accuracy(), np.array([1, 2, 3, 4], np.float32),
        np.array([1, 2, 0, 4], np.float32))
    one("BinaryAccuracy threshold 0.5", M.BinaryAccuracy(threshold=0.5),
        np.array([[1], [0], [1], [0]], np.float32),
        np.array([[0.7], [0.6], [0.4], [0.1]], np.float32))
    one("CategoricalAccuracy", M.CategoricalAccuracy(), onehot, preds)
    one("TopKCategoricalAccuracy k=2", M.TopKCategoricalAccuracy(k=2), onehot, preds)
    print()


# ---------------------------------------------------------------------------------------------
# 4. Initializers
# ---------------------------------------------------------------------------------------------
# From keras/src/initializers/random_initializers.py (Keras 3.15):
#   compute_fans(shape): rank 2 -> fan_in = shape[0], fan_out = shape[1]; rank > 2 (conv kernel
#     (..., in_depth, out_depth)) -> receptive = prod(shape[:-2]), fan_in = shape[-2] * receptive,
#     fan_out = shape[-1] * receptive; rank 1 -> both shape[0]; rank 0 -> both 1.
#   VarianceScaling(scale, mode, distribution):
#     n = max(1, fan_in) | max(1, fan_out) | max(1, (fan_in + fan_out) / 2)  for fan_in|fan_out|fan_avg
#     s = scale / n
#     truncated_normal:   stddev = sqrt(s) / 0.87962566103423978 (truncated at 2 stddev)
#     untruncated_normal: stddev = sqrt(s)
#     uniform:            limit = sqrt(3 * s), values in [-limit, limit]
#   glorot_uniform = VarianceScaling(1.0, fan_avg, uniform) -> limit = sqrt(6 / (fan_in + fan_out))
#   he_normal      = VarianceScaling(2.0, fan_in, truncated_normal)
#   lecun_normal   = VarianceScaling(1.0, fan_in, truncated_normal)
TRUNC_CONST = 0.87962566103423978


def initializers():
    print("=== 4. initializers ===")
    from keras.src.initializers.random_initializers import compute_fans

    print("truncated normal stddev divisor: %.17g" % TRUNC_CONST)
    for name, shape in (("Dense kernel", (784, 256)), ("Conv2D kernel", (3, 3, 16, 32))):
        fan_in, fan_out = compute_fans(shape)
        print("%s %s: fan_in %d fan_out %d" % (name, shape, fan_in, fan_out))
        print("  glorot_uniform limit sqrt(6/(fan_in+fan_out)) = %.9g"
              % math.sqrt(6.0 / (fan_in + fan_out)))
        print("  he_normal target stddev sqrt(2/fan_in) = %.9g; truncated_normal stddev passed "
              "= %.9g" % (math.sqrt(2.0 / fan_in), math.sqrt(2.0 / fan_in) / TRUNC_CONST))
        print("  lecun_normal target stddev sqrt(1/fan_in) = %.9g; truncated_normal stddev passed "
              "= %.9g" % (math.sqrt(1.0 / fan_in), math.sqrt(1.0 / fan_in) / TRUNC_CONST))
    print()


# ---------------------------------------------------------------------------------------------
# 5. Model summaries
# ---------------------------------------------------------------------------------------------
def summary_text(model):
    buf = io.StringIO()
    model.summary(print_fn=lambda s, **kw: buf.write(s + "\n"))
    return buf.getvalue()


def summaries():
    print("=== 5. model summaries ===")
    Lyr = keras.layers

    def dense():
        keras.backend.clear_session()  # layer names start at dense, dense_1, ...
        model = keras.Sequential([keras.Input((784,)), Lyr.Dense(256, activation="relu"),
                                  Lyr.Dense(256, activation="relu"), Lyr.Dense(10)])
        print("// Dense model summary:")
        print(summary_text(model), end="")

    def conv():
        keras.backend.clear_session()
        model = keras.Sequential([keras.Input((28, 28, 1)), Lyr.Conv2D(16, 3, activation="relu"),
                                  Lyr.Conv2D(16, 3, activation="relu"),
                                  Lyr.GlobalAveragePooling2D(), Lyr.Dense(10)])
        print("// Conv2D model summary:")
        print(summary_text(model), end="")

    guarded("Dense summary", dense)
    guarded("Conv2D summary", conv)


def main():
    print("// TensorFlow %s, Keras %s" % (tf.__version__, keras.version()))
    optimizers()
    losses()
    metrics()
    initializers()
    summaries()


if __name__ == "__main__":
    main()
