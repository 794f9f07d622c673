"""What stands in front of Bolt on /slack/events over HTTP: the body read up to MAX_BODY, the
body parsed and the signature checked (slack_sdk's SignatureVerifier: HMAC of
`v0:{timestamp}:{body}`, the timestamp within 5 minutes), all before Bolt sees the request.

Bolt parses a body before it verifies it (a malformed one, signed or not, was a 500 with an
ERROR traceback) and logs a refused request's whole body at INFO (any sender could fill the log
or forge a log line with a newline, CWE-117). Here a refusal is answered 401 (bad signature or
timestamp), 413 (too large) or 400 (malformed), and logged as one line at most: the method, the
path, the size and the verdict, with CR/LF escaped. Nothing of an unauthenticated body is ever
logged."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

log = logging.getLogger(__name__)

# Slack's payloads are a few kilobytes; a modal's submission or a big message's click stays far
# below this. A larger body is refused unread (413).
MAX_BODY = 1 << 20

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def printable(text: str, limit: int = 200) -> str:
    """Text for one log line: CR, LF and other control characters escaped, cut at `limit`."""
    out = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text[:limit])
    return out + ("..." if len(text) > limit else "")


def _refuse(request: web.Request, size: int, status: int, verdict: str) -> web.Response:
    log.info("slack: refused %s %s (%d bytes): %s", printable(request.method), printable(request.path), size, verdict)
    return web.json_response({"error": "invalid request"}, status=status)


async def _read(request: web.Request) -> bytes | None:
    """The body, or None when it is larger than MAX_BODY (read no further than that)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.readany()
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)


def gate(app: AsyncApp, signing_secret: str) -> Handler:
    """The handler of POST /slack/events: bound, parse and verify, then Bolt's dispatch."""
    verifier = SignatureVerifier(signing_secret) if signing_secret.strip() else None

    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await _read(request)
        if raw is None:
            return _refuse(request, request.content_length or MAX_BODY + 1, 413, "too large")
        try:  # Bolt's own parse, here where a failure is the sender's mistake, not an incident
            text = raw.decode("utf-8")
            headers: dict[str, str | Sequence[str]] = dict(request.headers)
            bolt_request = AsyncBoltRequest(body=text, query=request.query_string, headers=headers)
            if not isinstance(bolt_request.body, dict):
                raise ValueError("not an object")
        # Broad by design: whatever Bolt's parse raises (undecodable, not JSON, a JSON list...) is
        # the sender's malformed body, answered 400 and counted, not a bug of ours to log.
        except Exception:  # noqa: BLE001
            return _refuse(request, len(raw), 400, "malformed")
        signature = request.headers.get("X-Slack-Signature", "")
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        stamped = timestamp.isascii() and timestamp.isdigit()  # the verifier's int() raises on anything else
        if verifier is None or not stamped or not verifier.is_valid(raw, timestamp, signature):
            return _refuse(request, len(raw), 401, "bad signature or timestamp")
        return await to_aiohttp_response(await app.async_dispatch(bolt_request))

    return handle


def same_site(handler: Handler) -> Handler:
    """Bolt's OAuth routes with SameSite=Lax on the cookies they set (the install page's state
    cookie; Bolt's aiohttp adapter sets Secure and HttpOnly only): the browser sends it back on
    Slack's top-level redirect to /slack/oauth_redirect, never on another site's request."""

    async def handle(request: web.Request) -> web.StreamResponse:
        response = await handler(request)
        for morsel in response.cookies.values():
            morsel["samesite"] = "Lax"
        return response

    return handle
