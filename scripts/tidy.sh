#!/usr/bin/env bash
# clang-tidy over the project's sources with the compile database of the build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
git ls-files -co --exclude-standard 'runtime/*.cc' 'launcher/*.cc' 'bench/*.cc' 'operator/*.cc' |
  xargs -r -P "$(nproc)" -n 4 clang-tidy -p "$BUILD_DIR" --quiet
