"""Persistence: SQLModel tables, the database connection, Alembic migrations."""
