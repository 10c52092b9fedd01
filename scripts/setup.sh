#!/usr/bin/env bash
# Installs the Debian packages the project needs, idempotently: packages already present are not
# touched, and `apt-get update` runs only when something is missing.
#
#   scripts/setup.sh            # build + test dependencies
#   scripts/setup.sh fixtures   # also the Python tools that regenerate tests/fixtures
#   scripts/setup.sh bench      # also the peers benchmarks compare against (Open MPI for
#                               # scripts/bench-allreduce.sh); the normal build never needs them
#   scripts/setup.sh device     # also what scripts/device-check.sh needs to pack a GPU bundle
#   scripts/setup.sh browser    # also Chromium, for the browser tests (make test-browser)
#   scripts/setup.sh fuzz       # also clang and its libFuzzer and sanitizer runtimes (make fuzz)
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config lld
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc libssl-dev
  libonnx-dev
  libgloo-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libcpprest-dev
  libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  zlib1g-dev
  python3-yaml python3-onnx
  iproute2
)
FIXTURE_PACKAGES=(python3-torch python3-onnx python3-protobuf)
BENCH_PACKAGES=(openmpi-bin libopenmpi-dev)
DEVICE_PACKAGES=(patchelf xz-utils)
BROWSER_PACKAGES=(chromium)
FUZZ_PACKAGES=(clang-14 libclang-rt-14-dev)

packages=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  fixtures) packages+=("${FIXTURE_PACKAGES[@]}") ;;
  bench) packages+=("${BENCH_PACKAGES[@]}") ;;
  device) packages+=("${DEVICE_PACKAGES[@]}") ;;
  browser) packages+=("${BROWSER_PACKAGES[@]}") ;;
  fuzz) packages+=("${FUZZ_PACKAGES[@]}") ;;
esac

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ "$(id -u)" != "0" ]]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
