"""answer_confidence: how sure a member was of each answer (answers.confidence, NULL when not
said) and the review card before that answer reviewed it (answers.review_before), so that the
confidence given after the click can re-grade the review (issue 21)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.add_column(sa.Column("confidence", Text(length=6), nullable=True))
        batch.add_column(sa.Column("review_before", Text(length=1000), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("review_before")
        batch.drop_column("confidence")
