"""members' questions and adaptive practice: suggestions (a member's question, from draft to
approved, rejected, returned with a note, or removed; approved ones are that community's
questions), each member's rating overall and per topic, and each question's rating (its one
difficulty number)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString
Moment = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "suggestions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=True),
        sa.Column("channel_id", Text(length=64), nullable=False),
        sa.Column("state", Text(length=10), nullable=False),
        sa.Column("topic", Text(length=40), nullable=False),
        sa.Column("body", Text(length=8000), nullable=False),
        sa.Column("question_id", Text(length=60), nullable=True),
        sa.Column("note", Text(length=500), nullable=True),
        sa.Column("created_at", Moment(), nullable=False),
        sa.Column("decided_at", Moment(), nullable=True),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("question_id"),
    )
    op.create_index("ix_suggestions_state", "suggestions", ["community_id", "state", "id"])
    op.create_index("ix_suggestions_member", "suggestions", ["member_id", "created_at"])
    op.create_table(
        "member_ratings",
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("topic", Text(length=40), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("member_id", "topic"),
    )
    op.create_table(
        "question_ratings",
        sa.Column("question_id", Text(length=60), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("question_id"),
    )


def downgrade() -> None:
    op.drop_table("question_ratings")
    op.drop_table("member_ratings")
    op.drop_index("ix_suggestions_member", table_name="suggestions")
    op.drop_index("ix_suggestions_state", table_name="suggestions")
    op.drop_table("suggestions")
