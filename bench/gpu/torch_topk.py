"""The peer of top_k_bench.cc: torch.topk of the magnitudes (what PyTorch's TopK compressors
call), at the same size and fraction, timed with CUDA events. Prints one JSON line in the same
form; --sorted false asks torch.topk for the unordered selection, the cheapest it offers."""
import argparse
import json
import math

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--elements", type=int, default=25_000_000)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sorted", choices=["true", "false"], default="true")
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(1)
    values = torch.randn(args.elements, generator=generator).cuda()
    k = min(args.elements, math.ceil(args.fraction * args.elements * (1.0 - 1e-12)))
    ordered = args.sorted == "true"

    def select():
        return torch.topk(values.abs(), k, sorted=ordered).indices

    select()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        select()
    stop.record()
    stop.synchronize()
    print(json.dumps({"benchmark": "topk", "impl": f"torch_sorted_{args.sorted}",
                      "elements": args.elements, "k": k,
                      "ms": round(start.elapsed_time(stop) / args.steps, 4),
                      "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
