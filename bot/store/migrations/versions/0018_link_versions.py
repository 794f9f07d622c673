"""link_versions: signed links carry a version per member and per community; forget-me, a web rotate and losing admin rights advance it (reserved)

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

from __future__ import annotations

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
