# syntax=docker/dockerfile:1
# The autodist-operator image: the controller that turns AutoDistJobs into pods
# (charts/autodist-operator deploys it).
#
#   docker build -f docker/operator.Dockerfile -t autodist/autodist-operator:0.1.0 .
#
# The context is the repository root; operator.Dockerfile.dockerignore keeps build trees out.
# tests/deploy/check_docker.py checks this file statically (no Docker engine runs in CI).

FROM debian:bookworm AS build
WORKDIR /src
# setup.sh first and alone: this layer stays cached until the list of build packages changes.
COPY scripts/setup.sh scripts/setup.sh
RUN scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
# Release, without tests and benchmarks: the image needs the operator binary and nothing else.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
      -DAUTODIST_BUILD_TESTS=OFF -DAUTODIST_BUILD_BENCH=OFF \
 && cmake --build /build --target autodist-operator -j"$(nproc)" \
 && strip /build/bin/autodist-operator

FROM debian:bookworm-slim
# Runtime packages of the libraries the operator links: the strategy compiler's (gRPC/protobuf
# for the Strategy proto, ONNX for the model's variable table, OpenBLAS through the runtime
# library), cpprestsdk and OpenSSL (libssl3) for the API server over TLS, yaml-cpp for kubeconfig and manifests, spdlog/fmt for
# logs. tests/deploy/check_docker.py compares this list with the binary's NEEDED entries once the
# binary is built. libc6, libstdc++6, libgcc-s1 and zlib1g are part of bookworm-slim already.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libabsl20220623 \
      libcpprest2.10 \
      libfmt9 \
      libgrpc++1.51 \
      libgrpc29 \
      libonnx1 \
      libopenblas0-pthread \
      libprotobuf32 \
      libspdlog1.10 \
      libssl3 \
      libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
# A named user for uid 65532, so tools that look the uid up find one; no home, no shell.
RUN groupadd --gid 65532 autodist \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin autodist
COPY --from=build /build/bin/autodist-operator /usr/local/bin/autodist-operator
# /metrics, /healthz, /readyz (the chart's metrics.port).
EXPOSE 8080
# Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/autodist-operator"]
