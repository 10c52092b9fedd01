#!/usr/bin/env python3
"""The chart's RBAC rules against what the operator does: every request the operator made in the
end-to-end suite (each test writes the double's count of the requests with the operator's
User-Agent to <calls dir>/<suite>.<test>.json) must be granted by the chart's default rules, and
every rule the chart grants must have been used, except the few that only authorization checks
need (AUTHORIZATION_ONLY, each with its reason). Nothing missing, nothing unused.

    check_operator_rbac.py <repository root> <calls dir> <operator_e2e_test binary>

ctest runs it after the whole end-to-end suite (the suite's tests are its fixture). Exit status
77 when helm cannot be installed, or when some end-to-end test left no fresh record (it was
skipped, or did not run since the last build).
"""

import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_chart  # noqa: E402

SKIP = 77

# Rules no request exercises, which a real cluster's authorizer nevertheless requires.
AUTHORIZATION_ONLY = {
    # The OwnerReferencesPermissionEnforcement admission plugin lets a create set
    # blockOwnerDeletion on a child's ownerReference only for a client that may update the
    # owner's finalizers; the operator never writes them.
    ("autodist.io", "autodistjobs/finalizers", "update"),
}


def test_names(binary):
    listed = subprocess.run([binary, "--gtest_list_tests"], text=True, capture_output=True,
                            timeout=60, check=True).stdout
    names, suite = [], ""
    for line in listed.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.strip()
        elif not line.strip().startswith("DISABLED_"):
            names.append(suite + line.split("#")[0].strip())
    return names


def parse_key(key):
    """'pods' -> ('', 'pods'); 'autodistjobs.autodist.io/status' ->
    ('autodist.io', 'autodistjobs/status'), as the double's statistics name resources."""
    base, _, subresource = key.partition("/")
    plural, _, group = base.partition(".")
    return group, plural + ("/" + subresource if subresource else "")


def used_calls(calls_dir, tests, built):
    used, stale = {}, []
    for test in tests:
        record = calls_dir / f"{test}.json"
        if not record.exists() or record.stat().st_mtime < built:
            stale.append(test)
            continue
        for verb, resources in json.loads(record.read_text()).items():
            for key in resources:
                used.setdefault((*parse_key(key), verb), []).append(test)
    return used, stale


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    calls_dir = pathlib.Path(sys.argv[2])
    binary = pathlib.Path(sys.argv[3])
    if not binary.exists():
        print(f"SKIPPED: {binary} is not built")
        return SKIP
    tests = test_names(binary)
    used, stale = used_calls(calls_dir, tests, binary.stat().st_mtime)
    if stale:
        print(f"SKIPPED: {len(stale)} of {len(tests)} end-to-end tests left no record of the "
              f"operator's calls since {binary.name} was built (run the whole suite: "
              f"ctest -R 'operator_e2e|deploy.operator_rbac'): {', '.join(stale[:5])}")
        return SKIP
    try:
        helm_binary = check_chart.install_helm(root)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"FAIL: {error}")
        return 1
    if helm_binary is None:
        print("SKIPPED: helm v4 cannot be installed here")
        return SKIP
    # The default values, and gang scheduling with Volcano (what the suite's Volcano tests run):
    # the rules the latter adds count as granted too.
    granted = set()
    with tempfile.TemporaryDirectory() as home:
        helm = check_chart.Helm(helm_binary, root, home)
        for values in ((), ("gangScheduling.enabled=true", "gangScheduling.provider=volcano")):
            roles = [o for o in helm.template(*values) if o.get("kind") == "ClusterRole"]
            if len(roles) != 1:
                print(f"FAIL: the values {values or 'by default'} render {len(roles)} "
                      f"ClusterRoles, expected 1")
                return 1
            granted |= {rule[:3] for rule in check_chart.flatten_rules(roles[0]["rules"])}

    print("the operator's requests in the end-to-end suite:")
    for call in sorted(used):
        print(f"  {call[2]:<7} {call[1] + ('.' + call[0] if call[0] else '')}"
              f"  ({len(used[call])} of {len(tests)} tests)")
    failures = []
    for call in sorted(set(used) - granted):
        failures.append(f"missing: the chart does not grant {call[2]} on {call[1]} "
                        f"(group '{call[0]}'), which {used[call][0]} used")
    for call in sorted(granted - set(used) - AUTHORIZATION_ONLY):
        failures.append(f"unused: the chart grants {call[2]} on {call[1]} (group '{call[0]}'), "
                        f"which no end-to-end test used")
    for call in sorted(AUTHORIZATION_ONLY - granted):
        failures.append(f"missing: {call[2]} on {call[1]} is required by the authorizer")
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print(f"OK: the chart grants exactly the {len(used)} calls the operator made, and "
              f"{len(AUTHORIZATION_ONLY)} that authorization needs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
