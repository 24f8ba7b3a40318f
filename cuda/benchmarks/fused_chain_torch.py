#!/usr/bin/env python3
"""PyTorch eager rows of the GPU fused-chain benchmark (cuda/benchmarks/fused_chain.cpp runs this
for each N, in the same run, when python3 is found): the chain y = log(1 + exp(x)) * sigmoid(x)
+ x * x on N float32 values on the GPU, forward and forward + backward (the gradient of y with an
upstream of ones, as fusegrad's tape.gradient(y, x)), timed like the C++ rows: one warm-up, then
the median of `reps` calls with the GPU drained before and after each.

Usage: fused_chain_torch.py N REPS COPY_GBPS   (COPY_GBPS: the copy bandwidth the C++ program
measured in the same run, which the rows are reported against)
Prints the rows, or one line saying why there are none (no PyTorch, or no CUDA in it), and
exits 0 either way.
"""
import sys
import time

USAGE = "usage: fused_chain_torch.py N REPS COPY_GBPS"


def main(argv):
    if len(argv) != 4:
        sys.exit(USAGE)
    n, reps, copy_bw = int(float(argv[1])), int(argv[2]), float(argv[3])
    try:
        import torch
    except ImportError:
        print(f"{n:<9} PyTorch eager: PyTorch is not installed for {sys.executable}; no PyTorch rows")
        return 0
    if not torch.cuda.is_available():
        print(f"{n:<9} PyTorch eager: PyTorch {torch.__version__} sees no CUDA GPU; no PyTorch rows")
        return 0

    gen = torch.Generator(device="cuda").manual_seed(20240601)
    x = torch.empty(n, device="cuda", dtype=torch.float32).uniform_(-4.0, 4.0, generator=gen)

    def seconds(f):
        f()
        torch.cuda.synchronize()
        t = []
        for _ in range(reps):
            start = time.perf_counter()
            f()
            torch.cuda.synchronize()
            t.append(time.perf_counter() - start)
        t.sort()
        return t[len(t) // 2]

    def chain(v):
        return torch.log(1 + torch.exp(v)) * torch.sigmoid(v) + v * v

    def forward():
        with torch.no_grad():
            chain(x)

    xg = x.detach().clone().requires_grad_(True)

    def forward_backward():
        y = chain(xg)
        (dx,) = torch.autograd.grad(y, xg, grad_outputs=torch.ones_like(y))
        return dx

    # Check the gradient once against the formula before timing it.
    with torch.no_grad():
        sig = torch.sigmoid(x)
        want = sig * sig + torch.log1p(torch.exp(x)) * sig * (1 - sig) + 2 * x
    got = forward_backward()
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
        print(f"{n:<9} PyTorch eager: its gradient differs from the formula; no PyTorch rows")
        return 1

    for name, f, nbytes in (("forward", forward, 8.0 * n), ("forward+backward", forward_backward, 12.0 * n)):
        s = seconds(f)
        bw = nbytes / s / 1e9
        print(f"{n:<9} {name:<17} {'PyTorch eager':<18} {s * 1e3:10.4f} ms {bw:9.1f} GB/s {bw / copy_bw:6.2f} of copy")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
