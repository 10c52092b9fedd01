#!/usr/bin/env python3
"""Static checks of docker/*.Dockerfile (no Docker engine runs where the tests run).

    check_docker.py static   <repository root>
        every image: multi-stage, a numeric non-root USER (65532) with no RUN after it, the build
        stage using scripts/setup.sh and CMake without tests and benchmarks, every copied binary
        a target of the build (BRIEF §2 names), no -dev package in the image, the exec-form
        ENTRYPOINT, a .dockerignore keeping build trees out.
        The CPU images (operator, runtime): every stage on Debian bookworm, the final one on
        bookworm-slim.
        The CUDA image (runtime-cuda): built on an nvidia/cuda devel image and finished on the
        nvidia/cuda runtime image of the same CUDA release, Ubuntu release and cuDNN flavour
        (the cudnn one when CMake links cuDNN); CMake with AUTODIST_CUDA=ON and
        CMAKE_CUDA_ARCHITECTURES covering sm_90 (H100, H200); a runtime package list derived in
        the build stage that refuses -dev packages; a header saying the image has not been built
        here (nothing here can build it, so a reader must not take it as tried).
    check_docker.py packages <repository root> <directory of built binaries>
        every runtime package of the CPU images exists in Debian bookworm (apt-cache policy), and
        the packages are exactly those providing the shared libraries the built binaries link
        (readelf -d); binaries not built yet are reported and skipped. Exit 77 (skip) when the
        apt package index is empty (run apt-get update). The CUDA image is skipped: its base is
        Ubuntu, not bookworm, and its build stage derives its package list from the libraries
        it links.
"""

import pathlib
import re
import shlex
import subprocess
import sys

SKIP = 77
IMAGES = {
    "docker/operator.Dockerfile": {"base": "debian", "binaries": ["autodist-operator"],
                                   "entrypoint": "/usr/local/bin/autodist-operator"},
    "docker/runtime.Dockerfile": {"base": "debian", "binaries": ["autodist-runtime", "autodist"],
                                  "entrypoint": "/usr/local/bin/autodist-runtime"},
    "docker/runtime-cuda.Dockerfile": {"base": "cuda",
                                       "binaries": ["autodist-runtime", "autodist"],
                                       "entrypoint": "/usr/local/bin/autodist-runtime"},
}
# nvidia/cuda:<CUDA release>-[cudnn-]<devel|runtime>-<OS release>, optionally pinned by digest.
CUDA_IMAGE = re.compile(r"nvidia/cuda:(?P<cuda>\d+\.\d+\.\d+)-(?P<cudnn>cudnn-)?"
                        r"(?P<flavour>devel|runtime)-(?P<os>ubuntu\d+\.\d+)"
                        r"(@sha256:[0-9a-f]{64})?")
# CMake that links cuDNN (then the images must be the -cudnn- ones).
CMAKE_CUDNN = re.compile(r"(?i)CUDA::cudnn|CUDNN::|(find_library|find_package|pkg_check_modules)"
                         r"\([^)]*cudnn")
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
            try:
                words = shlex.split(command)
            except ValueError:  # a quote split above (a ; inside an awk program, say)
                words = command.split()
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
    """Files copied from another stage into /usr/local/bin (other copies are data, such as the
    CUDA image's package list)."""
    binaries = []
    for keyword, args in stage:
        if keyword == "COPY" and args.startswith("--from="):
            words = shlex.split(args)
            if not words[-1].startswith("/usr/local/bin"):
                continue
            binaries += [pathlib.PurePosixPath(s).name for s in words[1:-1]]
    return binaries


def stage_image(stage):
    """The image a stage starts FROM (flags such as --platform skipped)."""
    return next(w for w in stage[0][1].split() if not w.startswith("--"))


def expand_args(stage, text):
    """text with the stage's ARG defaults substituted for $NAME and ${NAME}."""
    defaults = {}
    for keyword, args in stage:
        if keyword == "ARG":
            name, _, value = args.partition("=")
            defaults[name.strip()] = value.strip().strip('"')
    return re.sub(r"\$\{?(\w+)\}?", lambda m: defaults.get(m.group(1), m.group(0)), text)


def links_cudnn(root):
    for path in list(root.rglob("CMakeLists.txt")) + list(root.glob("cmake/*.cmake")):
        relative = path.relative_to(root)
        if relative.parts[0].startswith("build") or relative.parts[0] == ".git":
            continue
        if CMAKE_CUDNN.search(path.read_text()):
            return True
    return False


def check_debian_bases(checker, name, all_stages):
    for stage in all_stages:
        image = stage_image(stage)
        checker.check(re.fullmatch(r"debian:bookworm(-slim)?(@sha256:[0-9a-f]{64})?", image),
                      f"{name}: FROM {image} is not Debian bookworm")
    checker.check(stage_image(all_stages[-1]).startswith("debian:bookworm-slim"),
                  f"{name}: the final stage is not debian:bookworm-slim")


def check_cuda_image(checker, root, name, text, all_stages):
    """The rules of the CUDA image beyond those of every image."""
    build, final = all_stages[0], all_stages[-1]
    images = [stage_image(stage) for stage in all_stages]
    matches = [CUDA_IMAGE.fullmatch(image) for image in images]
    for image, match in zip(images, matches):
        checker.check(match, f"{name}: FROM {image} is not an nvidia/cuda image")
    first, last = matches[0], matches[-1]
    if checker.check(first and first["flavour"] == "devel",
                     f"{name}: the build stage is not on an nvidia/cuda devel image (nvcc): "
                     f"{images[0]}"):
        checker.check(int(first["cuda"].split(".")[0]) >= 13,
                      f"{name}: CUDA {first['cuda']} is older than 13, the toolkit the CUDA "
                      "backend is built and tested with")
    if checker.check(last and last["flavour"] == "runtime",
                     f"{name}: the final stage is not on an nvidia/cuda runtime image: "
                     f"{images[-1]}") and first:
        # The binaries load the CUDA libraries of the release they were compiled against.
        for part in ("cuda", "os", "cudnn"):
            checker.check(first[part] == last[part],
                          f"{name}: the build stage ({images[0]}) and the final stage "
                          f"({images[-1]}) differ in {part}")
    if links_cudnn(root):
        checker.check(last and last["cudnn"],
                      f"{name}: CMake links cuDNN but {images[-1]} is not a -cudnn- image")
    build_runs = expand_args(build, " ".join(args for keyword, args in build if keyword == "RUN"))
    checker.check("-DAUTODIST_CUDA=ON" in build_runs,
                  f"{name}: cmake is not given -DAUTODIST_CUDA=ON (AUTO would build a CPU binary "
                  "where nvcc is missing)")
    architectures = re.search(r"-DCMAKE_CUDA_ARCHITECTURES=\"?([^\"\s]+)", build_runs)
    if checker.check(architectures, f"{name}: cmake is not given CMAKE_CUDA_ARCHITECTURES"):
        entries = architectures.group(1).split(";")
        checker.check(any(re.fullmatch(r"90(-real|-virtual)?|all|all-major", e) for e in entries),
                      f"{name}: CMAKE_CUDA_ARCHITECTURES={architectures.group(1)} has no sm_90 "
                      "(H100, H200)")
    # The runtime packages come as a list the build stage derives ($variable words); that
    # derivation must refuse -dev packages, since this file cannot name them one by one.
    if any(p.startswith("$") for p in apt_packages(final)):
        checker.check(any(k == "COPY" and a.startswith("--from=") and
                          not a.split()[-1].startswith("/usr/local/bin") for k, a in final),
                      f"{name}: the final stage installs a derived package list but copies none "
                      "from the build stage")
        checker.check("-dev$" in build_runs,
                      f"{name}: the build stage's derived package list does not refuse -dev "
                      "packages")
    header = text.split("\nFROM", 1)[0]
    checker.check(re.search(r"(?i)not (been )?built here", header),
                  f"{name}: the header does not say that the image has not been built here")
    checker.check("check_docker.py" in header,
                  f"{name}: the header does not say what checks it (tests/deploy/check_docker.py)")


def check_static(root):
    checker = Checker()
    targets = cmake_targets(root)
    checker.check({"autodist", "autodist-runtime"} <= targets,
                  f"the CLI and runtime targets are missing from CMake: {sorted(targets)}")
    for dockerfile, expected in IMAGES.items():
        path = root / dockerfile
        if not checker.check(path.exists(), f"{dockerfile} is missing"):
            continue
        text = path.read_text()
        parsed = instructions(text)
        all_stages = stages(parsed)
        name = dockerfile
        checker.check(len(all_stages) >= 2, f"{name}: not multi-stage")
        if not all_stages:
            continue
        if expected["base"] == "cuda":
            check_cuda_image(checker, root, name, text, all_stages)
        else:
            check_debian_bases(checker, name, all_stages)
        build, final = all_stages[0], all_stages[-1]
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
    debian_images = {d: e for d, e in IMAGES.items() if e["base"] == "debian"}
    for dockerfile in sorted(set(IMAGES) - set(debian_images)):
        print(f"note: {dockerfile}: skipped (not a Debian bookworm image; its build stage derives "
              "its package list from the linked libraries)")
    listed_by_image = {dockerfile: apt_packages(stages(instructions(
        (root / dockerfile).read_text()))[-1]) for dockerfile in debian_images}
    known = known_packages(["libc6"] + [p for ps in listed_by_image.values() for p in ps])
    checker.check("libc6" in known, "apt-cache does not know libc6: is this Debian?")
    for dockerfile, expected in debian_images.items():
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
