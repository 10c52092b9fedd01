#!/usr/bin/python3
"""Exports the Fashion-MNIST example models to ONNX, forward pass and loss in one graph.

    /usr/bin/python3 examples/fashion-mnist/export_models.py

Writes fmnist_mlp.onnx, fmnist_cnn.onnx, fmnist_resnet.onnx and fmnist_transformer.onnx next to
this script. Every model takes `image`
float [N, 1, 28, 28] and `label` int64 [N] and returns `loss` (scalar cross-entropy, what the
runtime differentiates) and `logits` [N, 10]. tests/fixtures/generate.py imports the model
definitions and `export_onnx` from here, so the test fixtures are built exactly like the models a
user trains.

Uses Debian's python3-torch (1.13) and python3-onnx (1.12); the output is deterministic.
"""

import math
import os

import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F
from torch import nn

# Opset 14 is the first where BatchNormalization has the `training_mode` attribute, so a model
# exported in training mode states its semantics explicitly (batch statistics, running mean and
# variance as outputs 1 and 2) instead of relying on the legacy 5-output form of opsets 9-13.
OPSET = 14
SEED = 0


class Classifier(nn.Module):
    """(inputs, label) -> (loss, logits): the loss lives inside the exported graph."""

    def logits(self, *inputs):
        raise NotImplementedError

    def forward(self, *inputs_and_label):
        *inputs, label = inputs_and_label
        logits = self.logits(*inputs)
        return F.cross_entropy(logits, label), logits


class MLP(Classifier):
    """784-256-128-10 with ReLU; weights are fc1.*, fc2.*, fc3.*."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def logits(self, image):
        x = torch.flatten(image, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CNN(Classifier):
    """Two Conv3x3(pad 1)-BatchNorm-ReLU-MaxPool2 blocks, then Linear layer(s) to 10 classes.

    `conv_bias=False` drops the convolutions' biases, which BatchNorm makes redundant (their
    gradient is zero up to rounding). With `hidden` the head is Linear(c2*7*7 -> hidden) -> ReLU -> Linear(hidden -> 10) named
    fc1/fc2; without it a single Linear named fc.
    """

    def __init__(self, channels=(8, 16), hidden=None, conv_bias=True):
        super().__init__()
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, kernel_size=3, padding=1, bias=conv_bias)
        self.bn1 = nn.BatchNorm2d(c1)
        self.conv2 = nn.Conv2d(c1, c2, kernel_size=3, padding=1, bias=conv_bias)
        self.bn2 = nn.BatchNorm2d(c2)
        features = c2 * 7 * 7
        if hidden is None:
            self.fc = nn.Linear(features, 10)
        else:
            self.fc1 = nn.Linear(features, hidden)
            self.fc2 = nn.Linear(hidden, 10)
        self.hidden = hidden

    def logits(self, image):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(image))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = torch.flatten(x, 1)
        if self.hidden is None:
            return self.fc(x)
        return self.fc2(F.relu(self.fc1(x)))


class BasicBlock(nn.Module):
    """ResNet's basic block: two Conv3x3-BatchNorm, ReLU between and after the residual sum. A
    block that changes the width or the resolution adds a Conv1x1-BatchNorm projection of its input
    (`downsample`), as torchvision's resnet18 does."""

    def __init__(self, in_channels, channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or in_channels != channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(channels))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(y + shortcut)


class ResNet(Classifier):
    """A small ResNet for 28x28 images: a Conv3x3(16)-BatchNorm-ReLU stem, stages of basic blocks
    at 16, 32 and 64 channels (the last two halving the resolution: 28, 14, 7), global average
    pooling and Linear(64 -> 10)."""

    def __init__(self, widths=(16, 32, 64), blocks_per_stage=1):
        super().__init__()
        self.stem = nn.Conv2d(1, widths[0], 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(widths[0])
        stages = []
        in_channels = widths[0]
        for i, width in enumerate(widths):
            for b in range(blocks_per_stage):
                stages.append(BasicBlock(in_channels, width, 2 if i > 0 and b == 0 else 1))
                in_channels = width
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(in_channels, 10)

    def logits(self, image):
        x = F.relu(self.bn(self.stem(image)))
        x = self.stages(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class EncoderLayer(nn.Module):
    """A Transformer encoder layer (post-norm, as nn.TransformerEncoderLayer): multi-head
    self-attention built from MatMul and Softmax, then a GELU feed-forward block, each added to its
    input and normalized by LayerNorm. Shapes are Python integers, so the export has no Shape ops:
    every Reshape's target is a constant with -1 for the batch."""

    def __init__(self, width, heads, hidden, tokens):
        super().__init__()
        self.heads, self.tokens, self.head_width = heads, tokens, width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm1 = nn.LayerNorm(width)
        self.ff1 = nn.Linear(width, hidden)
        self.ff2 = nn.Linear(hidden, width)
        self.norm2 = nn.LayerNorm(width)

    def attention(self, x):
        width = self.heads * self.head_width
        q, k, v = self.qkv(x).split(width, dim=-1)

        def split_heads(t):  # [N, T, width] -> [N, heads, T, head_width]
            return t.reshape(-1, self.tokens, self.heads, self.head_width).transpose(1, 2)

        q, k, v = split_heads(q), split_heads(k), split_heads(v)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_width)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(context.transpose(1, 2).reshape(-1, self.tokens, width))

    def forward(self, x):
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.ff2(F.gelu(self.ff1(x))))


class Transformer(Classifier):
    """A 2-layer Transformer-encoder classifier over an image's 28 rows as tokens: each row's 28
    pixels embedded to 64 features plus a learned position, two encoder layers of 4 heads with a
    128-wide GELU feed-forward block, the mean over tokens, and Linear(64 -> 10)."""

    def __init__(self, width=64, heads=4, hidden=128, layers=2, tokens=28):
        super().__init__()
        self.tokens = tokens
        self.embed = nn.Linear(28, width)
        self.position = nn.Parameter(torch.randn(tokens, width) * 0.02)
        self.layers = nn.Sequential(*[EncoderLayer(width, heads, hidden, tokens)
                                      for _ in range(layers)])
        self.fc = nn.Linear(width, 10)

    def logits(self, image):
        x = self.embed(image.reshape(-1, self.tokens, 28)) + self.position
        x = self.layers(x)
        return self.fc(x.mean(dim=1))


def seeded(factory, *args, **kwargs):
    """Builds a model right after seeding, so its initial weights never depend on call order."""
    torch.manual_seed(SEED)
    return factory(*args, **kwargs)


def image_inputs(batch=2):
    return (torch.zeros(batch, 1, 28, 28), torch.zeros(batch, dtype=torch.int64))


def export_onnx(model, path, example_inputs, input_names, opset=OPSET):
    """Exports `model` in training mode with a dynamic batch axis and checks the result.

    Training mode keeps BatchNorm in its batch-statistics form (running mean/var stay
    initializers); no constant folding and no initializers-as-inputs, so every weight is exactly
    one initializer named after its PyTorch parameter.
    """
    # Tracing runs a training-mode forward, which moves BatchNorm's running statistics; keep the
    # values the model really starts from and put them back into the file afterwards.
    buffers = {name: value.detach().clone() for name, value in model.named_buffers()}
    batch_axes = {name: {0: "N"} for name in input_names}
    batch_axes["logits"] = {0: "N"}
    model.train()
    torch.onnx.export(
        model,
        example_inputs,
        path,
        input_names=list(input_names),
        output_names=["loss", "logits"],
        dynamic_axes=batch_axes,
        opset_version=opset,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        keep_initializers_as_inputs=False,
    )
    exported = onnx.load(path)
    for initializer in exported.graph.initializer:
        if initializer.name in buffers:
            initializer.CopyFrom(
                numpy_helper.from_array(buffers[initializer.name].numpy(), initializer.name))
    for name, value in buffers.items():
        model.get_buffer(name).copy_(value)
    onnx.checker.check_model(exported)
    onnx.save(exported, path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    export_onnx(seeded(MLP), os.path.join(here, "fmnist_mlp.onnx"), image_inputs(),
                ["image", "label"])
    export_onnx(seeded(CNN, channels=(32, 64), hidden=128), os.path.join(here, "fmnist_cnn.onnx"),
                image_inputs(), ["image", "label"])
    export_onnx(seeded(ResNet), os.path.join(here, "fmnist_resnet.onnx"), image_inputs(),
                ["image", "label"])
    # Opset 17: LayerNormalization is one op there (before, the exporter spells it out).
    export_onnx(seeded(Transformer), os.path.join(here, "fmnist_transformer.onnx"),
                image_inputs(), ["image", "label"], opset=17)


if __name__ == "__main__":
    main()
