# syntax=docker/dockerfile:1
# The autodist-runtime image for GPU workers: the same two binaries as runtime.Dockerfile
# (autodist-runtime, autodist), built with the CUDA backend (gpu/) on NVIDIA's CUDA 13 images.
# The operator runs it in the pods of jobs with resources.gpusPerWorker > 0 (the chart's
# runtimeGpuImage); parameter servers and CPU jobs keep the smaller CPU image.
#
#   docker build -f docker/runtime-cuda.Dockerfile -t autodist/autodist-runtime-cuda:0.1.0 .
#
# NOT BUILT HERE: the machines that develop and test this project have no Docker engine and
# cannot pull the nvidia/cuda base images, so this file has never been built. It is checked
# statically only, by tests/deploy/check_docker.py; the first real build may need fixes.
#
# Ubuntu 24.04, not Debian: NVIDIA publishes no Debian-based CUDA images. scripts/setup.sh should
# run as it is: Ubuntu carries the packages it installs under their Debian names (the -dev ones
# kept them through 24.04's 64-bit time_t renames). The runtime libraries did not (libgrpc29t64,
# libprotobuf32t64, ...), so the final stage installs the list the build stage derives from the
# linked libraries instead of a hand-written one like the CPU image's. Ubuntu's compiler and
# libraries are also newer than bookworm's (GCC 13, yaml-cpp 0.8, spdlog 1.12): a third reason
# the first build may need fixes.
# The context is the repository root; runtime-cuda.Dockerfile.dockerignore keeps build trees out.

# devel: nvcc, the CUDA headers and libraries, NCCL's headers and library (libnccl-dev) for the
# NCCL collectives, and cuDNN's (the -cudnn- tag) for Conv's cuDNN path; from a devel image
# without cuDNN the binaries would build with Conv on im2col alone (gpu/CMakeLists.txt).
FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04 AS build
# sm_90 machine code (H100, H200) plus compute_90 PTX, which the driver compiles for newer GPUs
# on first load; add e.g. "90;100" for B200 machine code (a longer build).
ARG CUDA_ARCHITECTURES=90
WORKDIR /src
# setup.sh first and alone: this layer stays cached until the list of build packages changes.
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# Release, without tests and benchmarks: the image needs the two binaries and nothing else.
# AUTODIST_CUDA=ON rather than AUTO: a configure that misses nvcc fails instead of quietly
# building the CPU binaries into a GPU image.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
      -DAUTODIST_BUILD_TESTS=OFF -DAUTODIST_BUILD_BENCH=OFF \
      -DAUTODIST_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
 && cmake --build /build --target autodist-runtime autodist -j"$(nproc)" \
 && strip /build/bin/autodist-runtime /build/bin/autodist
# The packages owning the shared libraries the binaries link (readelf -d NEEDED), named by this
# Ubuntu release, one a line. The loader (libc6's) and the driver's libcuda.so.1, which the NVIDIA
# container toolkit mounts from the node, are no packages to install. A library that no package
# owns fails the build here rather than the pod at start-up.
RUN for binary in /build/bin/autodist-runtime /build/bin/autodist; do \
      readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; \
    done | sort -u | while read -r soname; do \
      case "$soname" in ld-linux*|libcuda.so.*) continue ;; esac; \
      path=$(ldd /build/bin/autodist-runtime /build/bin/autodist \
        | awk -v so="$soname" '$1 == so && $2 == "=>" {print $3; exit}'); \
      real=$(readlink -f "$path"); \
      package=$({ dpkg-query -S "$real" || dpkg-query -S "${real#/usr}"; } 2>/dev/null \
        | sed -n '1s/:.*//p'); \
      if [ -z "$package" ]; then \
        echo "no package provides $soname (${path:-not found})" >&2; exit 1; \
      fi; \
      echo "$package"; \
    done > /build/runtime-packages \
 && sort -u -o /build/runtime-packages /build/runtime-packages \
 && ! grep -e '-dev$' /build/runtime-packages

# runtime: the CUDA libraries the binaries load (cuBLAS/cuBLASLt, cuDNN) and NCCL (libnccl2), at
# the versions of the devel image above; same CUDA release, same Ubuntu, same cuDNN.
FROM nvidia/cuda:13.0.1-cudnn-runtime-ubuntu24.04
# FASHION_MNIST=true also installs dataset-fashion-mnist, so the examples' jobs (data.format
# fashion-mnist, default dir /usr/share/datasets/fashion-mnist) run as they are.
ARG FASHION_MNIST=true
COPY --from=build /build/runtime-packages /tmp/runtime-packages
# Only the packages not in the base image already: the CUDA libraries there are held at the
# versions of this CUDA release, and naming a held package to apt-get would fail the build.
RUN missing=$(for package in $(cat /tmp/runtime-packages); do \
      dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -qx "install ok installed" \
        || echo "$package"; \
    done) \
 && apt-get update \
 && apt-get install -y --no-install-recommends $missing \
 && if [ "${FASHION_MNIST}" = true ]; then \
      apt-get install -y --no-install-recommends dataset-fashion-mnist; \
    fi \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
# A named user for uid 65532, so tools that look the uid up find one; no home, no shell.
RUN groupadd --gid 65532 autodist \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin autodist \
 && mkdir -p /workspace && chown 65532:65532 /workspace
COPY --from=build /build/bin/autodist-runtime /usr/local/bin/autodist-runtime
COPY --from=build /build/bin/autodist /usr/local/bin/autodist
# Relative paths of a job (checkpoints, exports) land here unless the pod mounts volumes.
WORKDIR /workspace
# Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/autodist-runtime"]
