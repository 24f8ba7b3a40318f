"""Timing and the command line shared by the per-op and per-step peer scripts
(nn_peers.py, mlp_peers.py): the medians of a step's wall and CPU time, and a main that runs
the TensorFlow and PyTorch contenders a script defines."""
import argparse
import statistics
import time


def median_time(f, min_time=0.5, min_runs=20, warmup=5):
    """The medians of f()'s wall time and of the process's CPU time (all its threads) over at
    least min_runs calls and min_time seconds, after warmup calls."""
    for _ in range(warmup):
        f()
    wall, cpu = [], []
    start = time.perf_counter()
    while len(wall) < min_runs or time.perf_counter() - start < min_time:
        t0, c0 = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main(description, contenders):
    """`--threads N --framework tf|torch|both`: runs contenders[name](threads) for the chosen
    names ("tf", "torch"), in the order given."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--framework", choices=["tf", "torch", "both"], default="both")
    args = ap.parse_args()
    for name, run in contenders:
        if args.framework in (name, "both"):
            run(args.threads)
    return 0
