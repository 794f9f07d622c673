"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "communities",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("external_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("timezone", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("daily_time", sqlmodel.sql.sqltypes.AutoString(length=5), nullable=False),
        sa.Column("window_hours", sa.Integer(), nullable=False),
        sa.Column("channel_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("topics", sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("platform", "external_id", name="uq_community_platform_external"),
    )
    op.create_table(
        "leaderboard_posts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("week", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("posted_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("community_id", "week", name="uq_leaderboard_community_week"),
    )
    op.create_table(
        "members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("display_name", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("community_id", "user_id", name="uq_member_community_user"),
    )
    op.create_table(
        "reviews",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("question_id", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=False),
        sa.Column("due", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("member_id", "question_id", name="uq_review_member_question"),
    )
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.create_index("ix_reviews_due", ["member_id", "due"], unique=False)

    op.create_table(
        "rounds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("channel_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("question_id", sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=True),
        sa.Column("local_date", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=True),
        sa.Column("daily_key", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=True),
        sa.Column("opened_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("closes_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("closed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("late", sa.Boolean(), nullable=False),
        sa.Column("message_ref", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("daily_key"),
    )
    with op.batch_alter_table("rounds", schema=None) as batch_op:
        batch_op.create_index("ix_rounds_community_kind", ["community_id", "kind", "id"], unique=False)
        batch_op.create_index("ix_rounds_due", ["closed_at", "closes_at"], unique=False)
        batch_op.create_index("ix_rounds_member_open", ["member_id", "closed_at"], unique=False)

    op.create_table(
        "answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column("choice", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("points", sa.Integer(), nullable=False),
        sa.Column("answered_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("week", sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("round_id", "member_id", name="uq_answer_round_member"),
    )
    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.create_index("ix_answers_member", ["community_id", "member_id", "points"], unique=False)
        batch_op.create_index("ix_answers_member_kind", ["member_id", "kind", "correct"], unique=False)
        batch_op.create_index("ix_answers_week", ["community_id", "week", "member_id", "points"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("answers", schema=None) as batch_op:
        batch_op.drop_index("ix_answers_week")
        batch_op.drop_index("ix_answers_member_kind")
        batch_op.drop_index("ix_answers_member")

    op.drop_table("answers")
    with op.batch_alter_table("rounds", schema=None) as batch_op:
        batch_op.drop_index("ix_rounds_member_open")
        batch_op.drop_index("ix_rounds_due")
        batch_op.drop_index("ix_rounds_community_kind")

    op.drop_table("rounds")
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.drop_index("ix_reviews_due")

    op.drop_table("reviews")
    op.drop_table("members")
    op.drop_table("leaderboard_posts")
    op.drop_table("communities")
