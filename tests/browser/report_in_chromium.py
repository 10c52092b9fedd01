#!/usr/bin/env python3
"""The run report (report.html) in a real browser: runs a small job with `autodist run`, loads
the job's report in headless Chromium (Debian's `chromium`) and checks that

* the page loads with no console message at all (errors, warnings or logs);
* it is self-contained: no script, and no src or href that would fetch anything;
* the loss curve has one point per logged step, and the other sections are there;
* a screenshot can be taken; it is kept as a test artifact (ARTIFACTS/report.png).

    report_in_chromium.py <autodist binary> <parity fixtures dir> <artifacts dir>

Exit status 77 (ctest's SKIP_RETURN_CODE) when Chromium is not installed: CI does not install
it (it would cost CI minutes); `make test-browser` installs it and runs this test.
"""

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
STEPS = 6


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(browser, page, *args):
    """Runs headless Chromium on the page; returns (stdout, console lines)."""
    result = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--enable-logging=stderr", "--v=0", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120)
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    if result.returncode != 0:
        raise RuntimeError(f"chromium exited {result.returncode}: {result.stderr[-2000:]}")
    return result.stdout, console


def main():
    autodist, fixtures, artifacts = (pathlib.Path(arg).resolve() for arg in sys.argv[1:4])
    browser = chromium()
    if browser is None:
        print("SKIPPED: chromium is not installed (apt-get install chromium, or make test-browser)")
        return SKIP
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)

    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        manifest = work / "job.yaml"
        manifest.write_text(f"""apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: report-check
spec:
  model:
    path: {fixtures}/mlp/model.onnx
  data:
    format: files
    train:
      image: {fixtures}/mlp/image.npy
      label: {fixtures}/mlp/label.npy
    eval:
      image: {fixtures}/mlp/image.npy
      label: {fixtures}/mlp/label.npy
    batchSizePerReplica: 8
  training:
    steps: {STEPS}
    evalIntervalSteps: 3
    optimizer: {{name: sgd, lr: 0.1}}
    logIntervalSteps: 1
  strategy:
    builder: PS
  resources:
    workers: 2
    parameterServers: 1
""")
        logs = work / "logs"
        run = subprocess.run([str(autodist), "run", str(manifest), "--log-dir", str(logs),
                              "--threads", "1"], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            print(f"FAIL: autodist run exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
            return 1
        report = logs / "report.html"
        check(f"report: {report}" in run.stdout, f"autodist run did not name the report:\n"
              f"{run.stdout}")
        dom, console = browse(browser, report, "--dump-dom")
        check(not console, "console messages while loading:\n" + "\n".join(console))
        check("<script" not in dom, "the report carries a script")
        fetches = re.findall(r'\s(?:src|href)="[^"]*"', dom)
        check(not fetches, f"the report refers to other resources: {fetches}")
        loss_points = len(re.findall(r'<circle class="point" data-series="train loss"', dom))
        check(loss_points == STEPS,
              f"the loss curve has {loss_points} points, expected one per logged step ({STEPS})")
        eval_points = len(re.findall(r'<circle class="point" data-series="eval loss"', dom))
        check(eval_points == 2, f"the eval loss has {eval_points} points, expected 2 (steps 3, 6)")
        for section in ("strategy", "training", "step-time", "wire"):
            check(f'<section id="{section}">' in dom, f"section {section} is missing")
        check("builder: PS" in dom, "the strategy summary is missing")
        check(dom.count('class="part"') == 2 * 4, "the step-time bars are not 4 parts per worker")
        check("ps-0" in dom and "updates" in dom, "the parameter server's traffic is missing")

        screenshot = work / "report.png"
        _, console = browse(browser, report, "--window-size=1000,2150",
                            f"--screenshot={screenshot}")
        check(not console, "console messages while taking the screenshot:\n" + "\n".join(console))
        check(screenshot.is_file() and screenshot.stat().st_size > 10000,
              "the screenshot is missing or empty")
        if screenshot.is_file():
            artifacts.mkdir(parents=True, exist_ok=True)
            shutil.copy(screenshot, artifacts / "report.png")
            shutil.copy(report, artifacts / "report.html")
            print(f"screenshot: {artifacts / 'report.png'}")

    for failure in failures:
        print(f"FAIL: {failure}")
    print(f"{'FAILED' if failures else 'ok'}: report checked in {browser}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
