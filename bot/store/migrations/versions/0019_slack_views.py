"""slack_views: the Slack views the bot opened, so a submission for any other view is refused (reserved)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

from __future__ import annotations

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
