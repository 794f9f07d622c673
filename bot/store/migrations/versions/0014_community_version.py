"""community_version: communities.version, the settings' version every change bumps (one
counter shared by all rows), so that a scheduler's periodic refresh reads only the
communities changed since its last (issue 23)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("communities") as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="0"))
    op.create_index("ix_communities_version", "communities", ["version"])


def downgrade() -> None:
    op.drop_index("ix_communities_version", table_name="communities")
    with op.batch_alter_table("communities") as batch_op:
        batch_op.drop_column("version")
