"""The PNG charts posted with a demo result (matplotlib, imported only here).

- ``timeline`` (the path asked for): live memory through one step, every strategy overlaid,
  forward then backward, recomputations marked.
- ``memory``: peak memory per strategy with the fake-tensor estimate beside it and the
  error in percent, and the step time.
- ``budget`` (when the budget strategy ran): peak memory against step time for every
  strategy and budget, the trade-off frontier.
- ``sweep`` (with ``--sweep``, the path asked for): peak memory against depth.

Each PNG carries its number of plotted series in a ``Lines`` text chunk, so a reader (or
a test) can check what was drawn without decoding pixels.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from demos.report import DemoReport, StrategyResult

MIB = 1024**2
COLOURS = {
    "none": "#7f7f7f",
    "block": "#1f77b4",
    "sqrt": "#2ca02c",
    "selective": "#ff7f0e",
    "selective-attn": "#d62728",
    "offload": "#9467bd",
    "budget": "#8c564b",
}
BUDGET_SHADES = ("#8c564b", "#bc80bd", "#e377c2", "#17becf", "#bcbd22", "#393b79")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 12})
    return plt


def _save(fig: Any, path: str, lines: int) -> str:
    fig.savefig(path, format="png", dpi=110, metadata={"Lines": str(lines)})
    _pyplot().close(fig)
    return path


def sibling(path: str, name: str) -> str:
    """``out/demo.png`` -> ``out/demo-<name>.png``."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}-{name}{p.suffix or '.png'}"))


def write_charts(report: DemoReport, path: str) -> dict[str, str]:
    """Write every chart for ``report``: the main one at ``path``, the others beside it."""
    if report.sweep:
        return {"sweep": _write(_sweep_figure(report), path)}
    charts = {"timeline": _write(_timeline_figure(report), path)}
    charts["memory"] = _write(_strategy_figure(report), sibling(path, "memory"))
    if any(r.strategy == "budget" for r in report.results):
        charts["budget"] = _write(_budget_figure(report), sibling(path, "budget"))
    return charts


def write_chart(report: DemoReport, path: str) -> str:
    """Write the main chart (the timeline, or the sweep) to ``path`` and return the path."""
    return write_charts(report, path)["sweep" if report.sweep else "timeline"]


def _write(figure: tuple[Any, int], path: str) -> str:
    fig, lines = figure
    return _save(fig, path, lines)


def png_text(path: str) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG file (raises ValueError if it is not a PNG)."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG file")
    out: dict[str, str] = {}
    pos = 8
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        crc = int.from_bytes(data[pos + 8 + length : pos + 12 + length], "big")
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"{path}: bad CRC in a {kind!r} chunk")
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IEND":
            return out
        pos += 12 + length
    raise ValueError(f"{path}: no IEND chunk, the PNG is truncated")


def _title(report: DemoReport) -> str:
    if report.heads:
        shape = f"batch {report.batch} x {report.tokens:,} tokens, width {report.width}, {report.heads} heads"
    else:
        shape = f"{report.tokens:,} tokens x width {report.width}"
    return f"{report.model}, {report.layers} layers: {shape}, {report.dtype}, {report.device}"


def _colour(r: StrategyResult, budgets: list[float]) -> str:
    if r.strategy == "budget" and r.budget is not None and r.budget in budgets:
        return BUDGET_SHADES[budgets.index(r.budget) % len(BUDGET_SHADES)]
    return COLOURS.get(r.strategy, "#333333")


def _budgets(report: DemoReport) -> list[float]:
    return [r.budget for r in report.results if r.strategy == "budget" and r.budget is not None]


def _timeline_figure(report: DemoReport) -> tuple[Any, int]:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 5.2))
    budgets = _budgets(report)
    lines = 0
    marked = False
    for r in report.results:
        t = r.timeline
        if t is None or not t.x:
            continue
        ys = [b / MIB for b in t.live_bytes]
        colour = _colour(r, budgets)
        ax.plot(
            t.x, ys, linewidth=2.2, color=colour, label=f"{r.label or r.strategy} (peak {r.peak_bytes / MIB:.0f} MiB)"
        )
        lines += 1
        rx = [x for x, ph in zip(t.x, t.phase, strict=True) if ph == "recompute"]
        ry = [y for y, ph in zip(ys, t.phase, strict=True) if ph == "recompute"]
        if rx:
            ax.scatter(rx, ry, s=14, color=colour, marker="^", zorder=3, label=None if marked else "recomputation")
            marked = True
    ax.axvline(1.0, color="#444444", linestyle="--", linewidth=1)
    top = ax.get_ylim()[1]
    ax.text(0.5, top * 0.97, "forward", ha="center", va="top", fontsize=12)
    ax.text(1.5, top * 0.97, "backward", ha="center", va="top", fontsize=12)
    ax.set_xlim(0, 2)
    ax.set_xticks([0, 0.5, 1, 1.5, 2], ["start", "", "backward starts", "", "end"])
    ax.set_xlabel("progress through one training step (allocator events)")
    ax.set_ylabel("live memory above parameters and input, MiB")
    ax.set_title(f"Memory through one step, every strategy\n{_title(report)}", fontsize=12)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=10, loc="upper right", bbox_to_anchor=(1.0, 0.9))
    fig.tight_layout()
    return fig, lines


def _strategy_figure(report: DemoReport) -> tuple[Any, int]:
    plt = _pyplot()
    rows = report.results
    budgets = _budgets(report)
    names = [r.label or r.strategy for r in rows]
    colours = [_colour(r, budgets) for r in rows]
    base = next((r for r in rows if r.strategy == "none"), rows[0])
    fig, (ax_mem, ax_time) = plt.subplots(1, 2, figsize=(11, 0.9 + 0.55 * len(rows) + 2.6))
    fig.suptitle(f"Activation checkpointing, measured and estimated\n{_title(report)}", fontsize=13)
    ys = list(range(len(rows)))[::-1]
    mem = [r.peak_bytes / MIB for r in rows]
    ax_mem.barh(ys, mem, color=colours)
    est_y = [y for y, r in zip(ys, rows, strict=True) if r.estimate_bytes is not None]
    est_x = [r.estimate_bytes / MIB for r in rows if r.estimate_bytes is not None]
    if est_x:
        ax_mem.scatter(est_x, est_y, marker="|", s=600, color="black", zorder=3, label="fake-tensor estimate")
        ax_mem.legend(fontsize=10, loc="lower right")
    for y, r, m in zip(ys, rows, mem, strict=True):
        err = f", est {r.estimate_error_pct:+.1f}%" if r.estimate_error_pct is not None else ""
        ax_mem.text(m, y, f" {m:.1f} MiB ({r.peak_bytes / base.peak_bytes:.2f}x{err})", va="center", fontsize=10)
    ax_mem.set_yticks(ys, names)
    ax_mem.set_xlabel("peak memory of one step, MiB")
    ax_mem.set_xlim(0, max(mem + est_x) * 1.75)
    ax_mem.set_title("Peak memory (bar) and estimate (|)", fontsize=12)
    ms = [r.step_ms for r in rows]
    ax_time.barh(ys, ms, color=colours)
    for y, t in zip(ys, ms, strict=True):
        ratio = t / base.step_ms if base.step_ms else 0.0
        ax_time.text(t, y, f" {t:.0f} ms ({ratio:.2f}x)", va="center", fontsize=10)
    ax_time.set_yticks(ys, names)
    ax_time.set_xlabel("median step time, ms")
    ax_time.set_xlim(0, max(ms) * 1.6)
    ax_time.set_title("Step time (forward + backward)", fontsize=12)
    exact = [r for r in rows if r.strategy != "budget"]
    ok = all(r.grads_identical for r in exact)
    note = "gradients bit-identical to 'none'" if ok else "WARNING: some gradients differ from 'none'"
    compiled = [r for r in rows if r.strategy == "budget"]
    if compiled:
        note += f"; budget (compiled): largest difference {max(r.grad_max_diff for r in compiled):.1e}"
    fig.text(0.5, 0.01, note, ha="center", fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig, 2 + (1 if est_x else 0)


def _budget_figure(report: DemoReport) -> tuple[Any, int]:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5.5))
    curve = sorted((r for r in report.results if r.strategy == "budget"), key=lambda r: r.budget or 0.0)
    ax.plot(
        [r.step_ms for r in curve],
        [r.peak_bytes / MIB for r in curve],
        marker="o",
        linewidth=2.5,
        color=COLOURS["budget"],
        label="torch.compile, activation memory budget",
    )
    for r in curve:
        ax.annotate(f"{r.budget:g}", (r.step_ms, r.peak_bytes / MIB), textcoords="offset points", xytext=(6, 6))
    lines = 1
    for r in report.results:
        if r.strategy == "budget":
            continue
        ax.scatter(
            [r.step_ms],
            [r.peak_bytes / MIB],
            s=80,
            color=COLOURS.get(r.strategy, "#333333"),
            label=r.label or r.strategy,
            zorder=3,
        )
        lines += 1
    ax.set_xlabel("median step time, ms")
    ax.set_ylabel("peak memory of one step, MiB")
    ax.set_title(f"Memory against time, every strategy and budget\n{_title(report)}", fontsize=12)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=10)
    fig.tight_layout()
    return fig, lines


def _sweep_figure(report: DemoReport) -> tuple[Any, int]:
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(8, 5))
    lines = 0
    for strategy in dict.fromkeys(r.strategy for r in report.results):
        rows = [r for r in report.results if r.strategy == strategy]
        xs = [r.layers or 0 for r in rows]
        ys = [r.peak_bytes / MIB for r in rows]
        label = "no checkpointing" if strategy == "none" else f"{strategy} checkpoints"
        ax.plot(xs, ys, marker="o", linewidth=2.5, color=COLOURS.get(strategy), label=label)
        lines += 1
        ax.annotate(
            f"{ys[-1]:.0f} MiB", (xs[-1], ys[-1]), textcoords="offset points", xytext=(-10, 8), ha="right", fontsize=11
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_xticks(report.sweep, [str(n) for n in report.sweep])
    ax.set_xlabel("layers N")
    ax.set_ylabel("peak memory of one step, MiB")
    ax.set_title(f"Peak memory against depth\n{_title(report)}", fontsize=12)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig, lines
