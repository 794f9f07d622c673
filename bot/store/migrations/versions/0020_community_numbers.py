"""community_numbers: rounds, members' questions and demo jobs numbered per community, so a
new community's first round is #1 (the row id, shared by every community, is no longer shown)

Each community counts what it has numbered (communities.rounds_numbered,
suggestions_numbered, demos_numbered); a new round, a question sent to the admins or a demo
job takes the next number in
the transaction that writes it (the counter's row lock orders concurrent writers on
PostgreSQL). Existing rows are numbered in id order per community.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def _number(table: str, where: str = "1 = 1") -> None:
    """Number `table`'s rows matching `where` 1, 2, ... in id order within each community."""
    op.execute(
        f"UPDATE {table} SET number = (SELECT numbered.n FROM (SELECT id, ROW_NUMBER() OVER "
        f"(PARTITION BY community_id ORDER BY id) AS n FROM {table} WHERE {where}) AS numbered "
        f"WHERE numbered.id = {table}.id) WHERE {where}"
    )


def upgrade() -> None:
    op.add_column("communities", sa.Column("rounds_numbered", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("communities", sa.Column("suggestions_numbered", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("communities", sa.Column("demos_numbered", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("rounds", sa.Column("number", sa.Integer(), nullable=True))
    op.add_column("suggestions", sa.Column("number", sa.Integer(), nullable=True))
    op.add_column("demo_jobs", sa.Column("number", sa.Integer(), nullable=True))
    _number("rounds")
    _number("suggestions", "state <> 'draft'")  # a draft gets its number when it is sent
    _number("demo_jobs")
    op.execute(
        "UPDATE communities SET rounds_numbered = COALESCE((SELECT MAX(number) FROM rounds "
        "WHERE rounds.community_id = communities.id), 0), suggestions_numbered = COALESCE("
        "(SELECT MAX(number) FROM suggestions WHERE suggestions.community_id = communities.id), 0), "
        "demos_numbered = COALESCE("
        "(SELECT MAX(number) FROM demo_jobs WHERE demo_jobs.community_id = communities.id), 0)"
    )
    op.create_index("uq_rounds_community_number", "rounds", ["community_id", "number"], unique=True)
    op.create_index("uq_suggestions_community_number", "suggestions", ["community_id", "number"], unique=True)
    op.create_index("uq_demo_jobs_community_number", "demo_jobs", ["community_id", "number"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_demo_jobs_community_number", table_name="demo_jobs")
    with op.batch_alter_table("demo_jobs") as batch:
        batch.drop_column("number")
    op.drop_index("uq_suggestions_community_number", table_name="suggestions")
    op.drop_index("uq_rounds_community_number", table_name="rounds")
    with op.batch_alter_table("suggestions") as batch:
        batch.drop_column("number")
    with op.batch_alter_table("rounds") as batch:
        batch.drop_column("number")
    with op.batch_alter_table("communities") as batch:
        batch.drop_column("demos_numbered")
        batch.drop_column("suggestions_numbered")
        batch.drop_column("rounds_numbered")
