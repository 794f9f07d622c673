"""community_fsrs: placeholder reserved for fitted FSRS parameters (issue 21); fill in upgrade/downgrade and this docstring

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
