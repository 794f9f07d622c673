"""platform events: the ids of platform events already handled (Slack's event_id), so that a
retry Slack sends after the bot restarted is not answered a second time; kept about a day

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString
Moment = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "platform_events",
        sa.Column("platform", Text(length=16), nullable=False),
        sa.Column("event_id", Text(length=64), nullable=False),
        sa.Column("seen_at", Moment(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "event_id"),
    )
    op.create_index("ix_platform_events_seen", "platform_events", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_platform_events_seen", table_name="platform_events")
    op.drop_table("platform_events")
