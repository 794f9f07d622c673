"""platform seam: the outbox, each round's choice order, daily rounds unique per community,
markers for members forgotten during an open round

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString
Moment = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    with op.batch_alter_table("rounds") as batch_op:
        batch_op.add_column(sa.Column("choice_order", Text(length=16), nullable=True))
        batch_op.alter_column("daily_key", type_=Text(length=96), existing_type=Text(length=80))
    # Daily keys were "channel|date"; they become "community|channel|date".
    op.execute(
        "UPDATE rounds SET daily_key = CAST(community_id AS VARCHAR(12)) || '|' || daily_key "
        "WHERE daily_key IS NOT NULL"
    )
    op.create_table(
        "forgotten_answers",
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("user_key", Text(length=64), nullable=False),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("round_id", "user_key"),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("platform", Text(length=16), nullable=False),
        sa.Column("channel_id", Text(length=64), nullable=False),
        sa.Column("kind", Text(length=16), nullable=False),
        sa.Column("key", Text(length=32), nullable=False),
        sa.Column("state", Text(length=8), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_try", Moment(), nullable=False),
        sa.Column("claimed_by", Text(length=64), nullable=True),
        sa.Column("claimed_until", Moment(), nullable=True),
        sa.Column("message_ref", Text(length=128), nullable=True),
        sa.Column("last_error", Text(length=300), nullable=True),
        sa.Column("created_at", Moment(), nullable=False),
        sa.Column("sent_at", Moment(), nullable=True),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("community_id", "kind", "key", name="uq_outbox_community_kind_key"),
    )
    op.create_index("ix_outbox_due", "outbox", ["platform", "state", "next_try"])


def downgrade() -> None:
    op.drop_index("ix_outbox_due", table_name="outbox")
    op.drop_table("outbox")
    op.drop_table("forgotten_answers")
    find = "INSTR(daily_key, '|')" if op.get_bind().dialect.name == "sqlite" else "STRPOS(daily_key, '|')"
    op.execute(f"UPDATE rounds SET daily_key = SUBSTR(daily_key, {find} + 1) WHERE daily_key IS NOT NULL")
    with op.batch_alter_table("rounds") as batch_op:
        batch_op.drop_column("choice_order")
