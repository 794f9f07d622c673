"""demo jobs: the queue of /demo requests, their progress and results

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString
Moment = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "demo_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("channel_id", Text(length=64), nullable=False),
        sa.Column("user_id", Text(length=64), nullable=False),
        sa.Column("user_name", Text(length=80), nullable=False),
        sa.Column("module", Text(length=32), nullable=False),
        sa.Column("args", Text(length=1000), nullable=False),
        sa.Column("state", Text(length=8), nullable=False),
        sa.Column("progress", Text(length=20000), nullable=False),
        sa.Column("result", Text(), nullable=True),
        sa.Column("chart_path", Text(length=500), nullable=True),
        sa.Column("error", Text(length=500), nullable=True),
        sa.Column("backend", Text(length=16), nullable=True),
        sa.Column("worker", Text(length=64), nullable=True),
        sa.Column("message_ref", Text(length=128), nullable=True),
        sa.Column("created_at", Moment(), nullable=False),
        sa.Column("started_at", Moment(), nullable=True),
        sa.Column("finished_at", Moment(), nullable=True),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_demo_jobs_state", "demo_jobs", ["state", "id"])
    op.create_index("ix_demo_jobs_user", "demo_jobs", ["community_id", "user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_demo_jobs_user", table_name="demo_jobs")
    op.drop_index("ix_demo_jobs_state", table_name="demo_jobs")
    op.drop_table("demo_jobs")
