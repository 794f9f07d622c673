# syntax=docker/dockerfile:1
# Two images from one file (docs/deploy.md; compose.yaml builds both):
#
#   docker build --target bot -t studybot .
#       the bot: Discord, Slack, the console chat and the web page on 8080; no torch
#   docker build --target worker -t studybot-worker .
#       a Celery demo worker (`studybot worker`): torch, the CPU wheel
#   docker build --target worker -t studybot-worker:cuda \
#       --build-arg WORKER_BASE=nvidia/cuda:12.6.3-runtime-ubuntu22.04 \
#       --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu126 .
#       the same worker on a CUDA base with a CUDA build of torch, for a GPU host
#
# Both run as the non-root user studybot (uid and gid 10001); the bot keeps its SQLite database and
# demo charts in the volume /data. Base images are pinned to an exact tag; pin a digest too
# (PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:...) where your registry policy asks.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
ARG WORKER_BASE=${PYTHON_IMAGE}

# ------------------------------------------------------------------ the bot's environment
FROM ${PYTHON_IMAGE} AS bot-build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY bot ./bot
COPY demos ./demos
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install '.[postgres]'

# ------------------------------------------------------------------ the bot
FROM ${PYTHON_IMAGE} AS bot
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    STUDYBOT_DATABASE_URL=sqlite:////data/studybot.db \
    STUDYBOT_QUESTIONS_DIR=/app/questions \
    STUDYBOT_DEMO_OUT_DIR=/data/demo-out \
    STUDYBOT_WEB_PORT=8080
RUN groupadd --gid 10001 studybot \
    && useradd --create-home --uid 10001 --gid 10001 studybot \
    && mkdir -p /data \
    && chown studybot:studybot /data
COPY --from=bot-build /opt/venv /opt/venv
WORKDIR /app
COPY questions ./questions
# The bank names its executable facts; the loader checks that they exist.
COPY tests/facts ./tests/facts
USER 10001:10001
VOLUME ["/data"]
# 8080: the web page and /healthz; 3000: Slack over HTTP (/slack/events), when used.
EXPOSE 8080 3000
# Asks the running bot (its event loop answers /healthz), not only whether the process exists.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["studybot", "health"]
ENTRYPOINT ["studybot"]
CMD ["run"]

# ------------------------------------------------------------------ the worker's base
FROM ${WORKER_BASE} AS worker-base
# The python image has Python 3.11; a CUDA (Ubuntu 22.04) base gets it from the distribution.
# hadolint ignore=DL3008
RUN if ! command -v python3.11 >/dev/null 2>&1; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            python3.11 python3.11-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --gid 10001 studybot \
    && useradd --create-home --uid 10001 --gid 10001 studybot

# ------------------------------------------------------------------ the worker's environment
FROM worker-base AS worker-build
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG TORCH_VERSION=2.13.0
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY bot ./bot
COPY demos ./demos
RUN python3.11 -m venv /opt/venv \
    && /opt/venv/bin/pip install --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}" \
    && /opt/venv/bin/pip install '.[demo,postgres]'

# ------------------------------------------------------------------ the worker
FROM worker-base AS worker
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    STUDYBOT_WORKER=celery \
    STUDYBOT_REDIS_URL=redis://redis:6379/0
COPY --from=worker-build /opt/venv /opt/venv
WORKDIR /home/studybot
USER 10001:10001
ENTRYPOINT ["studybot"]
CMD ["worker", "--queues", "demos"]
