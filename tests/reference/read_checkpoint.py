#!/usr/bin/env python3
"""Reads an HDF5 file that fusegrad wrote (a checkpoint, fg::io::write_hdf5) with h5py, a reader
independent of fusegrad, and prints what it finds, for tests/checkpoint_test.cpp to compare with
what it wrote:

    <dataset name> <numpy dtype> (<shape, comma-separated>) <value> <value> ...
    @<root attribute name> <value>

Floating values are printed as Python's repr (the shortest text that reads back exactly), integers
and bools as integers. Exits with status 77 when h5py is not installed (the test then skips).

Usage: read_checkpoint.py FILE.h5"""
import sys

try:
    import h5py
    import numpy as np
except ImportError:
    print("h5py is not installed")
    sys.exit(77)


def show(name, obj):
    if not isinstance(obj, h5py.Dataset):
        return
    a = np.asarray(obj[()])
    shape = "(" + ",".join(str(d) for d in a.shape) + ")"
    if a.dtype.kind == "f":
        values = [repr(float(v)) for v in a.reshape(-1)]
    else:
        values = [str(int(v)) for v in a.reshape(-1)]
    print(name, a.dtype.name, shape, *values)


with h5py.File(sys.argv[1], "r") as f:
    f.visititems(show)
    for key, value in f.attrs.items():
        print("@" + key, value.decode() if isinstance(value, bytes) else value)
