#!/usr/bin/env bash
# Check the demo's GPU path on a real NVIDIA GPU, in one go (the caps below add up to under 10 minutes).
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

echo "== demo, default size (blocks), every strategy"
timeout 80 "$PY" -m demos.checkpoint --device cuda --strategies none,block,sqrt,selective,offload \
  --repeat 5 --json $(chart default.png) > "$DEST/default.json" || status=1

echo "== transformer, default size, every strategy and the budget sweep (inductor)"
timeout 90 "$PY" -m demos.checkpoint --device cuda --model transformer \
  --strategies none,block,sqrt,selective,selective-attn,offload,budget --budgets 1.0,0.5,0.2,0.0 \
  --repeat 5 --time-budget 300 --json $(chart transformer.png) > "$DEST/transformer.json" || status=1

echo "== transformer, GPT-2-small size: 12 layers, width 768, 12 heads, batch 8 x 1024 tokens"
timeout 100 "$PY" -m demos.checkpoint --device cuda --model transformer --layers 12 --width 768 --heads 12 \
  --batch 8 --tokens 1024 --strategies none,block,selective,selective-attn,offload,budget \
  --budgets 1.0,0.5,0.2,0.0 --repeat 3 --time-budget 330 --json $(chart gpt2-transformer.png) \
  > "$DEST/gpt2-transformer.json" || status=1

echo "== demo, chain sweep"
timeout 30 "$PY" -m demos.checkpoint --device cuda --sweep 4,16,64,256 --repeat 3 --json \
  $(chart sweep.png) > "$DEST/sweep.json" || status=1

echo "== estimate, gpt2-small batch 8 x 1024 (fake tensors, CUDA kernels)"
timeout 30 "$PY" -m demos.estimate --preset gpt2-small --batch 8 --seq 1024 --gpu-gib 139 --json \
  > "$DEST/estimate-gpt2-small.json" || status=1

if "$PY" -c 'import transformers' 2>/dev/null; then
  echo "== hf-gpt2 at the Mosaic tutorial's settings (batch 4 x 512): estimate, then measured step"
  timeout 40 "$PY" -m demos.estimate --preset hf-gpt2 --batch 4 --seq 512 --gpu-gib 139 --json \
    > "$DEST/estimate-hf-gpt2.json" || status=1
  timeout 60 "$PY" -m demos.checkpoint --device cuda --model hf-gpt2 --layers 12 --width 768 --heads 12 \
    --batch 4 --tokens 512 --strategies none,block --repeat 3 --time-budget 300 --json \
    > "$DEST/hf-gpt2.json" || status=1
  # the planner at 8 x 1,024 with a budget that forces checkpointing, then its plan run on the GPU
  echo "== planner: hf-gpt2 and gpt2-medium (plan from fake tensors, then the printed code run on CUDA)"
  timeout 35 "$PY" -m demos.plan --model hf-gpt2 --gpu-gib 12 --margin-gib 0 --measure-cuda --json \
    > "$DEST/plan-hf-gpt2.json" || status=1
  timeout 35 "$PY" -m demos.plan --model gpt2-medium --batch 4 --gpu-gib 16 --margin-gib 0 --measure-cuda --json \
    > "$DEST/plan-gpt2-medium.json" || status=1
else
  echo "== transformers not installed here: hf-gpt2 and the planner skipped"
fi

echo "== pytest -m gpu"
timeout 45 "$PY" -m pytest tests/demos -m gpu -q -p no:cacheprovider 2>&1 | tail -15 \
  | tee "$DEST/pytest-gpu.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== pytest -m gpu tests/facts (the question bank's facts that need a GPU)"
# --confcutdir: only tests/facts/conftest.py, so the bot's own dependencies are not needed
timeout 45 "$PY" -m pytest tests/facts -m gpu -q -rs -p no:cacheprovider --confcutdir tests/facts 2>&1 \
  | tail -20 | tee "$DEST/pytest-gpu-facts.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== table (estimate = fake-tensor trace of the same stack; peak = max_memory_allocated - baseline)"
"$PY" - "$DEST" <<'PYEOF' || status=1
import json, sys, pathlib
dest = pathlib.Path(sys.argv[1])
M = 1024 ** 2
for name in ("default", "transformer", "gpt2-transformer", "sweep", "hf-gpt2"):
    path = dest / f"{name}.json"
    if not path.exists() or not path.read_text().strip():
        print(f"{name}: no result"); continue
    r = json.loads(path.read_text())
    shape = f"batch {r.get('batch', 1)} x {r['tokens']} tokens" if r.get("heads") else f"{r['tokens']} tokens"
    print(f"{name}: {r['model']} {r['layers']} layers, {shape} x {r['width']}, "
          f"{r['dtype']}, {r['device']}, torch {r['torch']}, {r['wall_s']} s")
    base = {x.get("layers"): x for x in r["results"] if x["strategy"] == "none"}
    print(f"  {'strategy':<15}{'N':>4}{'peak MiB':>10}{'timeline':>10}{'meter':>9}{'est MiB':>9}{'err':>8}"
          f"{'reserved':>10}{'vs none':>8}{'ms':>8}  grads")
    for x in r["results"]:
        b = base[x.get("layers")]
        est, err = x.get("estimate_bytes"), x.get("estimate_error_pct")
        line = x.get("timeline") or {}
        top = max(line.get("live_bytes") or [0])
        grads = "identical" if x["grads_identical"] else f"diff {x.get('grad_max_diff', 0):.1e}"
        print(f"  {x.get('label') or x['strategy']:<15}{x.get('layers') or r['layers']:>4}{x['peak_bytes']/M:>10.1f}"
              f"{top/M:>10.1f}{(x['peak_check_bytes'] or 0)/M:>9.1f}{(est or 0)/M:>9.1f}"
              f"{'' if err is None else f'{err:+.1f}%':>8}{(x['reserved_bytes'] or 0)/M:>10.1f}"
              f"{x['peak_bytes']/b['peak_bytes']:>8.2f}{x['step_ms']:>8.1f}  {grads}")
for name in ("plan-hf-gpt2", "plan-gpt2-medium"):
    e = dest / f"{name}.json"
    if e.exists() and e.read_text().strip():
        j = json.loads(e.read_text())
        m = j.get("measured") or {}
        if m:
            print(f"{name}: {j['chosen']}: predicted {m['predicted_peak_bytes']/2**30:.2f} GiB, measured "
                  f"{m['measured_peak_bytes']/2**30:.2f} GiB ({m['error_pct']:+.1f}%), reserved {m['reserved_peak_bytes']/2**30:.2f} GiB")
        else:
            print(f"{name}: {j['sentence']}")
for name in ("estimate-gpt2-small", "estimate-hf-gpt2"):
    e = dest / f"{name}.json"
    if e.exists() and e.read_text().strip():
        j = json.loads(e.read_text())
        print(f"{name} {j['batch']}x{j['seq']} ({j.get('kernels')} kernels): "
              f"{j['without']['total_bytes']/2**30:.2f} GiB without, "
              f"{j['with_checkpointing']['total_bytes']/2**30:.2f} GiB with checkpointing; {j['verdict']}")
        if j.get("reference"):
            ref = j["reference"]
            print(f"  optimizer state + step peak: {ref['estimate_without_gib']} / {ref['estimate_with_gib']} GiB; "
                  f"{ref['source']}: {ref['without_gib']} / {ref['with_gib']} GiB")
PYEOF
exit $status
