"""The peer of fused_optimizer_bench.cc: torch.optim's fused optimizer step (fused=True) over the
same parameter layout (bench/gpu/parameter_layout.h), timed with CUDA events. Prints one JSON line
in the same form."""
import argparse
import json

import torch


def layout(total):
    pattern = [4194304, 1048576, 4096, 1024]
    sizes, placed, i = [], 0, 0
    while placed < total:
        size = min(pattern[i % 4], total - placed)
        sizes.append(size)
        placed += size
        i += 1
    return sizes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--params", type=int, default=100_000_000)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(1)
    sizes = layout(args.params)
    params = [torch.nn.Parameter(torch.randn(n, device="cuda") * 0.01) for n in sizes]
    for p in params:
        p.grad = p.detach().clone()
    kinds = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
             "adagrad": torch.optim.Adagrad, "rmsprop": torch.optim.RMSprop}
    optimizer = kinds[args.optimizer](params, lr=1e-3, fused=True)
    for _ in range(args.warmup):
        optimizer.step()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        optimizer.step()
    stop.record()
    stop.synchronize()
    ms = start.elapsed_time(stop) / args.steps
    print(json.dumps({"impl": "torch", "optimizer": args.optimizer, "params": args.params,
                      "tensors": len(sizes), "ms_per_step": round(ms, 4),
                      "adam_gb_per_s": round(args.params * 7 * 4 / (ms * 1e6), 1),
                      "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
