#!/usr/bin/env python3
"""Checks crds/autodistjobs.autodist.io.yaml: the names BRIEF §2 fixes, a structural schema, the
status subresource and printer columns, that every example manifest of the repository validates
against it, that invalid manifests do not, and that it declares every field the manifest parser
(runtime/job/*.cc) reads, so the two cannot drift apart silently.

    check_crd.py <repository root>
"""

import copy
import json
import pathlib
import re
import shutil
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import openapi_schema  # noqa: E402

CRD_PATH = "crds/autodistjobs.autodist.io.yaml"
CHART_CRD_PATH = "charts/autodist-operator/crds/autodistjobs.autodist.io.yaml"

# Fields the operator needs (issue 6) that the parser does not read yet: the schema declares them
# ahead of the parser. A field in the schema but neither in the parser nor here fails the test.
AHEAD_OF_PARSER: set = set()

# Parser function -> the schema node whose fields its MapReader lists (a tuple of nodes for a
# reader used in several places).
PARSER_SECTIONS = {
    ("job_parser.cc", "root"): "",
    ("job_parser.cc", "spec"): "spec",
    ("parse_cluster.cc", "ReadResources"): "spec.resources",
    ("parse_cluster.cc", "ReadNccl"): "spec.resources.nccl",
    ("parse_cluster.cc", "ReadRunPolicy"): "spec.runPolicy",
    ("parse_cluster.cc", "ReadSchedulingPolicy"): "spec.runPolicy.schedulingPolicy",
    ("parse_cluster.cc", "ReadPodTemplate"): "spec.template",
    ("parse_model_data.cc", "ReadConfigMapRef"): ("spec.model.configMap",
                                                   "spec.strategy.profile.configMap"),
    ("parse_model_data.cc", "ReadModel"): "spec.model",
    ("parse_model_data.cc", "ReadData"): "spec.data",
    ("parse_training.cc", "ReadCheckpoint"): "spec.training.checkpoint",
    ("parse_training.cc", "ReadTensorBoardPath"): "spec.training.tensorboard",
    ("parse_training.cc", "ReadTimelinePath"): "spec.training.timeline",
    ("parse_training.cc", "ReadTraining"): "spec.training",
    ("parse_strategy.cc", "ReadStrategy"): "spec.strategy",
    ("parse_strategy.cc", "ReadProfile"): "spec.strategy.profile",
}

EXPECTED_COLUMNS = ["State", "Builder", "Workers", "PS", "Step", "Age"]

# A status as the operator will write it: the status schema must accept it.
SAMPLE_STATUS = {
    "observedGeneration": 2,
    "state": "Running",
    "conditions": [
        {"type": "Created", "status": "True", "reason": "JobCreated", "message": "pods created",
         "lastTransitionTime": "2025-01-01T10:00:00Z", "observedGeneration": 2},
        {"type": "Compiled", "status": "True", "reason": "StrategyCompiled",
         "message": "PSLoadBalancing: 6 variables on 1 parameter server",
         "lastTransitionTime": "2025-01-01T10:00:01Z", "observedGeneration": 2},
        {"type": "Running", "status": "True", "reason": "AllPodsRunning", "message": "",
         "lastTransitionTime": "2025-01-01T10:00:30.5+01:00"},
    ],
    "replicaStatuses": {"Worker": {"active": 2}, "PS": {"active": 1, "succeeded": 0,
                                                         "failed": 0}},
    "strategy": {"builder": "PSLoadBalancing", "workers": 2, "parameterServers": 1,
                 "replicas": 2, "variables": 6, "partitioned": 0,
                 "bytesPerPs": {"ps-0": 814632}, "allReduceGroups": 0,
                 "predictedStepMicroseconds": 31136},
    "progress": {"step": 420, "totalSteps": 1876, "epoch": 0, "loss": 0.53,
                 "samplesPerSecond": 3120.5, "lastUpdateTime": "2025-01-01T10:02:00Z"},
    "restartCount": 1,
    "resumedFromStep": 400,
    "startTime": "2025-01-01T10:00:00Z",
}


class Checker:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, condition, message):
        if condition:
            self.passed += 1
        else:
            self.failures.append(message)
        return condition

    def equal(self, actual, expected, what):
        return self.check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


def schema_node(schema, dotted):
    node = schema
    for part in [p for p in dotted.split(".") if p]:
        node = node.get("properties", {}).get(part)
        if node is None:
            return None
    return node


def parser_field_lists(root):
    """(file, function) -> the field names the parser's MapReader accepts there."""
    found = {}
    for (file_name, function), _ in PARSER_SECTIONS.items():
        text = (root / "runtime/job" / file_name).read_text()
        if file_name == "job_parser.cc":
            pattern = (r"MapReader\s+" + re.escape(function) +
                       r"\s*\(\s*context\s*,[^{]*\{([^}]*)\}")
        else:
            # The first MapReader after the function's definition.
            start = re.search(r"\b" + re.escape(function) + r"\s*\([^;{]*\)\s*\{", text)
            if start is None:
                found[(file_name, function)] = None
                continue
            text = text[start.end():]
            pattern = r"MapReader\s+map\s*\(\s*context\s*,[^{;]*\{([^}]*)\}"
        match = re.search(pattern, text)
        found[(file_name, function)] = (re.findall(r'"([^"]*)"', match.group(1))
                                        if match else None)
    return found


def declared_fields(schema, dotted=""):
    """Every object field path the schema declares under spec (plus the root)."""
    out = set()
    node = schema_node(schema, dotted)
    for name, child in (node or {}).get("properties", {}).items():
        path = f"{dotted}.{name}" if dotted else name
        out.add(path)
        if path.startswith("spec") and child.get("type") == "object" and \
                "properties" in child and not child.get("x-kubernetes-preserve-unknown-fields"):
            out |= declared_fields(schema, path)
    return out


def job_manifests(root):
    """(label, object) of every AutoDistJob example the repository ships."""
    manifests = []
    paths = sorted(root.glob("examples/**/*.yaml")) + [
        root / "tests/fixtures/jobs/full.yaml", root / "tests/fixtures/jobs/minimal.yaml"]
    for path in paths:
        for doc in openapi_schema.load_yaml_documents(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "AutoDistJob":
                manifests.append((str(path.relative_to(root)), doc))
    cluster = json.loads((root / "tests/fixtures/jobs/cluster.json").read_text())
    # The API server drops status on create when the status subresource is enabled.
    cluster.pop("status", None)
    manifests.append(("tests/fixtures/jobs/cluster.json (without status)", cluster))
    for doc_name in ("docs/job-reference.md", "docs/operator.md"):
        doc_path = root / doc_name
        if not doc_path.exists():
            continue
        blocks = re.findall(r"```yaml\n(.*?)```", doc_path.read_text(), re.S)
        for i, block in enumerate(blocks):
            try:
                docs = openapi_schema.load_yaml_documents(block)
            except Exception:  # a fragment, not a manifest
                continue
            for doc in docs:
                if isinstance(doc, dict) and doc.get("kind") == "AutoDistJob":
                    manifests.append((f"{doc_name} yaml block {i + 1}", doc))
    return manifests


def kubectl_json(path):
    """The object as kubectl itself decodes the file (its YAML -> JSON conversion), or None when
    kubectl is not installed. `label --local` needs no API server, unlike apply --dry-run=client,
    which still downloads the server's OpenAPI and discovery documents."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    result = subprocess.run([kubectl, "label", "--local", "-f", str(path), "-o", "json",
                             "autodist.io/check=ok"], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl could not read {path}: {result.stderr.strip()}")
    obj = json.loads(result.stdout)
    labels = obj["metadata"]["labels"]
    del labels["autodist.io/check"]
    if not labels:
        del obj["metadata"]["labels"]
    return obj


def mutate(base, dotted, value):
    """A copy of base with the field at dotted set to value (or removed when value is DELETE)."""
    doc = copy.deepcopy(base)
    parts = dotted.split(".")
    node = doc
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    if value is DELETE:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
    return doc


DELETE = object()

# (what, field, value): each makes minimal.yaml invalid in a way the schema must catch.
INVALID = [
    ("unknown top-level spec field", "spec.trainig", {"epochs": 1}),
    ("unknown training field", "spec.training.optimizr", {"name": "sgd"}),
    ("missing spec", "spec", DELETE),
    ("missing data", "spec.data", DELETE),
    ("missing optimizer", "spec.training.optimizer", DELETE),
    ("optimizer without name", "spec.training.optimizer", {"lr": 0.1}),
    ("negative learning rate", "spec.training.optimizer.lr", -0.1),
    ("beta of 1", "spec.training.optimizer.betas", [0.9, 1.0]),
    ("both epochs and steps", "spec.training.steps", 10),
    ("neither epochs nor steps", "spec.training.epochs", DELETE),
    ("zero epochs", "spec.training.epochs", 0),
    ("quoted integer", "spec.training.epochs", "1"),
    ("model with path and configMap", "spec.model.configMap", {"name": "m"}),
    ("model with neither", "spec.model.path", DELETE),
    ("empty model path", "spec.model.path", ""),
    ("ConfigMap name not a DNS subdomain", "spec.model", {"configMap": {"name": "Model_1"}}),
    ("unknown data format", "spec.data.format", "csv"),
    ("zero batch size", "spec.data.batchSizePerReplica", 0),
    ("string shuffle", "spec.data.shuffle", "maybe"),
    ("negative seed", "spec.data.seed", -1),
    ("empty train map", "spec.data.train", {}),
    ("unknown builder", "spec.strategy", {"builder": "Horovod"}),
    ("lowercase builder", "spec.strategy", {"builder": "allreduce"}),
    ("unknown compressor", "spec.strategy",
     {"builder": "AllReduce", "options": {"compressor": "GzipCompressor"}}),
    ("unknown all-reduce spec", "spec.strategy",
     {"builder": "AllReduce", "options": {"allReduceSpec": "TREE"}}),
    ("zero chunk size", "spec.strategy", {"builder": "AllReduce", "options": {"chunkSize": 0}}),
    ("topkFraction of 0", "spec.strategy",
     {"builder": "AllReduce", "options": {"compressor": "TopKCompressorEF", "topkFraction": 0}}),
    ("negative staleness", "spec.strategy", {"builder": "PS", "options": {"staleness": -1}}),
    ("empty colocation group", "spec.strategy", {"builder": "PS", "colocation": [[]]}),
    ("unknown state reduction", "spec.strategy", {"stateReduction": {"bn.var": "Max"}}),
    ("zero workers", "spec.resources", {"workers": 0}),
    ("workers beyond int32", "spec.resources", {"workers": 2**31}),
    ("negative parameter servers", "spec.resources", {"parameterServers": -1}),
    ("zero replicas per worker", "spec.resources", {"replicasPerWorker": 0}),
    ("memory 4GB", "spec.resources", {"memory": "4GB"}),
    ("memory 4gi", "spec.resources", {"memory": "4gi"}),
    ("unknown resources field", "spec.resources", {"gpus": 1}),
    ("sharedMemory 1GB", "spec.resources", {"sharedMemory": "1GB"}),
    ("lowercase NCCL debug level", "spec.resources", {"nccl": {"debug": "info"}}),
    ("NCCL interface with a space", "spec.resources", {"nccl": {"socketIfname": "eth 0"}}),
    ("NCCL interface list with an empty name", "spec.resources",
     {"nccl": {"socketIfname": "eth0,,lo"}}),
    ("quoted ibDisable", "spec.resources", {"nccl": {"ibDisable": "yes"}}),
    ("unknown nccl field", "spec.resources", {"nccl": {"ibDisabled": True}}),
    ("lowercase cleanPodPolicy", "spec.runPolicy", {"cleanPodPolicy": "all"}),
    ("restartPolicy Always", "spec.runPolicy", {"restartPolicy": "Always"}),
    ("zero active deadline", "spec.runPolicy", {"activeDeadlineSeconds": 0}),
    ("negative backoffLimit", "spec.runPolicy", {"backoffLimit": -1}),
    ("schedulingPolicy without schedulerName", "spec.runPolicy",
     {"schedulingPolicy": {"queue": "q"}}),
    ("unknown template field", "spec.template", {"sepc": {}}),
    ("template spec not a mapping", "spec.template", {"spec": ["a"]}),
    ("name not a DNS-1035 label", "metadata.name", "FMNIST"),
    ("name starting with a digit", "metadata.name", "1job"),
]

# (what, field, value): valid variations the schema must accept (parser-valid manifests).
VALID = [
    ("quantity as an integer", "spec.resources", {"cpu": 2, "memory": "1e9"}),
    ("GPU pods' shared memory and NCCL", "spec.resources",
     {"gpusPerWorker": 1, "sharedMemory": "2Gi",
      "nccl": {"socketIfname": "^docker,lo", "debug": "INFO", "ibDisable": False}}),
    ("quantities with suffixes", "spec.resources", {"cpu": "1500m", "memory": "128Mi"}),
    ("snake_case builder options", "spec.strategy",
     {"builder": "AllReduce", "options": {"chunk_size": 64, "all_reduce_spec": "RING"}}),
    ("every AllReduce option", "spec.strategy",
     {"builder": "AllReduce", "options": {"chunkSize": 1, "allReduceSpec": "AUTO",
                                          "compressor": "PowerSGDCompressor", "powersgdRank": 2,
                                          "powersgdStartStep": 10,
                                          "minCompressionElements": 1024}}),
    ("TopK fraction 1", "spec.strategy",
     {"builder": "AllReduce", "options": {"compressor": "TopKCompressorEF", "topkFraction": 1}}),
    ("negative seed for RandomAxisPartitionAR", "spec.strategy",
     {"builder": "RandomAxisPartitionAR", "options": {"seed": -3}}),
    ("model from a ConfigMap", "spec.model", {"configMap": {"name": "fmnist.model",
                                                            "key": "mlp.onnx"}}),
    ("steps instead of epochs", "spec.training", {"steps": 5, "optimizer": {"name": "SGD",
                                                                            "lr": 1}}),
    ("optimizer options in snake_case", "spec.training.optimizer",
     {"name": "adamw", "weight_decay": 0.01, "betas": [0.9, 0.999]}),
    ("step schedule", "spec.training.lrSchedule", {"kind": "step", "stepSize": 100,
                                                   "gamma": 0.5}),
    ("restart policy ExitCode", "spec.runPolicy",
     {"restartPolicy": "ExitCode", "backoffLimit": 0}),
    ("gang scheduling", "spec.runPolicy",
     {"schedulingPolicy": {"schedulerName": "volcano", "queue": "research",
                           "priorityClass": "high", "scheduleTimeoutSeconds": 60}}),
    ("label and annotation metadata", "metadata",
     {"name": "a", "labels": {"x": "y"}, "annotations": {"k": "v"}, "uid": "u"}),
]


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    checker = Checker()
    crd_text = (root / CRD_PATH).read_text()
    docs = openapi_schema.load_yaml_documents(crd_text)
    if not checker.equal(len(docs), 1, f"{CRD_PATH}: number of YAML documents"):
        return report(checker)
    crd = docs[0]

    # Names (BRIEF §2) and the version.
    checker.equal(crd.get("apiVersion"), "apiextensions.k8s.io/v1", "apiVersion")
    checker.equal(crd.get("kind"), "CustomResourceDefinition", "kind")
    checker.equal(crd["metadata"]["name"], "autodistjobs.autodist.io", "metadata.name")
    spec = crd["spec"]
    checker.equal(spec["group"], "autodist.io", "group")
    checker.equal(spec["scope"], "Namespaced", "scope")
    names = spec["names"]
    checker.equal(names.get("kind"), "AutoDistJob", "names.kind")
    checker.equal(names.get("plural"), "autodistjobs", "names.plural")
    checker.equal(names.get("singular"), "autodistjob", "names.singular")
    checker.equal(names.get("listKind"), "AutoDistJobList", "names.listKind")
    checker.equal(names.get("shortNames"), ["adj"], "names.shortNames")
    checker.equal(names.get("categories"), ["all"], "names.categories")
    versions = spec["versions"]
    checker.equal([v["name"] for v in versions], ["v1alpha1"], "versions")
    version = versions[0]
    checker.check(version.get("served") is True and version.get("storage") is True,
                  "v1alpha1 must be served and the storage version")
    checker.equal(version.get("subresources"), {"status": {}}, "subresources")
    schema = version["schema"]["openAPIV3Schema"]

    # A structural schema.
    for problem in openapi_schema.structural_problems(schema):
        checker.check(False, f"structural schema: {problem}")

    # Printer columns: kubectl get adj -> NAME STATE BUILDER WORKERS PS STEP AGE.
    columns = version.get("additionalPrinterColumns", [])
    checker.equal([c["name"] for c in columns if c.get("priority", 0) == 0], EXPECTED_COLUMNS,
                  "printer columns (priority 0)")
    for column in columns:
        path = column["jsonPath"]
        if path == ".metadata.creationTimestamp":
            checker.equal(column["type"], "date", f"column {column['name']} type")
            continue
        node = schema_node(schema, path.lstrip("."))
        if not checker.check(node is not None,
                             f"column {column['name']}: {path} is not declared in the schema"):
            continue
        expected = {"string": "string", "integer": "integer", "number": "number",
                    "boolean": "boolean"}.get(node.get("type"))
        if node.get("format") == "date-time":
            expected = "date"
        checker.equal(column["type"], expected, f"column {column['name']} type ({path})")

    # Enums agree with the compiler and the Strategy proto (BRIEF §2 names).
    builder_names = re.search(r"BuilderNames\(\)\s*\{.*?\{(.*?)\}",
                              (root / "runtime/strategy/compiler.cc").read_text(), re.S)
    if checker.check(builder_names is not None, "BuilderNames() not found in compiler.cc"):
        checker.equal(schema_node(schema, "spec.strategy.builder")["enum"],
                      re.findall(r'"([^"]+)"', builder_names.group(1)), "builder enum")
    proto = (root / "proto/synchronizers.proto").read_text()
    for enum_name, field in (("Compressor", "compressor"), ("Spec", "allReduceSpec")):
        block = re.search(r"enum\s+" + enum_name + r"\s*\{(.*?)\}", proto, re.S)
        if checker.check(block is not None, f"enum {enum_name} not in synchronizers.proto"):
            values = re.findall(r"^\s*(\w+)\s*=\s*\d+\s*;", block.group(1), re.M)
            checker.equal(schema_node(schema, f"spec.strategy.options.{field}")["enum"], values,
                          f"{field} enum vs AllReduceSynchronizer.{enum_name}")

    # Every field the parser reads is declared; every extra field is a known one.
    declared = declared_fields(schema)
    parser_fields = set()
    for key, fields in parser_field_lists(root).items():
        section = PARSER_SECTIONS[key]
        if not checker.check(fields is not None,
                             f"could not find the field list of {key[1]} in runtime/job/{key[0]};"
                             " update PARSER_SECTIONS in tests/deploy/check_crd.py"):
            continue
        for node in (section if isinstance(section, tuple) else (section,)):
            for field in fields:
                path = f"{node}.{field}" if node else field
                parser_fields.add(path)
                if path == "status" or path.startswith("metadata"):
                    continue
                checker.check(path in declared,
                              f"the parser reads {path}; the CRD does not declare it")
    for path in sorted(declared):
        if not path.startswith("spec.") or path in parser_fields:
            continue
        if any(path == ahead or path.startswith(ahead + ".") for ahead in AHEAD_OF_PARSER):
            print(f"note: {path} is in the CRD but not yet read by the parser")
            continue
        checker.check(False, f"the CRD declares {path}, which the parser does not read "
                             "(add it to the parser, or to AHEAD_OF_PARSER if it is on its way)")

    # Every example manifest conforms.
    manifests = job_manifests(root)
    checker.check(len(manifests) >= 6, f"expected at least 6 example manifests, found "
                                       f"{len(manifests)}")
    for label, manifest in manifests:
        problems = openapi_schema.validate(manifest, schema)
        checker.check(not problems, f"{label} does not validate: {problems}")
        print(f"ok: {label}")

    # kubectl reads the CRD and the example files as Python does, and its decoding of each
    # example (YAML 1.1 scalars and all) validates too.
    if shutil.which("kubectl") is None:
        print("note: kubectl is not installed; skipping the checks through kubectl")
    else:
        try:
            checker.check(kubectl_json(root / CRD_PATH) == crd,
                          "kubectl decodes the CRD differently from yaml.safe_load")
            for path in sorted(root.glob("examples/**/*.yaml")) + [
                    root / "tests/fixtures/jobs/full.yaml",
                    root / "tests/fixtures/jobs/minimal.yaml"]:
                decoded = kubectl_json(path)
                problems = openapi_schema.validate(decoded, schema)
                checker.check(not problems, f"{path.relative_to(root)} as kubectl reads it does "
                                            f"not validate: {problems}")
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            checker.check(False, str(error))

    # A realistic status validates; the conditions list is a map keyed by type.
    status_doc = mutate(manifests[0][1], "status", SAMPLE_STATUS)
    problems = openapi_schema.validate(status_doc, schema)
    checker.check(not problems, f"sample status does not validate: {problems}")
    broken = copy.deepcopy(SAMPLE_STATUS)
    broken["conditions"].append(dict(broken["conditions"][0]))
    checker.check(openapi_schema.validate(mutate(manifests[0][1], "status", broken), schema),
                  "two conditions of the same type must be rejected")
    del broken["conditions"][-1]["reason"]
    broken["conditions"][0]["status"] = "Yes"
    checker.check(len(openapi_schema.validate(mutate(manifests[0][1], "status", broken),
                                              schema)) >= 2,
                  "a condition without reason and with status Yes must be rejected")

    # Invalid and valid variations of the minimal manifest.
    minimal = openapi_schema.load_yaml_documents(
        (root / "tests/fixtures/jobs/minimal.yaml").read_text())[0]
    for what, field, value in INVALID:
        problems = openapi_schema.validate(mutate(minimal, field, value), schema)
        checker.check(bool(problems), f"invalid manifest accepted: {what} ({field})")
        if problems:
            print(f"rejected as expected: {what}: {problems[0]}")
    for what, field, value in VALID:
        problems = openapi_schema.validate(mutate(minimal, field, value), schema)
        checker.check(not problems, f"valid manifest rejected: {what}: {problems}")
    bad = openapi_schema.load_yaml_documents(
        (root / "tests/fixtures/jobs/bad/unknown-field.yaml").read_text())[0]
    checker.check(bool(openapi_schema.validate(bad, schema)),
                  "tests/fixtures/jobs/bad/unknown-field.yaml must be rejected")

    # The chart ships the same file (Helm installs CRDs only from its crds/ folder).
    chart_crd = root / CHART_CRD_PATH
    if checker.check(chart_crd.exists() and not chart_crd.is_symlink(),
                     f"{CHART_CRD_PATH} must exist as a regular file (Helm packages symlinks "
                     "poorly)"):
        checker.check(chart_crd.read_bytes() == (root / CRD_PATH).read_bytes(),
                      f"{CHART_CRD_PATH} differs from {CRD_PATH}; copy it: "
                      f"cp {CRD_PATH} {CHART_CRD_PATH}")
    return report(checker)


def report(checker):
    for failure in checker.failures:
        print(f"FAIL: {failure}")
    print(f"{checker.passed} checks ok, {len(checker.failures)} failing")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
