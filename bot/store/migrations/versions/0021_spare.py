"""demo_failure: why a demo job failed (demo_jobs.failure), so the cooldown charges every
attempt a member caused (refused, timed out, out of its memory share, failed) and exempts only
the bot's own failures (a restart, the queue unreachable, a lost worker, a bug of ours)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("demo_jobs", sa.Column("failure", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("demo_jobs") as batch:
        batch.drop_column("failure")
