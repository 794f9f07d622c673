"""How long Slack waits for a click's 200 now that an answer is stored before it (issue 27).

The real Bolt app over HTTP on 127.0.0.1 against the fake Slack API (tests/fakes/slack_api.py),
real SQLite: N members click an answer on today's round, C at a time; each click's time to its
HTTP 200 is measured, and whether its answer was in the database when the 200 arrived. Slack
gives 3 s; the listener acks anyway after ACK_WITHIN (2.5 s).

    .venv/bin/python -m bench.slack_ack --clicks 200 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from bot.core.bank import load_bank
from bot.core.rules import choices as codec
from bot.core.values import CommunityRef
from bot.store.database import upgrade
from tests.conftest import TEST_BANK, FakeClock
from tests.fakes.slack_api import FakeSlack, click_payload
from tests.test_slack import start_slack, stop_slack


async def run(clicks: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        upgrade(url)
        fake = await FakeSlack().start()
        clock = FakeClock(datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc))
        slack, database = await start_slack(fake, url, load_bank(TEST_BANK), clock)
        slack.engine.admin.config(CommunityRef("slack", "T1"), "channel", "C1")
        try:
            round_id, ts = await slack.open_daily()
            gate = asyncio.Semaphore(concurrency)
            waits: list[float] = []
            stored_first = 0

            async def one(n: int) -> None:
                nonlocal stored_first
                who = f"UB{n}"
                button = codec.encode_answer(round_id, n % 2)
                payload = click_payload(button, who, "T1", "C1", ts, fake.response_url("b"))
                async with gate:
                    start = time.perf_counter()
                    response = await slack.click(payload)
                    waits.append(time.perf_counter() - start)
                assert response.status == 200
                rows = await asyncio.to_thread(slack.engine.admin.export_rows, CommunityRef("slack", "T1"))
                stored_first += any(r["user_id"] == who for r in rows)

            await asyncio.gather(*(one(n) for n in range(clicks)))
            await slack.settle()
        finally:
            await stop_slack(slack, database)
            await fake.stop()
    waits.sort()

    def ms(q: float) -> float:
        return waits[min(len(waits) - 1, int(q * len(waits)))] * 1000

    print(
        f"clicks {clicks}, {concurrency} at a time: ack p50 {ms(0.5):.1f} ms, p95 {ms(0.95):.1f} ms, "
        f"p99 {ms(0.99):.1f} ms, max {waits[-1] * 1000:.1f} ms (Slack's budget 3000 ms), "
        f"mean {statistics.mean(waits) * 1000:.1f} ms"
    )
    print(f"answers in the database when their 200 arrived: {stored_first} of {clicks}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(run(args.clicks, args.concurrency))


if __name__ == "__main__":
    main()
