"""question_rating_slots: a question's rating kept over a few rows (primary key question_id,
slot), so that the answers of a burst on PostgreSQL do not all queue on one row lock; the
rating is the sum of its rows and the rows already stored become slot 0

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

Text = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "question_ratings_slots",
        sa.Column("question_id", Text(length=60), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("question_id", "slot"),
    )
    op.execute(
        "INSERT INTO question_ratings_slots (question_id, slot, rating, answers) "
        "SELECT question_id, 0, rating, answers FROM question_ratings"
    )
    op.drop_table("question_ratings")
    op.rename_table("question_ratings_slots", "question_ratings")


def downgrade() -> None:
    op.create_table(
        "question_ratings_one",
        sa.Column("question_id", Text(length=60), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("answers", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("question_id"),
    )
    op.execute(
        "INSERT INTO question_ratings_one (question_id, rating, answers) "
        "SELECT question_id, sum(rating), sum(answers) FROM question_ratings GROUP BY question_id"
    )
    op.drop_table("question_ratings")
    op.rename_table("question_ratings_one", "question_ratings")
