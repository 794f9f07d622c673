"""Signed, expiring links to the study web page (itsdangerous' URL-safe timed serializer):
a member's link names the community and the member, an admin's link the community and the
admin; each carries its community's and its holder's link versions, which the page checks
against the store's (so /forget-me, `/config web rotate` and an admin losing the right revoke
it). The engine asks for them through the core's `Links` port when it words `/score` and
`/config`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, TimestampSigner, URLSafeTimedSerializer

from bot.core.values import CommunityRef, LinkVersions

log = logging.getLogger(__name__)

SALT = "studybot.web.link.v1"
# A link signed before its community's or holder's version was first advanced.
UNVERSIONED = LinkVersions()


class BadLink(Exception):
    """A link that is not ours, was changed, has expired or was revoked: the page answers 403."""

    def __init__(self, expired: bool, revoked: bool = False) -> None:
        super().__init__("expired" if expired else "revoked" if revoked else "invalid")
        self.expired = expired
        self.revoked = revoked


@dataclass(frozen=True)
class Grant:
    """What a verified link lets its holder see."""

    community: CommunityRef
    user_id: str | None  # a member's own pages; None on an admin link
    admin: bool
    holder: str  # whose link: the member, or the admin an admin link names
    versions: LinkVersions


class WebLinks:
    """Signs and reads the page's links. `clock` (seconds since the epoch) is for tests."""

    def __init__(
        self,
        base_url: str,
        secret: str,
        max_age_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not secret:
            raise ValueError("the web link secret is empty")
        self.base_url = base_url.rstrip("/")
        self.max_age_s = max_age_s

        class _Signer(TimestampSigner):
            def get_timestamp(self) -> int:
                return int(clock())

        self._serializer = URLSafeTimedSerializer(secret, salt=SALT, signer=_Signer)

    def token(
        self, community: CommunityRef, user_id: str, admin: bool = False, versions: LinkVersions = UNVERSIONED
    ) -> str:
        data: dict[str, Any] = {"p": community.platform, "c": community.community_id, "u": user_id}
        if admin:
            data["a"] = 1
        if versions.community:
            data["k"] = versions.community
        if versions.holder:
            data["v"] = versions.holder
        return str(self._serializer.dumps(data))

    def member(self, community: CommunityRef, user_id: str, versions: LinkVersions = UNVERSIONED) -> str:
        return f"{self.base_url}/s/{self.token(community, user_id, versions=versions)}/me"

    def admin(self, community: CommunityRef, user_id: str, versions: LinkVersions = UNVERSIONED) -> str:
        return f"{self.base_url}/s/{self.token(community, user_id, admin=True, versions=versions)}/admin"

    def read(self, token: str) -> Grant:
        """The grant a token carries, or BadLink (tampered, not ours, or expired)."""
        try:
            data = self._serializer.loads(token, max_age=round(self.max_age_s))
        except SignatureExpired:
            raise BadLink(expired=True) from None
        except BadSignature:
            raise BadLink(expired=False) from None
        if not isinstance(data, dict) or not all(isinstance(data.get(key), str) for key in ("p", "c", "u")):
            raise BadLink(expired=False)  # an admin link of old named nobody: not revocable, so not valid
        versions = [data.get(key, 0) for key in ("k", "v")]
        if not all(type(v) is int and v >= 0 for v in versions):
            raise BadLink(expired=False)
        admin = data.get("a") == 1
        return Grant(
            community=CommunityRef(data["p"], data["c"]),
            user_id=None if admin else data["u"],
            admin=admin,
            holder=data["u"],
            versions=LinkVersions(community=versions[0], holder=versions[1]),
        )


# A signed link's token in a path or URL: /s/<token>. What a log line keeps is /s/<redacted>.
_TOKEN_IN_PATH = re.compile(r"(/s/)[^/\s'\"?#<>\\]+")
REDACTED = "<redacted>"
# The loggers that can write a request's path: aiohttp's (a malformed request line, the access
# log), the page's own and the bridge's incident reports (a logger's filter is not its
# children's, so each is named).
PATH_LOGGERS = (
    "aiohttp.server",
    "aiohttp.access",
    "aiohttp.web",
    "aiohttp.internal",
    "bot.web.app",
    "bot.web.links",
    "bot.background.bridge",
)


def redact_tokens(text: str) -> str:
    """`text` with every signed link's token replaced by <redacted>."""
    return _TOKEN_IN_PATH.sub(r"\1" + REDACTED, text)


class RedactTokens(logging.Filter):
    """Rewrites a record so that no signed token reaches a handler: its message, and the
    text of its exception (aiohttp's BadStatusLine quotes the request line, path and all).
    A request the server could not parse is one line: its traceback says nothing an
    operator can act on, and its text is the sender's (a CR or LF in it could forge a line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if _unparsable(exc):
                said = " ".join(str(exc).split())  # one line: the sender's CR and LF are gone
                message = f"{message}: {type(exc).__name__}: {said}"
                record.exc_info, record.exc_text = None, None
            else:
                record.exc_text = redact_tokens(logging.Formatter().formatException(record.exc_info))
        record.msg, record.args = redact_tokens(message), ()
        if record.stack_info:
            record.stack_info = redact_tokens(record.stack_info)
        return True


def _unparsable(exc: BaseException) -> bool:
    from aiohttp.http_exceptions import HttpProcessingError

    return isinstance(exc, HttpProcessingError)


_FILTER = RedactTokens()


def keep_tokens_out_of_logs() -> None:
    """Put the redacting filter on every logger that can write a request's path (once)."""
    for name in PATH_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def make_links(settings: Any) -> WebLinks | None:
    """The signer from STUDYBOT_WEB_URL and STUDYBOT_WEB_SECRET; None (no links in /score and
    /config) when the URL is unset, or when the secret is (said once in the log)."""
    if not settings.web_url:
        return None
    if settings.web_secret is None or not settings.web_secret.get_secret_value():
        log.warning("STUDYBOT_WEB_URL is set but STUDYBOT_WEB_SECRET is not: /score and /config carry no links")
        return None
    return WebLinks(settings.web_url, settings.web_secret.get_secret_value(), settings.web_link_hours * 3600)
