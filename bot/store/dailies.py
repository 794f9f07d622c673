"""The queries that open many daily rounds in one transaction (bot/core/services/daily_batch.py): the
rounds already open, what each community asked last, the rounds and their outbox rows written
with one statement each (the communities by key are bot/store/communities.py's).

Each statement is compiled once and run with a list of rows (SQLAlchemy's "insertmanyvalues"
turns that into multi-row INSERTs); exactly-once rests on the unique daily key, as for one
round: a key another writer took first is left out of what `insert_dailies` returns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import Table, func, select

from bot.core.records import NewDaily, NewPost
from bot.store.community_numbers import take_numbers
from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import Outbox, Round, Suggestion

rounds: Table = Round.__table__  # type: ignore[attr-defined]
outbox: Table = Outbox.__table__  # type: ignore[attr-defined]
suggestions: Table = Suggestion.__table__  # type: ignore[attr-defined]

CHUNK = 500  # values per IN (...) list


def _chunks(values: Sequence[object]) -> Iterable[list[object]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start : start + CHUNK])


class DailyBatchRepo(Repo):
    """A batch of daily rounds' part of one transaction's queries (DailyBatchTx)."""

    __slots__ = ()

    def daily_round_ids(self, keys: Iterable[str]) -> dict[str, int]:
        """The round id of each daily key in `keys` already opened (key -> round id)."""
        found: dict[str, int] = {}
        for chunk in _chunks(sorted(set(keys))):
            rows = self.conn.execute(select(rounds.c.daily_key, rounds.c.id).where(rounds.c.daily_key.in_(chunk)))
            found.update((key, int(round_id)) for key, round_id in rows)
        return found

    def with_approved_questions(self, community_ids: Iterable[int]) -> set[int]:
        """Those of the communities that have an approved member's question."""
        found: set[int] = set()
        for chunk in _chunks(sorted(set(community_ids))):
            rows = self.conn.execute(
                select(suggestions.c.community_id)
                .where(
                    suggestions.c.community_id.in_(chunk),
                    suggestions.c.state == "approved",
                    suggestions.c.question_id.is_not(None),
                )
                .distinct()
            )
            found.update(int(community_id) for (community_id,) in rows)
        return found

    def dailies_last_asked(self, community_ids: Iterable[int]) -> dict[int, dict[str, datetime]]:
        """For each community id: question id -> its latest daily round's opening, as `daily_last_asked`."""
        found: dict[int, dict[str, datetime]] = defaultdict(dict)
        for chunk in _chunks(sorted(set(community_ids))):
            rows = self.conn.execute(
                select(rounds.c.community_id, rounds.c.question_id, func.max(rounds.c.opened_at))
                .where(rounds.c.community_id.in_(chunk), rounds.c.kind == "daily")
                .group_by(rounds.c.community_id, rounds.c.question_id)
            )
            for community_id, question_id, moment in rows:
                found[int(community_id)][question_id] = moment
        return dict(found)

    def insert_dailies(self, new: Sequence[NewDaily]) -> dict[str, int]:
        """Open these rounds: daily key -> new round id; a key opened already (by another
        writer since it was read) is not in the answer and its round is left as it was."""
        if not new:
            return {}
        numbers = take_numbers(self.conn, "rounds_numbered", (daily.community_id for daily in new))
        rows = [
            {
                "community_id": daily.community_id,
                "channel_id": daily.channel_id,
                "question_id": daily.question_id,
                "kind": "daily",
                "local_date": daily.local_date,
                "daily_key": daily.daily_key,
                "opened_at": daily.opened_at,
                "closes_at": daily.closes_at,
                "late": daily.late,
                "choice_order": daily.choice_order,
                "number": numbers[daily.community_id].pop(0),
            }
            for daily in sorted(new, key=lambda d: d.daily_key)  # one lock order for concurrent writers
        ]
        statement = insert_ignoring(self.conn, rounds, ["daily_key"]).returning(rounds.c.daily_key, rounds.c.id)
        return {key: int(round_id) for key, round_id in self.conn.execute(statement, rows)}

    def enqueue_posts(self, posts: Sequence[NewPost], now: datetime) -> None:
        """Queue these posts, each once per (community, kind, key), as `enqueue` does."""
        if not posts:
            return
        rows = [
            {
                "community_id": post.community_id,
                "platform": post.platform,
                "channel_id": post.channel_id,
                "kind": post.kind,
                "key": post.key,
                "state": "pending",
                "attempts": 0,
                "next_try": now,
                "created_at": now,
            }
            for post in posts
        ]
        self.conn.execute(insert_ignoring(self.conn, outbox, ["community_id", "kind", "key"]), rows)
