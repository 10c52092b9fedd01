#!/usr/bin/python3
"""Data-parallel training with PyTorch DistributedDataParallel over gloo (the peer of
`autodist run` with the AllReduce builder): 2 processes on 127.0.0.1, the model definitions the
ONNX files were exported from, real Fashion-MNIST, one thread per process.

    /usr/bin/python3 bench/pytorch_ddp_step.py --model mlp --batch-size 32 --steps 500
    /usr/bin/python3 bench/pytorch_ddp_step.py --model mlp --batch-size 32 --steps 938 \
        --optimizer adam --lr 1e-3 --powersgd-rank 2 --powersgd-start 100 --eval

--batch-size is per process (global = 2x). --device cuda puts every process's replica on GPU 0
(the peer of GPU workers sharing one GPU: gloo all-reduces CUDA tensors through the host), and
--data reads Fashion-MNIST from another directory. Every process trains --steps steps; the first
--warmup are not timed. With --rank it runs that one rank only (one process per host of an
emulated network, scripts/bench-network-train.sh), reaching rank 0 at --master-addr through the
interface --ifname. Prints one line from rank 0:
`steps_per_second=... ms_per_step=... accuracy=... test_loss=...` (accuracy only with --eval).
"""

import argparse
import gzip
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "fashion-mnist"))
from export_models import CNN, MLP, seeded  # noqa: E402

MODELS = {
    "mlp": lambda: seeded(MLP),
    # The architecture of fmnist_cnn.onnx (export_models.main).
    "cnn": lambda: seeded(CNN, channels=(32, 64), hidden=128),
}
DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(name, data=DATA):
    """An IDX file as a numpy array (big-endian header: magic, then one uint32 per dimension)."""
    with gzip.open(os.path.join(data, name)) as f:
        raw = f.read()
    dims = raw[3]
    shape = np.frombuffer(raw, ">u4", dims, 4).astype(np.int64)
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(split, data=DATA):
    # Same preprocessing as our loader without `normalize`: pixels / 255 in float32.
    images = torch.from_numpy(read_idx(f"{split}-images-idx3-ubyte.gz", data).copy())
    labels = torch.from_numpy(read_idx(f"{split}-labels-idx1-ubyte.gz", data).astype(np.int64))
    return images.float().div_(255.0).unsqueeze(1), labels


def batches(images, labels, batch, rank, world, seed=0):
    """Endless batches of this rank's shard: each epoch a fresh permutation, cut into world
    strided shards (DistributedSampler's layout), the incomplete last batch dropped."""
    epoch = 0
    while True:
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed + epoch))
        order = order.to(labels.device)
        shard = order[rank::world]
        for start in range(0, len(shard) - batch + 1, batch):
            index = shard[start:start + batch]
            yield images[index], labels[index]
        epoch += 1


def evaluate(model, images, labels):
    model.eval()
    with torch.no_grad():
        loss, logits = model(images, labels)
    model.train()
    return (logits.argmax(1) == labels).float().mean().item(), loss.item()


def worker(rank, args, port):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(port),
                      GLOO_SOCKET_IFNAME=args.ifname)
    dist.init_process_group(args.backend, rank=rank, world_size=args.world)
    device = torch.device(args.device)
    images, labels = load("train", args.data)
    images, labels = images.to(device), labels.to(device)
    model = MODELS[args.model]().to(device)
    # BatchNorm statistics stay per replica during training, as in our runtime, so DDP does not
    # broadcast buffers every forward (which would cost PyTorch time we do not spend).
    ddp = DistributedDataParallel(model, broadcast_buffers=False)
    if args.powersgd_rank > 0:
        state = powersgd.PowerSGDState(
            process_group=None, matrix_approximation_rank=args.powersgd_rank,
            start_powerSGD_iter=args.powersgd_start, use_error_feedback=True, warm_start=True,
            random_seed=0)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    else:
        optimizer = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    data = batches(images, labels, args.batch_size, rank, args.world)

    def step():
        image, label = next(data)
        loss, _ = ddp(image, label)
        optimizer.zero_grad()
        loss.backward()  # DDP all-reduces (or compresses) the gradient buckets here
        optimizer.step()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps - args.warmup):
        step()
    if args.device != "cpu":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if rank == 0:
        rate = (args.steps - args.warmup) / seconds
        line = f"steps_per_second={rate:.2f} ms_per_step={1000 / rate:.3f}"
        if args.eval:
            test_images, test_labels = load("t10k", args.data)
            accuracy, loss = evaluate(model, test_images.to(device), test_labels.to(device))
            line += f" accuracy={accuracy:.4f} test_loss={loss:.4f}"
        print(line, flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODELS, required=True)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--steps", type=int, default=500, help="training steps, warm-up included")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--powersgd-rank", type=int, default=0, help="0: plain all-reduce")
    parser.add_argument("--powersgd-start", type=int, default=100)
    parser.add_argument("--eval", action="store_true", help="test accuracy on rank 0 at the end")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--rank", type=int, help="run this rank only (default: spawn them all)")
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--master-port", type=int, help="with --rank: rank 0's port")
    parser.add_argument("--ifname", default="lo", help="gloo's network interface")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: every replica on GPU 0")
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                        help="DDP's collectives (nccl: GPUs, one per process)")
    parser.add_argument("--data", default=DATA, help="the directory of Fashion-MNIST's files")
    args = parser.parse_args()
    assert 0 <= args.warmup < args.steps
    if args.rank is not None:
        assert args.master_port, "--rank needs --master-port"
        worker(args.rank, args, args.master_port)
    else:
        mp.spawn(worker, args=(args, free_port()), nprocs=args.world)


if __name__ == "__main__":
    main()
