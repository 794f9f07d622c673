"""What a failed Slack Web API call means for the outbox: permanent, rate-limited or transient."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError

from bot.core.errors import SendFailed

# Web API errors that trying again cannot fix: the post is given up where admins see it.
PERMANENT = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "missing_scope",
        "not_authed",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "no_permission",
        "restricted_action",
        "team_access_not_granted",
        "ekm_access_denied",
        "msg_too_long",
        "invalid_blocks",
        "not_installed",
    }
)


def send_failed(exc: Exception) -> SendFailed:
    """What a failed Web API call means for the outbox: permanent, rate-limited or transient."""
    if isinstance(exc, SlackApiError):
        response = exc.response
        error = str(response.get("error") or f"HTTP {response.status_code}")
        if error == "ratelimited" or response.status_code == 429:
            retry_after = response.headers.get("Retry-After") or response.headers.get("retry-after")
            try:
                seconds = float(retry_after) if retry_after is not None else None
            except ValueError:
                seconds = None
            return SendFailed("ratelimited", retry_after=seconds)
        return SendFailed(error, permanent=error in PERMANENT)
    return SendFailed(f"{type(exc).__name__}: {exc}")  # network, timeout, 5xx without a body


def is_ratelimited(exc: Exception) -> bool:
    return isinstance(exc, SlackApiError) and send_failed(exc).reason == "ratelimited"
