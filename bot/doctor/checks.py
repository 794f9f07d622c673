"""What every `studybot doctor` check returns, and the small tools the checks share: a
secret's value, JSON over HTTP without an event loop. The shared checks (bot/doctor/report.py) and each
platform's (bot/platforms/<platform>/doctor.py) import this; it imports none of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import httpx
from pydantic import SecretStr

Status = Literal["ok", "warn", "fail"]
RANK: dict[str, int] = {"ok": 0, "warn": 1, "fail": 2}
HTTP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Check:
    """One doctor check's outcome, with the fix to try when it fails."""

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


class Unreachable(OSError):
    """No HTTP answer came back (refused, timed out, no such host); `reason` says which. An
    OSError, as urllib's URLError is, so the checks catching that catch this."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JsonHttp:
    """Small JSON calls with httpx (no event loop): status, body (None when not JSON) and
    lower-cased headers, never raising for an HTTP status; Unreachable when nothing answered.
    `transport` is for tests (httpx.MockTransport)."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self.transport = transport

    def call(
        self, method: str, url: str, headers: dict[str, str], data: bytes | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        try:
            with httpx.Client(transport=self.transport, timeout=HTTP_TIMEOUT_S, follow_redirects=True) as client:
                response = client.request(
                    method, url, content=data, headers={"User-Agent": "studybot-doctor", **headers}
                )
        except httpx.TransportError as exc:
            raise Unreachable(str(exc) or type(exc).__name__) from exc
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        return response.status_code, body, {k.lower(): v for k, v in response.headers.items()}
