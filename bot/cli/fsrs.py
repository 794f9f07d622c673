"""`studybot fsrs fit`: fit a community's FSRS parameters to its review log on the demo worker."""

from __future__ import annotations

from typing import Annotated

import typer

from bot.core.errors import StudyBotError
from bot.core.values import CommunityRef

from .common import community_or_exit, engine_or_exit, fail, known_platform_or_exit, settings_of, setup_logging


def fsrs_fit(
    ctx: typer.Context,
    community: Annotated[str, typer.Option(help="The community id (a guild, a workspace, a console community).")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
) -> None:
    """Fit the community's FSRS parameters to its review log on the demo worker (STUDYBOT_WORKER);
    its reviews are scheduled with them from then on. Below the optimizer's minimum the defaults stay."""
    from bot.background.fsrs_runs import fit_community, worker_fitter
    from bot.worker.fsrs_fit import FitFailure

    known_platform_or_exit(platform)
    settings = settings_of(ctx)
    setup_logging(settings, quiet=True)
    engine = engine_or_exit(settings)
    community_or_exit(engine, community, platform)
    try:
        typer.echo(fit_community(engine, CommunityRef(platform, community), worker_fitter(settings)))
    except FitFailure as failure:
        raise fail(failure.sentence) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None
