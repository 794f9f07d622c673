"""Rows to records, one helper per record, and what every feature's repository shares: the
transaction's connection and its dialect (bot/store/repository.py holds one of each)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection

from bot.core.records import DemoJobRecord, OutboxRecord, RoundRecord, SuggestionRecord
from bot.core.rules.community import CommunityConfig


class Repo:
    """One feature's queries on one transaction's connection."""

    __slots__ = ("conn", "dialect")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.dialect = conn.dialect.name


def row_id(value: int | None) -> int:
    """A row id the database returned (the tables type their key as optional)."""
    if value is None:
        raise RuntimeError("the database returned no row id")
    return value


def community_config(row: Any) -> CommunityConfig:
    """A communities row as the engine's settings value."""
    return CommunityConfig(
        id=row.id,
        name=row.name,
        timezone=row.timezone,
        daily_time=row.daily_time,
        window_hours=row.window_hours,
        channel_id=row.channel_id,
        topics=tuple(t for t in row.topics.split(",") if t),
        paused=row.paused,
        web_public=bool(row.web_public),
    )


def round_record(row: Any) -> RoundRecord:
    """A rounds row (or a row with its columns)."""
    return RoundRecord(
        id=row.id,
        community_id=row.community_id,
        channel_id=row.channel_id,
        question_id=row.question_id,
        kind=row.kind,
        member_id=row.member_id,
        opened_at=row.opened_at,
        closes_at=row.closes_at,
        closed_at=row.closed_at,
        late=bool(row.late),
        message_ref=row.message_ref,
        choice_order=row.choice_order,
        number=row.number if row.number is not None else row.id,  # numbered by migration 0020
    )


def outbox_record(row: Any) -> OutboxRecord:
    """An outbox row beside its community's external id."""
    return OutboxRecord(
        id=row.id,
        community_id=row.community_id,
        platform=row.platform,
        community=row.external_id,
        channel_id=row.channel_id,
        kind=row.kind,
        key=row.key,
        attempts=row.attempts,
        state=row.state,
        last_error=row.last_error,
        next_try=row.next_try,
    )


def demo_record(row: Any) -> DemoJobRecord:
    """A demo_jobs row beside its community's platform and external id."""
    return DemoJobRecord(
        id=row.id,
        community_id=row.community_id,
        platform=row.platform,
        community=row.external_id,
        channel_id=row.channel_id,
        user_id=row.user_id,
        user_name=row.user_name,
        module=row.module,
        args=tuple(json.loads(row.args)),
        state=row.state,
        progress=row.progress,
        result=row.result,
        chart_path=row.chart_path,
        error=row.error,
        backend=row.backend,
        message_ref=row.message_ref,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        failure=row.failure,
        number=row.number if row.number is not None else row.id,  # numbered by migration 0020
    )


def suggestion_record(row: Any) -> SuggestionRecord:
    """A suggestions row beside its author's user id and display name (None once forgotten)."""
    return SuggestionRecord(
        id=row.id,
        community_id=row.community_id,
        state=row.state,
        topic=row.topic,
        body=row.body,
        question_id=row.question_id,
        note=row.note,
        channel_id=row.channel_id,
        created_at=row.created_at,
        author_member=row.member_id,
        author_user=row.user_id,
        author_name=row.display_name,
        number=row.number or 0,
    )
