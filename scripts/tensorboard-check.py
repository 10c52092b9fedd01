#!/usr/bin/env python3
"""TensorBoard's own side of the event-file tests. Needs the tensorboard package (and torch for
`golden`), which the GPU machine's image has and Debian does not; scripts/device-check.sh runs it
there.

    tensorboard-check.py check RUN_DIR PROGRESS_LOG
        Loads the event file that `autodist-runtime --tensorboard RUN_DIR` wrote with
        TensorBoard's EventAccumulator and compares every scalar with the run's progress and
        evaluation lines (PROGRESS_LOG, its standard output): each logged step's loss and
        learning rate, each evaluation's loss and accuracy. Exit 1 on any difference.

    tensorboard-check.py golden OUT_DIR
        Writes an event file with PyTorch's SummaryWriter (TensorBoard's writer): scalars as
        simple values and, with new_style, as 0-d tensors. tests/fixtures/tensorboard/ keeps it
        and tests/observe/golden_event_file_test.cc decodes it in CI.
"""

import glob
import math
import os
import re
import sys

STEP_LINE = re.compile(r"^step (\d+)/\d+\s+epoch \d+\s+loss ([0-9.eE+-]+)\s+lr ([0-9.eE+-]+)")
EVAL_LINE = re.compile(r"^eval after step (\d+): loss ([0-9.eE+-]+)(?:\s+accuracy ([0-9.eE+-]+))?")


def expected_from_log(path):
    """tag -> {step: value} from the progress lines; values as printed (rounded)."""
    expected = {"train/loss": {}, "train/learning_rate": {}, "eval/loss": {}, "eval/accuracy": {}}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = STEP_LINE.match(line.strip())
            if m:
                step = int(m.group(1))
                expected["train/loss"][step] = float(m.group(2))
                expected["train/learning_rate"][step] = float(m.group(3))
                continue
            m = EVAL_LINE.match(line.strip())
            if m:
                step = int(m.group(1))
                expected["eval/loss"][step] = float(m.group(2))
                if m.group(3):
                    expected["eval/accuracy"][step] = float(m.group(3))
    return {tag: points for tag, points in expected.items() if points}


def check(run_dir, log_path):
    from tensorboard.backend.event_processing import event_accumulator

    files = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    if len(files) != 1:
        print(f"tensorboard-check: expected one event file in {run_dir}, found {files}")
        return 1
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags().get("scalars", []))
    expected = expected_from_log(log_path)
    failures = 0
    for tag, points in expected.items():
        if tag not in tags:
            print(f"tensorboard-check: FAIL: TensorBoard finds no scalar {tag} (it has {sorted(tags)})")
            failures += 1
            continue
        got = {e.step: e.value for e in acc.Scalars(tag)}
        if sorted(got) != sorted(points):
            print(f"tensorboard-check: FAIL: {tag}: steps {sorted(got)}, the log has {sorted(points)}")
            failures += 1
            continue
        for step, value in points.items():
            # Half a unit of the last printed digit: 4 decimals, the learning rate 3 significant.
            tolerance = 5e-5 if tag != "train/learning_rate" else 5e-4 * abs(value)
            if not math.isclose(got[step], value, abs_tol=tolerance + 1e-7):
                print(f"tensorboard-check: FAIL: {tag} at step {step}: TensorBoard {got[step]}, "
                      f"the log {value}")
                failures += 1
    for tag in ("perf/samples_per_second", "perf/step_seconds"):
        values = [e.value for e in acc.Scalars(tag)] if tag in tags else []
        steps = sorted(expected["train/loss"])
        if len(values) != len(steps) or not all(v > 0 for v in values):
            print(f"tensorboard-check: FAIL: {tag}: {values} (expected {len(steps)} positive values)")
            failures += 1
    checked = sum(len(p) for p in expected.values())
    print(f"tensorboard-check: TensorBoard read {len(tags)} tags; {checked} scalars compared with "
          f"the log, {failures} failed")
    return 1 if failures else 0


def golden(out_dir):
    from torch.utils.tensorboard import SummaryWriter

    os.makedirs(out_dir, exist_ok=True)
    writer = SummaryWriter(log_dir=out_dir)
    for step in range(1, 6):
        writer.add_scalar("golden/simple", 0.25 + 0.5 * step, step)
        writer.add_scalar("golden/tensor", -1.5 * step, step, new_style=True)
    writer.close()
    print(f"tensorboard-check: golden event file in {out_dir}: "
          f"{sorted(os.listdir(out_dir))}")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "golden":
        return golden(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
