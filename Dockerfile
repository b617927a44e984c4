# reconciler as a container image: `docker build -t reconciler .`, then
#   docker run --rm -e RECONCILER_API_KEY -e RECONCILER_BASE_URL -v "$PWD/manifests:/manifests:ro" \
#     reconciler plan /manifests
# Multi-stage: the build stage makes a virtual environment in /opt/reconciler: pip and setuptools from
# requirements-pip.lock, then every dependency from requirements.lock, all with `--require-hashes` (the exact
# versions and the sha256 of each file, `make lock`), then the package itself without dependencies. The
# runtime stage copies that environment, adds git (for `watch --git-pull` and `--since`), and runs as an
# unprivileged user.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE requirements-pip.lock requirements.lock ./
COPY reconciler ./reconciler
# the emulator's server stack is in requirements.lock too; the package has no hash, hence --no-deps (nothing
# unpinned comes in) and --no-build-isolation (built by the setuptools just checked)
RUN python -m venv /opt/reconciler \
    && /opt/reconciler/bin/pip install --require-hashes -r requirements-pip.lock \
    && /opt/reconciler/bin/pip install --require-hashes -r requirements.lock \
    && /opt/reconciler/bin/pip install --no-deps --no-build-isolation .

FROM ${PYTHON_IMAGE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PATH=/opt/reconciler/bin:$PATH
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 reconciler \
    && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin reconciler
COPY --from=build /opt/reconciler /opt/reconciler
USER 10001:10001
WORKDIR /home/reconciler
# watch --metrics-addr 0.0.0.0:9108 serves /metrics, /healthz and /readyz here
EXPOSE 9108
ENTRYPOINT ["reconciler"]
CMD ["--help"]
