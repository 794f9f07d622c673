"""Record the checkpoint demo's figures (never a timed test; see TESTING.md).

    .venv/bin/python bench/demo.py [--chart-dir DIR]

1. Times the whole default CPU process (`python -m demos.checkpoint --json`) from outside.
2. Prints peak bytes per strategy, ratios against the `none` baseline of the same run,
   the agreement of the two memory meters, step times and gradient identity.
3. Runs the chain sweep 4,16,64,256 and prints the none/sqrt ratio at each depth.
Charts are written to --chart-dir (default bench/out).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024**2


def run(args: list[str]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "demos.checkpoint", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout), time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chart-dir", default=str(ROOT / "bench" / "out"))
    out_dir = Path(parser.parse_args().chart_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    report, process_s = run([])
    print(
        f"default run: {report['model']}, {report['layers']} layers, {report['tokens']} tokens "
        f"x width {report['width']}, {report['dtype']}, {report['device']}, "
        f"torch {report['torch']}, {report['threads']} threads"
    )
    print(f"whole process wall time: {process_s:.2f} s (in-process {report['wall_s']:.2f} s)")
    base = report["results"][0]
    print(
        f"{'strategy':<10}{'peak B':>12}{'check B':>12}{'meters':>9}{'vs none':>9}"
        f"{'saved B':>12}{'step ms':>9}{'vs none':>9}  grads"
    )
    for r in report["results"]:
        agree = abs(r["peak_bytes"] - r["peak_check_bytes"]) / r["peak_check_bytes"] * 100
        print(
            f"{r['strategy']:<10}{r['peak_bytes']:>12,}{r['peak_check_bytes']:>12,}"
            f"{agree:>8.2f}%{r['peak_bytes'] / base['peak_bytes']:>9.3f}"
            f"{r['saved_bytes']:>12,}{r['step_ms']:>9.1f}{r['step_ms'] / base['step_ms']:>9.2f}"
            f"  {'identical' if r['grads_identical'] else 'DIFFER'}"
        )
    print(report["theory"]["text"])

    chart, _ = run(["--repeat", "3", "--chart", str(out_dir / "checkpoint.png")])
    print(f"chart: {chart['chart']}")

    sweep, sweep_s = run(["--sweep", "4,16,64,256", "--repeat", "1", "--chart", str(out_dir / "sweep.png")])
    print(f"chain sweep (width {sweep['width']}, {sweep['tokens']} tokens), {sweep_s:.1f} s:")
    rows = {(r["layers"], r["strategy"]): r for r in sweep["results"]}
    for n in sweep["sweep"]:
        none, sq = rows[(n, "none")], rows[(n, "sqrt")]
        print(
            f"  N={n:<4} none {none['peak_bytes'] / MIB:8.1f} MiB  sqrt "
            f"{sq['peak_bytes'] / MIB:7.1f} MiB  none/sqrt {none['peak_bytes'] / sq['peak_bytes']:5.2f}x"
            f"  time sqrt/none {sq['step_ms'] / none['step_ms']:.2f}x"
        )
    print(f"chart: {sweep['chart']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
