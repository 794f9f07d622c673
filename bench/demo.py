"""Time the demos as whole processes, beside `python -c "import torch"` (never a test).

    .venv/bin/python bench/demo.py [--runs 3] [--charts DIR] [--worker-only]

Each command runs --runs times as its own process; the best wall time and the largest
peak RSS (the child's ru_maxrss, from os.wait4) are printed with the ratio to the import
and the issue's targets: the default demo at most 2.8x the import and under 600 MiB, the
estimate at most 1.6x, the transformer default under 2x the blocks default, the planner for
hf-gpt2 (8 x 1,024 tokens, 24 GiB) at most 2x. With
--charts, the transformer demo with every strategy and the budget sweep writes its
timeline, memory and budget charts to DIR (their commands are printed).

Then the demos as the worker runs them (bot/worker/demo_process.run_demo_process, what a queued
`/demo` waits for): a fresh process each against a child forked from the warm process (torch
imported once), with the demo's own measured time beside them; targets (issue 33): an estimate
and a plan for hf-gpt2 under 1 s on a warm worker, the default checkpoint demo within 1.3x of
its own time. --worker-only runs only this part.
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


WORKER_JOBS = {
    "estimate gpt2-small": ("demos.estimate", ("--preset", "gpt2-small")),
    "estimate hf-gpt2": ("demos.estimate", ("--preset", "hf-gpt2")),
    "checkpoint default": ("demos.checkpoint", ()),
    "plan hf-gpt2 (24 GiB)": ("demos.plan", ("--model", "hf-gpt2")),
}


def worker_rows(runs: int) -> None:
    """Fresh process against warm fork, best of `runs` each, as the demo worker runs them."""
    sys.path.insert(0, str(ROOT))
    from bot.worker import warm
    from bot.worker.demo_process import run_demo_process

    start = time.perf_counter()
    if warm.zygote_for(sys.executable) is None:
        raise SystemExit("the warm process did not start (see the log above)")
    print(f"warm process started (torch and the demos imported) in {time.perf_counter() - start:.2f} s, once")
    print(f"{'job':<24}{'fresh s':>9}{'warm s':>9}{'warm/fresh':>12}{'demo own s':>12}{'warm/own':>10}")
    best: dict[str, tuple[float, float, float]] = {}
    for name, (module, args) in WORKER_JOBS.items():
        times: dict[bool, list[float]] = {False: [], True: []}
        own = []
        for _ in range(runs):
            for warm_start in (False, True):
                began = time.perf_counter()
                outcome = run_demo_process(module, args, 600, warm=warm_start)
                times[warm_start].append(time.perf_counter() - began)
                if warm_start:
                    own.append(float(outcome.result.get("wall_s") or 0.0))
        fresh, warmed, inside = min(times[False]), min(times[True]), min(own)
        best[name] = (fresh, warmed, inside)
        ratio = f"{warmed / inside:>10.2f}" if inside else f"{'-':>10}"
        print(f"{name:<24}{fresh:>9.2f}{warmed:>9.2f}{warmed / fresh:>12.2f}{inside:>12.2f}{ratio}")
    warm.close_all()
    print("targets (issue 33):")
    for name in ("estimate hf-gpt2", "plan hf-gpt2 (24 GiB)"):
        warmed = best[name][1]
        print(f"  {name} on a warm worker < 1 s: {warmed:.2f} s {'met' if warmed < 1 else 'NOT met'}")
    _, warmed, inside = best["checkpoint default"]
    share = warmed / inside if inside else float("inf")
    print(f"  checkpoint default within 1.3x of its own time: {share:.2f}x {'met' if share <= 1.3 else 'NOT met'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--charts", default=None)
    parser.add_argument("--worker-only", action="store_true", help="only fresh against warm on the worker")
    opts = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f} at start")
    if opts.worker_only:
        worker_rows(opts.runs)
        return 0
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
    worker_rows(opts.runs)
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
