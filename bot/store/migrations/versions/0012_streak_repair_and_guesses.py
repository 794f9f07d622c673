"""streak_repair_and_guesses: the daily rounds members earned back for their streak by
clearing their due reviews (streak_repairs), and the members' guesses of a checkpoint demo's
saving before its first figure (demo_guesses) (issue 21)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

Moment = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "streak_repairs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("round_id", sa.Integer(), nullable=False),
        sa.Column("repaired_at", Moment(), nullable=False),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["round_id"], ["rounds.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("member_id", "round_id", name="uq_streak_repair_member_round"),
    )
    op.create_table(
        "demo_guesses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("band", sa.Integer(), nullable=False),
        sa.Column("guessed_at", Moment(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["demo_jobs.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id", "member_id", name="uq_demo_guess_job_member"),
    )


def downgrade() -> None:
    op.drop_table("demo_guesses")
    op.drop_table("streak_repairs")
