"""spare: reserved for this wave's next change

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01
"""

from __future__ import annotations

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
