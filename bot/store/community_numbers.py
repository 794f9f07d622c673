"""Numbers per community (migration 0020): a community's rounds and members' questions are
#1, #2, ... in that community, whatever other communities share the tables.

Each community row counts what it has numbered; taking numbers is one UPDATE ... RETURNING in
the transaction that writes the rows, so the counter's row lock orders concurrent writers of one
community on PostgreSQL (SQLite has one writer). A transaction that rolls back gives its numbers
back; a daily round another writer opened first leaves a gap."""

from __future__ import annotations

from collections import Counter as Tally
from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from sqlalchemy import Connection, Table, update

from bot.store.tables import Community

communities: Table = Community.__table__  # type: ignore[attr-defined]

Counter = Literal["rounds_numbered", "suggestions_numbered", "demos_numbered"]


def take_numbers(conn: Connection, counter: Counter, community_ids: Iterable[int]) -> dict[int, list[int]]:
    """The next numbers of these communities, as many for each as it appears in
    `community_ids`, in order; counted as taken."""
    wanted = Tally(community_ids)
    by_count: dict[int, list[int]] = defaultdict(list)
    for community_id, count in wanted.items():
        by_count[count].append(community_id)
    column = communities.c[counter]
    taken: dict[int, list[int]] = {}
    for count, ids in sorted(by_count.items()):  # nearly always one statement: each community once
        rows = conn.execute(
            update(communities)
            .where(communities.c.id.in_(sorted(ids)))  # one lock order for concurrent writers
            .values({counter: column + count})
            .returning(communities.c.id, column)
        ).all()
        taken.update((int(cid), list(range(int(last) - count + 1, int(last) + 1))) for cid, last in rows)
    return taken


def take_number(conn: Connection, counter: Counter, community_id: int) -> int:
    """The next number of one community, counted as taken."""
    return take_numbers(conn, counter, (community_id,))[community_id][0]
