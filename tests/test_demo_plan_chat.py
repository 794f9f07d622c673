"""`/demo plan` in chat: the request held to demos.plan's own parser, run on the demo worker
(a real child process, fake tensors), and its answer rendered on Discord, Slack and the
console: the breakdown of the plan's peak as the table, the sentence, the frontier, the code
that applies the plan, and the frontier chart attached."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput
from bot.core.rules import demo_request as dr
from bot.core.rules.demo_result import PLAN_POLICY_HEADER, result_card
from bot.core.values import ChannelRef, DemoResultCard
from bot.platforms.console.render import render as render_for_console
from bot.platforms.discord import render as discord_render
from bot.worker.demo_process import run_demo_process, save_charts
from tests.console_chat import Console
from tests.test_discord import ALICE, World, text_of, world  # noqa: F401  (the fixture)
from tests.test_slack import Slack, block_text, slack  # noqa: F401  (the fixture)

pytestmark = pytest.mark.torch

SMALL_PLAN = "plan model=transformer batch=2 seq=64 gpu-gib=1"


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height from its IHDR chunk (after checking the signature)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# ------------------------------------------------------------- the planner is the truth


def test_the_plan_names_are_the_planners() -> None:
    from demos import plan, plan_models

    assert tuple(plan_models.PRESETS) == dr.PLAN_MODELS == tuple(dr.PLAN_MAX_SEQ)
    assert {name: preset.max_seq for name, preset in plan_models.PRESETS.items()} == dr.PLAN_MAX_SEQ
    assert plan.parse_request([]).request.model == dr.PLAN_DEFAULT_MODEL
    assert (dr.PLAN_DTYPES, dr.PLAN_OPTIMIZERS) == (plan.DTYPES, plan.OPTIMIZERS)


def accepted_plans() -> list[str]:
    texts = [f"plan model={m}" for m in dr.PLAN_MODELS]
    texts += [f"plan model={m} seq={longest}" for m, longest in dr.PLAN_MAX_SEQ.items()]
    texts += [f"plan dtype={d}" for d in dr.PLAN_DTYPES] + [f"plan optimizer={o}" for o in dr.PLAN_OPTIMIZERS]
    for key, (low, high) in dr.INT_BOUNDS["plan"].items():
        texts += [f"plan model=llama-1b {key}={low}", f"plan model=llama-1b {key}={high}"]
    texts += ["plan gpu-gib=1", "plan gpu-gib=4096 margin-gib=0", "plan gpu-gib=12.5 margin-gib=1.25"]
    return texts


@pytest.mark.parametrize("text", accepted_plans())
def test_what_the_bot_accepts_the_planner_accepts(text: str) -> None:
    from demos import plan

    request = dr.parse_demo(text)
    assert request.module == "demos.plan"
    options = plan.parse_request(list(request.args))  # raises BadInput on anything it refuses
    given = dict(zip(request.args[::2], request.args[1::2], strict=True))
    if "--model" in given:
        assert options.request.model == given["--model"]
    if "--gpu-gib" in given:
        assert options.request.gpu_gib == float(given["--gpu-gib"])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("plan model=resnet", "model must be one of transformer, hf-gpt2, gpt2-medium"),
        ("plan gpu-gib=0.5", "gpu-gib must be a number from 1"),
        ("plan gpu-gib=8 margin-gib=8", "margin-gib (8) must be less than gpu-gib (8)"),
        ("plan margin-gib=30", "margin-gib (30) must be less than gpu-gib (24)"),
        ("plan dtype=fp8", "dtype must be one of fp32, bf16-autocast, bf16"),
        ("plan shards=0", "shards must be a whole number from 1 to 4096"),
        ("plan policies=none", "Unknown demo setting 'policies'"),
        ("plan model=gpt2-medium seq=1025", "seq=1,025 is longer than the gpt2-medium model takes: at most 1,024"),
        ("plan seq=2048", "longer than the hf-gpt2 model takes"),
    ],
)
def test_a_bad_plan_request_is_one_sentence(text: str, says: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        dr.parse_demo(text)
    assert says in refused.value.message
    assert "\n" not in refused.value.message


# ------------------------------------------------------------- run on the worker


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> DemoResultCard:
    """One real run of the planner on the demo worker (a child process), its chart saved as
    the runner saves it, and the card every platform renders."""
    request = dr.parse_demo(SMALL_PLAN)
    outcome = run_demo_process(request.module, request.args, timeout_s=300)
    saved = save_charts(tmp_path_factory.mktemp("charts"), "demo-1", outcome)
    result = {**outcome.result, "charts": saved}
    return result_card(request.module, result, next(iter(saved.values()), None), 2.0)


def test_the_plan_runs_on_the_worker_and_its_card_shows_the_breakdown_and_the_code(planned: DemoResultCard) -> None:
    data = planned.data
    assert data["fits"] is True and data["preset"] == "transformer"
    assert planned.header == ("at the peak", "MiB", "share")  # a small model's plan: under a GiB
    parts = [row[0] for row in planned.rows]
    assert parts[:2] == ["parameters", "optimizer state"] and parts[-1] == "total"
    assert {"gradients"} <= set(parts)
    total = float(planned.rows[-1][1])
    assert total == pytest.approx(data["predicted_peak_bytes"] / 2**20, abs=0.006)  # the breakdown adds up
    notes = "\n".join(planned.notes)
    assert planned.notes[0] == data["sentence"] and "fits in 1 GiB" in data["sentence"]
    assert "Frontier:" in notes and f"{wording.PLAN_CODE_INTRO}\n{data['code']}" in planned.notes
    assert "nothing allocated" in planned.title and "transformer (4 layers)" in planned.title
    [chart] = planned.pictures()
    assert chart.kind == "plan"
    width, height = png_size(Path(chart.path).read_bytes())
    assert width > 400 and height > 200


def test_an_impossible_budget_is_one_sentence_and_the_policies_table() -> None:
    from dataclasses import asdict

    from demos import plan

    options = plan.parse_request(list(dr.parse_demo("plan model=transformer batch=512 seq=256 gpu-gib=1").args))
    answer = asdict(plan.plan(options.request))
    card = result_card("demos.plan", answer, None, 1.0)
    assert answer["fits"] is False
    assert card.header == PLAN_POLICY_HEADER
    assert [row[0] for row in card.rows] == list(plan.POLICIES)
    assert card.notes[0].startswith("No plan fits transformer, batch 512 x 256 tokens")
    assert card.notes[0].count(". ") == 0 and "the least any plan reaches is" in card.notes[0]
    assert not any(note.startswith(wording.PLAN_CODE_INTRO) for note in card.notes)


# ------------------------------------------------------------- on each platform


def test_discord_renders_the_plan_with_its_chart_as_the_embeds_image(planned: DemoResultCard) -> None:
    reply = discord_render.demo_result(planned)
    assert reply.embed is not None and reply.public
    assert reply.files == (planned.pictures()[0].path,)
    assert reply.embed.image.url == f"attachment://{Path(planned.pictures()[0].path).name}"
    body = reply.embed.description or ""
    assert "at the peak" in body and "optimizer state" in body and "Frontier:" in body
    assert len(body) <= 4096


def test_the_console_prints_the_plan(planned: DemoResultCard) -> None:
    [message] = render_for_console(planned)
    assert message.kind == "demo" and "at the peak" in message.text and "total" in message.text
    assert planned.data["code"].splitlines()[0] in message.text


async def test_slack_queues_a_plan_and_posts_its_card_with_the_chart(slack: Slack, planned: DemoResultCard) -> None:  # noqa: F811
    await slack.command("/demo", SMALL_PLAN, user="U1")
    announced = (await slack.fake.wait_for("chat.postMessage", 1, channel="C1"))[-1].params
    assert "Demo #1" in block_text(announced) and "(plan)" in block_text(announced)
    [job] = slack.engine.demos.demo_jobs()
    assert job.module == "demos.plan" and "--gpu-gib" in job.args

    ref = await slack.bot.send(ChannelRef("slack", "T1", "C1"), planned)
    assert ref
    posted = [c.params for c in slack.fake.of("chat.postMessage")][-1]
    shown = block_text(posted)
    assert "at the peak" in shown and "total" in shown and wording.PLAN_CODE_INTRO in shown
    [uploaded] = slack.fake.of("upload")
    assert uploaded.params["size"] == Path(planned.pictures()[0].path).stat().st_size


def test_the_console_queues_a_plan_and_answers_in_the_channel(engine: StudyEngine, tmp_path: Path) -> None:
    chat = Console(engine, community="club", user="Ann", demos=tmp_path / "charts")
    try:
        [queued] = [m for m in chat.handle(f"/demo {SMALL_PLAN}") if m.kind == "demo_queued"]
        assert queued.to == "channel" and queued.data["module"] == "demos.plan"
        seen = chat.wait_for(lambda seen: any(m.kind in ("demo", "demo_failed") for m in seen))
        [result] = [m for m in seen if m.kind in ("demo", "demo_failed")]
        assert result.kind == "demo" and result.to == "channel", result
        assert "at the peak" in result.text and "fits in 1 GiB" in result.text
        assert (tmp_path / "charts" / "demo-1.png").read_bytes()[:4] == b"\x89PNG"
    finally:
        chat.close()


async def test_discord_demo_plan_runs_on_the_local_back_end(world: World, tmp_path: Path) -> None:  # noqa: F811
    running = await world.start(demos=tmp_path / "charts")
    fake = world.fake
    options: list[dict[str, Any]] = [
        {"name": "model", "type": 3, "value": "transformer"},
        {"name": "gpu_gib", "type": 10, "value": 1.0},
        {"name": "batch", "type": 4, "value": 2},
        {"name": "seq", "type": 4, "value": 64},
    ]
    try:
        interaction = await fake.slash(
            "demo", ALICE, world.guild, world.channel, [{"name": "plan", "type": 1, "options": options}]
        )
        queued = await fake.answered(interaction)
        assert "(plan) for alice" in queued["content"]
        [result] = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if m["_files"]], timeout=120)
        name, size, head = result["_files"][0].split(":")
        assert head == "89504e470d0a1a0a" and int(size) > 1000
        assert result["embeds"][0]["image"]["url"] == f"attachment://{name}"
        shown = text_of(result)
        assert "at the peak" in shown and "fits in 1 GiB" in shown
    finally:
        await running.stop()
    assert fake.violations == []


async def test_the_web_page_shows_the_plan_its_breakdown_and_its_code(
    engine: StudyEngine, planned: DemoResultCard
) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from bot.core.values import CommunityRef, UserRef
    from bot.web.app import build_app
    from bot.web.charts import demo_chart
    from bot.web.links import WebLinks

    links = WebLinks("http://127.0.0.1", "test-web-secret-not-for-production", 3600)
    engine.links = links
    ann = UserRef("console", "club", "ann", "Ann")
    job = engine.demos.request_demo(ann, ChannelRef("console", "club", "general"), SMALL_PLAN).job_id
    assert engine.demos.claim_demo("test", "local") is not None
    engine.demos.demo_finished(job, planned.data, planned.chart)
    bars = demo_chart(planned)
    assert bars is not None and [b.label for b in bars.bars] == [row[0] for row in planned.rows[:-1]]
    assert all(b.text.endswith(" MiB") for b in bars.bars) and max(b.value for b in bars.bars) > 1
    async with TestClient(TestServer(build_app(engine, links))) as client:
        path = (
            links.member(CommunityRef("console", "club"), "ann")
            .removeprefix("http://127.0.0.1")
            .replace("/me", "/demos")
        )
        page = await client.get(path)
        html = await page.text()
        chart = await client.get(path.replace("/demos", f"/demos/{job}/chart.png"))
        png = await chart.read()
    assert page.status == 200 and "Demo #1: plan for Ann" in html
    assert "What makes up the planned step's peak (MiB)." in html and 'class="bar"' in html
    first_code_line = planned.data["code"].splitlines()[0]
    assert "<pre><code>" in html and first_code_line.split("(")[0] in html
    assert chart.status == 200 and png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plan_of_gibibytes_is_shown_in_gib() -> None:
    gib = 2**30
    data = {
        "preset": "hf-gpt2",
        "layers": 12,
        "request": {"batch": 8, "seq": 1024, "dtype": "fp32", "optimizer": "adamw", "gpu_gib": 12.0},
        "sentence": "hf-gpt2 fits in 12 GiB with 12 x sac-mm.",
        "frontier": [{"peak_bytes": 9 * gib}, {"peak_bytes": 5 * gib // 2}],
        "breakdown": {"parameters": gib // 2, "optimizer state": gib, "saved activations": 3 * gib // 2},
        "code": "apply_activation_checkpointing(model)",
    }
    card = result_card("demos.plan", data, None, 1.0)
    assert card.header == ("at the peak", "GiB", "share")
    assert card.rows == (
        ("parameters", "0.50", "17%"),
        ("optimizer state", "1.00", "33%"),
        ("saved activations", "1.50", "50%"),
        ("total", "3.00", "100%"),
    )
    assert "from 9.00 GiB with nothing recomputed down to 2.50 GiB" in card.notes[1]
    assert "batch 8 x 1024 tokens, fp32, adamw, in 12.0 GiB" in card.title
