"""item_stats: placeholder reserved for item statistics kept per answer (issue 23); fill in upgrade/downgrade and this docstring

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
