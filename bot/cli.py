"""`studybot ...`: thin commands that parse, call the engine or the bank, and print."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from bot import __version__
from bot.config import ROOT, Settings
from bot.core.bank import (
    MAX_LONGEST_CORRECT_SHARE,
    TOPICS,
    Bank,
    collect,
    length_rank_summary,
    load_bank,
    longest_correct_share,
)
from bot.core.engine import StudyEngine
from bot.core.errors import BankError, StoreUnavailable, StudyBotError
from bot.core.item_analysis import MIN_ANSWERS
from bot.core.values import ChannelRef, CommunityRef, LeaderboardCard, Posted, QuestionCard, RevealCard
from bot.core.wording import CONSOLE_OPERATOR
from bot.settings_problems import SettingsError, load_settings
from bot.store.database import Database, head_revision, safe_url, schema_revision, upgrade
from bot.wiring import build_engine

log = logging.getLogger(__name__)

app = typer.Typer(
    help="Checkpoint Study Bot: learn gradient checkpointing in Discord, Slack or a terminal.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: a flag shows as --json, not `--json <bool>` in a box
)
questions_app = typer.Typer(help="Lint, list and count the question bank.", no_args_is_help=True, rich_markup_mode=None)
db_app = typer.Typer(help="The database.", no_args_is_help=True, rich_markup_mode=None)
demo_app = typer.Typer(help="The PyTorch demos (run in a worker process).", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(questions_app, name="questions")
app.add_typer(db_app, name="db")
app.add_typer(demo_app, name="demo")
schedule_app = typer.Typer(
    help="The scheduled jobs: daily round, reveal, weekly leaderboard.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(schedule_app, name="schedule")
fsrs_app = typer.Typer(
    help="FSRS parameters fitted to a community's review log.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(fsrs_app, name="fsrs")


PLATFORMS = ("console", "discord", "slack")


def ascii_whole(low: int) -> Callable[[object], int]:
    """The parser of a whole-number option in ASCII digits, at least `low`: click's own int()
    also reads other scripts' digits (`--limit ٣` was 3)."""

    def parse(value: object) -> int:
        from bot.core.numbers import ascii_int

        number = value if isinstance(value, int) else ascii_int(str(value).strip())
        if number is None or number < low:
            raise typer.BadParameter(f"{str(value)[:20]!r} is not a whole number of at least {low} in digits 0-9.")
        return number

    return parse


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code)


def setup_logging(settings: Settings, quiet: bool = False) -> None:
    """Log to stderr; the console chat shows only warnings unless STUDYBOT_LOG_LEVEL is set."""
    level = "WARNING" if quiet and "log_level" not in settings.model_fields_set else settings.log_level.upper()
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr, force=True
    )
    logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))


def _unreachable(exc: StoreUnavailable) -> typer.Exit:
    """A database that cannot be reached or upgraded at start: one line (the driver's reason has
    several), what to do, exit 2 like any other setting the bot cannot start with."""
    reason = exc.message.strip().splitlines()[0].rstrip(" .")
    return fail(f"{reason}: start the database server, or correct STUDYBOT_DATABASE_URL.", 2)


def _engine_or_exit(settings: Settings) -> StudyEngine:
    try:
        return build_engine(settings)
    except BankError as exc:
        raise fail(f"Refusing to start: {exc.message}") from None
    except StoreUnavailable as exc:
        raise _unreachable(exc) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None


def unknown_community(community: str, platform: str | None) -> str:
    """The sentence every command taking --community gives for one the bot does not know."""
    where = f" on {platform}" if platform else ""
    return (
        f"No community '{community[:60]}'{where}: a community appears with its first command there "
        "(`studybot schedule show` lists them)."
    )


def _community_or_exit(engine: StudyEngine, community: str, platform: str | None) -> list[CommunityRef]:
    """The known communities with this id (on this platform when given), or exit 2 with a sentence."""
    found = [
        ref
        for ref, _ in engine.communities()
        if ref.community_id == community and (platform is None or ref.platform == platform)
    ]
    if not found:
        raise fail(unknown_community(community, platform), 2)
    return found


def _version(value: bool) -> None:
    if value:
        typer.echo(f"studybot {__version__}")
        raise typer.Exit()


# Commands that report a bad setting themselves (doctor lists it among its checks).
_OWN_SETTINGS_REPORT = ("doctor", "health")


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Checkpoint Study Bot."""
    if ctx.invoked_subcommand in _OWN_SETTINGS_REPORT or ctx.resilient_parsing:
        return
    try:  # every other command: a bad setting or .env line is one sentence and exit 2
        load_settings()
    except SettingsError as exc:
        typer.echo(exc.sentence, err=True)
        raise typer.Exit(2) from None


@app.command()
def console(
    user: Annotated[
        str, typer.Option(help="Who you are in the chat: the operator, who changes settings.")
    ] = CONSOLE_OPERATOR,
    community: Annotated[str, typer.Option(help="The community (like a Discord server).")] = "local",
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Print every bot message as one JSON object per line.")
    ] = False,
    schedule: Annotated[
        bool, typer.Option(help="Run the scheduler: the daily round, reveal and leaderboard post on their own.")
    ] = True,
) -> None:
    """Chat with the bot in this terminal: no Discord or Slack account needed."""
    from bot.platforms.console import ConsoleOptions
    from bot.platforms.launch import LaunchError, serve

    settings = Settings()
    if "demo_cooldown_s" not in settings.model_fields_set:  # one person at a terminal: nobody to share with
        settings = settings.model_copy(update={"demo_cooldown_s": 0.0})
    setup_logging(settings, quiet=True)
    engine = _engine_or_exit(settings)
    if isinstance(sys.stdin, io.TextIOWrapper):  # undecodable bytes become U+FFFD, not a crash
        sys.stdin.reconfigure(errors="replace")
    options = ConsoleOptions(
        user=user,
        community=community,
        jsonl=jsonl,
        demo_wait_s=settings.demo_timeout_s + 30,
        export_dir=settings.demo_out_dir,
    )
    try:  # the console is a platform like the others: on the Runtime, its scheduler and demo runner
        asyncio.run(serve(settings, engine, ("console",), schedule=schedule, console=options))
    except LaunchError as exc:  # the web page's port (STUDYBOT_WEB_PORT) taken
        raise fail(str(exc), 2) from None
    except KeyboardInterrupt:
        pass


@app.command()
def run(
    platform: Annotated[
        str | None, typer.Argument(help="console, discord, slack or all (default: those whose tokens are set).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            parser=ascii_whole(1),
            help="Slack over HTTP (no SLACK_APP_TOKEN): serve /slack/events on this port (STUDYBOT_PORT).",
        ),
    ] = None,
) -> None:
    """Start the platforms whose tokens are set (all in one process); with none, the console chat."""
    from bot.platforms.launch import LaunchError, choose_platforms, serve, unavailable
    from bot.platforms.preflight import PlatformRefused, check_reachable, shape_problem

    settings = Settings()
    if port is not None:
        settings = settings.model_copy(update={"port": port})
    setup_logging(settings, quiet=True)  # the console chat, unless a platform starts
    try:
        chosen = choose_platforms(settings, platform)
    except LaunchError as exc:
        raise fail(str(exc), 2) from None
    problem = unavailable(chosen)
    if problem is not None:
        raise fail(problem, 2)
    if chosen != ("console",):
        problem = shape_problem(settings, chosen)  # a malformed token: before anything connects
        if problem is not None:
            raise fail(problem, 2)
        setup_logging(settings)
        engine = _engine_or_exit(settings)
        try:  # the platform answers and takes the tokens, a few tries apart, or one sentence and exit 1
            check_reachable(settings, chosen)
        except PlatformRefused as exc:
            raise fail(exc.sentence, 1) from None
        log.info("starting %s", ", ".join(chosen))
        try:
            asyncio.run(serve(settings, engine, chosen))
        except LaunchError as exc:
            raise fail(str(exc), 2) from None
        except KeyboardInterrupt:
            pass
        return
    if platform is None:
        typer.echo(
            "No platform tokens are set: set DISCORD_TOKEN for Discord, or SLACK_BOT_TOKEN with "
            "SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP) for Slack (see .env.example). "
            "Starting the console chat.",
            err=True,
        )
    console(user=CONSOLE_OPERATOR, community="local", jsonl=False, schedule=True)


@app.command()
def web(
    port: Annotated[
        int | None, typer.Option(parser=ascii_whole(1), help="The port (default STUDYBOT_WEB_PORT, else 8080).")
    ] = None,
) -> None:
    """Serve the study web page alone (`studybot run` serves it too when STUDYBOT_WEB_PORT is set)."""
    from bot.platforms.launch import LaunchError, port_problem
    from bot.web.app import start_web

    settings = Settings()
    settings = settings.model_copy(update={"web_port": port or settings.web_port or 8080})
    setup_logging(settings)
    engine = _engine_or_exit(settings)
    if engine.links is None:
        typer.echo("STUDYBOT_WEB_URL or STUDYBOT_WEB_SECRET is not set: only public communities' pages open.", err=True)

    async def serve_page() -> None:
        try:
            server = await start_web(engine, settings)
        except OSError as exc:
            raise port_problem(exc, settings.web_host, settings.web_port, "STUDYBOT_WEB_PORT or --port") from None
        typer.echo(f"Serving the web page on http://{settings.web_host}:{settings.web_port}/", err=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.close()

    try:
        asyncio.run(serve_page())
    except LaunchError as exc:
        raise fail(str(exc), 2) from None
    except KeyboardInterrupt:
        pass


@questions_app.command("lint")
def questions_lint(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files or folders (default: the bank).")] = None,
) -> None:
    """Report every problem as path:line: message; exit 1 if there are any."""
    targets = paths or [Settings().questions_dir]
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


def _bank_or_exit(settings: Settings) -> Bank:
    try:
        return load_bank(settings.questions_dir)
    except BankError as exc:
        raise fail(exc.message) from None


@questions_app.command("list")
def questions_list(
    topic: Annotated[str | None, typer.Option(help="Only this topic.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
) -> None:
    """List the questions (id, topic, difficulty, prompt)."""
    bank = _bank_or_exit(Settings())
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


@questions_app.command("stats")
def questions_stats() -> None:
    """Counts per topic and difficulty, and how many questions carry an executable check."""
    bank = _bank_or_exit(Settings())
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


@questions_app.command("export")
def questions_export(
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
    engine = _engine_or_exit(Settings())
    found = _community_or_exit(engine, community, platform)
    if len(found) > 1:
        raise fail(f"'{community}' is on {', '.join(r.platform for r in found)}: choose one with --platform.", 2)
    try:
        files = engine.export_questions(found[0])
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


@questions_app.command("analysis")
def questions_analysis(
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
    from bot.core.item_analysis import PICKS_NOTE, ItemStats, analyse, file_number, from_kept
    from bot.core.rating import start_difficulty
    from bot.store.item_stats import answer_rows, kept_figures, question_ratings

    settings = Settings()
    bank = _bank_or_exit(settings)
    if community is not None:
        _community_or_exit(_engine_or_exit(settings), community, platform)
    try:
        upgrade(settings.database_url)
        database = Database(settings.database_url)
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
        finally:
            database.dispose()
    except StudyBotError as exc:
        raise fail(exc.message) from None
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


@app.command()
def leaderboard(
    community: Annotated[str, typer.Option(help="The community id.")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
    week: Annotated[str | None, typer.Option(help="An ISO week such as 2026-W48 (default: this week).")] = None,
    all_time: Annotated[bool, typer.Option("--all", help="All-time points.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Print a community's weekly or all-time leaderboard."""
    settings = Settings()
    engine = _engine_or_exit(settings)
    _community_or_exit(engine, community, platform)
    try:
        card = engine.leaderboard(CommunityRef(platform, community), week=week, all_time=all_time)
    except StudyBotError as exc:
        raise fail(exc.message, 2) from None
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "community": card.community,
                    "scope": card.scope,
                    "rows": [{"rank": r.rank, "user": r.user, "points": r.points} for r in card.rows],
                }
            )
        )
        return
    typer.echo(f"{'All time' if card.scope == 'all' else card.scope} in {card.community}")
    for r in card.rows:
        typer.echo(f"{r.rank:>4}. {r.user:<30} {r.points:>6}")
    if not card.rows:
        typer.echo("No points yet.")


@app.command()
def export(
    community: Annotated[str, typer.Option(help="The community id.")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
    format: Annotated[str, typer.Option(help="Only csv for now.")] = "csv",
) -> None:
    """Write every answer of a community as CSV on standard output."""
    if format != "csv":
        raise fail(f"Unknown format '{format}'; only csv is supported.", 2)
    engine = _engine_or_exit(Settings())
    _community_or_exit(engine, community, platform)
    try:
        rows = engine.export_rows(CommunityRef(platform, community))
    except StudyBotError as exc:
        raise fail(exc.message, 2) from None
    fields = ["answered_at", "week", "user_id", "user", "kind", "question", "choice", "correct", "points"]
    writer = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


@schedule_app.command("show")
def schedule_show(
    platform: Annotated[str | None, typer.Option(help="Only this platform (console, discord, slack).")] = None,
    community: Annotated[str | None, typer.Option(help="Only this community id.")] = None,
) -> None:
    """List each community's schedule settings and next runs (local time and UTC)."""
    from bot.schedule import StudyScheduler, describe

    engine = _engine_or_exit(Settings())
    if community is not None:
        _community_or_exit(engine, community, platform)
    scheduler = StudyScheduler(engine, platforms=(platform,) if platform else None, community=community)
    runs = scheduler.all_next_runs()
    for item in runs:
        for line in describe(item, engine.now()):
            typer.echo(line)
        for alert in engine.undelivered(item.community):
            typer.echo(f"  undelivered: {alert}")
    if not runs:
        typer.echo("No communities yet: one appears with its first command (for example /daily or /config).")


@schedule_app.command("run")
def schedule_run(
    job: Annotated[str, typer.Argument(help="daily, reveal or leaderboard.")],
    community: Annotated[str, typer.Option(help="The community id.")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
) -> None:
    """Run one job now, by hand; idempotent like the scheduled run (a second run posts nothing).
    Console posts print here; a Discord or Slack post is queued for that running bot to send."""
    from bot.delivery import Deliverer
    from bot.platforms.console.render import render
    from bot.schedule import JOB_KINDS, StudyScheduler

    if job not in JOB_KINDS:
        raise fail(f"Unknown job '{job[:30]}'; jobs: {', '.join(JOB_KINDS)}.", 2)
    if platform not in PLATFORMS:
        raise fail(f"Unknown platform '{platform[:30]}'; platforms: {', '.join(PLATFORMS)}.", 2)
    settings = Settings()
    setup_logging(settings, quiet=True)
    engine = _engine_or_exit(settings)
    _community_or_exit(engine, community, platform)
    scheduler = StudyScheduler(engine, platforms=(platform,), community=community)
    try:
        results = scheduler.run_job(job, CommunityRef(platform, community))
    except StudyBotError as exc:
        raise fail(exc.message) from None
    for card in results:
        if not isinstance(card, (QuestionCard, RevealCard, LeaderboardCard)):  # nothing claimed: say why
            for message in render(card):
                typer.echo(message.text)
    if platform != "console":
        if any(isinstance(card, (QuestionCard, RevealCard, LeaderboardCard)) for card in results):
            typer.echo(f"Queued: the running {platform} bot posts it (see `studybot schedule show`).")
        return

    def show(channel: ChannelRef, card: Posted) -> None:
        for message in render(card):
            where = channel.channel_id.lstrip("#")  # a channel stored as "#study" before it was normalised
            typer.echo(f"[#{where}] {message.text}" if message.to == "channel" else message.text)

    Deliverer(engine, platform, community).deliver_due(show)


@fsrs_app.command("fit")
def fsrs_fit(
    community: Annotated[str, typer.Option(help="The community id (a guild, a workspace, a console community).")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
) -> None:
    """Fit the community's FSRS parameters to its review log on the demo worker (STUDYBOT_WORKER);
    its reviews are scheduled with them from then on. Below the optimizer's minimum the defaults stay."""
    from bot.fsrs_fit import FitFailure
    from bot.fsrs_runs import fit_community, worker_fitter

    if platform not in PLATFORMS:
        raise fail(f"Unknown platform '{platform[:30]}'; platforms: {', '.join(PLATFORMS)}.", 2)
    settings = Settings()
    setup_logging(settings, quiet=True)
    engine = _engine_or_exit(settings)
    _community_or_exit(engine, community, platform)
    try:
        typer.echo(fit_community(engine, CommunityRef(platform, community), worker_fitter(settings)))
    except FitFailure as failure:
        raise fail(failure.sentence) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None


@app.command()
def worker(
    queues: Annotated[str, typer.Option(help="Comma-separated Celery queues to take demos from.")] = "demos",
    concurrency: Annotated[int, typer.Option(parser=ascii_whole(1), help="Demos this worker runs at once.")] = 1,
) -> None:
    """Run a Celery worker that takes demo jobs from Redis (on a GPU host: pip install '.[demo]')."""
    from bot.worker import make_app

    settings = Settings()
    setup_logging(settings)
    celery_app = make_app(settings.redis_url, settings.demo_timeout_s)
    celery_app.worker_main(
        ["worker", "--queues", queues, "--concurrency", str(concurrency), "--pool", "prefork", "--loglevel", "INFO"]
    )


@app.command()
def jobs(
    limit: Annotated[int, typer.Option(parser=ascii_whole(1), help="How many of the newest jobs.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """List the newest demo jobs: who asked where, state, times, error."""
    engine = _engine_or_exit(Settings())
    found = engine.demo_jobs(limit)
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "id": j.id,
                        "number": j.number,  # in its community, as its members saw it
                        "platform": j.platform,
                        "community": j.community,
                        "channel": j.channel_id,
                        "user": j.user_name,
                        "module": j.module,
                        "args": list(j.args),
                        "state": j.state,
                        "backend": j.backend,
                        "created_at": j.created_at.isoformat(),
                        "started_at": j.started_at.isoformat() if j.started_at else None,
                        "finished_at": j.finished_at.isoformat() if j.finished_at else None,
                        "error": j.error,
                    }
                    for j in found
                ]
            )
        )
        return
    for j in found:
        took = f"{(j.finished_at - j.started_at).total_seconds():.1f} s" if j.finished_at and j.started_at else "-"
        typer.echo(
            f"#{j.id:<5} {j.state:<8} {j.module.removeprefix('demos.'):<10} {j.platform}/{j.community} "
            f"#{j.channel_id} by {j.user_name}, {j.created_at:%Y-%m-%d %H:%M} UTC, {took}"
            + (f": {j.error}" if j.error else "")
        )
    if not found:
        typer.echo("No demo jobs yet.")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create or upgrade the database schema (also done at every start)."""
    settings = Settings()
    before = schema_revision(settings.database_url)
    try:
        upgrade(settings.database_url)
    except StoreUnavailable as exc:
        raise _unreachable(exc) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None
    shown = safe_url(settings.database_url)
    if before is None:
        typer.echo(f"Created the schema in the database at {shown} (revision {head_revision()}).")
    elif before != head_revision():
        typer.echo(f"Upgraded the database at {shown} from revision {before} to {head_revision()}.")
    else:
        typer.echo(f"The database at {shown} is up to date (revision {before}).")


_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


@demo_app.command("checkpoint", context_settings=_PASSTHROUGH)
def demo_checkpoint(ctx: typer.Context) -> None:
    """Measure peak memory and step time with and without checkpointing (python -m demos.checkpoint),
    with a progress bar as each strategy is measured."""
    args = list(ctx.args)
    if {"--help", "-h"} & set(args):
        typer.echo(demo_checkpoint_help())
        raise typer.Exit(0)
    problem = _chat_bounds_problem(args)
    if problem is not None:
        raise fail(problem, 2)
    if {"--json", "--progress", "--chart", "--sweep"} & {a.split("=")[0] for a in args}:
        raise typer.Exit(subprocess.call([sys.executable, "-m", "demos.checkpoint", *args]))
    raise typer.Exit(_demo_with_progress("demos.checkpoint", tuple(args)))


def demo_checkpoint_help() -> str:
    """`studybot demo checkpoint --help`: every option with its choices, bounds and default,
    read from the chat's request rules (bot/core/demo_request.py), so both say the same."""
    from bot.core import demo_request as rules

    layers, tokens, width, heads, batch = rules.MODEL_DEFAULTS["blocks"]
    bounds = rules.INT_BOUNDS["checkpoint"]
    defaults = {"layers": layers, "tokens": tokens, "width": width, "heads": heads, "batch": batch}
    defaults["repeat"] = rules.DEFAULT_REPEAT
    per_model = "; ".join(f"{m} {d[0]} x {d[1]}" for m, d in rules.MODEL_DEFAULTS.items())
    lines = [
        "Usage: studybot demo checkpoint [--OPTION VALUE ...]",
        "",
        "  Measure peak memory and step time with and without checkpointing, each strategy in turn.",
        f"  The same options as the chat's /demo checkpoint (layers={layers} there is --layers {layers} here).",
        "",
        "Options:",
        f"  --model {'|'.join(rules.MODELS)}  [default: blocks]",
        f"  --strategies LIST  comma-separated, of {', '.join(rules.STRATEGIES)}"
        f"  [default: {','.join(rules.DEFAULT_STRATEGIES)}]",
    ]
    for key, (low, high) in bounds.items():
        lines.append(f"  --{key} N  a whole number from {low} to {high}  [default: {defaults[key]}]")
    lines += [
        f"  --budgets LIST  up to {rules.MAX_BUDGETS} numbers from 0 to 1, for the budget strategy"
        f"  [default: {','.join(f'{b:g}' for b in rules.DEFAULT_BUDGETS)}]",
        f"  --device {'|'.join(rules.CHOICES['checkpoint']['device'])}  [default: auto]",
        "  --chart PATH  also write the charts there (PNG)",
        "  --json  print the result as JSON instead of the table",
        "",
        f"  Sizes differ per model (layers x tokens): {per_model}.",
        "  The run is refused before it starts when it would not finish in time.",
    ]
    return "\n".join(lines)


def _chat_bounds_problem(args: list[str]) -> str | None:
    """A whole-number option outside the chat's bounds (the CLI allows what chat allows)."""
    from bot.core import demo_request as rules
    from bot.core import wording
    from bot.core.numbers import ascii_int

    bounds = rules.INT_BOUNDS["checkpoint"]
    for at, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        key, sep, value = arg[2:].partition("=")
        if key not in bounds:
            continue
        if not sep:
            value = args[at + 1] if at + 1 < len(args) else ""
        low, high = bounds[key]
        whole = ascii_int(value)
        if whole is None or not low <= whole <= high:
            return wording.demo_whole_number(f"--{key}", low, high, value[:20])
    return None


def _demo_with_progress(module: str, args: tuple[str, ...]) -> int:
    """Run a demo as the bot's workers do, showing each strategy as it is measured: a bar on a
    terminal, a line per strategy otherwise; then the table. 2 and one sentence on bad input."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bot.core import wording
    from bot.core.demo_result import result_card
    from bot.demo_process import DemoFailure, run_demo_process, save_charts

    settings = Settings()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not sys.stderr.isatty(),
    )
    task = progress.add_task("starting", total=None)

    def hear(event: dict[str, object]) -> None:
        if event.get("event") == "start":
            total = event.get("total")
            progress.update(task, total=total if isinstance(total, int) else None, description="measuring")
        elif event.get("event") == "row" and isinstance(event.get("row"), dict):
            row = event["row"]
            assert isinstance(row, dict)
            progress.advance(task)
            progress.update(task, description=f"measured {row.get('strategy')}")
            if progress.disable:
                done = int(progress.tasks[0].completed)
                total = progress.tasks[0].total
                typer.echo(f"measured {row.get('strategy')} ({done} of {total or '?'})", err=True)

    started = time.perf_counter()
    try:
        with progress:
            outcome = run_demo_process(module, args, settings.demo_timeout_s, hear)
    except DemoFailure as failure:
        typer.echo(failure.sentence, err=True)
        return 2
    saved = save_charts(settings.demo_out_dir, f"checkpoint-{time.strftime('%Y%m%d-%H%M%S')}", outcome)
    main = next(iter(saved.values()), None)
    card = result_card(module, {**outcome.result, "charts": saved}, main, time.perf_counter() - started)
    for line in wording.demo_lines(card):
        typer.echo(line)
    return 0


@demo_app.command("estimate", context_settings=_PASSTHROUGH)
def demo_estimate(ctx: typer.Context) -> None:
    """Estimate a training step's peak memory with fake tensors (python -m demos.estimate)."""
    raise typer.Exit(subprocess.call([sys.executable, "-m", "demos.estimate", *ctx.args]))


@app.command()
def doctor(
    online: Annotated[
        bool, typer.Option("--online", help="Also ask Discord and Slack what the tokens can do.")
    ] = False,
) -> None:
    """Check this configuration, one line per check with the fix; exit 0, 1 (warnings) or 2 (failures)."""
    from bot.doctor import exit_code, run_checks

    checks = run_checks(online=online)
    for check in checks:
        typer.echo(check.line())
    warns, fails = (sum(1 for c in checks if c.status == s) for s in ("warn", "fail"))
    typer.echo(f"{len(checks)} checks: {len(checks) - warns - fails} ok, {warns} warnings, {fails} failures")
    raise typer.Exit(exit_code(checks))


@app.command()
def health(
    url: Annotated[
        str | None, typer.Option(help="Default: http://127.0.0.1:STUDYBOT_WEB_PORT/healthz (8080 when unset).")
    ] = None,
) -> None:
    """Ask the running bot whether it is up (its web port's /healthz); exit 0 or 1. The images' HEALTHCHECK."""
    from bot.doctor import health as ask

    if url is None:
        try:
            port = Settings().web_port or 8080
        except ValueError:
            port = 8080
        url = f"http://127.0.0.1:{port}/healthz"
    healthy, answer = ask(url)
    typer.echo(f"{'ok' if healthy else 'unhealthy'}: {url} answered {answer}", err=not healthy)
    raise typer.Exit(0 if healthy else 1)


def main() -> None:
    app()
