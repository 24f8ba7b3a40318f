"""Compiles one source file that must NOT compile, and checks the compiler names the misuse.

Usage: run_case.py CXX INCLUDE_DIR SOURCE EXPECTED_TEXT
Passes when compilation fails and the diagnostics contain EXPECTED_TEXT.
"""
import subprocess
import sys

cxx, include, source, expected = sys.argv[1:5]
cflags = subprocess.run(["pkg-config", "--cflags", "xtensor", "xsimd", "openblas"],
                        capture_output=True, text=True).stdout.split()
proc = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-I", include, *cflags, source],
                      capture_output=True, text=True)
if proc.returncode == 0:
    print(f"{source}: compiled, but it must be rejected")
    sys.exit(1)
if expected not in proc.stderr:
    print(f"{source}: rejected, but the diagnostics do not say '{expected}':")
    print(proc.stderr[:4000])
    sys.exit(1)
print(f"{source}: rejected with '{expected}'")
