"""A demo's JSON result (from demos.checkpoint, demos.estimate or demos.plan) as a DemoResultCard: the
table every platform shows, computed once."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bot.core import wording
from bot.core.records import DemoJobRecord
from bot.core.values import ChannelRef, DemoChart, DemoFailedCard, DemoProgressCard, DemoResultCard

MIB = 2**20
GIB = 2**30
# The order a result's charts are shown in: the memory timeline first (or a sweep's chart),
# the budget curve when budget ran, the peaks per strategy; any other after.
CHART_ORDER = ("timeline", "sweep", "budget", "memory")
ESTIMATE_PARTS = ("parameters", "gradients", "optimizer_state", "activations", "temporaries", "total")


def result_card(module: str, data: dict[str, Any], chart: str | None, wall_s: float) -> DemoResultCard:
    if module == "demos.checkpoint" and isinstance(data.get("results"), list):
        return _checkpoint(data, chart, wall_s)
    if module == "demos.estimate" and isinstance(data.get("without"), dict):
        return _estimate(data, wall_s)
    if module == "demos.plan" and isinstance(data.get("frontier"), list) and isinstance(data.get("sentence"), str):
        return _plan(data, chart, wall_s)
    raw = ((json.dumps(data, default=str)[:1500],),)
    return DemoResultCard(module, wording.result_title(module), ("result",), raw, (), chart, wall_s, data)


CHECKPOINT_HEADER = (
    "strategy",
    "peak MiB",
    "est MiB",
    "est err",
    "vs none",
    "saved MiB",
    "step ms",
    "spread ms",
    "grads",
)


def _grads(row: dict[str, Any]) -> str:
    if row.get("grads_identical"):
        return "identical"
    diff = row.get("grad_max_diff")
    return f"max diff {diff:.1e}" if isinstance(diff, int | float) and diff else "DIFFER"


def _spread(row: dict[str, Any]) -> str:
    """'52.0-58.3' (a wide one marked '!'), or '-' for one repeat or an older worker's result."""
    spread = row.get("step_ms_spread")
    if not isinstance(spread, list | tuple) or len(spread) != 2:
        return "-"
    low, high = spread
    if not all(isinstance(v, int | float) for v in (low, high)):
        return "-"
    return f"{low:.1f}-{high:.1f}{' !' if row.get('step_ms_wide') else ''}"


def checkpoint_rows(results: list[dict[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """One table row per measured strategy (a budget run by its label, "budget 0.5"): its peak
    beside the fake-tensor estimate of the same step and that estimate's error, and beside the
    `none` baseline's peak."""
    rows = []
    baseline = next((r for r in results if r.get("strategy") == "none"), None)
    for row in results:
        share = ""
        if baseline and baseline.get("peak_bytes"):
            share = f"{row['peak_bytes'] / baseline['peak_bytes']:.2f}x"
        estimate, error = row.get("estimate_bytes"), row.get("estimate_error_pct")
        rows.append(
            (
                str(row.get("label") or row["strategy"]),
                f"{row['peak_bytes'] / MIB:.2f}",
                f"{estimate / MIB:.2f}" if isinstance(estimate, int | float) else "-",
                f"{error:+.1f}%" if isinstance(error, int | float) else "-",
                share,
                f"{row['saved_bytes'] / MIB:.2f}",
                f"{row['step_ms']:.1f}",
                _spread(row),
                _grads(row),
            )
        )
    return tuple(rows)


def chart_files(data: dict[str, Any], chart: str | None) -> tuple[DemoChart, ...]:
    """Every chart a result lists (`charts`: kind -> path), the timeline first; `chart` alone
    when it lists none."""
    listed = data.get("charts")
    if isinstance(listed, dict) and listed:
        rank = {kind: i for i, kind in enumerate(CHART_ORDER)}
        kinds = sorted((str(k) for k in listed), key=lambda k: rank.get(k, len(rank)))
        out = tuple(DemoChart(kind, str(listed[kind])) for kind in kinds)
        if chart and all(c.path != chart for c in out):
            out = (DemoChart("chart", chart), *out)
        return out
    return (DemoChart("chart", chart),) if chart else ()


def _checkpoint(data: dict[str, Any], chart: str | None, wall_s: float) -> DemoResultCard:
    rows = checkpoint_rows(data["results"])
    theory = data.get("theory")
    notes = []
    if theory:
        notes.append(str(theory.get("text", "")) if isinstance(theory, dict) else str(theory))
    kernels = data.get("estimate_kernels")
    if kernels and any(r.get("estimate_bytes") is not None for r in data["results"]):
        notes.append(wording.demo_estimate_note(str(kernels)))
    if any(r.get("strategy") == "budget" for r in data["results"]):
        notes.append(wording.DEMO_BUDGET_NOTE)
    if any(r.get("step_ms_spread") for r in data["results"]):
        notes.append(wording.demo_spread_note(any(r.get("step_ms_wide") for r in data["results"])))
    if data.get("device") == "cpu":
        notes.append(wording.DEMO_CPU_TIMES_NOTE)
    notes.append(wording.ran_in(wall_s))
    charts = chart_files(data, chart)
    shape = wording.demo_shape(data)
    return DemoResultCard(
        module="demos.checkpoint",
        title=wording.checkpoint_title(data.get("device", "?"), data.get("torch", "?"), shape),
        header=CHECKPOINT_HEADER,
        rows=rows,
        notes=tuple(n for n in notes if n),
        chart=charts[0].path if charts else None,
        wall_s=wall_s,
        data=data,
        charts=charts,
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
        title=wording.estimate_title(data),
        header=("", "without GiB", "with GiB"),
        rows=rows,
        notes=tuple(wording.estimate_notes(data)),
        chart=None,
        wall_s=wall_s,
        data=data,
    )


PLAN_POLICY_HEADER = ("policy", "saved MiB/layer", "recomputed GFLOPs/layer")


def _amount(size: float) -> str:
    """Bytes as '1.23 GiB', or '45.6 MiB' under a GiB."""
    return f"{size / GIB:,.2f} GiB" if size >= GIB else f"{size / MIB:,.1f} MiB"


def _plan(data: dict[str, Any], chart: str | None, wall_s: float) -> DemoResultCard:
    """The planner's answer: when a plan fits, what makes up its peak (GiB, share of the
    peak); when none does, what each policy saves and costs a layer. The sentence, the
    frontier, what sits at the peak, the code that applies the plan and the assumptions as
    notes; the frontier and the breakdown drawn in its chart."""
    breakdown = data.get("breakdown")
    if isinstance(breakdown, dict) and breakdown:
        parts = {str(k): v for k, v in breakdown.items() if isinstance(v, int | float)}
        total = sum(parts.values()) or 1
        unit, scale = ("GiB", GIB) if total >= GIB else ("MiB", MIB)  # a small model's plan in MiB
        header: tuple[str, ...] = ("at the peak", unit, "share")
        rows = tuple((k, f"{v / scale:,.2f}", f"{v / total:.0%}") for k, v in parts.items())
        rows += (("total", f"{sum(parts.values()) / scale:,.2f}", "100%"),)
    else:
        header = PLAN_POLICY_HEADER
        rows = tuple(
            (
                str(p.get("policy")),
                f"{float(p.get('saved_per_layer_bytes') or 0) / MIB:,.1f}",
                f"{float(p.get('recomputed_flops_per_layer') or 0) / 1e9:,.2f}",
            )
            for p in data.get("policies", [])
            if isinstance(p, dict)
        )
    notes = [str(data["sentence"])]
    peaks = [r["peak_bytes"] for r in data["frontier"] if isinstance(r, dict) and isinstance(r.get("peak_bytes"), int)]
    if peaks:
        notes.append(wording.plan_frontier_line(len(peaks), _amount(min(peaks)), _amount(max(peaks))))
    notes += [str(data[k]) for k in ("at_peak", "advice") if data.get(k)]
    if data.get("code"):
        notes.append(f"{wording.PLAN_CODE_INTRO}\n{data['code']}")
    notes += [str(a) for a in data.get("assumptions", [])]
    notes.append(wording.ran_in(wall_s))
    charts = chart_files(data, chart)
    return DemoResultCard(
        module="demos.plan",
        title=wording.plan_title(data),
        header=header,
        rows=rows,
        notes=tuple(notes),
        chart=charts[0].path if charts else None,
        wall_s=wall_s,
        data=data,
        charts=charts,
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
        number=job.number,
        module=job.module,
        channel=ChannelRef(job.platform, job.community, job.channel_id),
        message_ref=job.message_ref,
        title=wording.progress_for(job.module, job.user_name),
        header=CHECKPOINT_HEADER if is_checkpoint else ("step",),
        rows=checkpoint_rows(rows) if is_checkpoint else tuple((str(i + 1),) for i in range(len(rows))),
        done=len(rows),
        total=total,
    )


def outcome_card(job: DemoJobRecord) -> DemoResultCard | DemoFailedCard:
    """What is posted when a demo ends: its result table, or why it did not finish."""
    if job.state != "done" or not job.result:
        reason = job.error or wording.DEMO_NO_RESULT
        return DemoFailedCard(
            job_id=job.id, number=job.number, module=job.module, text=reason, message_ref=job.message_ref
        )
    data = json.loads(job.result)
    wall = float(data.get("wall_s") or 0.0)
    if not wall and job.started_at and job.finished_at:
        wall = (job.finished_at - job.started_at).total_seconds()
    card = result_card(job.module, data, job.chart_path, wall)
    return replace(card, job_id=job.id, where=where_text(_progress(job).get("info", {})), message_ref=job.message_ref)
