#!/usr/bin/python3
"""Training-step throughput of PyTorch (the peer): forward + backward + SGD-momentum update of the
same model definitions the ONNX files were exported from, on random data.

    /usr/bin/python3 bench/pytorch_train_step.py --model mlp|cnn|fmnist_cnn|fmnist_resnet|fmnist_transformer --batch-size 64 --threads 2
    python3 bench/pytorch_train_step.py --model mlp --batch-size 256 --device cuda   # GPU machine

Prints `steps_per_second=... peak_rss_mb=...` like bench/train_step_bench (and, on a GPU,
`peak_device_mb=...` and `peak_reserved_mb=...`, PyTorch's max_memory_allocated and
max_memory_reserved).
"""

import argparse
import os
import resource
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "fashion-mnist"))
from export_models import CNN, MLP, ResNet, Transformer, seeded  # noqa: E402

MODELS = {
    "mlp": lambda: seeded(MLP),
    "cnn": lambda: seeded(CNN),
    "fmnist_cnn": lambda: seeded(CNN, channels=(32, 64), hidden=128),
    "fmnist_resnet": lambda: seeded(ResNet),
    "fmnist_transformer": lambda: seeded(Transformer),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODELS, required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    # bf16: torch.autocast's mixed precision (bf16 products, fp32 weights and optimizer), the peer
    # of our --precision bf16.
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = parser.parse_args()
    device = torch.device(args.device)
    # fp32 as our engine computes it: PyTorch lets cuDNN's convolutions use TF32 by default
    # (torch.backends.cudnn.allow_tf32), which would compare TF32 against fp32.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    model = MODELS[args.model]().to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(0)
    batches = [(torch.rand(args.batch_size, 1, 28, 28, generator=generator).to(device),
                torch.randint(0, 10, (args.batch_size,), generator=generator).to(device))
               for _ in range(4)]

    def step(i):
        image, label = batches[i % len(batches)]
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=args.precision == "bf16"):
            loss, _ = model(image, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for i in range(args.warmup):
        step(i)
    start = time.perf_counter()
    for i in range(args.steps):
        step(i)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    device_memory = ""
    if device.type == "cuda":
        device_memory = (f" peak_device_mb={torch.cuda.max_memory_allocated() / 1048576.0:.1f}"
                         f" peak_reserved_mb={torch.cuda.max_memory_reserved() / 1048576.0:.1f}")
    print(f"steps_per_second={args.steps / seconds:.3f} peak_rss_mb={peak:.1f}{device_memory}")


if __name__ == "__main__":
    main()
