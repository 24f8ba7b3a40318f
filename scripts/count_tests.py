"""Counts test results from meson's test logs (the main build's, then the sanitizer builds') and
prints `tests: N passed, M failed`. Usage: count_tests.py LOG [LOG...]

Catch2 executables are counted by Catch2's own summary (test cases); every other test
(examples, compile-failure checks) counts as one. A Catch2 binary that died before printing its
summary counts as one failure on top of what it reported. A program whose output ends with
"; skipping" (the CUDA programs on a machine without a GPU) counts as skipped, neither passed
nor failed.
"""
import json
import re
import sys

passed = failed = skipped = 0
ALL_OK = re.compile(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)")
MIXED = re.compile(r"test cases:\s+(\d+)\s+\|\s+(\d+) passed\s+\|\s+(\d+) failed")


def count(path, label):
    global passed, failed, skipped
    try:
        log = open(path)
    except OSError:
        # The build failed before any test ran.
        print(f"failed: no test log {path} (the build failed; see the meson-test.out beside it)")
        failed += 1
        return
    with log as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            out = t.get("stdout", "") or ""
            ok = t.get("result") in ("OK", "EXPECTEDFAIL")
            m_all = ALL_OK.findall(out)
            m_mix = MIXED.findall(out)
            if m_all:
                passed += sum(int(m[1]) for m in m_all)  # a log may hold several programs' summaries
                if not ok:
                    failed += 1
                    print(f"failed: {label}{t.get('name')} ({t.get('result')})")
            elif m_mix:
                total, p, fl = map(int, m_mix[-1])
                passed += p
                failed += max(fl, total - p)
                print(f"failed: {label}{t.get('name')} ({t.get('result')})")
                if not ok and fl == 0:
                    failed += 1
            elif t.get("result") == "SKIP" or (ok and out.rstrip().endswith("; skipping")):
                skipped += 1
            elif ok:
                passed += 1
            else:
                failed += 1
                print(f"failed: {label}{t.get('name')} ({t.get('result')})")


# The first log is the main build's; the others (sanitizer builds) are labelled by their folder.
for i, path in enumerate(sys.argv[1:]):
    count(path, "" if i == 0 else path.split("/")[0] + ": ")
if skipped:
    print(f"skipped: {skipped} (CUDA programs without a GPU; fuzzing without clang's libFuzzer)")
print(f"tests: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
