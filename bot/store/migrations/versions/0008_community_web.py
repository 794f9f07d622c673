"""community web visibility: a community's web pages are private (signed links only) unless
an admin turns them public with `/config web public`

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("communities") as batch_op:
        batch_op.add_column(sa.Column("web_public", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("communities") as batch_op:
        batch_op.drop_column("web_public")
