"""item_stats: the item analysis's figures kept in each answer's transaction (item_counts per
question and choice, item_picks per member, question and choice, item_members per member),
so that the flags read a few rows instead of every answer; filled from the answers already
stored (choices mapped to the bank file's order as bot/store/item_stats.py does)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections import defaultdict

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString
SLOTS = 8  # bot/store/item_stats.py's SLOTS when this migration was written


def upgrade() -> None:
    counts = op.create_table(
        "item_counts",
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("question_id", Text(length=60), nullable=False),
        sa.Column("choice", sa.Integer(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("community_id", "question_id", "choice", "slot"),
    )
    picks = op.create_table(
        "item_picks",
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("question_id", Text(length=60), nullable=False),
        sa.Column("choice", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("member_id", "question_id", "choice"),
    )
    op.create_index("ix_item_picks_question", "item_picks", ["community_id", "question_id"])
    members = op.create_table(
        "item_members",
        sa.Column("member_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("member_id"),
    )
    _fill(counts, picks, members)


def _file_index(displayed: int, choice_order: str | None) -> int:
    if not choice_order:
        return displayed
    try:
        order = [int(part) for part in choice_order.split(",")]
    except ValueError:
        return displayed
    return order[displayed] if 0 <= displayed < len(order) else displayed


def _fill(counts: sa.Table, picks: sa.Table, members: sa.Table) -> None:
    """The figures of every answer stored so far."""
    bind = op.get_bind()
    by_pick: dict[tuple[int, str, int], list[int]] = defaultdict(lambda: [0, 0])
    by_slot: dict[tuple[int, str, int, int], list[int]] = defaultdict(lambda: [0, 0])
    by_member: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    community_of: dict[int, int] = {}
    rows = bind.execute(
        sa.text(
            "SELECT a.community_id, a.member_id, r.question_id, a.choice, a.correct, r.choice_order "
            "FROM answers a JOIN rounds r ON r.id = a.round_id"
        )
    )
    for community_id, member_id, question_id, shown, correct, choice_order in rows:
        choice = _file_index(shown, choice_order)
        right = 1 if correct else 0
        community_of[member_id] = community_id
        for found in (
            by_pick[(member_id, question_id, choice)],
            by_slot[(community_id, question_id, choice, member_id % SLOTS)],
            by_member[member_id],
        ):
            found[0] += 1
            found[1] += right
    if not by_member:
        return
    op.bulk_insert(
        members,
        [
            {"member_id": m, "community_id": community_of[m], "answers": n, "correct": r}
            for m, (n, r) in by_member.items()
        ],
    )
    op.bulk_insert(
        picks,
        [
            {"member_id": m, "question_id": q, "choice": c, "community_id": community_of[m], "answers": n, "correct": r}
            for (m, q, c), (n, r) in by_pick.items()
        ],
    )
    op.bulk_insert(
        counts,
        [
            {"community_id": k, "question_id": q, "choice": c, "slot": s, "answers": n, "correct": r}
            for (k, q, c, s), (n, r) in by_slot.items()
        ],
    )


def downgrade() -> None:
    op.drop_table("item_members")
    op.drop_index("ix_item_picks_question", table_name="item_picks")
    op.drop_table("item_picks")
    op.drop_table("item_counts")
