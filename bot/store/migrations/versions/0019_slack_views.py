"""slack_views: the Slack views the bot opened, so a submission for any other view is refused

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_views",
        sa.Column("view_id", sa.String(length=32), primary_key=True),
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=False),
        sa.Column("callback_id", sa.String(length=100), nullable=False),
        sa.Column("reply_url", sa.String(length=500), nullable=True),
        sa.Column("opened_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_slack_views_opened", "slack_views", ["opened_at"])


def downgrade() -> None:
    op.drop_index("ix_slack_views_opened", table_name="slack_views")
    op.drop_table("slack_views")
