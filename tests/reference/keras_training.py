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
5. model.summary() text of a Dense and a Conv2D Sequential model;
6. Embedding and the weight regularizers: an Embedding's values and the gradient of a loss with
   respect to its embeddings (GradientTape, repeated indices), the L1, L2 and L1L2 values of a
   Dense with fixed weights (model.losses), the gradient of a loss plus the regularization, the
   history of fit with regularizers (a Dense, and an Embedding first in a Sequential), and the
   summary of a Sequential that starts with an Embedding.

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


# ---------------------------------------------------------------------------------------------
# 6. Embedding and weight regularizers
# ---------------------------------------------------------------------------------------------
EMB = (np.arange(15, dtype=np.float32) * np.float32(0.1) - np.float32(0.7)).reshape(5, 3)
EMB_IDX = [[0, 2, 2], [4, 1, 2]]
EMB_C = (np.arange(18, dtype=np.float32) * np.float32(0.25) - np.float32(2.0)).reshape(2, 3, 3)
REG_K = np.array([[0.5, -1.0], [0.25, 2.0], [-1.5, 0.75]], np.float32)
REG_B = np.array([0.1, -0.2], np.float32)
REG_X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.0, -2.0, 1.0], [2.0, 1.0, -1.0]], np.float32)
REG_Y = np.array([[0.5, -1.0], [1.0, 0.0], [-0.5, 2.0], [1.5, 1.0]], np.float32)
SEQ_IDX = np.array([[0, 1, 2], [3, 4, 5], [1, 1, 0], [5, 2, 3]], np.int32)
SEQ_Y = np.array([[1.0], [0.0], [0.5], [-1.0]], np.float32)
SEQ_EMB = (np.arange(12, dtype=np.float32) * np.float32(0.15) - np.float32(0.8)).reshape(6, 2)
SEQ_K = np.array([[0.3], [-0.2], [0.5], [0.1], [-0.4], [0.25]], np.float32)


def regularized_dense(kernel_regularizer=None, bias_regularizer=None):
    """A Dense(2) on 3 features with kernel REG_K and bias REG_B."""
    layer = keras.layers.Dense(2, kernel_regularizer=kernel_regularizer,
                               bias_regularizer=bias_regularizer)
    layer.build((None, 3))
    layer.set_weights([REG_K, REG_B])
    return layer


def embedding_and_regularizers():
    print("=== 6. embedding and regularizers ===")
    print("// embeddings %s; indices %s; c %s" % (init_list(EMB), EMB_IDX, init_list(EMB_C)))

    def embedding_values():
        for dtype in ("int32", "int64"):
            layer = keras.layers.Embedding(5, 3)
            layer.build()
            layer.set_weights([EMB])
            idx = tf.constant(EMB_IDX, dtype=dtype)
            with tf.GradientTape() as tape:
                y = layer(idx)
                loss = tf.reduce_sum(y * y * EMB_C)
            g = tape.gradient(loss, layer.embeddings)  # IndexedSlices: made dense
            show("embedding %s y" % dtype, y.numpy())
            show("embedding %s loss sum(y*y*c)" % dtype, loss.numpy())
            show("embedding %s d loss / d embeddings" % dtype, tf.convert_to_tensor(g).numpy())
        print("// Embedding default initializer: %s"
              % keras.layers.Embedding(5, 3).embeddings_initializer.get_config())

    def out_of_range():
        layer = keras.layers.Embedding(5, 3)
        layer.build()
        for bad in (5, -1):
            try:
                show("embedding index %d" % bad, layer(tf.constant([bad])).numpy())
            except Exception as e:  # noqa: BLE001
                print("embedding index %d: %s" % (bad, type(e).__name__))

    guarded("embedding values", embedding_values)
    guarded("embedding out of range", out_of_range)

    R = keras.regularizers
    print("// kernel %s bias %s" % (init_list(REG_K), init_list(REG_B)))

    def values():
        for name, reg in (("l1(0.01)", R.L1(0.01)), ("l2(0.01)", R.L2(0.01)),
                          ("l1_l2(0.02, 0.03)", R.L1L2(l1=0.02, l2=0.03)),
                          ("'l1'", "l1"), ("'l2'", "l2")):
            layer = regularized_dense(kernel_regularizer=reg)
            show("kernel_regularizer %s" % name, np.array([l.numpy() for l in layer.losses]))
        for name in ("l1", "l2", "l1_l2", "l1l2"):
            try:
                print("// regularizers.get(%r): %s" % (name, R.get(name).get_config()))
            except Exception as e:  # noqa: BLE001
                print("// regularizers.get(%r): %s: %s" % (name, type(e).__name__, e))
        layer = regularized_dense(R.L1L2(l1=0.02, l2=0.03), R.L2(0.5))
        show("kernel l1_l2(0.02, 0.03) bias l2(0.5) losses", np.array([l.numpy() for l in layer.losses]))

    def gradient():
        layer = regularized_dense(R.L1L2(l1=0.02, l2=0.03), R.L1(0.05))
        with tf.GradientTape() as tape:
            mse = keras.losses.MeanSquaredError()(REG_Y[:2], layer(REG_X[:2]))
            total = mse + tf.add_n(layer.losses)
        gk, gb = tape.gradient(total, [layer.kernel, layer.bias])
        show("mse + regularization (x rows 0-1)", total.numpy())
        show("d(mse + reg) / d kernel", gk.numpy())
        show("d(mse + reg) / d bias", gb.numpy())

    def fit_dense():
        keras.backend.clear_session()
        model = keras.Sequential([keras.Input((3,)),
                                  keras.layers.Dense(2, kernel_regularizer=R.L2(0.1),
                                                     bias_regularizer=R.L1(0.05))])
        model.layers[0].set_weights([REG_K, REG_B])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
        show("dense fit: model.losses before", np.array([l.numpy() for l in model.losses]))
        h = model.fit(REG_X, REG_Y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        show("dense fit history loss", np.array(h.history["loss"]))
        show("dense fit kernel after", model.layers[0].kernel.numpy())
        show("dense fit bias after", model.layers[0].bias.numpy())
        show("dense evaluate loss after", model.evaluate(REG_X, REG_Y, batch_size=4, verbose=0))

    def fit_embedding():
        keras.backend.clear_session()
        model = keras.Sequential([keras.Input((3,), dtype="int32"),
                                  keras.layers.Embedding(6, 2, embeddings_regularizer=R.L2(0.01)),
                                  keras.layers.Flatten(), keras.layers.Dense(1)])
        model.layers[0].set_weights([SEQ_EMB])
        model.layers[2].set_weights([SEQ_K, np.zeros(1, np.float32)])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
        print("// embeddings %s kernel %s indices %s y %s"
              % (init_list(SEQ_EMB), init_list(SEQ_K), SEQ_IDX.tolist(), init_list(SEQ_Y)))
        h = model.fit(SEQ_IDX, SEQ_Y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        show("embedding fit history loss", np.array(h.history["loss"]))
        show("embedding fit embeddings after", model.layers[0].embeddings.numpy())

    def summary():
        keras.backend.clear_session()
        model = keras.Sequential([keras.Input((4,), dtype="int32"), keras.layers.Embedding(100, 8),
                                  keras.layers.Flatten(), keras.layers.Dense(1)])
        print("// Embedding model summary:")
        print(summary_text(model), end="")

    guarded("regularizer values", values)
    guarded("regularizer gradient", gradient)
    guarded("fit with regularizers", fit_dense)
    guarded("fit an embedding", fit_embedding)
    guarded("embedding summary", summary)
    print()


def main():
    print("// TensorFlow %s, Keras %s" % (tf.__version__, keras.version()))
    optimizers()
    losses()
    metrics()
    initializers()
    summaries()
    embedding_and_regularizers()


if __name__ == "__main__":
    main()
