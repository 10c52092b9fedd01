#!/usr/bin/env python3
"""Static checks of docker/*.Dockerfile (no Docker engine runs where the tests run).

    check_docker.py static   <repository root>
        multi-stage on Debian bookworm, a bookworm-slim final stage, a numeric non-root USER,
        the build stage using scripts/setup.sh and CMake without tests and benchmarks, every
        copied binary a target of the build (BRIEF §2 names), no -dev package in the image.
    check_docker.py packages <repository root> <directory of built binaries>
        every runtime package exists in Debian bookworm (apt-cache policy), and the packages
        are exactly those providing the shared libraries the built binaries link (readelf -d);
        binaries not built yet are reported and skipped. Exit 77 (skip) when the apt package
        index is empty (run apt-get update).
"""

import pathlib
import re
import shlex
import subprocess
import sys

SKIP = 77
IMAGES = {
    "docker/operator.Dockerfile": {"binaries": ["autodist-operator"],
                                   "entrypoint": "/usr/local/bin/autodist-operator"},
    "docker/runtime.Dockerfile": {"binaries": ["autodist-runtime", "autodist"],
                                  "entrypoint": "/usr/local/bin/autodist-runtime"},
}
# In debian:bookworm-slim already (essential or required by apt/dpkg).
SLIM_BASE = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
# Installed on purpose without being linked: data the example jobs read.
EXTRAS = {"dataset-fashion-mnist"}
# GPU libraries (CUDA toolkit, NCCL, cuDNN): a build on a machine with CUDA links them, but the
# images are CPU builds on plain Debian, whose configure finds no CUDA; they are not compared.
GPU_LIBRARY = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|cudnn|nccl|nvrtc|nvToolsExt|cufft|"
                         r"curand|cusparse|cusolver|nvjitlink)[._]")
# Binaries whose CMake target is written later (issue 6: the operator); pending while the
# directory that will define it does not exist yet.
PENDING_TARGETS = {"autodist-operator": "operator"}


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

    def report(self):
        for failure in self.failures:
            print(f"FAIL: {failure}")
        print(f"{self.passed} checks ok, {len(self.failures)} failing")
        return 1 if self.failures else 0


def instructions(text):
    """(instruction, arguments) with continuation lines joined and comments dropped."""
    out = []
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        keyword, _, rest = current.partition(" ")
        out.append((keyword.upper(), rest.strip()))
        current = ""
    if current:
        keyword, _, rest = current.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def stages(parsed):
    """Lists of instructions per stage, each starting with its FROM."""
    result = []
    for keyword, args in parsed:
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, args))
    return result


def apt_packages(stage):
    """Package names given to apt-get install in a stage's RUN instructions."""
    packages = []
    for keyword, args in stage:
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;|\|\||\bthen\b|\bfi\b", args):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                after = words[words.index("install") + 1:]
                packages += [w for w in after if not w.startswith("-")]
    return packages


def cmake_targets(root):
    targets = set()
    for path in root.rglob("CMakeLists.txt"):
        relative = path.relative_to(root)
        if relative.parts[0].startswith("build") or relative.parts[0] == ".git":
            continue
        targets |= set(re.findall(r"add_executable\(\s*([\w.+-]+)", path.read_text()))
    return targets


def copied_binaries(stage):
    binaries = []
    for keyword, args in stage:
        if keyword == "COPY" and args.startswith("--from="):
            sources = shlex.split(args)[1:-1]
            binaries += [pathlib.PurePosixPath(s).name for s in sources]
    return binaries


def check_static(root):
    checker = Checker()
    targets = cmake_targets(root)
    checker.check({"autodist", "autodist-runtime"} <= targets,
                  f"the CLI and runtime targets are missing from CMake: {sorted(targets)}")
    for dockerfile, expected in IMAGES.items():
        path = root / dockerfile
        if not checker.check(path.exists(), f"{dockerfile} is missing"):
            continue
        parsed = instructions(path.read_text())
        all_stages = stages(parsed)
        name = dockerfile
        checker.check(len(all_stages) >= 2, f"{name}: not multi-stage")
        for stage in all_stages:
            image = stage[0][1].split()[0]
            checker.check(re.fullmatch(r"debian:bookworm(-slim)?(@sha256:[0-9a-f]{64})?", image),
                          f"{name}: FROM {image} is not Debian bookworm")
        build, final = all_stages[0], all_stages[-1]
        checker.check(final[0][1].split()[0].startswith("debian:bookworm-slim"),
                      f"{name}: the final stage is not debian:bookworm-slim")
        build_runs = " ".join(args for keyword, args in build if keyword == "RUN")
        checker.check("scripts/setup.sh" in build_runs,
                      f"{name}: the build stage does not install packages with scripts/setup.sh")
        for flag in ("-DAUTODIST_BUILD_TESTS=OFF", "-DAUTODIST_BUILD_BENCH=OFF"):
            checker.check(flag in build_runs, f"{name}: cmake is not given {flag}")
        built_targets = []
        words = build_runs.split()
        if "--target" in words:
            for word in words[words.index("--target") + 1:]:
                if word.startswith("-") or word == "&&":
                    break
                built_targets.append(word)
        binaries = copied_binaries(final)
        checker.check(sorted(binaries) == sorted(expected["binaries"]),
                      f"{name}: copies {binaries}, expected {expected['binaries']}")
        checker.check(sorted(built_targets) == sorted(binaries),
                      f"{name}: builds {built_targets} but copies {binaries}")
        for binary in binaries:
            if binary in targets:
                checker.passed += 1
                continue
            pending_dir = PENDING_TARGETS.get(binary)
            if pending_dir and not (root / pending_dir).exists():
                print(f"note: {name}: {binary} is not a CMake target yet ({pending_dir}/ does not "
                      "exist); it will be checked once it does")
                continue
            checker.check(False, f"{name}: copies {binary}, which no add_executable() defines")
        users = [args for keyword, args in final if keyword == "USER"]
        if checker.check(users, f"{name}: the final stage has no USER"):
            user = users[-1].split(":")[0]
            checker.check(user.isdigit() and int(user) != 0,
                          f"{name}: USER {users[-1]} is not a numeric non-root uid")
            checker.check(user == "65532", f"{name}: USER {users[-1]}, expected 65532")
            last_user = max(i for i, (k, _) in enumerate(final) if k == "USER")
            checker.check(not [k for k, _ in final[last_user:] if k == "RUN"],
                          f"{name}: RUN after USER (runs as non-root, likely to fail)")
        packages = apt_packages(final)
        checker.check(packages, f"{name}: the final stage installs no runtime packages")
        for package in packages:
            checker.check(not package.endswith("-dev") and package not in (
                "build-essential", "cmake", "g++", "gcc"),
                f"{name}: the runtime image installs the build package {package}")
        entrypoints = [args for keyword, args in final if keyword == "ENTRYPOINT"]
        checker.check(entrypoints and entrypoints[-1] == f'["{expected["entrypoint"]}"]',
                      f"{name}: ENTRYPOINT should be the exec form of {expected['entrypoint']}")
        ignore = root / f"{dockerfile}.dockerignore"
        if checker.check(ignore.exists(), f"{dockerfile}.dockerignore is missing"):
            ignored = ignore.read_text().split()
            for pattern in (".git", "build", "build-*"):
                checker.check(pattern in ignored, f"{ignore.name} does not exclude {pattern}")
    return checker.report()


def shared_library_packages(binaries):
    """NEEDED sonames of the binaries -> the Debian package installing each (None: none does)."""
    sonames = set()
    for binary in binaries:
        dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                                 check=True).stdout
        sonames |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    paths = {}
    for line in cache.splitlines():
        match = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        # 64-bit entries only (x86-64, AArch64, ...): a 32-bit copy is not what the binary loads.
        if match and "64" in match.group(2):
            paths.setdefault(match.group(1), match.group(3))
    # dpkg knows each file under one spelling: the real file or the link, with or without the
    # /usr of a merged-/usr system. One dpkg-query for all of them (each call reads every list).
    candidates = {}
    for soname in sonames:
        if soname not in paths:
            continue
        path = paths[soname]
        spellings = [str(pathlib.Path(path).resolve()), path]
        spellings += [s[4:] if s.startswith("/usr/") else "/usr" + s for s in list(spellings)]
        candidates[soname] = spellings
    owners = {}
    query = sorted({s for spellings in candidates.values() for s in spellings})
    if query:
        found = subprocess.run(["dpkg-query", "-S", *query], capture_output=True,
                               text=True).stdout
        for line in found.splitlines():
            package, _, path = line.partition(": ")
            owners[path.strip()] = package.split(":")[0].strip()
    return {soname: next((owners[s] for s in candidates.get(soname, []) if s in owners), None)
            for soname in sonames}


def known_packages(packages):
    """The subset of packages apt-cache has a candidate version of (one apt-cache call: each
    call reads the whole index)."""
    policy = subprocess.run(["apt-cache", "policy", *sorted(set(packages))], capture_output=True,
                            text=True).stdout
    known = set()
    current = None
    for line in policy.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1]
        elif current and line.strip().startswith("Candidate:"):
            if line.split(":", 1)[1].strip() != "(none)":
                known.add(current)
    return known


def check_packages(root, bin_dir):
    checker = Checker()
    lists = pathlib.Path("/var/lib/apt/lists")
    if not any(lists.glob("*_Packages*")):
        print("SKIPPED: the apt package index is empty; run `apt-get update` to check the "
              "images' Debian package names")
        return SKIP
    listed_by_image = {dockerfile: apt_packages(stages(instructions(
        (root / dockerfile).read_text()))[-1]) for dockerfile in IMAGES}
    known = known_packages(["libc6"] + [p for ps in listed_by_image.values() for p in ps])
    checker.check("libc6" in known, "apt-cache does not know libc6: is this Debian?")
    for dockerfile, expected in IMAGES.items():
        listed = listed_by_image[dockerfile]
        for package in listed:
            checker.check(package in known,
                          f"{dockerfile}: {package} is not a Debian package (apt-cache policy)")
        binaries = [bin_dir / name for name in expected["binaries"]]
        missing = [b.name for b in binaries if not b.exists()]
        if missing:
            print(f"note: {dockerfile}: {', '.join(missing)} not built in {bin_dir}; "
                  "skipping the comparison with its shared libraries")
            continue
        needed = {}
        for soname, package in sorted(shared_library_packages(binaries).items()):
            if GPU_LIBRARY.match(soname):
                print(f"note: {dockerfile}: the binaries link {soname} (a GPU build); the CPU "
                      "image does not")
                continue
            checker.check(package is not None,
                          f"{dockerfile}: no Debian package provides {soname}")
            if package:
                needed[package] = soname
        for package, soname in sorted(needed.items()):
            checker.check(package in listed or package in SLIM_BASE,
                          f"{dockerfile}: {package} ({soname}, linked by the binaries) is not "
                          "installed in the image")
        for package in listed:
            checker.check(package in needed or package in EXTRAS,
                          f"{dockerfile}: {package} is installed but no binary links it; "
                          "drop it (the image carries only what the binaries need)")
        print(f"ok: {dockerfile}: {len(needed)} packages provide the linked libraries")
    return checker.report()


def main():
    mode, root = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    if mode == "static":
        return check_static(root)
    if mode == "packages":
        return check_packages(root, pathlib.Path(sys.argv[3]))
    print(f"unknown mode {mode}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
