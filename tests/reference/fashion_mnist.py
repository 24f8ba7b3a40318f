"""Reference values for tests/io_test.cpp ("Fashion-MNIST"): the four IDX files of Debian's
dataset-fashion-mnist package read with Python's gzip and numpy alone (no fusegrad, no Keras),
as tf.keras.datasets.fashion_mnist.load_data() decodes them (uint8 values after a 16-byte image
header and an 8-byte label header). Run: python3 fashion_mnist.py [DIR]
(DIR defaults to /usr/share/datasets/fashion-mnist)."""
import gzip
import sys

import numpy as np

directory = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"


def read(name, offset):
    with gzip.open(f"{directory}/{name}.gz", "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


for split, count in (("train", 60000), ("t10k", 10000)):
    images = read(f"{split}-images-idx3-ubyte", 16).reshape(count, 28, 28).astype(np.int64)
    labels = read(f"{split}-labels-idx1-ubyte", 8).astype(np.int64)
    print(f"{split}: images {images.shape}, labels {labels.shape}")
    print(f"  label histogram: {{{', '.join(str(c) for c in np.bincount(labels, minlength=10))}}}")
    print(f"  first labels: {{{', '.join(str(v) for v in labels[:10])}}}, "
          f"weighted sum (label * (index % 13 + 1)): {(labels * (np.arange(labels.size) % 13 + 1)).sum()}")
    print(f"  pixel sum: {images.sum()}, mean: {float(images.mean())!r}, min {images.min()}, max {images.max()}")
    print(f"  sum of image 0: {images[0].sum()}, image 0 row 14: {{{', '.join(str(v) for v in images[0, 14])}}}")
    print(f"  last image's sum: {images[-1].sum()}, weighted sum (pixel * (index % 7 + 1)): "
          f"{(images.reshape(-1) * (np.arange(images.size) % 7 + 1)).sum()}")
