# syntax=docker/dockerfile:1
# The autodist-runtime image: the process of every parameter-server and worker pod
# (autodist-runtime), plus the autodist CLI for inspecting models and strategies inside a pod.
# CPU only: Debian bookworm has no CUDA/NCCL; GPU pods need an image built on a CUDA base.
#
#   docker build -f docker/runtime.Dockerfile -t autodist/autodist-runtime:0.1.0 .
#
# The context is the repository root; runtime.Dockerfile.dockerignore keeps build trees out.
# tests/deploy/check_docker.py checks this file statically (no Docker engine runs in CI).

FROM debian:bookworm AS build
WORKDIR /src
# setup.sh first and alone: this layer stays cached until the list of build packages changes.
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# Release, without tests and benchmarks: the image needs the two binaries and nothing else.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
      -DAUTODIST_BUILD_TESTS=OFF -DAUTODIST_BUILD_BENCH=OFF \
 && cmake --build /build --target autodist-runtime autodist -j"$(nproc)" \
 && strip /build/bin/autodist-runtime /build/bin/autodist

FROM debian:bookworm-slim
# The runtime packages of exactly the shared libraries the binaries link (readelf -d NEEDED);
# tests/deploy/check_docker.py compares this list with the built binaries. libc6, libstdc++6,
# libgcc-s1 and zlib1g are part of bookworm-slim already.
# FASHION_MNIST=true also installs Debian's dataset-fashion-mnist, so the examples' jobs
# (data.format fashion-mnist, default dir /usr/share/datasets/fashion-mnist) run as they are.
ARG FASHION_MNIST=true
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libabsl20220623 \
      libcpprest2.10 \
      libfmt9 \
      libgloo0 \
      libgrpc++1.51 \
      libgrpc29 \
      libonnx1 \
      libopenblas0-pthread \
      libprotobuf32 \
      libssl3 \
      libyaml-cpp0.7 \
 && if [ "${FASHION_MNIST}" = true ]; then \
      apt-get install -y --no-install-recommends dataset-fashion-mnist; \
    fi \
 && rm -rf /var/lib/apt/lists/*
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
