#!/usr/bin/env bash
# Installs the Debian packages the project needs, idempotently: packages already present are not
# touched, and `apt-get update` runs only when something is missing.
#
#   scripts/setup.sh            # build + test dependencies
#   scripts/setup.sh fixtures   # also the Python tools that regenerate tests/fixtures
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake pkg-config
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libonnx-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  zlib1g-dev
)
FIXTURE_PACKAGES=(python3-torch python3-onnx python3-protobuf)

packages=("${BUILD_PACKAGES[@]}")
if [[ "${1:-}" == "fixtures" ]]; then
  packages+=("${FIXTURE_PACKAGES[@]}")
fi

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
