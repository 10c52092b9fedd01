#!/usr/bin/env bash
# clang-format every C++ file of the project in place (the repo's .clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -co --exclude-standard '*.h' '*.cc' '*.cu' '*.cuh' | xargs -r clang-format -i
