"""Charts drawn on the server as plain numbers for inline SVG templates: no JavaScript, no
image library. Each returns the geometry a template lays out, and the numbers stay in a
table beside the chart for screen readers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.core.values import DemoResultCard, WeekPoints


@dataclass(frozen=True)
class Bar:
    """One bar of a bar chart, placed in SVG coordinates."""

    label: str
    value: float
    text: str  # the value as shown
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class BarChart:
    """A bar chart laid out for the page's SVG template."""

    width: int
    height: int
    baseline: float  # y of the axis
    bars: tuple[Bar, ...]
    top: str  # the axis' top value, as shown


def week_chart(weeks: tuple[WeekPoints, ...], width: int = 600, height: int = 180) -> BarChart:
    """Points per week as columns (oldest left); the labels are the week numbers."""
    top = max((w.points for w in weeks), default=0) or 1
    left, bottom, plot_h = 36.0, 24.0, height - 36.0
    slot = (width - left) / max(len(weeks), 1)
    bars = []
    for i, week in enumerate(weeks):
        h = plot_h * week.points / top
        bars.append(
            Bar(
                label=week.week.split("-")[-1],
                value=week.points,
                text=str(week.points),
                x=left + i * slot + slot * 0.15,
                y=height - bottom - h,
                width=slot * 0.7,
                height=h,
            )
        )
    return BarChart(width, height, height - bottom, tuple(bars), str(top))


def demo_chart(card: DemoResultCard, width: int = 600) -> BarChart | None:
    """Peak memory per strategy as horizontal bars, from a checkpoint demo's table; for a plan,
    what makes up its peak (GiB, the total left out)."""
    plan = card.module == "demos.plan" and len(card.header) > 1 and card.header[1] in ("GiB", "MiB")
    unit = card.header[1] if plan else "MiB"
    name = unit if plan else "peak MiB"
    if name not in card.header:
        return None
    column = card.header.index(name)
    values = []
    for row in card.rows:
        if plan and row[0] == "total":
            continue
        try:
            values.append((row[0], float(row[column].replace(",", ""))))
        except (ValueError, IndexError):
            continue
    if not values:
        return None
    top = max(v for _, v in values) or 1.0
    left, row_h = 150.0, 28.0
    bars = tuple(
        Bar(
            label=name,
            value=value,
            text=f"{value:.2f} {unit}" if plan else f"{value:.1f} MiB",
            x=left,
            y=8 + i * row_h,
            width=(width - left - 90) * value / top,
            height=row_h * 0.7,
        )
        for i, (name, value) in enumerate(values)
    )
    return BarChart(width, int(16 + len(values) * row_h), 0.0, bars, f"{top:.1f}")


@dataclass(frozen=True)
class Line:
    """One line of a line chart, as an SVG polyline."""

    label: str
    points: str  # "x,y x,y ..." for an SVG polyline
    css: str  # the class that colours it (line0, line1, ...)
    text: str  # what the line says, for the chart's title and its legend


@dataclass(frozen=True)
class LineChart:
    """A line chart laid out for the page's SVG template."""

    width: int
    height: int
    left: float  # x of the y axis
    baseline: float  # y of the x axis
    lines: tuple[Line, ...]
    top: str  # the y axis' top value, as shown
    marks: tuple[tuple[float, str], ...] = ()  # x positions with a label (forward | backward)


MIB = 2**20
MAX_LINES = 8  # colours the stylesheet has
# The strategies the stylesheet colours as the demo's PNG does (demos/chart.py COLOURS; a test
# holds the two together), so a line has one colour in the chat's picture and on the page.
STRATEGY_CLASSES = frozenset({"none", "block", "sqrt", "selective", "selective-attn", "offload"})
TICK_CHAR_PX = 7.0  # an axis label's width per character at the stylesheet's tick size


def _axis_left(top: str, least: float = 48.0) -> float:
    """Where the y axis sits so that its top label, drawn right-aligned beside it, is not cut."""
    return max(least, TICK_CHAR_PX * len(top) + 8.0)


def _line_class(strategy: str, i: int) -> str:
    return f"strategy-{strategy}" if strategy in STRATEGY_CLASSES else f"line{i}"


def _results(card: DemoResultCard) -> list[dict[str, Any]]:
    results = card.data.get("results") if card.module == "demos.checkpoint" else None
    return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []


def timeline_chart(card: DemoResultCard, width: int = 600, height: int = 240) -> LineChart | None:
    """Live memory through one training step, every strategy on the same axes (x: the forward
    pass from 0 to 1, the backward from 1 to 2; y: MiB), from the result's timelines."""
    series = []
    for row in _results(card):
        timeline = row.get("timeline")
        if not isinstance(timeline, dict):
            continue
        xs, ys = timeline.get("x"), timeline.get("live_bytes")
        if isinstance(xs, list) and isinstance(ys, list) and xs and len(xs) == len(ys):
            strategy = str(row.get("strategy"))
            series.append((str(row.get("label") or strategy), strategy, [float(x) for x in xs], [int(y) for y in ys]))
    if not series:
        return None
    series = series[:MAX_LINES]
    top = max(max(ys) for _, _, _, ys in series) / MIB or 1.0
    span = max(max(xs) for _, _, xs, _ in series) or 1.0
    top_label = f"{top:.1f} MiB"
    left, bottom, right, upper = _axis_left(top_label), 24.0, 8.0, 10.0
    plot_w, plot_h = width - left - right, height - bottom - upper

    def point(x: float, y: int) -> str:
        return f"{left + plot_w * x / span:.1f},{height - bottom - plot_h * (y / MIB) / top:.1f}"

    lines = tuple(
        Line(
            label,
            " ".join(point(x, y) for x, y in zip(xs, ys, strict=True)),
            _line_class(strategy, i),
            f"{label} peak {max(ys) / MIB:.2f} MiB",
        )
        for i, (label, strategy, xs, ys) in enumerate(series)
    )
    marks = ((left + plot_w * 0.5 / span, "forward"), (left + plot_w * 1.5 / span, "backward")) if span >= 2 else ()
    return LineChart(width, height, left, height - bottom, lines, top_label, marks)


def budget_chart(card: DemoResultCard, width: int = 600, height: int = 240) -> LineChart | None:
    """The memory budget's trade-off: peak memory (y, MiB) against step time (x, ms), one point
    per strategy and budget, the budget runs joined by a line; only when budget ran."""
    rows = _results(card)
    if not any(r.get("strategy") == "budget" for r in rows):
        return None
    points = [(str(r.get("label") or r.get("strategy")), float(r["step_ms"]), int(r["peak_bytes"])) for r in rows]
    top = max(p for _, _, p in points) / MIB or 1.0
    slowest = max(ms for _, ms, _ in points) or 1.0
    top_label = f"{top:.1f} MiB"
    left, bottom, right, upper = _axis_left(top_label), 24.0, 8.0, 10.0
    plot_w, plot_h = width - left - right, height - bottom - upper

    def point(ms: float, peak: int) -> str:
        return f"{left + plot_w * ms / slowest:.1f},{height - bottom - plot_h * (peak / MIB) / top:.1f}"

    budget = sorted((p for p in points if p[0].startswith("budget")), key=lambda p: p[1])
    lines = [Line("budget", " ".join(point(ms, peak) for _, ms, peak in budget), "strategy-budget", "budget runs")]
    lines += [
        Line(label, point(ms, peak), _line_class(label, i + 1), f"{label}: {peak / MIB:.2f} MiB in {ms:.1f} ms")
        for i, (label, ms, peak) in enumerate(p for p in points if not p[0].startswith("budget"))
    ][: MAX_LINES - 1]
    return LineChart(
        width, height, left, height - bottom, tuple(lines), top_label, ((width - right, f"{slowest:.0f} ms"),)
    )
