"""The /demo requests and what they become: queued, in progress, a measured result with its
charts, or a failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .refs import ChannelRef


@dataclass(frozen=True)
class DemoRequest:
    """A validated `/demo` request: the demo module and its command-line arguments."""

    module: str
    args: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class DemoQueued:
    """A `/demo` request accepted into the queue. `position` 1 means it runs next (or now).
    The adapter posts a message for it and reports that message's reference back
    (`engine.demo_message(job_id, ref)`), so progress can edit it in place."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    position: int
    module: str
    user: str
    args: tuple[str, ...] = ()
    guesses: bool = False  # a checkpoint run of none and block: members may guess the saving first


@dataclass(frozen=True)
class DemoChart:
    """One PNG chart of a demo's result: `kind` timeline, budget, memory or sweep; a file path
    on the bot's machine."""

    kind: str
    path: str


@dataclass(frozen=True)
class DemoResultCard:
    """A demo's measured result as a table every platform lays out its own way."""

    module: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]
    chart: str | None  # the main PNG chart's path (the memory timeline), when the demo drew one
    wall_s: float
    data: dict[str, Any] = field(default_factory=dict, compare=False)
    job_id: int | None = None
    where: str | None = None  # device, memory, torch version, CPU threads
    message_ref: str | None = None  # the queued message to edit, when the adapter kept one
    charts: tuple[DemoChart, ...] = ()  # every chart the run drew, the main one first

    def pictures(self) -> tuple[DemoChart, ...]:
        """Every chart, the memory timeline first (a card built with only `chart` has that one)."""
        if self.charts:
            return self.charts
        return (DemoChart("chart", self.chart),) if self.chart else ()


@dataclass(frozen=True)
class DemoProgressCard:
    """A running demo's rows so far (one per finished strategy): edit the queued message."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    module: str
    channel: ChannelRef
    message_ref: str | None
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    done: int
    total: int


@dataclass(frozen=True)
class DemoFailedCard:
    """A demo that did not finish: one sentence for the channel where it was asked."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    module: str
    text: str
    message_ref: str | None = None
