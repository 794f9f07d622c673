"""What every `studybot doctor` check returns, and the small tools the checks share: a
secret's value, JSON over HTTP without an event loop. The shared checks (bot/doctor.py) and each
platform's (bot/platforms/<platform>/doctor.py) import this; it imports none of them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import SecretStr

Status = Literal["ok", "warn", "fail"]
RANK: dict[str, int] = {"ok": 0, "warn": 1, "fail": 2}
HTTP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    message: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<4} {self.name}: {self.message}"
        return text + (f" -> fix: {self.fix}" if self.fix and self.status != "ok" else "")


def exit_code(checks: list[Check]) -> int:
    return max((RANK[c.status] for c in checks), default=0)


def secret_value(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


class JsonHttp:
    """Small JSON calls with urllib (no event loop): status, body and headers, never raising
    for an HTTP status."""

    def __init__(self, opener: Callable[..., Any] = urllib.request.urlopen) -> None:
        self.open = opener

    def call(
        self, method: str, url: str, headers: dict[str, str], data: bytes | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        request = urllib.request.Request(
            url, data=data, method=method, headers={"User-Agent": "studybot-doctor", **headers}
        )
        try:
            with self.open(request, timeout=HTTP_TIMEOUT_S) as response:
                status, raw, found = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            status, raw, found = exc.code, exc.read(), dict(exc.headers)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        return status, body, {k.lower(): v for k, v in found.items()}
