# reconciler as a container image: `docker build -t reconciler .`, then
#   docker run --rm -e RECONCILER_API_KEY -e RECONCILER_BASE_URL -v "$PWD/manifests:/manifests:ro" \
#     reconciler plan /manifests
# Multi-stage: the build stage makes wheels (the package and the exact versions of requirements.lock);
# the runtime stage installs them offline, with git (for `watch --git-pull` and `--since`), and runs
# as an unprivileged user.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE requirements.lock ./
COPY reconciler ./reconciler
# the exact versions of requirements.lock (`make lock`), the emulator's server stack included
RUN pip wheel --wheel-dir /wheels -c requirements.lock '.[emulator]'

FROM ${PYTHON_IMAGE}
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 reconciler \
    && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin reconciler
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-index --find-links /tmp/wheels 'reconciler[emulator]' && rm -rf /tmp/wheels
USER 10001:10001
WORKDIR /home/reconciler
# watch --metrics-addr 0.0.0.0:9108 serves /metrics, /healthz and /readyz here
EXPOSE 9108
ENTRYPOINT ["reconciler"]
CMD ["--help"]
