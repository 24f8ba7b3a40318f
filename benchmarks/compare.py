#!/usr/bin/env python3
"""One run of the CPU benchmarks and their peers, printed as the ratio tables of
docs/benchmarks.md: fused_chain, fused_backward and tape_overhead from a build directory, then
benchmarks/peers.py (JAX, TensorFlow, PyTorch where installed), one after the other.

Usage: benchmarks/compare.py [BUILD_DIR] [--sizes 1000000,10000000] [--min-time 0.2] [--reps 3]
Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (docs/benchmarks.md, "How to run").
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def google_benchmark(program, pattern, min_time, reps):
    """{name: cpu seconds per iteration (median of reps)} and {name: counters} of one program."""
    out = subprocess.run([program, f"--benchmark_filter={pattern}", f"--benchmark_min_time={min_time}",
                          f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    times, counters = {}, {}
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        times[name] = b["cpu_time"] * scale[b["time_unit"]]
        counters[name] = b
    return times, counters


def fmt(seconds):
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.0f} µs"
    return f"{seconds * 1e9:.1f} ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    size_re = "|".join(str(n) for n in sizes)
    bench = os.path.join(args.build, "benchmarks")

    fwd, _ = google_benchmark(os.path.join(bench, "fused_chain"),
                              f"(fusegrad_fused|fusegrad_op_by_op|scalar_loop_accurate|ceiling_fast_math|"
                              f"xtensor_xsimd)/({size_re})$", args.min_time, args.reps)
    bwd, _ = google_benchmark(os.path.join(bench, "fused_backward"),
                              f"(fusegrad_fused|fusegrad_op_by_op|scalar_loop_accurate|ceiling_fast_math)/({size_re})$",
                              args.min_time, args.reps)
    _, tape = google_benchmark(os.path.join(bench, "tape_overhead"), ".", args.min_time, args.reps)
    peers_out = subprocess.run([sys.executable, os.path.join(HERE, "peers.py"), "--sizes", args.sizes,
                                "--min-time", str(args.min_time), "--reps", str(args.reps)],
                               check=True, capture_output=True, text=True).stdout
    peers, skipped = {}, []
    for line in peers_out.splitlines():
        parts = line.split()
        if parts and parts[0] == "peer":
            peers[parts[1]] = float(parts[2])
        elif parts and parts[0] == "skipped":
            skipped.append(line[len("skipped "):])

    for title, own, peer_names in (
            ("forward", fwd, ["xtensor_xsimd", "fusegrad_op_by_op", "jax_jit_forward", "tf_eager_forward",
                              "tf_function_forward", "torch_eager_forward"]),
            ("forward + backward", bwd, ["fusegrad_op_by_op", "jax_jit_forward_backward",
                                         "tf_eager_forward_backward", "tf_function_forward_backward",
                                         "torch_eager_forward_backward"])):
        print(f"\n{title}: CPU time per call (ratio to the fast-math ceiling)\n")
        print("| contender | " + " | ".join(f"N = {n:.0e}".replace("e+0", "e") for n in sizes) + " |")
        print("|---|" + "---:|" * len(sizes))
        for name in ["fusegrad_fused", "ceiling_fast_math", "scalar_loop_accurate"] + peer_names:
            cells = []
            for n in sizes:
                key = f"{name}/{n}"
                t = own.get(key, peers.get(key))
                ceiling = own[f"ceiling_fast_math/{n}"]
                cells.append("—" if t is None else f"{fmt(t)} ({t / ceiling:.2f}x)")
            if any(c != "—" for c in cells):
                print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nscalar ops on 0-d tensors: CPU time per op\n")
    print("| contender | per op |")
    print("|---|---:|")
    for name in ("fusegrad_eager_no_tape", "fusegrad_tape_forward", "fusegrad_tape_forward_backward"):
        if name in tape:
            print(f"| {name} | {tape[name]['time_per_op'] * 1e9:.1f} ns |")
    for name in ("tf_eager_tape_per_op_forward_backward", "torch_eager_tape_per_op_forward_backward"):
        if name in peers:
            print(f"| {name} | {peers[name] * 1e9:.0f} ns |")
    for s in skipped:
        print(f"\nskipped: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
