"""Start-up benchmark: the bot's time to ready and its resident memory, beside the bare imports.
Prints figures and ratios; asserts nothing on time.

Each start is a fresh `python -m bot ...` process, on a fresh SQLite file with the real bank:
- console: `studybot console --jsonl --no-schedule`, ready at its first line of output;
- Discord: `studybot run discord` against tests/fakes/discord_server.py, ready at "Discord: ready";
- Slack: `studybot run slack` over Socket Mode against tests/fakes/slack_api.py, ready at
  "slack: connected over Socket Mode".
Beside them, in the same run: `python -c "import sqlalchemy, discord, slack_bolt"` (time and
peak RSS), and the imports that cost the most (`python -X importtime`, cumulative, top entries).

Each is started once on a fresh database and once on the database a previous start left (a
restart, the usual case). Discord's ready includes discord.py's wait for more GUILD_CREATEs
(`guild_ready_timeout`, 2 s by default: it waits that long after the last one); a second row
shortens it to 0.1 s to show what the bot itself takes.

Targets (issue 23): ready under 2x the bare imports; RSS under 150 MB without torch.

Run: .venv/bin/python bench/startup.py [--repeat 3] [--top 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.discord_server import FakeDiscord  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

BARE = "import sqlalchemy, discord, slack_bolt"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def has_torch(pid: int) -> bool:
    return "torch" in Path(f"/proc/{pid}/maps").read_text()


def start(
    args: list[str], env: dict[str, str], ready: Callable[[str], bool], stdin: str = "", home: str | None = None
) -> tuple[float, float, bool]:
    """Seconds from spawn to the ready line, RSS (MB) then, and whether torch was loaded. With
    `home`, the database there is reused (a restart); without, a fresh one (a first start)."""
    with tempfile.TemporaryDirectory() as fresh:
        tmp = home or fresh
        full = {
            **os.environ,
            "STUDYBOT_DATABASE_URL": f"sqlite:///{Path(tmp) / 'start.db'}",
            "STUDYBOT_QUESTIONS_DIR": str(ROOT / "questions"),
            "STUDYBOT_DEMO_OUT_DIR": str(Path(tmp) / "charts"),
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        for token in ("DISCORD_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
            if token not in env:
                full.pop(token, None)
        t0 = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", *args],
            cwd=tmp,
            env=full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert process.stdin is not None and process.stdout is not None
            if stdin:
                process.stdin.write(stdin)
                process.stdin.flush()
            seen = []
            for line in process.stdout:
                seen.append(line)
                if ready(line):
                    took = time.perf_counter() - t0
                    return took, rss_mb(process.pid), has_torch(process.pid)
            raise RuntimeError(f"{args} ended before ready:\n{''.join(seen[-20:])}")
        finally:
            process.kill()
            process.wait(timeout=10)


def bare_imports() -> tuple[float, float]:
    code = f"{BARE}; import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, int(done.stdout.strip()) / 1024


def import_costs(top: int) -> list[tuple[int, str]]:
    """(cumulative us, module) of the costliest imports of the bot's start-up path."""
    code = "import bot.cli, bot.platforms.launch, bot.platforms.discord.app, bot.platforms.slack.app"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    found = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if not name.startswith(" ") and "." not in name.strip():  # top-level packages only
            found.append((int(cumulative), name.strip()))
    return sorted(found, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()

    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    def on_loop(coro: object) -> object:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(30)  # type: ignore[arg-type]

    discord_fake: FakeDiscord = on_loop(FakeDiscord().start())  # type: ignore[assignment]
    discord_fake.add_guild(channels=1)
    slack_fake: FakeSlack = on_loop(FakeSlack().start())  # type: ignore[assignment]

    modes: list[tuple[str, list[str], dict[str, str], Callable[[str], bool], str]] = [
        ("console", ["console", "--jsonl", "--no-schedule"], {}, lambda line: bool(line.strip()), "/help\n"),
        (
            "Discord (fake)",
            ["run", "discord"],
            {"DISCORD_TOKEN": "fake-token", "STUDYBOT_DISCORD_API_URL": discord_fake.api},
            lambda line: "Discord: ready" in line,
            "",
        ),
        (
            "Discord, guild wait 0.1 s",
            ["run", "discord"],
            {
                "DISCORD_TOKEN": "fake-token",
                "STUDYBOT_DISCORD_API_URL": discord_fake.api,
                "STUDYBOT_DISCORD_GUILD_READY_TIMEOUT": "0.1",
            },
            lambda line: "Discord: ready" in line,
            "",
        ),
        (
            "Slack (fake, Socket Mode)",
            ["run", "slack"],
            {
                "SLACK_BOT_TOKEN": "xoxb-one",
                "SLACK_APP_TOKEN": "xapp-one",
                "STUDYBOT_SLACK_API_URL": slack_fake.api_url,
            },
            lambda line: "connected over Socket Mode" in line,
            "",
        ),
    ]
    bare = [bare_imports() for _ in range(args.repeat)]
    bare_s = statistics.median(t for t, _ in bare)
    bare_mb = statistics.median(m for _, m in bare)
    print(f"start-up: medians of {args.repeat} processes each, SQLite, the real bank")
    print("first start: a fresh database (every migration runs); restart: the database the first left")
    print(f"{'what':42} {'ready s':>8} {'x bare':>7} {'RSS MB':>7}  torch")
    print(f"{'bare: ' + BARE[7:]:42} {bare_s:8.2f} {1.0:6.1f}x {bare_mb:7.0f}  no  (peak RSS)")
    for name, argv, env, ready, stdin in modes:
        with tempfile.TemporaryDirectory() as home:
            start(argv, env, ready, stdin, home)  # leaves the database a restart finds
            for kind, where in (("first start", None), ("restart", home)):
                runs = [start(argv, env, ready, stdin, where) for _ in range(args.repeat)]
                took = statistics.median(t for t, _, _ in runs)
                mb = statistics.median(m for _, m, _ in runs)
                torch = "yes" if any(t for _, _, t in runs) else "no"
                print(f"{name + ', ' + kind:42} {took:8.2f} {took / bare_s:6.1f}x {mb:7.0f}  {torch}")
    print(f"\nthe costliest imports (cumulative ms, top-level packages, `python -X importtime`, top {args.top}):")
    for cumulative, module in import_costs(args.top):
        print(f"  {cumulative / 1000:8.1f}  {module}")
    on_loop(discord_fake.stop())
    on_loop(slack_fake.stop())
    loop.call_soon_threadsafe(loop.stop)


if __name__ == "__main__":
    main()
