"""platform state: a small key-value table for what an adapter must remember across restarts
(the hash of the Discord command tree last synced, per target)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString
Moment = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "platform_state",
        sa.Column("key", Text(length=100), nullable=False),
        sa.Column("value", Text(length=500), nullable=False),
        sa.Column("updated_at", Moment(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    op.drop_table("platform_state")
