"""Time the demos as whole processes, beside `python -c "import torch"` (never a test).

    .venv/bin/python bench/demo.py [--runs 3] [--charts DIR]

Each command runs --runs times as its own process; the best wall time and the largest
peak RSS (the child's ru_maxrss, from os.wait4) are printed with the ratio to the import
and the issue's targets: the default demo at most 2.8x the import and under 600 MiB, the
estimate at most 1.6x, the transformer default under 2x the blocks default, the planner for
hf-gpt2 (8 x 1,024 tokens, 24 GiB) at most 2x. With
--charts, the transformer demo with every strategy and the budget sweep writes its
timeline, memory and budget charts to DIR (their commands are printed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024**2

COMMANDS = {
    "import torch": ["-c", "import torch"],
    "demo (blocks default)": ["-m", "demos.checkpoint", "--json"],
    "demo (transformer default)": ["-m", "demos.checkpoint", "--model", "transformer", "--json"],
    "estimate gpt2-small": ["-m", "demos.estimate", "--preset", "gpt2-small", "--json"],
    "plan hf-gpt2 (24 GiB)": ["-m", "demos.plan", "--model", "hf-gpt2", "--json"],
}


def run_once(args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        assert proc.stderr is not None
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.read().decode()[-500:]}")
    return wall, int(usage.ru_maxrss) * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--charts", default=None)
    opts = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f} at start")
    best: dict[str, tuple[float, int]] = {}
    for name, args in COMMANDS.items():
        runs = [run_once(args) for _ in range(opts.runs)]
        best[name] = (min(w for w, _ in runs), max(r for _, r in runs))
    base = best["import torch"][0]
    print(f"{'command':<28}{'best s':>8}{'x import':>10}{'peak RSS MiB':>14}")
    for name, (wall, rss) in best.items():
        print(f"{name:<28}{wall:>8.2f}{wall / base:>10.2f}{rss / MIB:>14.0f}")
    demo, demo_rss = best["demo (blocks default)"]
    estimate = best["estimate gpt2-small"][0]
    transformer = best["demo (transformer default)"][0]
    print("targets:")
    print(f"  default demo <= 2.8x import: {demo / base:.2f}x {'met' if demo / base <= 2.8 else 'NOT met'}")
    print(f"  default demo < 600 MiB RSS: {demo_rss / MIB:.0f} MiB {'met' if demo_rss < 600 * MIB else 'NOT met'}")
    print(f"  estimate <= 1.6x import: {estimate / base:.2f}x {'met' if estimate / base <= 1.6 else 'NOT met'}")
    ratio = transformer / demo
    print(f"  transformer default < 2x blocks default: {ratio:.2f}x {'met' if ratio < 2 else 'NOT met'}")
    planner = best["plan hf-gpt2 (24 GiB)"][0]
    print(f"  plan hf-gpt2 <= 2x import: {planner / base:.2f}x {'met' if planner / base <= 2 else 'NOT met'}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end (other work on the machine slows every row)")
    if opts.charts:
        out = Path(opts.charts)
        out.mkdir(parents=True, exist_ok=True)
        command = [
            "-m",
            "demos.checkpoint",
            "--model",
            "transformer",
            "--strategies",
            "none,block,sqrt,selective,selective-attn,budget",
            "--chart",
            str(out / "transformer.png"),
        ]
        print("charts: python " + " ".join(command))
        subprocess.run([sys.executable, *command], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
