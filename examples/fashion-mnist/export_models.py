#!/usr/bin/python3
"""Exports the Fashion-MNIST example models to ONNX, forward pass and loss in one graph.

    /usr/bin/python3 examples/fashion-mnist/export_models.py

Writes fmnist_mlp.onnx and fmnist_cnn.onnx next to this script. Every model takes `image`
float [N, 1, 28, 28] and `label` int64 [N] and returns `loss` (scalar cross-entropy, what the
runtime differentiates) and `logits` [N, 10]. tests/fixtures/generate.py imports the model
definitions and `export_onnx` from here, so the test fixtures are built exactly like the models a
user trains.

Uses Debian's python3-torch (1.13) and python3-onnx (1.12); the output is deterministic.
"""

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


if __name__ == "__main__":
    main()
