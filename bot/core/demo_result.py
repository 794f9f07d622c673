"""A demo's JSON result (from demos.checkpoint or demos.estimate) as a DemoResultCard: the
table every platform shows, computed once."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bot.core.records import DemoJobRecord
from bot.core.values import ChannelRef, DemoFailedCard, DemoProgressCard, DemoResultCard

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


CHECKPOINT_HEADER = ("strategy", "peak MiB", "vs none", "saved MiB", "step ms", "grads")


def checkpoint_rows(results: list[dict[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """One table row per measured strategy, its peak beside the `none` baseline's."""
    rows = []
    baseline = next((r for r in results if r.get("strategy") == "none"), None)
    for row in results:
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
    return tuple(rows)


def _checkpoint(data: dict[str, Any], chart: str | None, wall_s: float) -> DemoResultCard:
    rows = checkpoint_rows(data["results"])
    theory = data.get("theory")
    notes = []
    if theory:
        notes.append(str(theory.get("text", "")) if isinstance(theory, dict) else str(theory))
    notes.append(f"Ran in {wall_s:.1f} s.")
    return DemoResultCard(
        module="demos.checkpoint",
        title=f"Checkpoint demo on {data.get('device', '?')} (torch {data.get('torch', '?')}):",
        header=CHECKPOINT_HEADER,
        rows=rows,
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


def where_text(info: dict[str, Any]) -> str | None:
    """'NVIDIA H200 (139.8 GiB), torch 2.13.0, 16 CPU threads' from a worker's start event."""
    if not info:
        return None
    parts = [str(info.get("device", "?"))]
    memory = info.get("memory_bytes")
    if isinstance(memory, int) and memory > 0:
        parts[0] += f" ({memory / GIB:.1f} GiB)"
    if info.get("torch"):
        parts.append(f"torch {info['torch']}")
    if info.get("threads"):
        parts.append(f"{info['threads']} CPU threads")
    if info.get("worker"):
        parts.append(f"worker {info['worker']}")
    return ", ".join(parts)


def _progress(job: DemoJobRecord) -> dict[str, Any]:
    try:
        data = json.loads(job.progress or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def progress_card(job: DemoJobRecord) -> DemoProgressCard:
    """A running demo's rows so far."""
    progress = _progress(job)
    rows = [r for r in progress.get("rows", []) if isinstance(r, dict)]
    total = int(progress.get("total") or max(len(rows), 1))
    is_checkpoint = job.module == "demos.checkpoint"
    return DemoProgressCard(
        job_id=job.id,
        module=job.module,
        channel=ChannelRef(job.platform, job.community, job.channel_id),
        message_ref=job.message_ref,
        title=f"{job.module.removeprefix('demos.')} for {job.user_name}",
        header=CHECKPOINT_HEADER if is_checkpoint else ("step",),
        rows=checkpoint_rows(rows) if is_checkpoint else tuple((str(i + 1),) for i in range(len(rows))),
        done=len(rows),
        total=total,
    )


def outcome_card(job: DemoJobRecord) -> DemoResultCard | DemoFailedCard:
    """What is posted when a demo ends: its result table, or why it did not finish."""
    if job.state != "done" or not job.result:
        reason = job.error or "it stopped without a result."
        return DemoFailedCard(job_id=job.id, module=job.module, text=reason, message_ref=job.message_ref)
    data = json.loads(job.result)
    wall = float(data.get("wall_s") or 0.0)
    if not wall and job.started_at and job.finished_at:
        wall = (job.finished_at - job.started_at).total_seconds()
    card = result_card(job.module, data, job.chart_path, wall)
    return replace(card, job_id=job.id, where=where_text(_progress(job).get("info", {})), message_ref=job.message_ref)
