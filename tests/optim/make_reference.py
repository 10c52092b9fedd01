#!/usr/bin/python3
"""Writes the PyTorch reference trajectories and learning rates that tests/optim read.

    /usr/bin/python3 tests/optim/make_reference.py

Needs Debian's python3-torch (1.13) and numpy; CI never runs this, the outputs under
tests/fixtures/optim/ are committed. Output is deterministic (fixed seeds, no timestamps).

Files (plain text, one record per line, float32 values as %.9g so they read back exactly):
  inputs.txt        shape, steps, the initial parameter, the dense gradient of every step, and the
                    sparse gradient of every step (its rows, then its values densified).
  trajectories.txt  per case: "case <name> <dense|sparse> <reference> <our optimizer> k=v ...",
                    an optional "schedule k=v ..." (the learning rate follows LrSchedule), then
                    "param <t> <values>" after steps t in RECORDED. <reference> says which
                    PyTorch computation produced the values: "torch" is the optimizer named by
                    our options on the dense (or densified) gradient; "sparse_adam" is
                    torch.optim.SparseAdam on a sparse COO gradient (compared loosely: it
                    rounds differently and adds eps before the bias correction).
  schedules.txt     per case: "schedule <name> base_lr=<lr> k=v ...", then "lr <step> <value>" for
                    steps 0..n-1, as torch.optim.lr_scheduler sets them (value before step t's
                    update).
"""

import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "fixtures", "optim")

# 6 x 7 = 42 elements: torch's AVX2 kernels take 32 in vector registers and 10 in the scalar
# tail, so both code paths are in the reference.
SHAPE = (6, 7)
STEPS = 20
RECORDED = (1, 2, 3, 5, 10, 15, 20)  # steps after which the parameter is written
SEED = 20240613


def f32(values):
    return " ".join("%.9g" % v for v in np.asarray(values, dtype=np.float32).ravel())


def make_inputs():
    rng = np.random.RandomState(SEED)
    init = rng.standard_normal(SHAPE).astype(np.float32)
    dense = [(rng.standard_normal(SHAPE) * 0.5).astype(np.float32) for _ in range(STEPS)]
    sparse_rows, sparse = [], []
    for t in range(STEPS):
        # An embedding's gradient: a few rows; step 3 has none (a batch that missed the table).
        count = 0 if t == 3 else rng.randint(1, SHAPE[0])
        rows = np.sort(rng.choice(SHAPE[0], size=count, replace=False)).astype(np.int64)
        values = np.zeros(SHAPE, dtype=np.float32)
        values[rows] = (rng.standard_normal((count, SHAPE[1])) * 0.5).astype(np.float32)
        sparse_rows.append(rows)
        sparse.append(values)
    return init, dense, sparse_rows, sparse


def torch_optimizer(name, param, o):
    """The torch.optim optimizer for our option dict `o` (values as strings)."""
    num = {k: float(v) for k, v in o.items()
           if k not in ("nesterov", "amsgrad", "centered", "betas")}
    flag = {k: o.get(k, "false") == "true" for k in ("nesterov", "amsgrad", "centered")}
    if name == "sgd":
        return torch.optim.SGD([param], lr=num["lr"], momentum=num.get("momentum", 0),
                               dampening=num.get("dampening", 0),
                               weight_decay=num.get("weight_decay", 0), nesterov=flag["nesterov"],
                               foreach=False)
    if name in ("adam", "adamw"):
        cls = torch.optim.Adam if name == "adam" else torch.optim.AdamW
        betas = tuple(float(b) for b in o.get("betas", "0.9,0.999").split(","))
        wd = num.get("weight_decay", 0.0 if name == "adam" else 1e-2)
        return cls([param], lr=num.get("lr", 1e-3), betas=betas, eps=num.get("eps", 1e-8),
                   weight_decay=wd, amsgrad=flag["amsgrad"], foreach=False)
    if name == "adagrad":
        return torch.optim.Adagrad([param], lr=num.get("lr", 1e-2),
                                   lr_decay=num.get("lr_decay", 0),
                                   weight_decay=num.get("weight_decay", 0),
                                   initial_accumulator_value=num.get("initial_accumulator_value",
                                                                     0),
                                   eps=num.get("eps", 1e-10), foreach=False)
    if name == "rmsprop":
        return torch.optim.RMSprop([param], lr=num.get("lr", 1e-2), alpha=num.get("alpha", 0.99),
                                   eps=num.get("eps", 1e-8),
                                   weight_decay=num.get("weight_decay", 0),
                                   momentum=num.get("momentum", 0), centered=flag["centered"],
                                   foreach=False)
    raise ValueError(name)


def torch_schedule(optimizer, s):
    """torch.optim.lr_scheduler objects for our schedule dict `s`, or None for a constant rate."""
    kind = s.get("kind", "constant")
    warmup = int(s.get("warmup_steps", 0))
    if kind == "step":
        main = torch.optim.lr_scheduler.StepLR(optimizer, step_size=int(s["step_size"]),
                                               gamma=float(s.get("gamma", 0.1)))
    elif kind == "cosine":
        main = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, T_max=int(s["total_steps"]) - warmup, eta_min=float(s.get("min_lr", 0)))
    else:
        main = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    if warmup == 0:
        return main
    linear = torch.optim.lr_scheduler.LinearLR(
        optimizer, start_factor=float(s.get("warmup_start_factor", 1.0 / 3)), end_factor=1.0,
        total_iters=warmup)
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [linear, main], milestones=[warmup])


# (name, inputs, reference, optimizer, options, schedule or None)
CASES = [
    ("sgd", "dense", "torch", "sgd", {"lr": "0.1"}, None),
    ("sgd_momentum", "dense", "torch", "sgd", {"lr": "0.05", "momentum": "0.9"}, None),
    ("sgd_dampening_wd", "dense", "torch", "sgd",
     {"lr": "0.05", "momentum": "0.8", "dampening": "0.3", "weight_decay": "0.01"}, None),
    ("sgd_nesterov", "dense", "torch", "sgd",
     {"lr": "0.05", "momentum": "0.9", "nesterov": "true", "weight_decay": "0.001"}, None),
    ("adam", "dense", "torch", "adam", {"lr": "0.01"}, None),
    ("adam_wd_amsgrad", "dense", "torch", "adam",
     {"lr": "0.01", "betas": "0.8,0.99", "eps": "1e-06", "weight_decay": "0.1",
      "amsgrad": "true"}, None),
    ("adamw", "dense", "torch", "adamw", {"lr": "0.01"}, None),
    ("adamw_amsgrad", "dense", "torch", "adamw",
     {"lr": "0.02", "betas": "0.9,0.95", "weight_decay": "0.05", "amsgrad": "true"}, None),
    ("adagrad", "dense", "torch", "adagrad", {"lr": "0.1"}, None),
    ("adagrad_decay_wd", "dense", "torch", "adagrad",
     {"lr": "0.1", "lr_decay": "0.05", "initial_accumulator_value": "0.1",
      "weight_decay": "0.01", "eps": "1e-08"}, None),
    ("rmsprop", "dense", "torch", "rmsprop", {"lr": "0.01"}, None),
    ("rmsprop_momentum", "dense", "torch", "rmsprop", {"lr": "0.005", "momentum": "0.9"}, None),
    ("rmsprop_centered_momentum_wd", "dense", "torch", "rmsprop",
     {"lr": "0.01", "alpha": "0.9", "eps": "1e-06", "centered": "true", "momentum": "0.5",
      "weight_decay": "0.01"}, None),
    # The learning rate changes every few steps: optimizers must use the current one.
    ("adam_step_schedule", "dense", "torch", "adam", {"lr": "0.01"},
     {"kind": "step", "step_size": "5", "gamma": "0.5"}),
    ("sgd_warmup_cosine", "dense", "torch", "sgd", {"lr": "0.1", "momentum": "0.9"},
     {"kind": "cosine", "warmup_steps": "4", "warmup_start_factor": "0.25", "total_steps": "20",
      "min_lr": "0.001"}),
    # Sparse gradients, default mode: exactly the dense update on the densified gradient.
    ("sparse_sgd", "sparse", "torch", "sgd", {"lr": "0.1"}, None),
    ("sparse_sgd_momentum_wd", "sparse", "torch", "sgd",
     {"lr": "0.05", "momentum": "0.9", "weight_decay": "0.01"}, None),
    ("sparse_adam", "sparse", "torch", "adam", {"lr": "0.01"}, None),
    ("sparse_adamw_amsgrad", "sparse", "torch", "adamw", {"lr": "0.01", "amsgrad": "true"}, None),
    ("sparse_adagrad", "sparse", "torch", "adagrad", {"lr": "0.1"}, None),
    ("sparse_adagrad_wd", "sparse", "torch", "adagrad", {"lr": "0.1", "weight_decay": "0.01"},
     None),
    ("sparse_rmsprop_centered", "sparse", "torch", "rmsprop",
     {"lr": "0.01", "centered": "true", "momentum": "0.3"}, None),
    # lazy_sparse Adam against torch.optim.SparseAdam.
    ("lazy_adam", "sparse", "sparse_adam", "adam", {"lr": "0.01", "lazy_sparse": "true"}, None),
]


def run_case(case, init, dense, sparse_rows, sparse):
    name, inputs, reference, optimizer, options, schedule = case
    param = torch.tensor(init.copy())
    if reference == "sparse_adam":
        opt = torch.optim.SparseAdam([param], lr=float(options["lr"]))
    else:
        opt = torch_optimizer(optimizer, param, {k: v for k, v in options.items()
                                                 if k != "lazy_sparse"})
    sched = torch_schedule(opt, schedule) if schedule else None
    trajectory = []
    for t in range(STEPS):
        if reference == "sparse_adam" and len(sparse_rows[t]) == 0:
            # SparseAdam fails on a gradient without rows; such a step changes nothing but the
            # step count (as our lazy_sparse Adam does).
            opt.state[param]["step"] += 1
        elif reference == "sparse_adam":
            rows = torch.tensor(sparse_rows[t]).reshape(1, -1)
            values = torch.tensor(sparse[t][sparse_rows[t]])
            param.grad = torch.sparse_coo_tensor(rows, values, SHAPE)
            opt.step()
        else:
            param.grad = torch.tensor((dense if inputs == "dense" else sparse)[t])
            opt.step()
        if sched is not None:
            sched.step()
        trajectory.append(param.detach().numpy().copy())
    return trajectory


SCHEDULES = [
    ("step", 0.1, {"kind": "step", "step_size": "3", "gamma": "0.5"}, 12),
    ("step_warmup", 0.1, {"kind": "step", "warmup_steps": "4", "step_size": "3", "gamma": "0.1"},
     14),
    ("cosine", 0.1, {"kind": "cosine", "total_steps": "10", "min_lr": "0.001"}, 10),
    ("cosine_warmup", 0.05,
     {"kind": "cosine", "warmup_steps": "5", "warmup_start_factor": "0.1", "total_steps": "25"},
     25),
    ("constant_warmup", 0.2, {"kind": "constant", "warmup_steps": "3"}, 6),
]


def schedule_rates(base_lr, s, n):
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=base_lr)
    sched = torch_schedule(opt, s)
    rates = []
    for _ in range(n):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return rates


def options_text(options):
    return " ".join("%s=%s" % kv for kv in options.items())


def main():
    os.makedirs(OUT, exist_ok=True)
    init, dense, sparse_rows, sparse = make_inputs()
    header = "# Written by tests/optim/make_reference.py with PyTorch %s; do not edit.\n" % (
        torch.__version__.split("a")[0])
    with open(os.path.join(OUT, "inputs.txt"), "w") as f:
        f.write(header)
        f.write("shape %s\nsteps %d\n" % (" ".join(map(str, SHAPE)), STEPS))
        f.write("init %s\n" % f32(init))
        for t in range(STEPS):
            f.write("dense_grad %d %s\n" % (t + 1, f32(dense[t])))
        for t in range(STEPS):
            f.write("sparse_rows %d %s\n" % (t + 1, " ".join(map(str, sparse_rows[t]))))
            f.write("sparse_grad %d %s\n" % (t + 1, f32(sparse[t])))
    with open(os.path.join(OUT, "trajectories.txt"), "w") as f:
        f.write(header)
        for case in CASES:
            name, inputs, reference, optimizer, options, schedule = case
            f.write("case %s %s %s %s %s\n" % (name, inputs, reference, optimizer,
                                               options_text(options)))
            if schedule:
                f.write("schedule %s\n" % options_text(schedule))
            for t, values in enumerate(run_case(case, init, dense, sparse_rows, sparse)):
                if t + 1 in RECORDED:
                    f.write("param %d %s\n" % (t + 1, f32(values)))
    with open(os.path.join(OUT, "schedules.txt"), "w") as f:
        f.write(header)
        for name, base_lr, s, n in SCHEDULES:
            f.write("schedule %s base_lr=%r %s\n" % (name, base_lr, options_text(s)))
            for step, lr in enumerate(schedule_rates(base_lr, s, n)):
                f.write("lr %d %.17g\n" % (step, lr))


if __name__ == "__main__":
    main()
