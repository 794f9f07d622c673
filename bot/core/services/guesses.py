"""Guess, then run: while a checkpoint demo of `none` and `block` waits for its first figure,
members guess how much less peak memory block checkpointing needs than none (under 25%,
25-50%, 50-75%, over 75%), one guess each, kept in the database; the result names who
guessed right from the measured peaks. bot/core/engine.py builds it as `engine.guesses`."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from typing import Any, Protocol

from bot.core import wording
from bot.core.errors import InvalidInput
from bot.core.records import DemoJobRecord
from bot.core.rules.demo_request import DEFAULT_STRATEGIES
from bot.core.rules.numbers import ascii_int
from bot.core.services.base import EngineBase
from bot.core.units import WithCommunities, WithDemos, WithGuesses, WithMembers
from bot.core.values import ChannelRef, DemoFailedCard, DemoResultCard, Notice, UserRef

log = logging.getLogger(__name__)

# A guess button: `sb1:gs:<job>:<band 0-3>` (strict: no sign, no leading zero).
GUESS_PREFIX = "sb1:gs:"
BANDS = len(wording.GUESS_BANDS)
_GUESS = re.compile(r"sb1:gs:([1-9][0-9]{0,17}):([0-3])")


def encode_guess(job_id: int, band: int) -> str:
    if job_id < 1 or not 0 <= band < BANDS:
        raise ValueError(f"no guess button for demo {job_id}, band {band}")
    return f"{GUESS_PREFIX}{job_id}:{band}"


def decode_guess(text: object) -> tuple[int, int] | None:
    """(demo job, band) of a guess button's id, or None for anything not exactly one of ours."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    match = _GUESS.fullmatch(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def takes_guesses(module: str, args: tuple[str, ...]) -> bool:
    """A checkpoint demo that measures both `none` and `block` (the default strategies do)."""
    if module != "demos.checkpoint":
        return False
    options = dict(zip(args[::2], args[1::2], strict=False))
    strategies = options.get("--strategies")
    names = DEFAULT_STRATEGIES if strategies is None else tuple(strategies.split(","))
    return "none" in names and "block" in names


def band_of(saving: float) -> int:
    """The band (0-3) a saving falls in: under 25%, 25-50%, 50-75%, over 75%."""
    return min(BANDS - 1, max(0, int(saving * BANDS)))


def measured_saving(data: dict[str, Any]) -> float | None:
    """1 - (block's peak / none's peak) from a checkpoint result, None without both peaks."""
    peaks: dict[str, float] = {}
    for row in data.get("results") or []:
        if not isinstance(row, dict) or row.get("label") not in (None, row.get("strategy")):
            continue
        strategy, peak = row.get("strategy"), row.get("peak_bytes")
        if strategy in ("none", "block") and isinstance(peak, int | float) and strategy not in peaks:
            peaks[str(strategy)] = float(peak)
    if peaks.get("none", 0.0) <= 0 or "block" not in peaks:
        return None
    return 1.0 - peaks["block"] / peaks["none"]


def first_figure_in(job: DemoJobRecord) -> bool:
    """Whether a demo has shown a figure (a progress row) or ended: guesses are closed then."""
    if job.state not in ("queued", "running"):
        return True
    try:
        progress = json.loads(job.progress or "{}")
    except json.JSONDecodeError:
        return False
    return isinstance(progress, dict) and bool(progress.get("rows"))


def parse_console_guess(text: str) -> int | None:
    """`guess 2` (1-4, the bands in order) -> band 1; None for anything else."""
    words = text.split()
    number = ascii_int(words[1]) if len(words) == 2 and words[0].lower() == "guess" else None
    return number - 1 if number is not None and 1 <= number <= BANDS else None


class GuessesPort(WithCommunities, WithMembers, WithDemos, WithGuesses, Protocol):
    """The features Guesses's units of work touch."""


class Guesses(EngineBase[GuessesPort]):
    """Members' guesses on a queued checkpoint demo, and the result's line on them."""

    def guess(self, user: UserRef, job_id: int, band: int) -> Notice:
        """A member's guess on a demo: counted (the first), the first standing (a second), or
        refused once the first figure is in. A demo of another community reads as stale."""
        if not 0 <= band < BANDS:
            raise InvalidInput(wording.CONSOLE_GUESS_USAGE)
        now = self.now()
        with self.store.write() as tx:
            job = tx.demos.get_demo(job_id)
            if (
                job is None
                or (job.platform, job.community) != (user.platform, user.community_id)
                or not takes_guesses(job.module, job.args)
            ):
                raise InvalidInput(wording.STALE_BUTTON)
            if first_figure_in(job):
                return Notice(wording.GUESS_CLOSED)
            member_id = self._member(tx, job.community_id, user)
            earlier = tx.guesses.add_guess(job_id, job.community_id, member_id, band, now)
        if earlier is not None:
            return Notice(wording.guess_stands(earlier))
        log.info("guess %s on demo %s", band, job_id)
        return Notice(wording.guess_counted(band))

    def guess_button(self, user: UserRef, custom_id: str) -> Notice:
        """A click on a guess button: its id says the demo and the band."""
        decoded = decode_guess(custom_id)
        if decoded is None:
            raise InvalidInput(wording.STALE_BUTTON)
        return self.guess(user, *decoded)

    def guess_text(self, user: UserRef, channel: ChannelRef, text: str) -> Notice:
        """The console's `guess 2`: a guess on the channel's newest checkpoint demo still
        queued or running."""
        band = parse_console_guess(text)
        if band is None:
            raise InvalidInput(wording.CONSOLE_GUESS_USAGE + ".")
        with self.store.read() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            job_id = None if community is None else tx.guesses.open_checkpoint_demo(community.id, channel.channel_id)
            job = None if job_id is None else tx.demos.get_demo(job_id)
        if job is None or not takes_guesses(job.module, job.args):
            return Notice(wording.GUESS_NONE_OPEN)
        return self.guess(user, job.id, band)

    @staticmethod
    def with_guesses(tx: WithGuesses, card: DemoResultCard | DemoFailedCard) -> DemoResultCard | DemoFailedCard:
        """A checkpoint result with a line naming who guessed right, when anyone guessed."""
        if not isinstance(card, DemoResultCard) or card.job_id is None or card.module != "demos.checkpoint":
            return card
        guesses = tx.guesses.demo_guesses(card.job_id)
        if not guesses:
            return card
        saving = measured_saving(card.data)
        band = band_of(saving) if saving is not None else 0
        winners = tuple(guess.name for guess in guesses if saving is not None and guess.band == band)
        line = wording.guess_result(saving, band, winners, len(guesses))
        return replace(card, notes=(*card.notes, line))
