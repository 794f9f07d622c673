#!/usr/bin/env bash
# Check the demo's GPU path on a real NVIDIA GPU, in one go (well inside 10 minutes).
# Run from anywhere; uses the repo root. Needs only python with torch (matplotlib optional).
# Writes JSON and charts under $OUT if set, else ./gpu-out; prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
DEST="${OUT:-./gpu-out}"
mkdir -p "$DEST"
status=0

echo "== environment"
nvidia-smi || echo "nvidia-smi not found"
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available()); print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'
"$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' || { echo "no CUDA GPU: nothing to check"; exit 1; }
"$PY" -c 'import matplotlib' 2>/dev/null && CHART=1 || { CHART=0; echo "matplotlib missing: no charts"; }
chart() { [ "$CHART" = 1 ] && echo "--chart $DEST/$1"; }

echo "== demo, default size, every strategy"
timeout 150 "$PY" -m demos.checkpoint --device cuda --strategies none,block,sqrt,selective,offload \
  --repeat 5 --json $(chart default.png) > "$DEST/default.json" || status=1

echo "== demo, GPT-2-small-sized stack: 12 blocks, width 768, batch 8 x 1024 = 8192 tokens"
timeout 200 "$PY" -m demos.checkpoint --device cuda --layers 12 --width 768 --tokens 8192 \
  --strategies none,block,sqrt,selective,offload --repeat 5 --json $(chart gpt2-stack.png) \
  > "$DEST/gpt2-stack.json" || status=1

echo "== demo, chain sweep"
timeout 100 "$PY" -m demos.checkpoint --device cuda --sweep 4,16,64,256 --repeat 3 --json \
  $(chart sweep.png) > "$DEST/sweep.json" || status=1

echo "== estimate, gpt2-small batch 8 x 1024 (fake tensors)"
timeout 100 "$PY" -m demos.estimate --preset gpt2-small --batch 8 --seq 1024 --gpu-gib 139 --json \
  > "$DEST/estimate-gpt2-small.json" || status=1

echo "== pytest -m gpu"
timeout 120 "$PY" -m pytest tests/demos -m gpu -q -p no:cacheprovider 2>&1 | tail -15 \
  | tee "$DEST/pytest-gpu.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== table (estimate = fake-tensor trace of the same stack; peak = max_memory_allocated - baseline)"
"$PY" - "$DEST" <<'PYEOF' || status=1
import json, sys, pathlib
dest = pathlib.Path(sys.argv[1])
M = 1024 ** 2
for name in ("default", "gpt2-stack", "sweep"):
    path = dest / f"{name}.json"
    if not path.exists() or not path.read_text().strip():
        print(f"{name}: no result"); continue
    r = json.loads(path.read_text())
    print(f"{name}: {r['model']} {r['layers']} layers, {r['tokens']} tokens x {r['width']}, "
          f"{r['dtype']}, {r['device']}, torch {r['torch']}, {r['wall_s']} s")
    base = {x.get("layers"): x for x in r["results"] if x["strategy"] == "none"}
    print(f"  {'strategy':<10}{'N':>5}{'peak MiB':>10}{'meter MiB':>10}{'est MiB':>9}"
          f"{'reserved':>10}{'vs none':>8}{'ms':>9}  grads")
    for x in r["results"]:
        b = base[x.get("layers")]
        est = x.get("estimate_bytes")
        print(f"  {x['strategy']:<10}{x.get('layers') or r['layers']:>5}{x['peak_bytes']/M:>10.1f}"
              f"{x['peak_check_bytes']/M:>10.1f}{(est or 0)/M:>9.1f}{(x['reserved_bytes'] or 0)/M:>10.1f}"
              f"{x['peak_bytes']/b['peak_bytes']:>8.2f}{x['step_ms']:>9.1f}  "
              f"{'identical' if x['grads_identical'] else 'DIFFER'}")
e = dest / "estimate-gpt2-small.json"
if e.exists() and e.read_text().strip():
    j = json.loads(e.read_text())
    print(f"estimate gpt2-small 8x1024: {j['without']['total_bytes']/2**30:.2f} GiB without, "
          f"{j['with_checkpointing']['total_bytes']/2**30:.2f} GiB with checkpointing; {j['verdict']}")
PYEOF
exit $status
