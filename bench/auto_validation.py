#!/usr/bin/python3
"""Validates Auto's cost model on emulated networks (docs/strategies.md, "Cost model").

For each model and link rate: profiles the model (`autodist profile`, calibrated on that
network), asks the cost model for the step time of every builder (defaults) plus AllReduce with fp16 and with PowerSGD, and of
Auto's own pick (lossy compression allowed); then runs each of them with
`autodist run --network RATE` (2 workers, the parameter servers on the workers), alternating the
candidates, REPEATS times, and takes each one's median measured step. Prints, per (model, rate),
the predicted and measured steps, Spearman's rho between them, and Auto's pick against the best
measured candidate, against PSLoadBalancing (AutoDist's default) and against plain AllReduce.

The measured step is the chief's steady state: its log's second window (logIntervalSteps is half
the steps), so start-up and the first steps are left out. Each candidate runs long enough for
that window to last about WINDOW_SECONDS by its prediction (at least the model's own steps, at
most MAX_STEPS): a window of 10 steps (the embedding's 20-step runs, ~0.1 s) measured two
candidates predicted within 0.1% of each other 17% apart. Needs root (network namespaces).

    scripts/bench-auto.sh            # every model, 1gbit and 2.5gbit, 5 repeats
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

CANDIDATES = [
    ("PS", {}),
    ("PSLoadBalancing", {}),
    ("PartitionedPS", {}),
    ("UnevenPartitionedPS", {}),
    ("AllReduce", {}),
    ("PartitionedAR", {}),
    ("RandomAxisPartitionAR", {}),
    ("Parallax", {}),
    ("AllReduce", {"compressor": "HorovodCompressorEF"}),
    ("AllReduce", {"compressor": "PowerSGDCompressor"}),
]
BATCH = 32
WINDOW_SECONDS = 1.5
MAX_STEPS = 2000


def steps_for(model, predicted_ms):
    """Steps that make the measured (second) window last about WINDOW_SECONDS; even."""
    steps = round(2 * WINDOW_SECONDS * 1000 / max(predicted_ms, 1e-3))
    return min(MAX_STEPS, max(model["steps"], steps)) // 2 * 2


def label(builder, options):
    return " ".join([builder] + [f"{k}={v}" for k, v in sorted(options.items())])


# --optimizer: SGD with momentum moves every row of a sparse table each step, so parameter servers
# send back whole tables; plain SGD leaves absent rows alone, so they send back changed rows.
OPTIMIZERS = {
    "sgd-momentum": {"name": "sgd", "lr": 0.01, "momentum": 0.9},
    "sgd": {"name": "sgd", "lr": 0.01},
}
OPTIMIZER = OPTIMIZERS["sgd-momentum"]


def manifest(model, work, builder, options, steps, name):
    """The job as YAML (JSON is YAML): 2 workers hosting the parameter servers, 1 thread each."""
    spec = {
        "model": {"path": model["path"]},
        "data": dict(model["data"], batchSizePerReplica=BATCH, shuffle=True, seed=1),
        "training": {"steps": steps, "logIntervalSteps": steps // 2, "optimizer": OPTIMIZER},
        "strategy": {"builder": builder},
        "resources": {"workers": 2, "parameterServers": 0},
    }
    if options:
        spec["strategy"]["options"] = options
    job = {"apiVersion": "autodist.io/v1alpha1", "kind": "AutoDistJob",
           "metadata": {"name": name}, "spec": spec}
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as out:
        json.dump(job, out)
    return path


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def predictions(autodist, model_path, profile, gbps):
    """label -> predicted step (ms) of every distinct candidate, Auto's pick (label, ms), and
    label -> the label it is measured under (itself, or the first with the same strategy).

    Candidates that compile to the same strategy (its content id) are one candidate, under the
    first label: they train identically, so measuring both would only rank noise. The links are
    the emulated network's: its rate and no latency beyond what calibration measured (no netem).
    """
    predicted = {}
    by_id = {}
    alias = {}
    row = re.compile(r"^\s+1\s+(.+?)\s{2,}([\d.]+) ms\s+([\d.]+) ms\s+([\d.]+) ms", re.M)
    written = re.compile(r"wrote strategy (\S+)")
    common = ["compile", "--model", model_path, "--workers", "2", "--profile", profile,
              "--network-bandwidth-gbps", str(gbps), "--network-latency-us", "0", "--explain",
              "-o", os.devnull, "--optimizer", OPTIMIZER["name"]]
    for key, value in OPTIMIZER.items():
        if key != "name":
            common += ["--optimizer-option", f"{key}={value}"]
    for builder, options in CANDIDATES:
        command = [autodist] + common + ["--strategy", builder]
        for key, value in options.items():
            command += ["--option", f"{key}={value}"]
        out = run(command).stdout
        strategy_id = written.search(out).group(1)
        alias[label(builder, options)] = by_id.setdefault(strategy_id, label(builder, options))
        if alias[label(builder, options)] != label(builder, options):
            continue
        predicted[label(builder, options)] = float(row.search(out).group(4))
    out = run([autodist] + common + ["--strategy", "Auto", "--allow-lossy-compression"]).stdout
    match = row.search(out)
    auto_label = by_id.get(written.search(out).group(1), match.group(1).strip())
    return predicted, (auto_label, float(match.group(4))), alias


def parse_label(text):
    parts = text.split()
    return parts[0], dict(part.split("=", 1) for part in parts[1:])


def measured_step_ms(log_path):
    """The steady-state step from the chief's log: its last progress window."""
    rates = re.findall(r"samples/s (\d+)", open(log_path).read())
    if not rates:
        raise RuntimeError(f"no progress line in {log_path}")
    return BATCH * 1000.0 / float(rates[-1])


def spearman(xs, ys):
    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        result = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                result[order[k]] = (i + j) / 2.0
            i = j + 1
        return result
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--autodist", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--models", default="mlp,cnn,embedding")
    parser.add_argument("--rates", default="1gbit,2.5gbit")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--embedding-dir", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd-momentum")
    args = parser.parse_args()
    global OPTIMIZER
    OPTIMIZER = OPTIMIZERS[args.optimizer]
    os.makedirs(args.work, exist_ok=True)
    models = {
        "mlp": {"path": f"{args.source}/examples/fashion-mnist/fmnist_mlp.onnx",
                "data": {"format": "fashion-mnist"}, "steps": 200},
        "cnn": {"path": f"{args.source}/examples/fashion-mnist/fmnist_cnn.onnx",
                "data": {"format": "fashion-mnist"}, "steps": 60},
        "embedding": {"path": f"{args.embedding_dir}/model.onnx",
                      "data": {"format": "files",
                               "train": {"tokens": f"{args.embedding_dir}/tokens.npy",
                                         "label": f"{args.embedding_dir}/label.npy"}},
                      "steps": 20},
    }
    summary = []
    for model_name in args.models.split(","):
        model = models[model_name]
        job = manifest(model, args.work, "Auto", {}, model["steps"], f"{model_name}-profile")
        for rate in args.rates.split(","):
            gbps = float(rate.replace("gbit", ""))
            # Calibrated on the network the candidates run on, as a user profiles for theirs.
            profile = os.path.join(args.work, f"{model_name}-{rate}.profile.json")
            run([args.autodist, "profile", job, "-o", profile, "--threads", "1",
                 "--network", rate])
            predicted, (auto_label, auto_ms), alias = predictions(args.autodist, model["path"], profile,
                                                           gbps)
            candidates = [(label(b, o), b, o) for b, o in CANDIDATES
                          if label(b, o) in predicted]
            if auto_label not in predicted:
                predicted[auto_label] = auto_ms
                candidates.append((auto_label,) + parse_label(auto_label))
            steps = {entry[0]: [] for entry in candidates}
            for repeat in range(args.repeats):
                # Alternate: each repeat starts one candidate later, so drift spreads evenly.
                shift = repeat % len(candidates)
                for name, builder, options in candidates[shift:] + candidates[:shift]:
                    tag = re.sub(r"[^a-z0-9]+", "-", f"{model_name}-{rate}-{name}".lower())
                    job = manifest(model, args.work, builder, options,
                                   steps_for(model, predicted[name]), tag[:60])
                    logs = os.path.join(args.work, "logs", tag)
                    run([args.autodist, "run", job, "--network", rate, "--threads", "1",
                         "--fresh", "--log-dir", logs])
                    steps[name].append(measured_step_ms(os.path.join(logs, "worker-0.log")))
            measured = {name: statistics.median(values) for name, values in steps.items()}
            names = list(measured)
            rho = spearman([predicted[n] for n in names], [measured[n] for n in names])
            best = min(measured, key=measured.get)
            load = os.getloadavg()[0]
            print(f"\n### {model_name}, {rate} (load {load:.2f})\n")
            print("| candidate | predicted ms | measured ms (median of "
                  f"{args.repeats}) | measured / predicted |")
            print("| --- | ---: | ---: | ---: |")
            for name in sorted(names, key=lambda n: measured[n]):
                mark = " (Auto)" if name == auto_label else ""
                print(f"| {name}{mark} | {predicted[name]:.2f} | {measured[name]:.2f} | "
                      f"{measured[name] / predicted[name]:.2f} |")
            row = {
                "model": model_name, "rate": rate, "rho": rho, "auto": auto_label,
                "auto_vs_best": measured[best] / measured[auto_label],
                "auto_vs_default": measured[alias[label("PSLoadBalancing", {})]] / measured[auto_label],
                "auto_vs_allreduce": measured[alias[label("AllReduce", {})]] / measured[auto_label],
                "load": load,
            }
            summary.append(row)
            print(f"\nSpearman rho {rho:.2f}; Auto chose {auto_label}; best measured {best}; "
                  f"best/Auto {row['auto_vs_best']:.2f}, PSLoadBalancing/Auto "
                  f"{row['auto_vs_default']:.2f}, AllReduce/Auto {row['auto_vs_allreduce']:.2f}")
            sys.stdout.flush()
    print("\n| model | link | Spearman rho | Auto's pick | best / Auto | PSLoadBalancing / Auto "
          "| AllReduce / Auto | load |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for row in summary:
        print(f"| {row['model']} | {row['rate']} | {row['rho']:.2f} | {row['auto']} | "
              f"{row['auto_vs_best']:.2f} | {row['auto_vs_default']:.2f} | "
              f"{row['auto_vs_allreduce']:.2f} | {row['load']:.2f} |")


if __name__ == "__main__":
    main()
