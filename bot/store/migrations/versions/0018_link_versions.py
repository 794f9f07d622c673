"""link_versions: signed links carry a version per member and per community; /forget-me, a
web rotate and losing admin rights advance it

A row per community (holder "") and per holder of a link (a salted hash of who they are, never
their id: the row outlives a /forget-me, which is what revokes their old link); a link whose
versions are behind its rows' is revoked. No row reads as version 0.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "link_versions",
        sa.Column("community_id", sa.Integer(), nullable=False),
        sa.Column("holder", Text(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["community_id"], ["communities.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("community_id", "holder"),
    )


def downgrade() -> None:
    op.drop_table("link_versions")
