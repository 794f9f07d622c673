"""The PyTorch demos from the command line (`studybot demo checkpoint`, with a progress bar as
each strategy is measured, `demo estimate` and `demo plan`), the Celery worker that runs them for the
chat (`studybot worker`), and the newest demo jobs (`studybot jobs`)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Annotated

import typer

from bot.config import Settings

from .common import ascii_whole, engine_or_exit, fail, settings_of, setup_logging

# A demo command's own options pass through to its module untouched.
PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def demo_checkpoint(ctx: typer.Context) -> None:
    """Measure peak memory and step time with and without checkpointing (python -m demos.checkpoint),
    with a progress bar as each strategy is measured."""
    args = list(ctx.args)
    if {"--help", "-h"} & set(args):
        typer.echo(demo_checkpoint_help())
        raise typer.Exit(0)
    problem = chat_bounds_problem(args)
    if problem is not None:
        raise fail(problem, 2)
    if {"--json", "--progress", "--chart", "--sweep"} & {a.split("=")[0] for a in args}:
        raise typer.Exit(subprocess.call([sys.executable, "-m", "demos.checkpoint", *args]))
    raise typer.Exit(demo_with_progress(settings_of(ctx), "demos.checkpoint", tuple(args)))


def demo_checkpoint_help() -> str:
    """`studybot demo checkpoint --help`: every option with its choices, bounds and default,
    read from the chat's request rules (bot/core/rules/demo_request.py), so both say the same."""
    from bot.core.rules import demo_request as rules

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


def chat_bounds_problem(args: list[str]) -> str | None:
    """A whole-number option outside the chat's bounds (the CLI allows what chat allows)."""
    from bot.core import wording
    from bot.core.rules import demo_request as rules
    from bot.core.rules.numbers import ascii_int

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


def demo_with_progress(settings: Settings, module: str, args: tuple[str, ...]) -> int:
    """Run a demo as the bot's workers do, showing each strategy as it is measured: a bar on a
    terminal, a line per strategy otherwise; then the table. 2 and one sentence on bad input."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bot.core import wording
    from bot.core.rules.demo_result import result_card
    from bot.worker.demo_process import DemoFailure, run_demo_process, save_charts

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
            # one run in the foreground: a warm process would only add its own start
            outcome = run_demo_process(module, args, settings.demo_timeout_s, hear, warm=False)
    except DemoFailure as failure:
        typer.echo(failure.sentence, err=True)
        return 2
    saved = save_charts(settings.demo_out_dir, f"checkpoint-{time.strftime('%Y%m%d-%H%M%S')}", outcome)
    main = next(iter(saved.values()), None)
    card = result_card(module, {**outcome.result, "charts": saved}, main, time.perf_counter() - started)
    for line in wording.demo_lines(card):
        typer.echo(line)
    return 0


def demo_estimate(ctx: typer.Context) -> None:
    """Estimate a training step's peak memory with fake tensors (python -m demos.estimate)."""
    raise typer.Exit(subprocess.call([sys.executable, "-m", "demos.estimate", *ctx.args]))


def demo_plan(ctx: typer.Context) -> None:
    """Plan what to checkpoint so a training step fits in N GiB (python -m demos.plan)."""
    raise typer.Exit(subprocess.call([sys.executable, "-m", "demos.plan", *ctx.args]))


def worker(
    ctx: typer.Context,
    queues: Annotated[str, typer.Option(help="Comma-separated Celery queues to take demos from.")] = "demos",
    concurrency: Annotated[int, typer.Option(parser=ascii_whole(1), help="Demos this worker runs at once.")] = 1,
) -> None:
    """Run a Celery worker that takes demo jobs from Redis (on a GPU host: pip install '.[demo]')."""
    from bot.worker.celery_app import make_app

    settings = settings_of(ctx)
    setup_logging(settings)
    celery_app = make_app(settings.redis_url, settings.demo_timeout_s, warm=settings.demo_warm)
    celery_app.worker_main(
        ["worker", "--queues", queues, "--concurrency", str(concurrency), "--pool", "prefork", "--loglevel", "INFO"]
    )


def jobs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(parser=ascii_whole(1), help="How many of the newest jobs.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """List the newest demo jobs: who asked where, state, times, error."""
    engine = engine_or_exit(settings_of(ctx))
    found = engine.demos.demo_jobs(limit)
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
