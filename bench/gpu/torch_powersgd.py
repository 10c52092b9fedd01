"""The peer of powersgd_bench.cc: PyTorch's powerSGD_hook math on the same gradient shapes, one
rank (no all-reduce): per matrix the error added, P = M Q, P orthogonalized with the hook's own
_orthogonalize (Gram-Schmidt up to rank 2, QR above), Q = M^T P, M = P Q^T and the new error.
Timed with CUDA events; prints one JSON line in the same form."""
import argparse
import json

import torch
from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _orthogonalize

SHAPES = [(256, 784), (128, 256), (10, 128), (32, 9), (64, 288), (128, 3136), (10, 128)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    r = args.rank
    torch.manual_seed(1)
    matrices = []
    for n, m in SHAPES:
        if r * (n + m) >= n * m:
            continue
        matrices.append({
            "grad": torch.randn(n, m, device="cuda") * 0.01,
            "error": torch.zeros(n, m, device="cuda"),
            "p": torch.empty(n, r, device="cuda"),
            "q": torch.randn(m, r, device="cuda"),
        })

    def step():
        for x in matrices:
            # The hook: input + error, P = M Q, orthogonalize, Q = M^T P, M = P Q^T, error.
            x["grad"].add_(x["error"])
            torch.matmul(x["grad"], x["q"], out=x["p"])
            _orthogonalize(x["p"].unsqueeze(0))
            torch.matmul(x["grad"].t(), x["p"], out=x["q"])
            x["error"].copy_(x["grad"])
            torch.matmul(x["p"], x["q"].t(), out=x["grad"])
            x["error"].sub_(x["grad"])

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        step()
    stop.record()
    stop.synchronize()
    print(json.dumps({"benchmark": "powersgd", "impl": "torch", "rank": r,
                      "matrices": len(matrices),
                      "ms_per_step": round(start.elapsed_time(stop) / args.steps, 4),
                      "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
