#!/usr/bin/python3
"""Writes an embedding classifier past protobuf's 2 GiB, the way ONNX saves large models.

    /usr/bin/python3 examples/large-embedding/make_model.py OUT_DIR [--rows 4700000] [--dim 128]

OUT_DIR/model.onnx holds the graph; OUT_DIR/model.onnx.data holds the weights (ONNX external
data): an embedding table of rows x dim floats (4.7M x 128 = 601.6M floats, 2.41 GB by default)
read through Gather, so its gradients are row-sparse, then the mean over the 8 tokens of a sample
and a Linear(dim -> 10) head, with the loss inside the graph (the ops and names of the PyTorch
embedding fixture, tests/fixtures/parity/embedding). The table is written in chunks straight to
the data file, so making it needs little memory; PyTorch's exporter would hold the whole model
more than once. Also writes OUT_DIR/tokens.npy and OUT_DIR/label.npy, training data the model
learns in a few steps: a sample of class c holds 8 of the first --active-rows rows whose index
is c modulo 10 (so Gather's gradients touch only those rows). Deterministic for fixed arguments.

Needs Debian's python3-onnx (and numpy, which it pulls in).
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

CHUNK_ROWS = 1 << 16
ALIGN = 4096


def external(name, dims, offset, location="model.onnx.data"):
    tensor = TensorProto()
    tensor.name = name
    tensor.data_type = TensorProto.FLOAT
    tensor.dims.extend(dims)
    tensor.data_location = TensorProto.EXTERNAL
    length = int(np.prod(dims)) * 4
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key = key
        entry.value = value
    return tensor, length


def write_weights(path, rows, dim, seed):
    """The table (N(0, 1) like torch.nn.Embedding), then fc.weight and fc.bias (uniform in
    +-1/sqrt(dim) like torch.nn.Linear), each at a 4 KiB-aligned offset. Returns the offsets."""
    rng = np.random.default_rng(seed)
    offsets = {}
    with open(path, "wb") as out:
        offsets["embedding.weight"] = 0
        for begin in range(0, rows, CHUNK_ROWS):
            count = min(CHUNK_ROWS, rows - begin)
            out.write(rng.standard_normal((count, dim), dtype=np.float32).tobytes())
        bound = 1.0 / np.sqrt(dim)
        for name, shape in (("fc.weight", (10, dim)), ("fc.bias", (10,))):
            out.write(b"\0" * ((-out.tell()) % ALIGN))
            offsets[name] = out.tell()
            out.write(rng.uniform(-bound, bound, shape).astype(np.float32).tobytes())
    return offsets


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--rows", type=int, default=4_700_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--active-rows", type=int, default=1000,
                        help="rows the training data uses (the rest only costs memory)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    offsets = write_weights(os.path.join(args.out_dir, "model.onnx.data"), args.rows, args.dim,
                            args.seed)
    initializers = [
        external("embedding.weight", [args.rows, args.dim], offsets["embedding.weight"])[0],
        external("fc.weight", [10, args.dim], offsets["fc.weight"])[0],
        external("fc.bias", [10], offsets["fc.bias"])[0],
    ]
    nodes = [
        helper.make_node("Gather", ["embedding.weight", "tokens"], ["gathered"], name="gather"),
        helper.make_node("ReduceMean", ["gathered"], ["pooled"], name="mean", axes=[1],
                         keepdims=0),
        helper.make_node("Gemm", ["pooled", "fc.weight", "fc.bias"], ["logits"], name="fc",
                         transB=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "label"], ["loss"], name="loss",
                         reduction="mean"),
    ]
    graph = helper.make_graph(
        nodes, "large_embedding",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["N", 8]),
         helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="autodist-examples")
    model.ir_version = 8
    path = os.path.join(args.out_dir, "model.onnx")
    with open(path, "wb") as out:
        out.write(model.SerializeToString())
    onnx.checker.check_model(path)

    rng = np.random.default_rng(args.seed + 1)
    # A bag of words of one topic: a sample of class c holds 8 rows r with r % 10 == c.
    labels = rng.integers(0, 10, args.samples, dtype=np.int64)
    per_class = max(min(args.active_rows, args.rows) // 10, 1)
    tokens = rng.integers(0, per_class, (args.samples, 8), dtype=np.int64) * 10 + labels[:, None]
    np.save(os.path.join(args.out_dir, "tokens.npy"), tokens)
    np.save(os.path.join(args.out_dir, "label.npy"), labels)
    size = os.path.getsize(os.path.join(args.out_dir, "model.onnx.data"))
    print(f"{path}: {args.rows} x {args.dim} table, {size / 2**30:.2f} GiB of external data")


if __name__ == "__main__":
    main()
