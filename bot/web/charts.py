"""Charts drawn on the server as plain numbers for inline SVG templates: no JavaScript, no
image library. Each returns the geometry a template lays out, and the numbers stay in a
table beside the chart for screen readers."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.values import DemoResultCard, WeekPoints


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str  # the value as shown
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class BarChart:
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
    """Peak memory per strategy as horizontal bars, from a checkpoint demo's table."""
    if "peak MiB" not in card.header:
        return None
    column = card.header.index("peak MiB")
    values = []
    for row in card.rows:
        try:
            values.append((row[0], float(row[column])))
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
            text=f"{value:.1f} MiB",
            x=left,
            y=8 + i * row_h,
            width=(width - left - 90) * value / top,
            height=row_h * 0.7,
        )
        for i, (name, value) in enumerate(values)
    )
    return BarChart(width, int(16 + len(values) * row_h), 0.0, bars, f"{top:.1f}")
