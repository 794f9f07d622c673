"""members.points_total: each member's all-time points, kept with every answer

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("members") as batch_op:
        batch_op.add_column(sa.Column("points_total", sa.Integer(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE members SET points_total = "
        "(SELECT COALESCE(SUM(points), 0) FROM answers WHERE answers.member_id = members.id)"
    )
    op.create_index("ix_members_board", "members", ["community_id", "points_total"])


def downgrade() -> None:
    op.drop_index("ix_members_board", table_name="members")
    with op.batch_alter_table("members") as batch_op:
        batch_op.drop_column("points_total")
