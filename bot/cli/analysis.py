"""`studybot questions analysis`: what the answers given say about each question (share
right, discrimination, pick rates, flags), from the figures kept with each question or, with
--recount, every answer re-read."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from bot.core.errors import StudyBotError
from bot.core.rules.item_analysis import MIN_ANSWERS

from .common import (
    ascii_whole,
    bank_or_exit,
    community_or_exit,
    database_or_exit,
    engine_or_exit,
    fail,
    settings_of,
)


def questions_analysis(
    ctx: typer.Context,
    community: Annotated[str | None, typer.Option(help="Only this community id (default: all).")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform (console, discord, slack).")] = None,
    min_answers: Annotated[
        int, typer.Option(parser=ascii_whole(1), help="Answers a question needs before it is flagged.")
    ] = MIN_ANSWERS,
    flagged: Annotated[bool, typer.Option("--flagged", help="Only flagged questions.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
    recount: Annotated[
        bool, typer.Option("--recount", help="Re-read every answer instead of the figures kept with each.")
    ] = False,
) -> None:
    """Item analysis of the answers given: share right, discrimination, pick rates and flags."""
    from bot.core.rules.item_analysis import PICKS_NOTE, ItemStats, analyse, file_number, from_kept
    from bot.core.rules.rating import start_difficulty
    from bot.store.item_stats import answer_rows, kept_figures, question_ratings

    settings = settings_of(ctx)
    bank = bank_or_exit(settings)
    database = database_or_exit(settings)  # the engine's, when a community is checked first
    try:
        if community is not None:
            community_or_exit(engine_or_exit(settings, database), community, platform)
        try:
            with database.read() as conn:
                if not recount:
                    counts, kept_picks, stored = kept_figures(conn, platform=platform, external_id=community)
                    if sum(c.answers for c in counts) != stored:
                        typer.echo(
                            f"The kept figures do not cover all {stored} answers (written around the store?): "
                            "recounting every answer.",
                            err=True,
                        )
                        recount = True
                if recount:
                    rows = answer_rows(conn, platform=platform, external_id=community)
                rated = question_ratings(conn)
                ratings = {q.id: rated.get(q.id, start_difficulty(q.difficulty)) for q in bank.questions}
        except StudyBotError as exc:
            raise fail(exc.message) from None
    finally:
        database.dispose()
    if recount:
        analysed = analyse(rows, bank.questions, min_answers, ratings)
        answered = len(rows)
    else:
        analysed = from_kept(bank.questions, counts, kept_picks, min_answers, ratings, discriminate=True)
        answered = sum(c.answers for c in counts)
    items = [s for s in analysed if s.flags or not flagged]
    by_id = {q.id: q for q in bank.questions}

    def texts(stats: ItemStats) -> list[str]:
        found = by_id.get(stats.question_id)
        return [c.text for c in found.choices] if found else []

    if as_json:
        fields = (
            "question_id",
            "key",
            "answers",
            "share_correct",
            "discrimination",
            "difficulty",
            "pick_rates",
            "flags",
        )
        typer.echo(
            json.dumps(
                [
                    {f: getattr(s, f) for f in fields}
                    | {
                        "suspect_choice": s.suspect_choice,
                        "dead_choices": s.dead_choices,
                        "notes": s.describe(texts(s)),
                    }
                    for s in items
                ],
                indent=2,
            )
        )
        return
    typer.echo(PICKS_NOTE)
    typer.echo(f"{'question':<44}{'answers':>8}{'right':>7}{'disc':>7}{'diff':>7}  {'picks (key*)':<28}flags")
    for s in items:
        right = "-" if s.share_correct is None else f"{s.share_correct:.0%}"
        disc = "-" if s.discrimination is None else f"{s.discrimination:+.2f}"
        picks = " ".join(
            f"{file_number(i)}:{'*' if i == s.key else ''}{rate:.0%}" for i, rate in enumerate(s.pick_rates)
        )
        diff = "-" if s.difficulty is None else f"{s.difficulty:+.2f}"
        typer.echo(f"{s.question_id:<44}{s.answers:>8}{right:>7}{disc:>7}{diff:>7}  {picks:<28}{','.join(s.flags)}")
    for s in items:
        for note in s.describe(texts(s)):
            typer.echo(f"! {note}")
    typer.echo(
        f"{answered} answers; {sum(1 for s in items if s.flags)} questions flagged "
        f"(flags other than unanswered need {min_answers} answers)."
    )
