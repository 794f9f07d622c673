"""Demos on Discord: `/demo checkpoint|estimate|plan` and the "see it run" button under a reveal
queue one (one engine call each); the queued message is posted in the channel and its id told
to the engine, so the job's progress edits it in place (`show_progress`, from the runtime). A
refusal (a cooldown, a full queue) is answered privately."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any, Literal

import discord
from discord import app_commands

from bot.core.engine import StudyEngine
from bot.core.rules.demo_request import PRESETS, decode_demo_button
from bot.core.values import DemoProgressCard, DemoQueued
from bot.platforms.discord import render as layout
from bot.platforms.discord.commands import Choice, matching
from bot.platforms.discord.guard import place
from bot.platforms.discord.posts import snowflake
from bot.platforms.discord.replies import Replies
from bot.platforms.discord.text import COMMANDS, DEMO_COMMANDS, OPTIONS
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)


class Demos:
    """/demo, the reveal's demo button, and the queued message's progress."""

    def __init__(self, replies: Replies, runtime: Runtime, bot: discord.Client) -> None:
        self.replies = replies
        self.runtime = runtime
        self.engine: StudyEngine = runtime.engine
        self.bot = bot

    def register(self, tree: app_commands.CommandTree[Any]) -> None:
        """/demo checkpoint, /demo estimate and /demo plan, guild-only as a group."""
        opt = OPTIONS
        demo = app_commands.Group(name="demo", description=COMMANDS["demo"], guild_only=True)

        @demo.command(name="checkpoint", description=DEMO_COMMANDS["checkpoint"])
        @app_commands.describe(
            layers=opt["layers"],
            tokens=opt["tokens"],
            width=opt["width"],
            repeat=opt["repeat"],
            strategies=opt["strategies"],
            model=opt["model"],
            heads=opt["heads"],
            batch=opt["demo_batch"],
            budgets=opt["budgets"],
        )
        async def checkpoint(
            interaction: discord.Interaction[Any],
            layers: app_commands.Range[int, 1, 512] | None = None,
            tokens: app_commands.Range[int, 1, 65536] | None = None,
            width: app_commands.Range[int, 8, 4096] | None = None,
            repeat: app_commands.Range[int, 1, 20] | None = None,
            strategies: str | None = None,
            model: Literal["blocks", "chain", "transformer", "hf-gpt2"] | None = None,
            heads: app_commands.Range[int, 1, 64] | None = None,
            batch: app_commands.Range[int, 1, 256] | None = None,
            budgets: str | None = None,
        ) -> None:
            # the bounds are demo_request's INT_BOUNDS (tests/test_demo_chat.py compares them)
            words = {
                "model": model,
                "layers": layers,
                "tokens": tokens,
                "width": width,
                "heads": heads,
                "batch": batch,
                "repeat": repeat,
                "strategies": strategies,
                "budgets": budgets,
            }
            await self.request(interaction, "checkpoint", words)

        async def presets(_interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
            return matching(PRESETS, current)

        @demo.command(name="estimate", description=DEMO_COMMANDS["estimate"])
        @app_commands.describe(
            preset=opt["preset"], batch=opt["batch"], seq=opt["seq"], gpu_gib=opt["gpu_gib"], kernels=opt["kernels"]
        )
        @app_commands.autocomplete(preset=presets)
        async def estimate(
            interaction: discord.Interaction[Any],
            preset: str,
            batch: app_commands.Range[int, 1, 512] | None = None,
            seq: app_commands.Range[int, 1, 131072] | None = None,
            gpu_gib: app_commands.Range[float, 1.0, 4096.0] | None = None,
            kernels: Literal["cuda", "cpu"] | None = None,
        ) -> None:
            words = {"preset": preset, "batch": batch, "seq": seq, "gpu-gib": gpu_gib, "kernels": kernels}
            await self.request(interaction, "estimate", words)

        @demo.command(name="plan", description=DEMO_COMMANDS["plan"])
        @app_commands.describe(
            model=opt["plan_model"],
            gpu_gib=opt["plan_gpu_gib"],
            batch=opt["batch"],
            seq=opt["seq"],
            dtype=opt["dtype"],
            optimizer=opt["optimizer"],
            shards=opt["shards"],
            margin_gib=opt["margin_gib"],
        )
        async def plan(
            interaction: discord.Interaction[Any],
            model: Literal[
                "transformer", "hf-gpt2", "gpt2-medium", "gpt2-large", "llama-1b", "llama-7b", "torch-sac-test"
            ],
            gpu_gib: app_commands.Range[float, 1.0, 4096.0] | None = None,
            batch: app_commands.Range[int, 1, 512] | None = None,
            seq: app_commands.Range[int, 1, 131072] | None = None,
            dtype: Literal["fp32", "bf16-autocast", "bf16"] | None = None,
            optimizer: Literal["adamw", "adam", "sgd", "adapters"] | None = None,
            shards: app_commands.Range[int, 1, 4096] | None = None,
            margin_gib: app_commands.Range[float, 0.0, 4096.0] | None = None,
        ) -> None:
            # the names and bounds are demo_request's PLAN_MODELS, INT_BOUNDS and FLOAT_BOUNDS (tested)
            words = {
                "model": model,
                "gpu-gib": gpu_gib,
                "batch": batch,
                "seq": seq,
                "dtype": dtype,
                "optimizer": optimizer,
                "shards": shards,
                "margin-gib": margin_gib,
            }
            await self.request(interaction, "plan", words)

        tree.add_command(demo)

    async def request(self, interaction: discord.Interaction[Any], name: str, words: Mapping[str, object]) -> None:
        """A /demo command's typed options as the demo's text (`checkpoint layers=4 ...`), asked
        once; queued: public, in the channel (progress edits it); refused: privately."""
        here = place(interaction)
        text = " ".join([name, *(f"{k}={_word(v)}" for k, v in words.items() if v is not None)])

        ask, posted = self.engine.demos.request_demo, partial(self.posted, interaction)
        await self.replies.respond(interaction, ask, here.user, here.channel, text, ephemeral=None, after=posted)

    async def click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """The "see it run" button under a reveal: the question's demo queued for the member who
        clicked, posted in the channel like /demo's."""
        round_id = decode_demo_button(custom_id)
        if round_id is None:
            return await self.replies.stale(interaction, custom_id)
        here = place(interaction)

        ask, posted = self.engine.demos.request_question_demo, partial(self.posted, interaction)
        await self.replies.respond(interaction, ask, here.user, here.channel, round_id, ephemeral=None, after=posted)

    async def posted(self, interaction: discord.Interaction[Any], result: object) -> None:
        """After a demo was answered with the queued message: tell the engine that message's id,
        so progress edits it in place."""
        if not isinstance(result, DemoQueued):
            return
        try:
            message = await interaction.original_response()
        except discord.HTTPException:
            log.warning("reading the /demo message failed", exc_info=True)
            return
        await self.runtime.call(self.engine.demos.demo_message, result.job_id, str(message.id))

    async def show_progress(self, card: DemoProgressCard) -> None:
        """A running job's progress, edited into its queued message."""
        message, channel = snowflake(card.message_ref or ""), snowflake(card.channel.channel_id)
        if message is None or channel is None:
            return
        target = self.bot.get_partial_messageable(channel)
        await target.get_partial_message(message).edit(**layout.demo_progress(card).kwargs())


def _word(value: object) -> str:
    """A typed option as the demo's text takes it: a float written out (1e-05 as 0.00001)."""
    if isinstance(value, float):
        return f"{value:f}".rstrip("0").rstrip(".") or "0"
    return str(value).replace(" ", "")
