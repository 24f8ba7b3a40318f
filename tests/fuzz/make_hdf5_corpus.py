#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/hdf5_fuzz.cpp into tests/fuzz/corpus/hdf5/: edit lists
for the checkpoint file the target writes (see its header for the format). No edit; the file cut
short at a few offsets; one byte flipped in the superblock, near the start of the root group's
header and further on; a run of flips; and flips of each bit of one byte. Offsets are taken
modulo the file's size by the target, so they need not know it.

Usage: python3 tests/fuzz/make_hdf5_corpus.py [OUTDIR]"""
import pathlib
import struct
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "corpus" / "hdf5")
out.mkdir(parents=True, exist_ok=True)


def edits(cut, flips):
    """cut: None or an offset; flips: (offset, xor) pairs."""
    head = struct.pack("<BH", 1, cut) if cut is not None else struct.pack("<BH", 0, 0)
    return head + b"".join(struct.pack("<HB", at, x) for at, x in flips)


cases = {"none": edits(None, [])}
for at in (0, 8, 48, 96, 200, 512, 1024, 1536, 2048, 3000):
    cases[f"cut_{at}"] = edits(at, [])
for at in (0, 9, 20, 44, 60, 100, 160, 300, 700, 1100, 1700, 2600):
    cases[f"flip_{at}"] = edits(None, [(at, 0x5A)])
cases["flip_run"] = edits(None, [(400 + k, 0xFF) for k in range(16)])
for bit in range(8):
    cases[f"bit_{bit}_at_130"] = edits(None, [(130, 1 << bit)])
cases["cut_and_flip"] = edits(900, [(12, 0x01), (850, 0x80)])
for name, data in cases.items():
    (out / name).write_bytes(data)
print(f"wrote {len(cases)} inputs to {out}")
