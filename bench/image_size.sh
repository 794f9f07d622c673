#!/usr/bin/env bash
# Build the bot image (and, with --worker, the CPU worker image) and print their sizes.
# Needs a Docker engine; where none answers, says so and exits 3 (nothing measured).
#   bash bench/image_size.sh            # the bot image
#   bash bench/image_size.sh --worker   # the bot and the CPU worker images
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER="${DOCKER:-docker}"
if ! command -v "$DOCKER" >/dev/null 2>&1; then
  echo "no docker client here: the image size cannot be measured on this machine"
  exit 3
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "no Docker engine answers here ($DOCKER info failed): the image size cannot be measured on this machine"
  exit 3
fi
targets=(bot)
[ "${1:-}" = "--worker" ] && targets+=(worker)
for target in "${targets[@]}"; do
  tag="studybot-size-check:$target"
  "$DOCKER" build --quiet --target "$target" -t "$tag" . >/dev/null
  bytes=$("$DOCKER" image inspect --format '{{.Size}}' "$tag")
  awk -v t="$target" -v b="$bytes" 'BEGIN { printf "%s image: %d bytes (%.1f MiB)\n", t, b, b / 1048576 }'
done
