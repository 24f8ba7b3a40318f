#!/usr/bin/env python3
"""Runs the nvcc command given as its arguments with ptxas's resource report and fails when a
function's stack frame could hold a copy of a device functor (Note [device parameters],
include/fusegrad/core/config.hpp): the smallest of fusegrad's functors is 232 bytes, while the
frames the math library needs (sin and cos reducing large arguments) stay under 100.
Usage: frames.py NVCC ARGS..."""
import re
import subprocess
import sys

LIMIT = 200  # bytes

result = subprocess.run(sys.argv[1:] + ['-Xptxas=-v'], stderr=subprocess.PIPE, text=True)
function = None
large = []
for line in result.stderr.splitlines():
    props = re.search(r"Function properties for (\S+)", line)
    if props:
        function = props.group(1)
        continue
    frame = re.search(r'(\d+) bytes stack frame', line)
    if frame:
        if function and int(frame.group(1)) > LIMIT:
            large.append((int(frame.group(1)), function))
        continue
    if not line.startswith('ptxas info'):
        print(line, file=sys.stderr)
if result.returncode != 0:
    sys.exit(result.returncode)
if large:
    for size, name in sorted(set(large), reverse=True):
        print(f'frames.py: {size} bytes of stack frame (local memory) in {name[:300]}', file=sys.stderr)
    print('frames.py: a kernel keeps its functor in local memory; see Note [device parameters]',
          file=sys.stderr)
    sys.exit(1)
