"""answers_confidence_index: the community's calibration (the admin page) counts its answers by
confidence and outcome; an index on (community_id, confidence, correct) answers that from the
index alone, for only the answers that carry a confidence

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_answers_confidence", "answers", ["community_id", "confidence", "correct"])


def downgrade() -> None:
    op.drop_index("ix_answers_confidence", table_name="answers")
