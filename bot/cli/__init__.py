"""`studybot ...`: the Typer app, assembled here from one module per command group. The
commands are thin: they parse, call what bot/wiring.py builds (the engine, the scheduler, a
deliverer, the database), and print.

serve.py: run, console, web. questions.py: questions lint, list, stats, export; analysis.py:
questions analysis. reports.py: leaderboard, export. schedule.py: schedule show, run. fsrs.py:
fsrs fit. demos.py: demo checkpoint, estimate, plan, worker, jobs. db.py: db upgrade. doctor.py:
doctor, health. common.py: what they share, this invocation's Settings first: the root
callback below loads them once (through bot/settings_problems.py's `load_settings`, so a bad
setting is one sentence and exit 2) and every command reads them with `settings_of(ctx)`."""

from __future__ import annotations

from typing import Annotated

import typer

from bot import __version__
from bot.settings_problems import SettingsError, load_settings

from . import analysis, db, demos, doctor, fsrs, questions, reports, schedule, serve

__all__ = ["app", "main"]

app = typer.Typer(
    help="Checkpoint Study Bot: learn gradient checkpointing in Discord, Slack or a terminal.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: a flag shows as --json, not `--json <bool>` in a box
)


def group(text: str) -> typer.Typer:
    """A command group (`studybot questions ...`) with the app's plain help."""
    return typer.Typer(help=text, no_args_is_help=True, rich_markup_mode=None)


questions_app = group("Lint, list and count the question bank.")
db_app = group("The database.")
demo_app = group("The PyTorch demos (run in a worker process).")
schedule_app = group("The scheduled jobs: daily round, reveal, weekly leaderboard.")
fsrs_app = group("FSRS parameters fitted to a community's review log.")
app.add_typer(questions_app, name="questions")
app.add_typer(db_app, name="db")
app.add_typer(demo_app, name="demo")
app.add_typer(schedule_app, name="schedule")
app.add_typer(fsrs_app, name="fsrs")

app.command()(serve.console)
app.command()(serve.run)
app.command()(serve.web)
questions_app.command("lint")(questions.questions_lint)
questions_app.command("list")(questions.questions_list)
questions_app.command("stats")(questions.questions_stats)
questions_app.command("export")(questions.questions_export)
questions_app.command("analysis")(analysis.questions_analysis)
app.command()(reports.leaderboard)
app.command()(reports.export)
schedule_app.command("show")(schedule.schedule_show)
schedule_app.command("run")(schedule.schedule_run)
fsrs_app.command("fit")(fsrs.fsrs_fit)
app.command()(demos.worker)
app.command()(demos.jobs)
db_app.command("upgrade")(db.db_upgrade)
demo_app.command("checkpoint", context_settings=demos.PASSTHROUGH)(demos.demo_checkpoint)
demo_app.command("estimate", context_settings=demos.PASSTHROUGH)(demos.demo_estimate)
demo_app.command("plan", context_settings=demos.PASSTHROUGH)(demos.demo_plan)
app.command()(doctor.doctor)
app.command()(doctor.health)

# Commands that report a bad setting themselves (doctor lists it among its checks).
_OWN_SETTINGS_REPORT = ("doctor", "health")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"studybot {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[  # noqa: ARG001 - declares --version, which its eager callback answers
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Checkpoint Study Bot."""
    if ctx.invoked_subcommand in _OWN_SETTINGS_REPORT or ctx.resilient_parsing:
        return
    try:  # every other command: a bad setting or .env line is one sentence and exit 2
        ctx.obj = load_settings()  # read once: the commands take them through common.settings_of
    except SettingsError as exc:
        typer.echo(exc.sentence, err=True)
        raise typer.Exit(2) from None


def main() -> None:
    app()
