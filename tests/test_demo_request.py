"""The bot's /demo requests against the demos' own parsers, a question's `demo:` field (its
lint, its cost bound), the "see it run" codec and engine call, and the result card (labels,
the estimate beside each peak, every chart, the timeline first)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from bot.core import wording
from bot.core.bank import Bank, collect, load_bank
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput
from bot.core.rules import demo_request as dr
from bot.core.rules.demo_result import result_card
from bot.core.values import ChannelRef, DemoChart, DemoQueued, DemoResultCard, UserRef
from bot.platforms.discord import render as discord_render
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.web import charts as web_charts
from bot.worker.demo_process import DemoOutcome, save_charts
from tests.conftest import ROOT, TEST_BANK, FakeClock

QUESTION_DEMO = "layers=2 tokens=64 width=16 repeat=1 strategies=none,block"


def demo_bank(test_bank: Bank, demo: str = QUESTION_DEMO) -> Bank:
    """The test bank with every question's demo set (the bank loader's form of the field)."""
    return Bank.of(replace(q, demo=dr.question_demo_text(demo)) for q in test_bank.questions)


# ------------------------------------------------------------- the demo is the truth


def test_the_names_are_the_demos_names() -> None:
    from demos import checkpoint, estimate, models, strategies

    assert dr.STRATEGIES == strategies.STRATEGIES
    assert dr.MODELS == models.MODEL_KINDS
    assert tuple(models.PRESETS) == dr.PRESETS
    assert vars(estimate)["PRESETS"] is models.PRESETS
    assert dr.MODEL_DEFAULTS == checkpoint.MODEL_DEFAULTS
    assert dr.DEFAULT_STRATEGIES == checkpoint.DEFAULT_STRATEGIES
    assert dr.DEFAULT_BUDGETS == checkpoint.DEFAULT_BUDGETS
    assert (checkpoint.ASSUMED_FLOPS["cpu"], checkpoint.COMPILE_S["cpu"]) == (dr.CPU_FLOPS, dr.COMPILE_S)
    from demos.hf import HF_STRATEGIES

    assert dr.HF_STRATEGIES == HF_STRATEGIES


def accepted_requests() -> list[str]:
    """Every bound's both ends, every choice, every list the bot accepts, one at a time."""
    texts = []
    for key, (low, high) in dr.INT_BOUNDS["checkpoint"].items():
        model = "model=transformer " if key in ("heads", "batch") else ""
        for value in (low, high):
            if key == "heads" and 128 % value:
                value = 64  # the demo (and the bot) refuse heads that do not divide the width
            texts.append(f"checkpoint {model}{key}={value}")
    texts += [f"checkpoint model={m}" for m in dr.MODELS]
    texts += [f"checkpoint device={d}" for d in ("auto", "cpu")]
    texts += [f"checkpoint strategies={s}" for s in dr.STRATEGIES if s != "offload"]
    texts += ["checkpoint strategies=none,budget budgets=1,0.5,.2,0", "checkpoint budgets=0,0,1"]
    return texts


@pytest.mark.parametrize("text", accepted_requests())
def test_what_the_bot_accepts_the_demos_parser_accepts(text: str) -> None:
    from demos import checkpoint

    request = dr.parse_demo(text)
    config = checkpoint.parse_args(list(request.args))  # raises BadInput on anything it refuses
    options = dict(zip(request.args[::2], request.args[1::2], strict=True))
    if "--layers" in options:
        assert config.layers == int(options["--layers"])
    if "--model" in options:
        assert config.model == options["--model"]


def test_what_the_demo_refuses_together_the_bot_refuses_first() -> None:
    from demos import checkpoint
    from demos.errors import BadInput

    for text in ("checkpoint model=transformer width=130 heads=4", "checkpoint model=hf-gpt2 strategies=sqrt"):
        with pytest.raises(BadInput):
            checkpoint.parse_args(_args(text))
        with pytest.raises(InvalidInput):
            dr.parse_demo(text)


def _args(text: str) -> list[str]:
    out = []
    for word in text.split()[1:]:
        key, _, value = word.partition("=")
        out += [f"--{key}", value]
    return out


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("checkpoint strategies=none,quantum", "Unknown strategy 'quantum'"),
        ("checkpoint model=resnet", "model must be one of blocks, chain, transformer, hf-gpt2"),
        ("checkpoint heads=0", "heads must be a whole number from 1 to 64"),
        ("checkpoint budgets=1.5", "budgets are up to 6 numbers from 0 to 1"),
        ("checkpoint budgets=1,nan", "not 'nan'"),
        ("checkpoint layers=2 layers=3", "layers is given twice"),
        ("estimate kernels=tpu", "kernels must be one of cuda, cpu"),
        ("checkpoint sweep=4,16", "Unknown demo setting 'sweep'"),
    ],
)
def test_a_bad_request_is_one_sentence(text: str, says: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        dr.parse_demo(text)
    assert says in refused.value.message


def test_the_estimate_takes_the_hf_preset_and_the_kernels() -> None:
    request = dr.parse_demo("estimate preset=hf-gpt2 batch=4 seq=512 kernels=cuda")
    assert request.args == ("--preset", "hf-gpt2", "--batch", "4", "--seq", "512", "--kernels", "cuda")


def test_the_cost_model_is_an_upper_bound_of_the_demos_own() -> None:
    """The bot's CPU seconds for a request are at least what the demo's own time check computes
    (FLOPs traced with fake tensors), so a question demo under QUICK_SECONDS passes it there."""
    from demos import checkpoint

    for text in (
        "checkpoint",
        "checkpoint model=chain",
        "checkpoint model=transformer",
        "checkpoint model=transformer layers=2 tokens=512 width=64 heads=2 batch=2 strategies=budget budgets=1,0",
        "checkpoint layers=4 tokens=256 width=64 repeat=1",
    ):
        request = dr.parse_demo(text)
        cfg = checkpoint.parse_args([*request.args, "--device", "cpu"])
        traced = checkpoint.estimate_none_step(cfg, cfg.layers)
        runs = sum(len(cfg.budgets) if s == "budget" else 1 for s in cfg.strategies)
        compiles = len(cfg.budgets) if "budget" in cfg.strategies else 0
        theirs = runs * (cfg.repeat + 2) * traced.flops / checkpoint.ASSUMED_FLOPS["cpu"]
        theirs += compiles * checkpoint.COMPILE_S["cpu"]
        assert dr.cpu_seconds(request) >= theirs, text


def test_a_question_demo_must_be_quick_and_run_anywhere() -> None:
    assert dr.parse_question_demo(QUESTION_DEMO).args[:2] == ("--layers", "2")
    assert dr.parse_question_demo("estimate preset=gpt2-small").module == "demos.estimate"
    for field, says in (
        ("layers=64 tokens=8192 width=512", "must run in seconds"),
        ("strategies=none,offload", "no offload"),
        ("model=hf-gpt2", "transformers"),
        ("device=cuda", "no device=cuda"),
    ):
        with pytest.raises(InvalidInput) as refused:
            dr.parse_question_demo(field)
        assert says in refused.value.message


def test_every_demo_of_the_bank_passes_the_demos_own_checks_in_seconds() -> None:
    from demos import checkpoint

    bank = load_bank(ROOT / "questions")
    demos = [q for q in bank.questions if q.demo]
    assert len(demos) >= 3
    for question in demos:
        request = dr.parse_question_demo(question.demo or "")
        if request.module == "demos.checkpoint":
            cfg = checkpoint.parse_args([*request.args, "--device", "cpu"])
            checkpoint.check_bounds(replace(cfg, time_budget_s=dr.QUICK_SECONDS))  # raises when too slow


# --------------------------------------------------------------------- lint


def test_a_bad_demo_field_fails_lint_with_its_line(tmp_path: Path) -> None:
    good = (TEST_BANK / "fundamentals.yaml").read_text()
    refs = '    refs: ["https://pytorch.org/docs/stable/notes/autograd.html"]\n'
    text = good.replace(refs, refs + '    demo: "layers=2 strategies=none,warp"\n')
    text = text.replace(
        "    trap: Thinking checkpointing changes what is computed rather than when.\n",
        "    trap: Thinking checkpointing changes what is computed rather than when.\n"
        "    demo: layers=2 tokens=64 width=16 strategies=none,block\n",
    )
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / "fundamentals.yaml").write_text(text)
    # the test bank's reviewed prompt echoes stay behind: its echo flags are not this test's
    problems = [p for p in collect([bank], root=ROOT)[1] if "echoes the prompt" not in p]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "warp" in row)
    assert problems == [
        f"{bank / 'fundamentals.yaml'}:{line}: demo 'layers=2 strategies=none,warp': Unknown strategy 'warp'; "
        f"choose from {', '.join(dr.STRATEGIES)}."
    ]


def test_lint_refuses_a_slow_demo_by_its_line(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        topic: fundamentals
        questions:
          - id: t-slow
            difficulty: 1
            prompt: Does a long stack save more memory with block checkpointing?
            choices:
              - text: Yes, the saving grows with depth
                correct: true
                why: Each checkpointed block drops its activations, so deeper stacks drop more of them.
              - text: No, the saving stays fixed in size
                why: The saving is not fixed; it scales with how many blocks keep only their inputs.
            explain: Block checkpointing keeps one input per block.
            refs: ["https://pytorch.org/docs/stable/checkpoint.html"]
            demo: checkpoint layers=256 tokens=16384 width=1024
        """
    )
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / "fundamentals.yaml").write_text(text)
    [problem] = collect([bank], root=ROOT)[1]
    assert problem.startswith(f"{bank / 'fundamentals.yaml'}:14: demo 'checkpoint layers=256")
    assert "must run in seconds" in problem


def test_the_loader_keeps_the_demo_as_a_request() -> None:
    bank = load_bank(ROOT / "questions")
    for question in bank.questions:
        if question.demo:
            assert question.demo.split()[0] in dr.DEMOS


# ---------------------------------------------------------------- the button


@pytest.mark.parametrize("round_id", [1, 7, 10**17])
def test_the_demo_button_round_trips(round_id: int) -> None:
    assert dr.decode_demo_button(dr.encode_demo_button(round_id)) == round_id


@pytest.mark.parametrize(
    "tampered", ["sb1:dm:0", "sb1:dm:-1", "sb1:dm:01", "sb1:dm:1:2", "sb1:dm:", "sb1:a:1:0", "sb1:dm:1 ", 7, None]
)
def test_a_tampered_demo_button_decodes_to_none(tampered: object) -> None:
    assert dr.decode_demo_button(tampered) is None


ANN = UserRef("console", "club", "ann", "Ann")
BOB = UserRef("console", "club", "bob", "Bob")
HERE = ChannelRef("console", "club", "general")


@pytest.fixture
def demo_engine(database: Database, test_bank: Bank, clock: FakeClock) -> StudyEngine:
    return StudyEngine(SqlStore(database), demo_bank(test_bank), clock=clock)


def test_see_it_run_queues_exactly_the_questions_demo(demo_engine: StudyEngine) -> None:
    card = demo_engine.rounds.open_daily(HERE)
    round_id = card.round_id  # type: ignore[union-attr]
    with pytest.raises(InvalidInput) as early:
        demo_engine.demos.request_question_demo(ANN, HERE, round_id)
    assert early.value.message == wording.QUESTION_DEMO_NOT_REVEALED
    demo_engine.rounds.close_round(round_id)
    queued = demo_engine.demos.request_question_demo(ANN, HERE, round_id)
    assert isinstance(queued, DemoQueued) and queued.module == "demos.checkpoint"
    [job] = demo_engine.demos.demo_jobs()
    assert (job.module, job.args) == ("demos.checkpoint", dr.parse_question_demo(QUESTION_DEMO).args)
    assert job.user_name == "Ann" and job.channel_id == "general"
    with pytest.raises(InvalidInput) as again:  # the usual cooldown
        demo_engine.demos.request_question_demo(ANN, HERE, round_id)
    assert "one per member every" in again.value.message
    assert demo_engine.demos.request_question_demo(BOB, HERE, round_id).position == 2  # another member queues behind
    elsewhere = UserRef("console", "other-club", "ann", "Ann")
    with pytest.raises(InvalidInput) as foreign:
        demo_engine.demos.request_question_demo(elsewhere, ChannelRef("console", "other-club", "general"), round_id)
    assert foreign.value.message == wording.STALE_BUTTON
    with pytest.raises(InvalidInput) as missing:
        demo_engine.demos.request_question_demo(BOB, HERE, round_id + 100)
    assert missing.value.message == wording.STALE_BUTTON


def test_a_question_without_a_demo_has_no_button(engine: StudyEngine) -> None:
    card = engine.rounds.open_daily(HERE)
    round_id = card.round_id  # type: ignore[union-attr]
    reveal = engine.rounds.close_round(round_id)
    assert reveal.demo is None  # type: ignore[union-attr]
    assert discord_render.reveal(reveal).view is None  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as refused:
        engine.demos.request_question_demo(ANN, HERE, round_id)
    assert refused.value.message == wording.NO_QUESTION_DEMO


# -------------------------------------------------------------- the result card


def result_data(tmp_path: Path) -> dict[str, object]:
    """A checkpoint result as the demo prints it: a budget sweep, timelines, three charts."""

    def timeline(peak: int) -> dict[str, object]:
        return {
            "x": [0.0, 0.5, 1.0, 1.5, 2.0],
            "live_bytes": [0, peak // 2, peak, peak // 3, 0],
            "phase": ["forward"] * 5,
        }

    def row(strategy: str, peak: int, label: str = "", budget: float | None = None, est: int | None = None) -> dict:
        return {
            "strategy": strategy,
            "label": label or strategy,
            "budget": budget,
            "peak_bytes": peak,
            "saved_bytes": peak // 2,
            "step_ms": 10.0 + peak / 2**20,
            "grads_identical": budget is None,
            "grad_max_diff": 0.0 if budget is None else 2.5e-8,
            "estimate_bytes": est,
            "estimate_error_pct": None if est is None else round(100 * (est - peak) / peak, 2),
            "timeline": timeline(peak),
        }

    for kind in ("c", "c-memory", "c-budget"):
        (tmp_path / f"{kind}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + kind.encode())
    return {
        "device": "cpu",
        "torch": "2.13.0",
        "model": "transformer",
        "layers": 4,
        "tokens": 256,
        "width": 128,
        "heads": 4,
        "batch": 4,
        "estimate_kernels": "cpu",
        "results": [
            row("none", 40 * 2**20, est=41 * 2**20),
            row("block", 12 * 2**20, est=12 * 2**20),
            row("budget", 30 * 2**20, "budget 0.5", 0.5),
            row("budget", 10 * 2**20, "budget 0", 0.0),
        ],
        "charts": {
            "memory": str(tmp_path / "c-memory.png"),
            "budget": str(tmp_path / "c-budget.png"),
            "timeline": str(tmp_path / "c.png"),
        },
    }


def test_the_card_shows_labels_the_estimate_and_its_error(tmp_path: Path) -> None:
    card = result_card("demos.checkpoint", result_data(tmp_path), str(tmp_path / "c.png"), 3.0)
    column = {name: [row[i] for row in card.rows] for i, name in enumerate(card.header)}
    assert column["strategy"] == ["none", "block", "budget 0.5", "budget 0"]
    assert column["est MiB"] == ["41.00", "12.00", "-", "-"]
    assert column["est err"] == ["+2.5%", "+0.0%", "-", "-"]
    assert column["grads"] == ["identical", "identical", "max diff 2.5e-08", "max diff 2.5e-08"]
    assert any("attention traced as CPU kernels" in note for note in card.notes)
    assert "transformer, 4 layers, batch 4 x 256 tokens" in card.title


def test_the_card_shows_each_step_times_spread_and_the_cpu_caveats(tmp_path: Path) -> None:
    data = result_data(tmp_path)
    rows = data["results"]
    assert isinstance(rows, list)
    rows[0].update(step_ms=50.0, step_ms_spread=[48.0, 52.5], step_ms_wide=False)
    rows[1].update(step_ms=60.0, step_ms_spread=[30.0, 90.0], step_ms_wide=True)  # rows 2 and 3: an older worker's
    card = result_card("demos.checkpoint", data, None, 3.0)
    column = {name: [row[i] for row in card.rows] for i, name in enumerate(card.header)}
    assert column["step ms"] == ["50.0", "60.0", "40.0", "20.0"]
    assert column["spread ms"] == ["48.0-52.5", "30.0-90.0 !", "-", "-"]
    assert wording.DEMO_CPU_TIMES_NOTE in card.notes and wording.demo_spread_note(True) in card.notes
    assert "not how close the estimate comes to a GPU's peak" in wording.demo_estimate_note("cpu")
    assert "GPU's peak" not in wording.demo_estimate_note("cuda")
    data["device"] = "NVIDIA H200"
    rows[1]["step_ms_wide"] = False
    notes = result_card("demos.checkpoint", data, None, 3.0).notes
    assert wording.DEMO_CPU_TIMES_NOTE not in notes and wording.demo_spread_note(False) in notes


def test_every_chart_is_kept_the_timeline_first(tmp_path: Path) -> None:
    card = result_card("demos.checkpoint", result_data(tmp_path), str(tmp_path / "c.png"), 3.0)
    assert [c.kind for c in card.pictures()] == ["timeline", "budget", "memory"]
    assert card.chart == str(tmp_path / "c.png")
    lines = [line for line in wording.demo_lines(card) if line.startswith(wording.CHART_PREFIX)]
    assert lines == [wording.chart_line(c.path) for c in card.pictures()]  # the console prints them so
    reply = discord_render.demo_result(card)
    assert reply.files == tuple(c.path for c in card.pictures())
    assert reply.embed is not None and reply.embed.image.url == "attachment://c.png"


def test_the_runner_saves_every_chart_beside_the_first(tmp_path: Path) -> None:
    from bot.core.rules import demo_result
    from bot.worker import demo_process

    assert demo_process.CHART_ORDER == demo_result.CHART_ORDER
    outcome = DemoOutcome({}, b"timeline", charts=(("timeline", b"t"), ("budget", b"b"), ("memory", b"m")))
    saved = save_charts(tmp_path, "demo-3", outcome)
    assert list(saved) == ["timeline", "budget", "memory"]
    assert [Path(p).name for p in saved.values()] == ["demo-3.png", "demo-3-budget.png", "demo-3-memory.png"]
    assert Path(saved["budget"]).read_bytes() == b"b"
    older = save_charts(tmp_path / "old", "demo-4", DemoOutcome({}, b"only"))  # an older worker's outcome
    assert [Path(p).read_bytes() for p in older.values()] == [b"only"]


def test_the_web_page_draws_the_timeline_and_the_budget_curve(tmp_path: Path) -> None:
    card = result_card("demos.checkpoint", result_data(tmp_path), None, 3.0)
    timeline = web_charts.timeline_chart(card)
    assert timeline is not None and [line.label for line in timeline.lines] == [
        "none",
        "block",
        "budget 0.5",
        "budget 0",
    ]
    assert all(len(line.points.split()) == 5 for line in timeline.lines)
    curve = web_charts.budget_chart(card)
    assert curve is not None and len(curve.lines[0].points.split()) == 2  # the two budgets joined
    no_budget = json.loads(json.dumps(result_data(tmp_path)))
    no_budget["results"] = no_budget["results"][:2]
    assert web_charts.budget_chart(result_card("demos.checkpoint", no_budget, None, 1.0)) is None


def test_an_older_card_with_one_chart_still_shows_it() -> None:
    card = DemoResultCard("demos.checkpoint", "t", ("strategy",), (), (), "/x/chart.png", 1.0)
    assert card.pictures() == (DemoChart("chart", "/x/chart.png"),)


def test_the_web_timeline_colours_each_strategy_as_the_png_does_and_keeps_its_label_whole(tmp_path: Path) -> None:
    """A strategy has one colour in the chat's PNG and on the web page, and the y axis's top
    label (e.g. '1234.5 MiB') has room beside the axis instead of being cut at the page's edge."""
    import re

    from demos.chart import COLOURS

    css = (Path(web_charts.__file__).parent / "static" / "style.css").read_text()
    web = {m[1]: m[2].lower() for m in re.finditer(r"\.strategy-([a-z-]+) \{ stroke: (#[0-9a-fA-F]{6})", css)}
    assert web == {name: colour.lower() for name, colour in COLOURS.items()}
    assert web_charts.STRATEGY_CLASSES | {"budget"} == set(COLOURS)
    card = result_card("demos.checkpoint", result_data(tmp_path), None, 3.0)
    timeline = web_charts.timeline_chart(card)
    assert timeline is not None
    assert [line.css for line in timeline.lines][:2] == ["strategy-none", "strategy-block"]
    curve = web_charts.budget_chart(card)
    assert curve is not None and curve.lines[0].css == "strategy-budget"
    wide = web_charts._axis_left("12345.6 MiB")
    assert wide - 4 >= web_charts.TICK_CHAR_PX * len("12345.6 MiB")  # the label's width fits left of the axis
