"""streak_repair_and_guesses: placeholder reserved for streak repair and demo guesses (issue 21); fill in upgrade/downgrade and this docstring

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
