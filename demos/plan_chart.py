"""The plan as a picture: the frontier (peak against recomputed FLOPs, the plan marked) and
the stacked breakdown of the plan's peak. matplotlib only (the Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class Plan(Protocol):
    """What the chart reads of demos.plan's Plan (named here so the two modules import one way)."""

    preset: str
    usable_bytes: int
    frontier: Sequence[Mapping[str, Any]]
    breakdown: Mapping[str, int] | None

GIB = 1024**3
#: The breakdown's parts, bottom to top, and their colours.
PARTS = (
    ("parameters", "#4c72b0"),
    ("optimizer state", "#8172b2"),
    ("gradients", "#55a868"),
    ("saved activations", "#dd8452"),
    ("transients", "#c44e52"),
    ("LM head", "#937860"),
    ("the loop's previous output", "#8c8c8c"),
)


def plan_chart(plan: Plan, path: str) -> None:
    """Write the frontier and the breakdown side by side to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (front, stack) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 1]})
    xs = [r["peak_bytes"] / GIB for r in plan.frontier]
    ys = [r["cost"] / 1e9 for r in plan.frontier]
    front.step(xs, ys, where="post", color="#4c72b0", label="frontier (fewest FLOPs at each peak)")
    front.scatter(xs, ys, color="#4c72b0", s=14)
    chosen = [r for r in plan.frontier if r["chosen"]]
    if chosen:
        c = chosen[0]
        split = ", ".join(f"{n} {k}" for k, n in c["counts"].items())
        front.scatter(
            [c["peak_bytes"] / GIB], [c["cost"] / 1e9], color="#c44e52", s=60, zorder=3, label=f"the plan: {split}"
        )
    front.axvline(
        plan.usable_bytes / GIB,
        color="#333333",
        linestyle="--",
        linewidth=1,
        label=f"usable: {plan.usable_bytes / GIB:.2f} GiB",
    )
    front.set_xlabel("peak per GPU (GiB)")
    front.set_ylabel("GFLOPs a step: recomputed + offload priced")
    front.set_title(f"{plan.preset}: what each peak costs")
    front.legend(loc="upper left", bbox_to_anchor=(0.0, -0.18), ncol=2, fontsize=8, frameon=False)
    bottom = 0.0
    for name, colour in PARTS:
        value = (plan.breakdown or {}).get(name, 0) / GIB
        if value <= 0:
            continue
        stack.bar([0], [value], bottom=[bottom], color=colour, label=f"{name} {value:.2f}")
        bottom += value
    stack.axhline(plan.usable_bytes / GIB, color="#333333", linestyle="--", linewidth=1)
    stack.set_xticks([])
    stack.set_ylabel("GiB at the peak")
    stack.set_title("the plan's peak")
    stack.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
