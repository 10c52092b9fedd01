#!/usr/bin/python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/.

    /usr/bin/python3 tests/fuzz/make_seeds.py

Seeds are small valid inputs (and a few near misses) for the fuzzer to mutate; the committed ones
are what this script writes, from the repository's fixtures and from messages encoded here by
hand (the protobuf wire format, the frame and checkpoint layouts of runtime/rpc/frame_socket.cc
and runtime/checkpoint/checkpoint_file.cc). Deterministic: no timestamps, no randomness.
"""

import gzip
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
CORPUS = os.path.join(HERE, "corpus")


# --------------------------------------------------------------------------- protobuf encoding


def varint(value):
    value &= (1 << 64) - 1  # negative int64: ten bytes, two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((number << 3) | 2) + varint(len(data)) + data


def field_fixed32(number, value):
    return varint((number << 3) | 5) + struct.pack("<I", value)


def field_double(number, value):
    return varint((number << 3) | 1) + struct.pack("<d", value)


def packed(number, values):
    return field_bytes(number, b"".join(varint(v) for v in values))


def record(data):
    """A FuzzInput record (tests/fuzz/fuzz_input.h): two length bytes, then the bytes."""
    return struct.pack("<H", len(data)) + data


# --------------------------------------------------------------------------- messages

ONNX_FLOAT, ONNX_INT64 = 1, 7


def tensor_piece(name, data_type=None, dims=(), offset=0, data=b"", sparse=False, indices=(),
                 replicas=0, encoding=0):
    out = field_bytes(1, name)
    if data_type is not None:
        out += field_varint(2, data_type)
    if dims:
        out += packed(3, dims)
    if offset:
        out += field_varint(4, offset)
    if data:
        out += field_bytes(5, data)
    if sparse:
        out += field_varint(6, 1)
    if indices:
        out += packed(7, indices)
    if replicas:
        out += field_varint(8, replicas)
    if encoding:
        out += field_varint(9, encoding)
    return out


def floats(*values):
    return struct.pack(f"<{len(values)}f", *values)


def halves(*values):
    return struct.pack(f"<{len(values)}e", *values)


# --------------------------------------------------------------------------- CRC-32C


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


# --------------------------------------------------------------------------- writing


def write(target, name, data):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def copy(target, source, name=None):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    shutil.copyfile(source, os.path.join(directory, name or os.path.basename(source)))


def job_manifests():
    for name in ("minimal.yaml", "full.yaml"):
        copy("job_manifest", os.path.join(FIXTURES, "jobs", name))
    copy("job_manifest", os.path.join(REPO, "examples", "fashion-mnist", "job-ps.yaml"))
    write("job_manifest", "json.json",
          b'{"apiVersion": "autodist.io/v1alpha1", "kind": "AutoDistJob", "metadata": '
          b'{"name": "j"}, "spec": {"model": {"path": "m.onnx"}, "data": {"format": '
          b'"fashion-mnist", "batchSizePerReplica": 8}, "training": {"steps": 3, '
          b'"optimizer": {"name": "sgd", "lr": 0.1}}}}')


def resource_specs():
    specs = os.path.join(FIXTURES, "resource_specs")
    for name in sorted(os.listdir(specs)):
        path = os.path.join(specs, name)
        if os.path.isfile(path) and name.endswith(".yml"):
            copy("resource_spec", path)


def models():
    # Small models only: the fuzzer's inputs are kilobytes.
    for name in ("control_flow.onnx", "identity_gather.onnx", "no_variables.onnx",
                 "not_onnx.onnx", "bad_checker.onnx"):
        copy("model", os.path.join(FIXTURES, "models", name))


def arrays():
    data = os.path.join(FIXTURES, "data")
    for name in sorted(os.listdir(data)):
        path = os.path.join(data, name)
        if name.endswith(".npy") and os.path.getsize(path) <= 4096:
            copy("npy", path)
        elif name.endswith(".idx") and os.path.getsize(path) <= 4096:
            copy("idx", path)
            write("gzip", name + ".gz", gzip.compress(open(path, "rb").read(), mtime=0))
        elif name.endswith(".gz") and os.path.getsize(path) <= 4096:
            copy("gzip", path)
    write("gzip", "two_members.gz",
          gzip.compress(b"first", mtime=0) + gzip.compress(b"second", mtime=0))


def tensor_wire():
    write("tensor_wire", "dense.bin",
          record(tensor_piece("w", ONNX_FLOAT, (2, 2), data=floats(1, 2, 3, 4))))
    write("tensor_wire", "two_pieces.bin",
          record(tensor_piece("w", ONNX_FLOAT, (4,), data=floats(1, 2))) +
          record(tensor_piece("w", offset=8, data=floats(3, 4))))
    write("tensor_wire", "sparse.bin",
          record(tensor_piece("e", ONNX_FLOAT, (2, 3), data=floats(*range(6)), sparse=True,
                              indices=(4, 9), replicas=2)))
    write("tensor_wire", "int64.bin",
          record(tensor_piece("step", ONNX_INT64, (1,), data=struct.pack("<q", 7))))
    write("tensor_wire", "float16.bin",
          record(tensor_piece("h", ONNX_FLOAT, (3,), data=halves(1, -2, 0.5), encoding=1)))
    write("tensor_wire", "topk.bin",
          record(tensor_piece("k", ONNX_FLOAT, (2, 4), data=floats(5, 6), indices=(1, 6),
                              encoding=2)))


def compressed_push():
    # name byte, flags (1 first piece, 2 float, encoding << 2), dims count and dims (+8), indices
    # count and indices (+4), offset byte, data record: compressed_push_fuzzer.cc.
    first_float16 = bytes([0, 1 | 2 | (1 << 2), 1, 8 + 4, 0, 0]) + record(halves(1, 2, 3, 4))
    write("compressed_push", "float16.bin", first_float16)
    first_topk = bytes([1, 1 | 2 | (2 << 2), 2, 8 + 2, 8 + 3, 2, 4 + 1, 4 + 5, 0]) + \
        record(floats(0.5, -0.5))
    write("compressed_push", "topk.bin", first_topk)
    raw_two = bytes([2, 1 | 2, 1, 8 + 4, 0, 0]) + record(floats(1, 2)) + \
        bytes([2, 0, 2]) + record(floats(3, 4))
    write("compressed_push", "raw_two_pieces.bin", raw_two)


FRAME_MAGIC = 0x53504441
STEP_HEADER, GRADIENT, END = 1, 2, 3


def frame(kind, meta=b"", data=b""):
    return struct.pack("<IIQQ", FRAME_MAGIC, kind, len(meta), len(data)) + meta + data


def data_channel():
    piece = tensor_piece("w", ONNX_FLOAT, (2,))
    step = field_varint(1, 1) + field_varint(2, 3) + field_double(3, 0.1) + field_varint(4, 1)
    write("data_channel", "step.bin",
          frame(STEP_HEADER, step) + frame(GRADIENT, piece, floats(1, 2)) + frame(END))
    halves_piece = tensor_piece("h", ONNX_FLOAT, (4,), encoding=1)
    write("data_channel", "float16.bin",
          frame(STEP_HEADER, step) + frame(GRADIENT, halves_piece, halves(1, 2, 3, 4)) +
          frame(END))
    write("data_channel", "bad_magic.bin", b"\0" * 24)


def checkpoint_file(step, tensors):
    """The current format: magic, tensor bytes at 64-byte offsets, CheckpointHeader, trailer."""
    out = bytearray(b"ADCKPT02")
    entries = b""
    for name, dims, values in tensors:
        while len(out) % 64:
            out.append(0)
        data = floats(*values)
        entry = field_bytes(1, name) + field_varint(2, ONNX_FLOAT) + packed(3, dims) + \
            field_varint(4, len(out)) + field_varint(5, len(data)) + \
            field_fixed32(6, crc32c(data))
        entries += field_bytes(6, entry)
        out += data
    header = field_varint(1, step) + field_bytes(4, "0") + field_bytes(5, "m.onnx") + entries
    offset = len(out)
    out += header
    out += struct.pack("<QQI", offset, len(header), crc32c(header)) + b"ADCE"
    return bytes(out)


def checkpoints():
    write("checkpoint", "two_tensors.ckpt",
          checkpoint_file(5, [("w", (2, 2), (1, 2, 3, 4)), ("b", (2,), (0.5, -0.5))]))
    write("checkpoint", "empty.ckpt", checkpoint_file(0, []))
    # The previous format: one serialized Checkpoint message.
    value = field_bytes(1, "w") + field_varint(2, ONNX_FLOAT) + packed(3, (2,)) + \
        field_bytes(4, floats(1, 2))
    write("checkpoint", "legacy.pb", field_varint(1, 3) + field_bytes(5, value))


MEMBER_WORKER, MEMBER_PS = 1, 2  # proto/coordinator.proto MemberRole


def register(node, role, pid):
    return field_bytes(1, node) + field_bytes(2, f"127.0.0.1:{7000 + pid}") + \
        field_varint(3, role) + field_varint(4, pid) + field_bytes(5, "fuzz-job")


def coordinator():
    # op byte, node byte, time byte, then the op's operands: coordinator_fuzzer.cc.
    ops = b""
    for node, role, pid in ((0, MEMBER_WORKER, 1), (1, MEMBER_WORKER, 2), (2, MEMBER_PS, 3)):
        name = ("worker-0", "worker-1", "ps-0")[node]
        ops += bytes([0, node, 1]) + record(register(name, role, pid))
    progress = field_bytes(1, "worker-0") + field_varint(2, 5) + field_varint(3, 10) + \
        field_double(4, 0.25)
    ops += bytes([1, 0, 1, 5]) + bytes([2, 0, 1]) + record(progress)
    ops += bytes([4, 0, 200]) + bytes([3, 1, 1, 1]) + record(b"worker-1 diverged")
    write("coordinator", "rendezvous_progress_failure.bin", ops)
    write("coordinator", "finish_all.bin",
          ops[:ops.index(bytes([1, 0, 1, 5]))] +
          b"".join(bytes([3, n, 1, 0]) + record(b"") for n in (0, 1, 2)))


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    job_manifests()
    resource_specs()
    models()
    arrays()
    tensor_wire()
    compressed_push()
    data_channel()
    checkpoints()
    coordinator()
    for target in sorted(os.listdir(CORPUS)):
        print(f"{target}: {len(os.listdir(os.path.join(CORPUS, target)))} seeds")


if __name__ == "__main__":
    main()
