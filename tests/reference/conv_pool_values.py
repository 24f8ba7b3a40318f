#!/usr/bin/env python3
"""Reference values of tests/conv_test.cpp and tests/pooling_test.cpp from TensorFlow (run with
TensorFlow 2.21 on the CPU, in float64): conv2d with every padding kind, strides, dilations and
a 1x1 filter, both backprops, conv2d_transpose; max and average pools with their gradients
(ties, SAME borders, explicit pads), MaxPoolGradGrad; and a gradient penalty through conv2d and
max_pool2d (d/dw of ||d loss / dx||^2).

Inputs are made by pattern(shape, a, m, scale) = ((arange(n) * a) % m - m // 2) / scale, which
the tests compute again. Prints each result as a C++ initializer list.

Usage: python3 tests/reference/conv_pool_values.py"""
import numpy as np
import tensorflow as tf


def pattern(shape, a, m, scale):
    n = int(np.prod(shape))
    return tf.constant((((np.arange(n) * a) % m - m // 2) / scale).reshape(shape), tf.float64)


def show(name, t):
    v = np.asarray(t).reshape(-1)
    body = ", ".join("%.12g" % e for e in v)
    print("// %s: shape %s\n{%s}\n" % (name, tuple(np.asarray(t).shape), body))


def conv_values():
    # stride 2, SAME; height 6 gives an odd total padding (0 before, 1 after), width 5 an even one
    x = pattern((2, 6, 5, 2), 7, 29, 8)
    w = pattern((3, 3, 2, 3), 5, 19, 10)
    show("conv2d stride 2 SAME", tf.nn.conv2d(x, w, 2, "SAME"))
    dy = pattern((2, 3, 3, 3), 3, 13, 4)
    show("conv2d_backprop_input stride 2 SAME", tf.raw_ops.Conv2DBackpropInput(
        input_sizes=[2, 6, 5, 2], filter=w, out_backprop=dy, strides=[1, 2, 2, 1], padding="SAME"))
    show("conv2d_backprop_filter stride 2 SAME", tf.raw_ops.Conv2DBackpropFilter(
        input=x, filter_sizes=[3, 3, 2, 3], out_backprop=dy, strides=[1, 2, 2, 1], padding="SAME"))
    # dilation 2, SAME
    x = pattern((1, 6, 5, 1), 7, 29, 8)
    w = pattern((2, 3, 1, 2), 5, 19, 10)
    show("conv2d dilation 2 SAME", tf.nn.conv2d(x, w, 1, "SAME", dilations=2))
    # stride 2 and dilation 2, VALID
    x = pattern((1, 7, 7, 1), 7, 29, 8)
    w = pattern((2, 2, 1, 1), 5, 19, 10)
    show("conv2d stride 2 dilation 2 VALID", tf.nn.conv2d(x, w, 2, "VALID", dilations=2))
    # 1x1 filter, stride 1 and stride 2
    x = pattern((1, 3, 4, 3), 7, 29, 8)
    w = pattern((1, 1, 3, 2), 5, 19, 10)
    show("conv2d 1x1 VALID", tf.nn.conv2d(x, w, 1, "VALID"))
    show("conv2d 1x1 stride 2 SAME", tf.nn.conv2d(x, w, 2, "SAME"))
    # explicit pads {{1, 2}, {0, 1}}, strides (2, 1), and the gradients through them
    x = pattern((1, 4, 5, 2), 7, 29, 8)
    w = pattern((2, 3, 2, 2), 5, 19, 10)
    pads = [[0, 0], [1, 2], [0, 1], [0, 0]]
    y = tf.nn.conv2d(x, w, (2, 1), pads)
    show("conv2d explicit pads", y)
    dy = pattern(y.shape, 3, 13, 4)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = tf.nn.conv2d(x, w, (2, 1), pads)
    show("conv2d explicit pads: d/dx", tape.gradient(y, x, output_gradients=dy))
    show("conv2d explicit pads: d/dw", tape.gradient(y, w, output_gradients=dy))
    # conv2d_transpose, stride 2 SAME, HWOI filters, to 6x6 and to 5x5 (both map back to 3x3)
    x = pattern((1, 3, 3, 2), 7, 29, 8)
    w = pattern((3, 3, 1, 2), 5, 19, 10)
    show("conv2d_transpose to 6x6", tf.nn.conv2d_transpose(x, w, (1, 6, 6, 1), 2, "SAME"))
    show("conv2d_transpose to 5x5", tf.nn.conv2d_transpose(x, w, (1, 5, 5, 1), 2, "SAME"))
    # and VALID, stride 2, to 7x7
    show("conv2d_transpose VALID to 7x7", tf.nn.conv2d_transpose(x, w, (1, 7, 7, 1), 2, "VALID"))


def pool_values():
    # ties: the first maximum in row-major order takes the gradient
    t = tf.constant([[1., 3., 3., 0.], [3., 2., 1., 3.], [0., 0., 5., 5.], [5., 5., 5., 1.]], tf.float64)[None, :, :, None]
    g = tf.constant([[1., 2.], [3., 4.]], tf.float64)[None, :, :, None]
    for k, s in ((2, 2), (3, 1)):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = tf.nn.max_pool2d(t, k, s, "VALID")
        show("max_pool2d ties %dx%d stride %d" % (k, k, s), y)
        show("max_pool2d ties %dx%d stride %d: gradient" % (k, k, s), tape.gradient(y, t, output_gradients=g))
    # SAME windows overhanging the border (height: 0 before, 1 after; width: 1 and 1), all
    # values negative so that a padded zero would win
    x = -tf.abs(pattern((1, 6, 5, 2), 7, 29, 8)) - 0.5
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 3, 2, "SAME")
    show("max_pool2d 3x3 stride 2 SAME", y)
    dy = pattern(y.shape, 3, 13, 4)
    show("max_pool2d 3x3 stride 2 SAME: gradient", tape.gradient(y, x, output_gradients=dy))
    ddx = pattern(x.shape, 5, 17, 4)
    show("MaxPoolGradGrad 3x3 stride 2 SAME", tf.raw_ops.MaxPoolGradGrad(
        orig_input=x, orig_output=y, grad=ddx, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"))
    # explicit pads {{1, 0}, {0, 1}}
    x = pattern((1, 4, 4, 1), 7, 29, 8)
    show("max_pool2d explicit pads", tf.nn.max_pool2d(x, 2, 2, [[0, 0], [1, 0], [0, 1], [0, 0]]))
    # average pool, SAME: border windows average over their input elements only
    x = pattern((1, 5, 4, 2), 7, 29, 8)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.avg_pool2d(x, 3, 2, "SAME")
    show("avg_pool2d 3x3 stride 2 SAME", y)
    dy = pattern(y.shape, 3, 13, 4)
    show("avg_pool2d 3x3 stride 2 SAME: gradient", tape.gradient(y, x, output_gradients=dy))


def penalty_values():
    # d/dw of ||d loss / dx||^2 with loss = sum(c * max_pool2d(conv2d(x, w))^2)
    x = pattern((1, 6, 6, 1), 7, 29, 8)
    w = pattern((3, 3, 1, 2), 5, 19, 10)
    c = pattern((1, 3, 3, 2), 3, 13, 4)
    with tf.GradientTape() as outer:
        outer.watch(w)
        with tf.GradientTape() as inner:
            inner.watch(x)
            p = tf.nn.max_pool2d(tf.nn.conv2d(x, w, 1, "SAME"), 2, 2, "VALID")
            loss = tf.reduce_sum(c * p * p)
        gx = inner.gradient(loss, x)
        penalty = tf.reduce_sum(gx * gx)
    show("gradient penalty", penalty)
    show("gradient penalty: d/dw", outer.gradient(penalty, w))


if __name__ == "__main__":
    print("// TensorFlow", tf.__version__)
    conv_values()
    pool_values()
    penalty_values()
