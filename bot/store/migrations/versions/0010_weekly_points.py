"""weekly_points: each member's points per ISO week, kept with every answer (beside
members.points_total), so that the weekly board and a member's rank read one row per
member instead of summing the week's answers

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "weekly_points",
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("week", Text(length=8), nullable=False),
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("points", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("member_id", "week"),
    )
    op.execute(
        "INSERT INTO weekly_points (member_id, week, community_id, points) "
        "SELECT member_id, week, MIN(community_id), SUM(points) FROM answers "
        "GROUP BY member_id, week HAVING SUM(points) > 0"
    )
    op.create_index("ix_weekly_points_board", "weekly_points", ["community_id", "week", "points", "member_id"])


def downgrade() -> None:
    op.drop_index("ix_weekly_points_board", table_name="weekly_points")
    op.drop_table("weekly_points")
