"""FSRS fitted to a community, measured on simulated review logs. Prints figures and ratios;
asserts nothing on time.

Each seed simulates a community whose members' memory follows known FSRS parameters
(tests/fsrs_simulation.py, shared with the fit's tests: first misses on random days, reviews
on their due day or a few days late, grades Again / Hard / Good / Easy), holds a quarter of
the cards out, and fits on the rest exactly as the worker does (`python -m bot.worker.fsrs_fit`,
a child process with torch).
It reports the log loss of recall on the held-out reviews for: the defaults, the fitted
parameters, a fit on the same log graded pass/fail only (Again / Good, as the bot grades
without confidence; evaluated on pass/fail grades), and the true parameters; and the fit's time
on the worker (the optimizer's own, and the child process's whole life).

Run: .venv/bin/python bench/learning.py [--seeds 3] [--members 60] [--cards 12] [--days 150]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.rules.fsrs_params import counted_reviews, encode_log  # noqa: E402
from bot.worker.fsrs_fit import run_fit_process  # noqa: E402
from tests.fsrs_simulation import TRUE_PARAMETERS, binary, log_loss, simulate  # noqa: E402

log = logging.getLogger("bench.learning")


def one(seed: int, members: int, cards: int, days: int) -> dict[str, float]:
    sim = simulate(seed=seed, members=members, cards_per_member=cards, days=days)
    train, test = sim.train(), sim.test()
    fitted = run_fit_process(encode_log(train), timeout_s=3600)
    passfail = run_fit_process(encode_log(binary(train)), timeout_s=3600)
    defaults_loss, held = log_loss(test, None)
    row = {
        "reviews": float(len(sim.reviews)),
        "train_counted": float(counted_reviews(train)),
        "held_out": float(held),
        "defaults": defaults_loss,
        "fitted": log_loss(test, fitted["parameters"])[0],
        "binary_defaults": log_loss(binary(test), None)[0],
        "binary_fitted": log_loss(binary(test), passfail["parameters"])[0],
        "true": log_loss(test, TRUE_PARAMETERS)[0],
        "fit_s": float(fitted["fit_s"]),
        "process_s": float(fitted["process_s"]),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--members", type=int, default=60)
    parser.add_argument("--cards", type=int, default=12, help="questions each member misses")
    parser.add_argument("--days", type=int, default=150)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    rows = []
    for seed in range(1, args.seeds + 1):
        row = one(seed, args.members, args.cards, args.days)
        rows.append(row)
        log.info(
            "seed %d: %d reviews (%d counted in training, %d held out); log loss defaults %.4f, fitted %.4f, "
            "pass/fail fit %.4f (defaults on pass/fail %.4f), true %.4f; fit %.1f s (process %.1f s)",
            seed,
            row["reviews"],
            row["train_counted"],
            row["held_out"],
            row["defaults"],
            row["fitted"],
            row["binary_fitted"],
            row["binary_defaults"],
            row["true"],
            row["fit_s"],
            row["process_s"],
        )

    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in rows)

    print(f"\nFSRS fitted to a simulated community: {args.seeds} seed(s), {args.members} members x {args.cards} missed")
    print(f"questions over {args.days} days, a quarter of the cards held out (means over the seeds)")
    counted = mean("train_counted")
    print(f"  reviews per log:                 {mean('reviews'):,.0f} ({counted:,.0f} counted for the fit)")
    print(f"  held-out reviews scored:         {mean('held_out'):,.0f}")
    print(f"  log loss, default parameters:    {mean('defaults'):.4f}")
    print(f"  log loss, fitted (four grades):  {mean('fitted'):.4f}")
    passfail = f"{mean('binary_fitted'):.4f} (defaults on pass/fail {mean('binary_defaults'):.4f})"
    print(f"  log loss, fitted on pass/fail:   {passfail}")
    print(f"  log loss, the true parameters:   {mean('true'):.4f}")
    gap = mean("defaults") - mean("true")
    print(f"  fitted / defaults:               {mean('fitted') / mean('defaults'):.3f}")
    print(f"  pass/fail fit / four-grade fit:  {mean('binary_fitted') / mean('fitted'):.3f}")
    if gap > 0:
        closed = (mean("defaults") - mean("fitted")) / gap
        print(f"  share of the defaults' excess loss the fit removes: {closed:.0%}")
    print(
        f"  the fit on the worker:           {mean('fit_s'):.1f} s optimizer, {mean('process_s'):.1f} s child process "
        f"({mean('fit_s') / mean('train_counted') * 1000:.1f} ms per counted review)"
    )


if __name__ == "__main__":
    main()
