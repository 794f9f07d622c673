"""`studybot questions ...`: lint, list and count the bank, and write a community's approved
members' questions out as bank YAML (never through a symbolic link)."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from bot.config import ROOT
from bot.core.bank import MAX_LONGEST_CORRECT_SHARE, TOPICS, collect, length_rank_summary, longest_correct_share
from bot.core.errors import StudyBotError

from .common import bank_or_exit, community_or_exit, engine_or_exit, fail, settings_of


def questions_lint(
    ctx: typer.Context,
    paths: Annotated[list[Path] | None, typer.Argument(help="Files or folders (default: the bank).")] = None,
) -> None:
    """Report every problem as path:line: message; exit 1 if there are any."""
    targets = paths or [settings_of(ctx).questions_dir]
    questions, problems = collect(targets, root=ROOT)
    if problems:
        for problem in problems:
            typer.echo(problem)
        if questions:
            typer.echo(length_rank_summary(questions), err=True)
        raise fail(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found.")
    files = len({q.source.rsplit(":", 1)[0] for q in questions})
    typer.echo(
        f"OK: {len(questions)} questions in {files} files, "
        f"{sum(1 for q in questions if q.check)} with executable checks."
    )
    typer.echo(length_rank_summary(questions))


def questions_list(
    ctx: typer.Context,
    topic: Annotated[str | None, typer.Option(help="Only this topic.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
) -> None:
    """List the questions (id, topic, difficulty, prompt)."""
    bank = bank_or_exit(settings_of(ctx))
    if topic is not None and topic not in TOPICS:
        raise fail(f"Unknown topic '{topic}'. Topics: {', '.join(TOPICS)}.", 2)
    chosen = [q for q in bank.questions if topic is None or q.topic == topic]
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "id": q.id,
                        "topic": q.topic,
                        "difficulty": q.difficulty,
                        "prompt": q.prompt,
                        "choices": [c.text for c in q.choices],
                        "answer": q.answer_index,
                        "check": q.check,
                        "source": q.source,
                    }
                    for q in chosen
                ],
                indent=2,
            )
        )
        return
    for q in chosen:
        typer.echo(f"{q.id:<44} {q.topic:<15} {q.difficulty}  {q.prompt[:90]}")
    typer.echo(f"{len(chosen)} questions")


def questions_stats(ctx: typer.Context) -> None:
    """Counts per topic and difficulty, and how many questions carry an executable check."""
    bank = bank_or_exit(settings_of(ctx))
    per = Counter((q.topic, q.difficulty) for q in bank.questions)
    checks = Counter(q.topic for q in bank.questions if q.check)
    typer.echo(f"{'topic':<16}{'total':>6}{'lvl1':>6}{'lvl2':>6}{'lvl3':>6}{'checks':>8}")
    for topic in TOPICS:
        counts = [per[(topic, d)] for d in (1, 2, 3)]
        typer.echo(f"{topic:<16}{sum(counts):>6}{counts[0]:>6}{counts[1]:>6}{counts[2]:>6}{checks[topic]:>8}")
    totals = [sum(per[(t, d)] for t in TOPICS) for d in (1, 2, 3)]
    typer.echo(f"{'all':<16}{sum(totals):>6}{totals[0]:>6}{totals[1]:>6}{totals[2]:>6}{sum(checks.values()):>8}")
    longest, total = longest_correct_share(bank.questions)
    typer.echo(
        f"correct choice strictly the longest: {longest} of {total} ({longest / total:.1%}); "
        f"the limit is {MAX_LONGEST_CORRECT_SHARE:.0%}"
    )


def questions_export(
    ctx: typer.Context,
    community: Annotated[str, typer.Option(help="The community id (a guild, a workspace, a console community).")],
    platform: Annotated[
        str | None, typer.Option(help="Its platform (console, discord, slack); needed when the id is on several.")
    ] = None,
    out: Annotated[Path, typer.Option(help="The folder the YAML files go to (one per topic).")] = Path(
        "exported-questions"
    ),
    force: Annotated[bool, typer.Option("--force", help="Replace files of the same names in the folder.")] = False,
) -> None:
    """Write a community's approved members' questions as bank YAML (questions lint passes it).
    Refuses to replace a file without --force, and never writes through a symbolic link."""
    engine = engine_or_exit(settings_of(ctx))
    found = community_or_exit(engine, community, platform)
    if len(found) > 1:
        raise fail(f"'{community}' is on {', '.join(r.platform for r in found)}: choose one with --platform.", 2)
    try:
        files = engine.practice.export_questions(found[0])
    except StudyBotError as exc:
        raise fail(exc.message) from None
    if not files:
        typer.echo(f"No approved members' questions in {found[0].platform}/{community}.")
        return
    problem = export_problem(out, [f"{topic}.yaml" for topic in files], force)
    if problem:
        raise fail(problem, 2)
    out.mkdir(parents=True, exist_ok=True)
    for topic, text in files.items():
        write_new(out / f"{topic}.yaml", text, force)
        typer.echo(f"wrote {out / f'{topic}.yaml'}")
    typer.echo(f"Check them with: studybot questions lint {out}")


def export_problem(out: Path, names: list[str], force: bool) -> str | None:
    """Why the export may not write these files into `out`, in one sentence, or None: a link
    (the folder or a file), something not a folder or file in the way, a file without --force."""
    if out.is_symlink():
        return f"{out} is a symbolic link: the export never writes through one; choose another --out."
    if out.exists() and not out.is_dir():
        return f"{out} is not a folder: choose another --out."
    for name in names:
        target = out / name
        if target.is_symlink():
            return f"{target} is a symbolic link: the export never writes through one; remove it or use another --out."
        if target.exists() and not target.is_file():
            return f"{target} is not a file: remove it or choose another --out."
        if target.exists() and not force:
            return f"{target} exists: add --force to replace it, or choose another --out."
    return None


def write_new(target: Path, text: str, force: bool) -> None:
    """Write `text` to `target` without following a link: a new file (O_EXCL, O_NOFOLLOW), or
    with `force` a temporary file beside it moved over it (a link planted since is replaced
    itself, never written through)."""
    data = text.encode("utf-8")
    if not force:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        return
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
