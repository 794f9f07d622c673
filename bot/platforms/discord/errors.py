"""discord.py's failures as the outbox reads them: whether a post is given up, retried later, or
retried after the wait Discord asked for."""

from __future__ import annotations

import aiohttp
import discord

from bot.core.errors import SendFailed


def send_failure(exc: BaseException) -> SendFailed:
    """A discord.py error as the outbox understands it: permanent, rate-limited or transient."""
    if isinstance(exc, SendFailed):
        return exc
    if isinstance(exc, discord.RateLimited):
        return SendFailed(f"rate limited for {exc.retry_after:.1f} s", retry_after=exc.retry_after)
    if isinstance(exc, discord.NotFound):
        return SendFailed(f"the channel is gone or unknown ({exc.code}: {exc.text[:120]})", permanent=True)
    if isinstance(exc, discord.Forbidden):
        return SendFailed(f"the bot may not post there ({exc.code}: {exc.text[:120]})", permanent=True)
    if isinstance(exc, discord.HTTPException):
        if exc.status == 429:
            retry = exc.response.headers.get("Retry-After") if exc.response is not None else None
            return SendFailed("rate limited", retry_after=float(retry) if retry else None)
        if exc.status >= 500:
            return SendFailed(f"Discord error {exc.status}")
        return SendFailed(f"Discord refused the post ({exc.status} {exc.code}: {exc.text[:120]})", permanent=True)
    if isinstance(exc, aiohttp.ClientError | TimeoutError | OSError):
        return SendFailed(f"network: {type(exc).__name__}: {exc}"[:200])
    return SendFailed(f"{type(exc).__name__}: {exc}"[:200])
