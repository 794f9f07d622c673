"""The schedules: each community's daily round, its reveal, the weekly leaderboard and the
weekly FSRS fit (handed to `weekly_fit`, bot/background/fsrs_runs.py, which runs it beside the scheduler).

The database decides what happens, the scheduler only decides when to look, and it never
sends: each claim writes an outbox row in the same transaction, and the platforms'
deliverers (bot/background/delivery.py) post it; `on_claimed` wakes them. A round is
unique per community, channel and local date, a leaderboard post per community and ISO
week (both enforced by unique keys in the engine), so a restart, a second bot process or a
job run by hand never posts twice. `tick()` runs whatever is due now and is the only thing
the wake-ups call; at start it is the catch-up: rounds whose window ended are revealed,
today's round is posted (marked late) if its time passed today, and nothing older comes
back. The scheduler plans each community's next moments (bot.core.rules.timing) in memory and
APScheduler 3 (imported only when `start()` is called) holds ONE date job, at the earliest
of them: when it fires, every community due then is claimed in one pass (one query for their
settings, one for due reveals) and their daily rounds are opened DAILY_BATCH at a time, each
batch one transaction (`open_dailies`), so 10,000 communities due at 09:00 cost one wake-up
and 50 transactions, not 10,000. Plans are rebuilt at start, after every /config change and by a periodic refresh
that reads only the communities whose settings' version moved since the last one (so it
notices changes made by another process) and every community's next close in one query
(rounds opened by hand). What a process serves is a `Scope` the store turns into SQL.

The package: plans.py (a community's next moments and the jobs' names), claims.py (what is
due now, claimed in the database), scheduler.py (StudyScheduler: the APScheduler wake-ups over
the claims) and show.py (`studybot schedule show`'s lines).
"""

from __future__ import annotations

from .claims import CLAIMED_LOOKBACK, DAILY_BATCH, NOTIFY_EVERY, ScheduleClaims
from .plans import JOB_KINDS, JobKind, NextRuns, job_name, plan_next
from .scheduler import REFRESH_SECONDS, RETRY, WAKE_JOB, StudyScheduler, remove_job
from .show import describe

__all__ = [
    "CLAIMED_LOOKBACK",
    "DAILY_BATCH",
    "JOB_KINDS",
    "NOTIFY_EVERY",
    "REFRESH_SECONDS",
    "RETRY",
    "WAKE_JOB",
    "JobKind",
    "NextRuns",
    "ScheduleClaims",
    "StudyScheduler",
    "describe",
    "job_name",
    "plan_next",
    "remove_job",
]
