"""community_fsrs: the FSRS parameters fitted to each community's review log (issue 21), with
when they were fitted, from how many reviews, and the week the weekly fit last claimed

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "community_fsrs",
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("parameters", Text(length=1000), nullable=True),
        sa.Column("reviews", sa.Integer(), nullable=False),
        sa.Column("fitted_at", sa.DateTime(), nullable=True),
        sa.Column("checked_at", sa.DateTime(), nullable=True),
        sa.Column("week", Text(length=8), nullable=True),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("community_id"),
    )


def downgrade() -> None:
    op.drop_table("community_fsrs")
