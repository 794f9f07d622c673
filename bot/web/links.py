"""Signed, expiring links to the study web page (itsdangerous' URL-safe timed serializer):
a member's link names the community and the member, an admin's link the community. The
engine asks for them through the core's `Links` port when it words `/score` and `/config`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, TimestampSigner, URLSafeTimedSerializer

from bot.core.values import CommunityRef

log = logging.getLogger(__name__)

SALT = "studybot.web.link.v1"


class BadLink(Exception):
    """A link that is not ours, was changed, or has expired: the page answers 403."""

    def __init__(self, expired: bool) -> None:
        super().__init__("expired" if expired else "invalid")
        self.expired = expired


@dataclass(frozen=True)
class Grant:
    """What a verified link lets its holder see."""

    community: CommunityRef
    user_id: str | None  # a member's own pages; None on an admin link
    admin: bool


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

    def token(self, community: CommunityRef, user_id: str | None, admin: bool = False) -> str:
        data: dict[str, Any] = {"p": community.platform, "c": community.community_id}
        if user_id is not None:
            data["u"] = user_id
        if admin:
            data["a"] = 1
        return str(self._serializer.dumps(data))

    def member(self, community: CommunityRef, user_id: str) -> str:
        return f"{self.base_url}/s/{self.token(community, user_id)}/me"

    def admin(self, community: CommunityRef) -> str:
        return f"{self.base_url}/s/{self.token(community, None, admin=True)}/admin"

    def read(self, token: str) -> Grant:
        """The grant a token carries, or BadLink (tampered, not ours, or expired)."""
        try:
            data = self._serializer.loads(token, max_age=round(self.max_age_s))
        except SignatureExpired:
            raise BadLink(expired=True) from None
        except BadSignature:
            raise BadLink(expired=False) from None
        if not isinstance(data, dict) or not isinstance(data.get("p"), str) or not isinstance(data.get("c"), str):
            raise BadLink(expired=False)
        user = data.get("u")
        return Grant(
            community=CommunityRef(data["p"], data["c"]),
            user_id=user if isinstance(user, str) else None,
            admin=data.get("a") == 1,
        )


def make_links(settings: Any) -> WebLinks | None:
    """The signer from STUDYBOT_WEB_URL and STUDYBOT_WEB_SECRET; None (no links in /score and
    /config) when the URL is unset, or when the secret is (said once in the log)."""
    if not settings.web_url:
        return None
    if settings.web_secret is None or not settings.web_secret.get_secret_value():
        log.warning("STUDYBOT_WEB_URL is set but STUDYBOT_WEB_SECRET is not: /score and /config carry no links")
        return None
    return WebLinks(settings.web_url, settings.web_secret.get_secret_value(), settings.web_link_hours * 3600)
