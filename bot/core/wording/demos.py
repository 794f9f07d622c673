"""/demo: a queued demo, its progress and result card, the request's checks, a question's own
demo ("see it run"), and the cooldown."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from bot.core.values import DemoFailedCard, DemoProgressCard, DemoQueued, DemoResultCard
from bot.core.wording.common import counted, table_lines

# ---------------------------------------------- queued, progress, result


def demo_queued(card: DemoQueued) -> str:
    what = card.module.removeprefix("demos.")
    if card.position <= 1:
        return f"Demo #{card.number} ({what}) for {card.user}: starting; results appear here as each strategy finishes."
    return f"Demo #{card.number} ({what}) for {card.user}: queued, {card.position - 1} ahead of it."


def demo_progress_title(card: DemoProgressCard) -> str:
    return f"Demo #{card.number}: {card.done} of {card.total} measured so far. {card.title}"


def demo_failed(card: DemoFailedCard) -> str:
    return f"Demo #{card.number} did not finish: {card.text}"


def demo_lines(card: DemoResultCard) -> list[str]:
    """The demo's table as aligned text lines (title, header, rows, notes), then every chart's
    path, the memory timeline first."""
    lines = [card.title, *table_lines(card.header, card.rows), *card.notes]
    if card.where:
        lines.append(f"Ran on {card.where}.")
    lines.extend(chart_line(chart.path) for chart in card.pictures())
    return lines


def demo_shape(data: dict[str, Any]) -> str:
    """', transformer, 4 layers, batch 4 x 256 tokens, width 128, 4 heads' from a checkpoint result."""
    model, layers = data.get("model"), data.get("layers")
    if not model:
        return ""
    if data.get("heads"):
        batch, tokens, width = data.get("batch", 1), data.get("tokens"), data.get("width")
        size = f"batch {batch} x {tokens} tokens, width {width}, {data['heads']} heads"
    else:
        size = f"{data.get('tokens')} tokens x width {data.get('width')}"
    return f", {model}, {counted(layers, 'layer') if isinstance(layers, int) else f'{layers} layers'}, {size}"


def demo_estimate_note(kernels: str) -> str:
    note = (
        f"est: the fake-tensor estimate of the same step (nothing allocated), attention traced as "
        f"{kernels.upper()} kernels allocate; err: the estimate against the measured peak."
    )
    if kernels == "cpu":
        note += (
            " On the CPU the estimate and the meter count the same tensors through the same kernels, so an "
            "err near 0% says they agree, not how close the estimate comes to a GPU's peak."
        )
    return note


DEMO_CPU_TIMES_NOTE = "CPU step times do not carry over to GPUs: read them as this machine's, not checkpointing's cost."


def demo_spread_note(wide: bool) -> str:
    """What the step time columns mean; `wide` when a row is marked unsettled."""
    note = "step ms: the median of the timed steps; spread: their interquartile range (under 4 repeats, min-max)."
    if wide:
        note += " ! marks a spread over a quarter of the median: that time is not settled."
    return note


DEMO_BUDGET_NOTE = (
    "budget: torch.compile with an activation memory budget (not estimated: compiled code is traced "
    "eagerly); compiled code may reorder float sums, so its gradients are compared by their largest difference."
)


def estimate_notes(data: dict[str, Any]) -> list[str]:
    """The estimate's verdict, the kernels it assumed and a published figure to hold it to."""
    notes = [str(data["verdict"])] if data.get("verdict") else []
    if data.get("kernels"):
        notes.append(f"Attention traced as {str(data['kernels']).upper()} kernels allocate.")
    ref = data.get("reference")
    if isinstance(ref, dict) and ref.get("source"):
        notes.append(
            f"{ref['source']}: {ref.get('without_gib')} and {ref.get('with_gib')} GiB (optimizer state plus "
            f"step peak); this estimate: {ref.get('estimate_without_gib')} and {ref.get('estimate_with_gib')} GiB."
        )
    return notes


CHART_PREFIX = "chart: "
# Each chart's title where a platform names a file (Slack's upload, the web page).
CHART_TITLES = {
    "timeline": "Memory through one training step, every strategy on the same axes",
    "budget": "The memory budget's trade-off: peak memory against step time",
    "memory": "Peak memory and step time per strategy",
    "sweep": "Peak memory against depth",
    "plan": "The plan: peak memory against recomputed FLOPs, and what makes up the peak",
    "chart": "Peak memory chart",
}


def chart_line(path: str) -> str:
    return f"{CHART_PREFIX}{path}"


def chart_title(kind: str) -> str:
    return CHART_TITLES.get(kind, CHART_TITLES["chart"])


# -------------------------------------------------------- /demo requests

DEMO_USAGE = (
    "Say /demo checkpoint [key=value ...], /demo estimate [preset=gpt2-small ...] or "
    "/demo plan [model=hf-gpt2 gpu-gib=12 ...]."
)


def demo_not_key_value(word: str) -> str:
    return f"'{word}' is not key=value (for example layers=16)."


def demo_twice(key: str) -> str:
    return f"{key} is given twice; say it once."


def demo_whole_number(key: str, low: int, high: int, value: str) -> str:
    return f"{key} must be a whole number from {low} to {high}, not '{value}'."


def demo_number(key: str, low: float, high: float, value: str) -> str:
    return f"{key} must be a number from {low:g} to {high:g}, not '{value}'."


def demo_one_of(key: str, options: Iterable[str], value: str) -> str:
    return f"{key} must be one of {', '.join(options)}, not '{value}'."


def demo_unknown_strategy(name: str, strategies: Iterable[str]) -> str:
    return f"Unknown strategy '{name}'; choose from {', '.join(strategies)}."


def demo_budgets(value: str, most: int) -> str:
    return f"budgets are up to {most} numbers from 0 to 1, comma-separated (budgets=1,0.5,0), not '{value}'."


def demo_unknown_setting(key: str, known: Iterable[str]) -> str:
    return f"Unknown demo setting '{key}'; use {', '.join(known)}."


def demo_heads_divide(width: int, heads: int, model: str) -> str:
    return f"width ({width}) must be a multiple of heads ({heads}) for the {model} model."


def demo_plan_seq(seq: int, model: str, longest: int) -> str:
    return f"seq={seq:,} is longer than the {model} model takes: at most {longest:,} tokens."


def demo_margin(margin: float, gpu: float) -> str:
    return f"margin-gib ({margin:g}) must be less than gpu-gib ({gpu:g}): the plan needs memory left to fit in."


def demo_hf_strategies(strategy: str, allowed: Iterable[str]) -> str:
    return f"The hf-gpt2 model runs {', '.join(allowed)}; {strategy} needs a plain layer stack."


QUESTION_DEMO_CUDA = "a question's demo must run on any worker: no device=cuda and no offload (CUDA only)."
QUESTION_DEMO_HF = "a question's demo must run on any worker: hf-gpt2 needs the transformers package."


def question_demo_too_slow(seconds: float, limit: float) -> str:
    return (
        f"a question's demo must run in seconds; this one's cost is about {seconds:,.0f} s by the demo's "
        f"CPU cost model, over {limit:g} s (fewer layers, tokens, strategies or repeats)."
    )


# ---------------------------------------- "see it run" (a reveal's demo)

SEE_IT_RUN = "See it run"
NO_QUESTION_DEMO = "This question has no demo to run."
QUESTION_DEMO_NOT_REVEALED = "This question's demo can be run once its answer is revealed."


def see_it_run_hint(demo: str) -> str:
    """Under a reveal: what the button queues (the console prints it as the command to type)."""
    return f"See it run: /demo {demo}"


DEMO_CHART_TITLE = "Peak memory chart"  # a chart of unknown kind (see CHART_TITLES)


# --------------------------------------------------------- /demo refused

DEMO_GONE = "That demo is gone."


def duration(span: timedelta) -> str:
    """'45 s', '3 min': a wait as a member reads it (at least a second)."""
    seconds = max(1, int(span.total_seconds()))
    if seconds < 90:
        return f"{seconds} s"
    return f"{round(seconds / 60)} min"


def demo_too_soon(ago: timedelta, every: timedelta, wait: timedelta) -> str:
    """A member's demo asked within the cooldown after their last one."""
    return (
        f"You asked for a demo {duration(ago)} ago; one per member every "
        f"{duration(every)}, so the next one is possible in {duration(wait)}."
    )


def demos_waiting(most: int) -> str:
    return f"{most} demos are already waiting here; ask again when one has finished."


# -------------------- a result's titles, a demo that did not finish

# A demo a stopped process left running, failed when the bot starts again.
DEMO_INTERRUPTED = "the bot restarted while it ran; ask again with /demo."
DEMO_NO_RESULT = "it stopped without a result."


def result_title(module: str) -> str:
    """A result the bot has no table for (a demo module it does not know)."""
    return f"Result of {module}"


def checkpoint_title(device: Any, torch: Any, shape: str) -> str:
    """`shape`: demo_shape's ', transformer, 4 layers, ...' or nothing."""
    return f"Checkpoint demo on {device} (torch {torch}){shape}:"


def estimate_title(data: dict[str, Any]) -> str:
    return (
        f"Estimated peak of one training step: {data.get('preset')} batch {data.get('batch')} x "
        f"{data.get('seq')} tokens, {data.get('dtype')} (fake tensors, nothing allocated):"
    )


def plan_title(data: dict[str, Any]) -> str:
    found = data.get("request")
    request: dict[str, Any] = found if isinstance(found, dict) else {}
    return (
        f"Checkpointing plan for {data.get('preset')} ({data.get('layers')} layers), batch {request.get('batch')} x "
        f"{request.get('seq')} tokens, {request.get('dtype')}, {request.get('optimizer')}, in "
        f"{request.get('gpu_gib')} GiB (fake tensors, nothing allocated):"
    )


def plan_frontier_line(points: int, lowest: str, highest: str) -> str:
    """`lowest`, `highest`: the frontier's least and greatest peaks, with their unit."""
    return (
        f"Frontier: {points} plans from {highest} with nothing recomputed down to {lowest} "
        "(the chart draws them, the plan marked)."
    )


PLAN_CODE_INTRO = "The code that applies the plan:"


def ran_in(wall_s: float) -> str:
    return f"Ran in {wall_s:.1f} s."


def progress_for(module: str, user: str) -> str:
    """A running demo's progress card: which demo, for whom."""
    return f"{module.removeprefix('demos.')} for {user}"
