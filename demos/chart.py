"""The PNG chart posted with a demo result (matplotlib, imported only here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ChartRow(Protocol):
    """What the chart reads of one measured strategy (demos.checkpoint.StrategyResult)."""

    @property
    def strategy(self) -> str: ...
    @property
    def peak_bytes(self) -> int: ...
    @property
    def step_ms(self) -> float: ...
    @property
    def grads_identical(self) -> bool: ...
    @property
    def layers(self) -> int | None: ...


class ChartReport(Protocol):
    """What the chart reads of a run (demos.checkpoint.DemoReport); a protocol, so that this
    module and the demo do not import each other."""

    @property
    def model(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def dtype(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def layers(self) -> int: ...
    @property
    def results(self) -> Sequence[ChartRow]: ...
    @property
    def sweep(self) -> Sequence[int]: ...


MIB = 1024**2
COLOURS = {"none": "#7f7f7f", "block": "#1f77b4", "sqrt": "#2ca02c", "selective": "#ff7f0e", "offload": "#9467bd"}


def write_chart(report: ChartReport, path: str) -> str:
    """Write the chart for ``report`` to ``path`` (PNG) and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 12})
    if report.sweep:
        fig = _sweep_figure(plt, report)
    else:
        fig = _strategy_figure(plt, report)
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)
    return path


def _title(report: ChartReport) -> str:
    return f"{report.model}: {report.tokens:,} tokens x width {report.width}, {report.dtype}, {report.device}"


def _strategy_figure(plt: object, report: ChartReport) -> object:
    import matplotlib.pyplot as mplt

    rows = report.results
    names = [r.strategy for r in rows]
    colours = [COLOURS.get(n, "#333333") for n in names]
    base = next((r for r in rows if r.strategy == "none"), rows[0])
    fig, (ax_mem, ax_time) = mplt.subplots(1, 2, figsize=(10, 4.6))
    fig.suptitle(f"Activation checkpointing, {report.layers} layers\n{_title(report)}", fontsize=13)
    ys = list(range(len(rows)))[::-1]
    mem = [r.peak_bytes / MIB for r in rows]
    ax_mem.barh(ys, mem, color=colours)
    for y, r, m in zip(ys, rows, mem, strict=True):
        ax_mem.text(m, y, f" {m:.1f} MiB ({r.peak_bytes / base.peak_bytes:.2f}x)", va="center", fontsize=11)
    ax_mem.set_yticks(ys, names)
    ax_mem.set_xlabel("peak memory of one step, MiB")
    ax_mem.set_xlim(0, max(mem) * 1.6)
    ax_mem.set_title("Peak memory (lower is better)", fontsize=12)
    ms = [r.step_ms for r in rows]
    ax_time.barh(ys, ms, color=colours)
    for y, t in zip(ys, ms, strict=True):
        ratio = t / base.step_ms if base.step_ms else 0.0
        ax_time.text(t, y, f" {t:.0f} ms ({ratio:.2f}x)", va="center", fontsize=11)
    ax_time.set_yticks(ys, names)
    ax_time.set_xlabel("median step time, ms")
    ax_time.set_xlim(0, max(ms) * 1.6)
    ax_time.set_title("Step time (forward + backward)", fontsize=12)
    ok = all(r.grads_identical for r in rows)
    fig.text(
        0.5,
        0.01,
        "gradients bit-identical to 'none'" if ok else "WARNING: some gradients differ from 'none'",
        ha="center",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _sweep_figure(plt: object, report: ChartReport) -> object:
    import matplotlib.pyplot as mplt

    fig, ax = mplt.subplots(figsize=(8, 5))
    for strategy in dict.fromkeys(r.strategy for r in report.results):
        rows = [r for r in report.results if r.strategy == strategy]
        xs = [r.layers or 0 for r in rows]
        ys = [r.peak_bytes / MIB for r in rows]
        label = "no checkpointing" if strategy == "none" else f"{strategy} checkpoints"
        ax.plot(xs, ys, marker="o", linewidth=2.5, color=COLOURS.get(strategy), label=label)
        ax.annotate(
            f"{ys[-1]:.0f} MiB", (xs[-1], ys[-1]), textcoords="offset points", xytext=(-10, 8), ha="right", fontsize=11
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_xticks(report.sweep, [str(n) for n in report.sweep])
    ax.set_xlabel("layers N")
    ax.set_ylabel("peak memory of one step, MiB")
    ax.set_title(f"Peak memory against depth\n{_title(report)}", fontsize=12)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig
