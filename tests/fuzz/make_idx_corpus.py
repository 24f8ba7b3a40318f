#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/idx_fuzz.cpp into tests/fuzz/corpus/idx/: small IDX files
of each element type, plain and gzip-compressed (several gzip members too), and broken ones (a
header cut short, values cut short, trailing bytes, a bad magic number, unknown type codes,
ranks 0 and 9, overflowing dimensions, a corrupt and a cut gzip stream). Each file is named for
what it holds; every one fits the fuzzer's 256-byte input limit.

Usage: python3 tests/fuzz/make_idx_corpus.py [OUTDIR]"""
import gzip
import pathlib
import struct
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "corpus" / "idx")
out.mkdir(parents=True, exist_ok=True)

# type code: (name, struct format of one big-endian value, sample values)
TYPES = {
    0x08: ("uint8", ">B", [0, 1, 127, 128, 255, 7]),
    0x09: ("int8", ">b", [-128, -1, 0, 1, 127, 5]),
    0x0B: ("int16", ">h", [-32768, -2, 0, 258, 32767, 1]),
    0x0C: ("int32", ">i", [-(2**31), -1, 0, 16909060, 2**31 - 1, 16777217]),
    0x0D: ("float32", ">f", [1.0, -3.5, float("inf"), float("nan"), 1e-45, 2.0**31]),
    0x0E: ("float64", ">d", [1.0, 0.1, -1e300, float("nan"), 2.0**63, -(2.0**31)]),
}


def header(code, dims):
    return bytes([0, 0, code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)


def idx(code, dims, values):
    return header(code, dims) + b"".join(struct.pack(TYPES[code][1], v) for v in values)


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


files = {}
for code, (name, _, values) in TYPES.items():
    files[f"{name}_2x3"] = idx(code, [2, 3], values)
    files[f"{name}_6"] = idx(code, [6], values)
    files[f"{name}_2x3.gz"] = gz(idx(code, [2, 3], values))
    files[f"{name}_empty_0x4"] = idx(code, [0, 4], [])
files["uint8_rank8"] = idx(0x08, [1, 2, 1, 1, 3, 1, 1, 1], [1, 2, 3, 4, 5, 6])
files["uint8_0_1"] = idx(0x08, [4], [0, 1, 1, 0])
files["uint8_image_3x8x8.gz"] = gz(idx(0x08, [3, 8, 8], [(i * 37) % 256 for i in range(192)]))
whole = idx(0x0C, [3], [1, -2, 3])
files["int32_two_members.gz"] = gz(whole[:9]) + gz(whole[9:])
files["int32_member_then_garbage.gz"] = gz(whole) + b"\x00\x01garbage"
# broken
files["bad_empty"] = b""
files["bad_magic_cut"] = b"\x00\x00\x08"
files["bad_dims_cut"] = bytes([0, 0, 8, 3, 0, 0, 0, 2, 0])
files["bad_values_cut"] = idx(0x08, [2, 3], [1, 2, 3, 4, 5, 6])[:-1]
files["bad_values_cut_int32"] = idx(0x0C, [3], [1, 2, 3])[:-2]
files["bad_trailing"] = idx(0x08, [2], [1, 2]) + b"\x03\x04"
files["bad_magic"] = bytes([1, 0, 8, 1, 0, 0, 0, 1, 5])
files["bad_type_07"] = bytes([0, 0, 7, 1, 0, 0, 0, 1, 5])
files["bad_type_0a"] = bytes([0, 0, 0x0A, 1, 0, 0, 0, 1, 5])
files["bad_rank0"] = bytes([0, 0, 8, 0, 5])
files["bad_rank9"] = header(0x08, [1] * 9) + b"\x05"
files["bad_overflow"] = header(0x0E, [0xFFFFFFFF] * 3)
files["bad_over_limit"] = header(0x0B, [1 << 17, 1 << 17])
files["bad_zero_and_overflow"] = header(0x08, [0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF])
files["bad_promise"] = header(0x0D, [1 << 30]) + b"\x00\x00\x00\x00"
good = gz(idx(0x08, [2, 3], TYPES[0x08][2]))
files["bad_gzip_crc.gz"] = good[:-8] + bytes([good[-8] ^ 1]) + good[-7:]
files["bad_gzip_cut.gz"] = good[: len(good) // 2]
files["bad_gzip_method.gz"] = good[:2] + b"\x07" + good[3:]
files["bad_gzip_twice.gz"] = gz(good)

for name, data in files.items():
    assert len(data) <= 256, name
    (out / name).write_bytes(data)
print(f"{len(files)} files in {out}")
