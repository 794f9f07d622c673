"""The members' question buttons' ids: Discord's "continue" after the first form, "try
again" after a refused one, and an admin's decision buttons in the queue; strict decoders
(anything not exactly one of ours is None)."""

from __future__ import annotations

from bot.core.rules.numbers import ascii_int

SUGGEST_PREFIX = "sb1:sg:"  # Discord's "continue" button after the first form: sb1:sg:<draft>
RETRY_PREFIX = "sb1:sf:"  # Discord's "try again" after a refused first form: sb1:sf:<draft>, filled in
QUEUE_PREFIX = "sb1:sq:"  # an admin's decision button: sb1:sq:<suggestion>:<approve|note|reject>
ACTIONS = {"approve": "approved", "reject": "rejected", "note": "returned"}


def decode_decision(custom_id: str) -> tuple[int, str] | None:
    """`sb1:sq:12:approve` -> (12, "approve"); None for anything else."""
    if not custom_id.startswith(QUEUE_PREFIX):
        return None
    number, _, action = custom_id[len(QUEUE_PREFIX) :].partition(":")
    decoded = ascii_int(number, max_digits=12)
    if decoded is None or action not in ACTIONS:
        return None
    return decoded, action


def decode_draft(custom_id: str, prefix: str = SUGGEST_PREFIX) -> int | None:
    """`sb1:sg:12` (or, with `prefix=RETRY_PREFIX`, `sb1:sf:12`) -> 12; None for anything else."""
    rest = custom_id[len(prefix) :] if custom_id.startswith(prefix) else ""
    return ascii_int(rest, max_digits=12)
