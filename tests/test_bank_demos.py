"""Every question's `demo:` run once, at a small size, on the CPU: what the run prints shows the
question's fact (the figure its reveal points at). A question with a demo and no entry in SHOWS
fails here, so a new `demo:` comes with the assertion that it teaches what it claims."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from bot.core.bank import load_bank
from bot.core.rules.demo_request import parse_question_demo
from demos.checkpoint import parse_args, run_demo
from demos.estimate import Estimate, estimate
from demos.memory import RECOMPUTE
from demos.report import DemoReport, StrategyResult

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3
#: A question's demo runs at most this many tokens here (the memory ratios the facts rest on do
#: not depend on it); the estimate allocates nothing and runs at the field's own size.
TOKENS = 256
DEMO_QUESTIONS = {q.id: q.demo for q in load_bank(ROOT / "questions").questions if q.demo}


@functools.cache
def _run(field: str) -> DemoReport | Estimate:
    request = parse_question_demo(field)
    if request.module == "demos.estimate":
        options = dict(zip(request.args[::2], request.args[1::2], strict=True))
        return estimate(
            options.get("--preset", "gpt2-small"),
            int(options.get("--batch", "8")),
            int(options.get("--seq", "1024")),
            float(options.get("--gpu-gib", "24")),
            options.get("--kernels", "cuda"),
        )
    cfg = parse_args(list(request.args))
    return run_demo(replace(cfg, repeat=1, tokens=min(cfg.tokens, TOKENS)), estimate=False)


def _by_label(report: DemoReport) -> dict[str, StrategyResult]:
    return {r.label or r.strategy: r for r in report.results}


def _recompute_runs(result: StrategyResult) -> int:
    """How many separate stretches of the timeline are a recomputation (the bumps)."""
    assert result.timeline is not None
    phases = result.timeline.phase
    return sum(1 for i, p in enumerate(phases) if p == RECOMPUTE and (i == 0 or phases[i - 1] != RECOMPUTE))


def _at_x(result: StrategyResult, x: float) -> int:
    assert result.timeline is not None
    points = list(zip(result.timeline.x, result.timeline.live_bytes, strict=True))
    return min(points, key=lambda p: abs(p[0] - x))[1]


def block_far_below_none(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["block"].peak_bytes < 0.5 * r["none"].peak_bytes
    assert r["block"].grads_identical


def every_gradient_identical(report: DemoReport) -> None:
    assert len(report.results) >= 3 and all(r.grads_identical for r in report.results)


def block_reruns_in_backward_only(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["none"].timeline is not None and RECOMPUTE not in r["none"].timeline.phase
    block = r["block"].timeline
    assert block is not None
    marked = [x for x, p in zip(block.x, block.phase, strict=True) if p == RECOMPUTE]
    assert marked and min(marked) >= 1.0  # every rerun sits in the backward half


def none_climbs_then_drains(report: DemoReport) -> None:
    none = _by_label(report)["none"]
    assert none.timeline is not None
    peak = none.peak_bytes
    assert _at_x(none, 0.5) < 0.75 * peak  # still climbing halfway through forward
    # at the end only the parameter gradients are left: backward has let every saved tensor go
    assert none.timeline.live_bytes[-1] <= 1.01 * report.params_bytes < 0.5 * peak


def none_peaks_where_forward_ends(report: DemoReport) -> None:
    none = _by_label(report)["none"]
    assert none.timeline is not None
    top = none.timeline.x[none.timeline.live_bytes.index(none.peak_bytes)]
    assert 0.85 <= top <= 1.15


def block_keeps_each_layer_input(report: DemoReport) -> None:
    extra = _by_label(report)["block"].saved_bytes - report.layers * report.input_bytes
    assert 0 <= extra < 1024  # one input per block (and the loss, a scalar)


def sqrt_bumps_fewer_and_taller(report: DemoReport) -> None:
    r = _by_label(report)
    # 9 layers, 3 segments: checkpoint_sequential leaves the last one unchecked (2 reruns)
    assert _recompute_runs(r["sqrt"]) < _recompute_runs(r["block"])
    assert r["sqrt"].peak_bytes > r["block"].peak_bytes
    # and it ends forward holding more: the unchecked last segment's activations, whole
    assert r["sqrt"].saved_bytes > 2 * r["block"].saved_bytes


def sqrt_keeps_a_third(report: DemoReport) -> None:
    r = _by_label(report)
    assert report.layers == 36 and r["sqrt"].saved_bytes < 0.4 * r["none"].saved_bytes


def every_layer_saves_nothing_on_a_chain(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["block"].peak_bytes >= 0.95 * r["none"].peak_bytes
    assert r["sqrt"].peak_bytes < 0.7 * r["block"].peak_bytes


def heavy_blocks_favour_block(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["block"].peak_bytes < r["sqrt"].peak_bytes < r["none"].peak_bytes


def selective_sits_between(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["block"].peak_bytes < r["selective"].peak_bytes < r["none"].peak_bytes
    assert r["selective"].grads_identical


def budget_zero_saves_like_block(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["budget 0"].saved_bytes <= 1.05 * r["block"].saved_bytes
    assert r["budget 0"].saved_bytes < 0.5 * r["budget 1"].saved_bytes


def budget_curve_falls(report: DemoReport) -> None:
    r = _by_label(report)
    saved = [r[f"budget {b}"].saved_bytes for b in ("1", "0.5", "0")]
    assert saved[0] > saved[1] > saved[2]
    assert r["budget 0"].peak_bytes < r["budget 1"].peak_bytes


def compiled_close_eager_identical(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["block"].grads_identical and r["block"].grad_max_diff == 0.0
    compiled = [x for x in report.results if x.strategy == "budget"]
    assert compiled and all(0.0 < x.grad_max_diff < 1e-6 for x in compiled)


def activations_alone_shrink(e: Estimate) -> None:
    a, b = e.without, e.with_checkpointing
    assert (a.parameters_bytes, a.optimizer_state_bytes) == (b.parameters_bytes, b.optimizer_state_bytes)
    assert b.activations_bytes < 0.6 * a.activations_bytes


def adam_state_twice_the_weights(e: Estimate) -> None:
    assert e.without.optimizer_state_bytes == pytest.approx(2 * e.without.parameters_bytes, rel=0.01)


def model_states_too_big(e: Estimate) -> None:
    b = e.with_checkpointing
    assert b.parameters_bytes + b.optimizer_state_bytes + b.gradients_bytes > e.gpu_gib * GIB
    assert e.verdict.startswith("Does not fit")


def model_states_set_the_peak(e: Estimate) -> None:
    for b in (e.without, e.with_checkpointing):
        assert (b.parameters_bytes + b.gradients_bytes + b.optimizer_state_bytes) > 0.9 * b.total_bytes
    assert e.with_checkpointing.total_bytes >= 0.95 * e.without.total_bytes


def no_activations_at_an_optimizer_peak(e: Estimate) -> None:
    assert e.without.activations_bytes < 1024  # a scalar or so: "0.00 GiB"
    assert e.without.gradients_bytes == e.without.parameters_bytes
    assert e.with_checkpointing.total_bytes == e.without.total_bytes


SHOWS: dict[str, Callable[..., None]] = {
    "fund-compute-for-memory": block_far_below_none,
    "fund-why-it-helps-on-one-gpu": block_far_below_none,
    "fund-gradients-unchanged": every_gradient_identical,
    "fund-region-forward-reruns": block_reruns_in_backward_only,
    "fund-why-activations-are-stored": none_climbs_then_drains,
    "mem-activation-peak-timing": none_peaks_where_forward_ends,
    "mem-full-recompute-keeps-layer-input": block_keeps_each_layer_input,
    "mem-what-checkpointing-shrinks": activations_alone_shrink,
    "mem-adam-state-bytes": adam_state_twice_the_weights,
    "mem-model-states-already-too-big": model_states_too_big,
    "mem-bert-benchmark-modest-drop": model_states_set_the_peak,
    "mem-estimate-peak-in-optimizer-step": no_activations_at_an_optimizer_peak,
    "sched-sqrt-n-spacing": sqrt_keeps_a_third,
    "sched-every-layer-not-minimal": every_layer_saves_nothing_on_a_chain,
    "sched-heavy-layers-more-segments": heavy_blocks_favour_block,
    "sched-timeline-segment-bumps": sqrt_bumps_fewer_and_taller,
    "sel-save-matmuls-tradeoff": selective_sits_between,
    "sel-what-it-chooses": selective_sits_between,
    "cmp-budget-zero": budget_zero_saves_like_block,
    "cmp-budget-curve-costs": budget_curve_falls,
    "cor-dropout-replay": every_gradient_identical,
    "cor-compiled-grads-last-bits": compiled_close_eager_identical,
}


def test_every_question_demo_has_a_check_here() -> None:
    assert sorted(set(DEMO_QUESTIONS) - set(SHOWS)) == []
    assert sorted(set(SHOWS) - set(DEMO_QUESTIONS)) == []


@pytest.mark.parametrize("question_id", sorted(DEMO_QUESTIONS))
def test_the_demo_shows_the_questions_fact(question_id: str) -> None:
    if question_id not in SHOWS:
        pytest.fail(f"{question_id} has a demo ({DEMO_QUESTIONS[question_id]}) and no check in SHOWS")
    SHOWS[question_id](_run(DEMO_QUESTIONS[question_id]))


# -- combining, debugging, large-scale, measuring, performance (issue 22, second read) --------


def one_rerun_per_block_in_backward(report: DemoReport) -> None:
    block_reruns_in_backward_only(report)
    assert _recompute_runs(_by_label(report)["block"]) == report.layers  # one bump per block


def block_peak_far_above_its_saved(report: DemoReport) -> None:
    block = _by_label(report)["block"]
    assert block.timeline is not None
    assert block.peak_bytes > 3 * block.saved_bytes  # what forward leaves is not the peak
    top = block.timeline.x[block.timeline.live_bytes.index(block.peak_bytes)]
    assert top >= 1.0  # the peak is reached in the backward half


def block_keeps_only_block_inputs(report: DemoReport) -> None:
    r = _by_label(report)
    inputs = report.layers * report.input_bytes
    assert inputs <= r["block"].saved_bytes <= inputs + 64  # the inputs (and the scalar loss)
    assert r["none"].saved_bytes > 3 * r["block"].saved_bytes


def full_keeps_less_than_selective_attn(report: DemoReport) -> None:
    r = _by_label(report)
    assert r["block"].saved_bytes < r["selective-attn"].saved_bytes < r["none"].saved_bytes
    assert r["selective-attn"].grads_identical


def activations_outweigh_model_state(e: Estimate) -> None:
    a = e.without
    assert a.activations_bytes > a.parameters_bytes + a.gradients_bytes + a.optimizer_state_bytes


def activations_many_times_parameters(e: Estimate) -> None:
    assert e.without.activations_bytes > 5 * e.without.parameters_bytes


def saved_falls_more_than_flops_grow(e: Estimate) -> None:
    a, b = e.without, e.with_checkpointing
    assert b.saved_bytes < a.saved_bytes / 3 and b.flops < 1.4 * a.flops


def fits_anyway_and_only_costs_flops(e: Estimate) -> None:
    assert e.verdict.startswith("Fits") and "without checkpointing" in e.verdict
    assert e.with_checkpointing.total_bytes == e.without.total_bytes  # no memory won
    assert e.with_checkpointing.flops > 1.25 * e.without.flops  # about a third more work


SHOWS.update(
    {
        "dbg-oom-trace-in-forward": block_reruns_in_backward_only,
        "perf-recompute-in-backward": one_rerun_per_block_in_backward,
        "meas-peak-after-forward-misleads": block_peak_far_above_its_saved,
        "ls-gpipe-rematerialization": block_keeps_only_block_inputs,
        "meas-saved-tensor-hooks": block_keeps_only_block_inputs,
        "ls-full-vs-selective-memory": full_keeps_less_than_selective_attn,
        "perf-checkpoint-pointwise-only": selective_sits_between,
        "cmb-different-memory-costs": activations_alone_shrink,
        "cmb-zero3-does-not-shard-activations": activations_outweigh_model_state,
        "cmb-qlora-what-is-left": activations_many_times_parameters,
        "perf-chen-resnet-figures": saved_falls_more_than_flops_grow,
        "perf-when-it-only-costs": fits_anyway_and_only_costs_flops,
    }
)
