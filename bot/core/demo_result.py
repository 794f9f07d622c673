"""A demo's JSON result (from demos.checkpoint or demos.estimate) as a DemoResultCard: the
table every platform shows, computed once."""

from __future__ import annotations

import json
from typing import Any

from bot.core.values import DemoResultCard

MIB = 2**20
GIB = 2**30
ESTIMATE_PARTS = ("parameters", "gradients", "optimizer_state", "activations", "temporaries", "total")


def result_card(module: str, data: dict[str, Any], chart: str | None, wall_s: float) -> DemoResultCard:
    if module == "demos.checkpoint" and isinstance(data.get("results"), list):
        return _checkpoint(data, chart, wall_s)
    if module == "demos.estimate" and isinstance(data.get("without"), dict):
        return _estimate(data, wall_s)
    return DemoResultCard(
        module, f"Result of {module}", ("result",), ((json.dumps(data, default=str)[:1500],),), (), chart, wall_s, data
    )


def _checkpoint(data: dict[str, Any], chart: str | None, wall_s: float) -> DemoResultCard:
    rows = []
    baseline = next((r for r in data["results"] if r.get("strategy") == "none"), None)
    for row in data["results"]:
        share = ""
        if baseline and baseline.get("peak_bytes"):
            share = f"{row['peak_bytes'] / baseline['peak_bytes']:.2f}x"
        rows.append(
            (
                str(row["strategy"]),
                f"{row['peak_bytes'] / MIB:.2f}",
                share,
                f"{row['saved_bytes'] / MIB:.2f}",
                f"{row['step_ms']:.1f}",
                "identical" if row.get("grads_identical") else "DIFFER",
            )
        )
    theory = data.get("theory")
    notes = []
    if theory:
        notes.append(str(theory.get("text", "")) if isinstance(theory, dict) else str(theory))
    notes.append(f"Ran in {wall_s:.1f} s.")
    return DemoResultCard(
        module="demos.checkpoint",
        title=f"Checkpoint demo on {data.get('device', '?')} (torch {data.get('torch', '?')}):",
        header=("strategy", "peak MiB", "vs none", "saved MiB", "step ms", "grads"),
        rows=tuple(rows),
        notes=tuple(n for n in notes if n),
        chart=chart,
        wall_s=wall_s,
        data=data,
    )


def _estimate(data: dict[str, Any], wall_s: float) -> DemoResultCard:
    without, with_ckpt = data["without"], data.get("with_checkpointing", {})
    rows = tuple(
        (
            part.replace("_", " "),
            f"{without.get(f'{part}_bytes', 0) / GIB:.2f}",
            f"{with_ckpt.get(f'{part}_bytes', 0) / GIB:.2f}",
        )
        for part in ESTIMATE_PARTS
    )
    return DemoResultCard(
        module="demos.estimate",
        title=(
            f"Estimated peak of one training step: {data.get('preset')} batch {data.get('batch')} x "
            f"{data.get('seq')} tokens, {data.get('dtype')} (fake tensors, nothing allocated):"
        ),
        header=("", "without GiB", "with GiB"),
        rows=rows,
        notes=(str(data.get("verdict", "")),) if data.get("verdict") else (),
        chart=None,
        wall_s=wall_s,
        data=data,
    )
