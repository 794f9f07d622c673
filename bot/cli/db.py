"""`studybot db upgrade`: create or upgrade the database schema."""

from __future__ import annotations

import typer

from bot.core.errors import StoreUnavailable, StudyBotError
from bot.store.database import head_revision, safe_url, schema_revision, upgrade

from .common import fail, settings_of, unreachable


def db_upgrade(ctx: typer.Context) -> None:
    """Create or upgrade the database schema (also done at every start)."""
    settings = settings_of(ctx)
    before = schema_revision(settings.database_url)
    try:
        upgrade(settings.database_url)
    except StoreUnavailable as exc:
        raise unreachable(exc) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None
    shown = safe_url(settings.database_url)
    if before is None:
        typer.echo(f"Created the schema in the database at {shown} (revision {head_revision()}).")
    elif before != head_revision():
        typer.echo(f"Upgraded the database at {shown} from revision {before} to {head_revision()}.")
    else:
        typer.echo(f"The database at {shown} is up to date (revision {before}).")
