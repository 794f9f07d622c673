"""The study web page: an aiohttp application (the server Slack's HTTP mode already uses)
with Jinja2 templates and one stylesheet shipped in the package; no JavaScript.

Who sees what:
- `/c/<platform>/<community>/...`: a community's leaderboard, bank and demos, only when an
  admin set `/config web public`; otherwise 404, the same as a community that does not exist.
- `/s/<token>/...`: a signed link from `/score` (a member: the board, the bank, the demos and
  only their own progress) or `/config` (an admin: the same community, and its admin page).
  A changed, expired or revoked token gets 403 and no data: each page's engine call first
  checks, in the same hop, that the link's versions are the store's (`link_current`).
- Nothing lists communities: `/` only says to ask the bot for a link.

Engine calls run off the event loop, in the bridge's thread pool (the bot's, when it runs in
the bot process)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from bot import anki
from bot.background.bridge import Bridge, report_incident
from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.errors import NotFound, StudyBotError
from bot.core.values import AnkiDeck, BankEntry, ChoiceReveal, CommunityRef, LinkVersions
from bot.core.wording import BUG
from bot.web import charts, query
from bot.web.links import BadLink, Grant, WebLinks, keep_tokens_out_of_logs

log = logging.getLogger(__name__)

T = TypeVar("T")
STATIC = Path(__file__).parent / "static"
ENGINE = web.AppKey("engine", StudyEngine)
LINKS = web.AppKey("links", WebLinks)
RUN = web.AppKey("run", object)
JINJA = web.AppKey("jinja", Environment)
HTTPS = web.AppKey("https", bool)
# What a link that no longer opens says (403, no data).
LINK_EXPIRED = "This link has expired: ask the bot for a new one (/score, or /config for admins)."
LINK_INVALID = "This link is not valid: ask the bot for a new one (/score, or /config for admins)."
LINK_REVOKED = (
    "This link was revoked (a /forget-me, an admin's /config web rotate, or its admin's right removed): "
    "ask the bot for a new one (/score, or /config for admins)."
)
# The Server header: the software's name, never its version (nor Python's).
SERVER = "studybot"
# Behind TLS, browsers keep to https for a year.
HSTS = "max-age=31536000"

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",  # a signed link never leaves in a Referer header
    "X-Content-Type-Options": "nosniff",
}


@dataclass(frozen=True)
class Viewer:
    """Who is looking, and under which prefix their pages live."""

    community: CommunityRef
    prefix: str  # "/c/console/local" or "/s/<token>"
    user_id: str | None = None
    admin: bool = False
    signed: bool = False
    holder: str = ""  # a signed link's member, or the admin it names
    versions: LinkVersions = LinkVersions()


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def environment() -> Environment:
    env = Environment(loader=PackageLoader("bot.web", "templates"), autoescape=select_autoescape(["html"]))
    env.filters["when"] = _when
    env.filters["percent"] = lambda value: f"{round(100 * value)}%"
    env.globals["week_chart"] = charts.week_chart
    env.globals["demo_chart"] = charts.demo_chart
    env.globals["demo_timeline"] = charts.timeline_chart
    env.globals["demo_budget"] = charts.budget_chart
    env.globals["texts"] = wording
    article = env.get_template("bank_entry.html")

    @functools.lru_cache(maxsize=4096)
    def bank_article(entry: BankEntry) -> Markup:
        """A bank question's HTML: the same for every viewer and request, so rendered once
        per entry (an entry is a frozen value: an edited question is a new key)."""
        return Markup(article.render(q=entry))

    env.globals["bank_article"] = bank_article
    missed = env.get_template("missed_body.html")

    @functools.lru_cache(maxsize=4096)
    def missed_body(choices: tuple[ChoiceReveal, ...], explain: str | None, refs: tuple[str, ...]) -> Markup:
        """A missed question's choices (the member's marked), explanation and references."""
        return Markup(missed.render(choices=choices, explain=explain, refs=refs))

    env.globals["missed_body"] = missed_body
    return env


def build_app(
    engine: StudyEngine,
    links: WebLinks | None,
    run: Callable[..., Awaitable[Any]] | None = None,
    https: bool | None = None,
) -> web.Application:
    """The web app. `run(fn, *args)` runs an engine call off the loop (the bot's bridge);
    without it the app makes its own small pool. `links` None: only public pages. `https`:
    whether people reach it over TLS (STUDYBOT_WEB_URL is https://; by default the links'
    base URL says), so every response carries HSTS; a proxy's X-Forwarded-Proto: https too."""
    keep_tokens_out_of_logs()
    app = web.Application(middlewares=[_headers])
    app[ENGINE] = engine
    app[HTTPS] = https if https is not None else links is not None and links.base_url.startswith("https://")
    if links is not None:
        app[LINKS] = links
    if run is None:
        bridge = Bridge(4)
        run = bridge.run

        async def close_bridge(_app: web.Application) -> None:
            bridge.close()

        app.on_cleanup.append(close_bridge)
    app[RUN] = run
    app[JINJA] = environment()
    app.router.add_get("/", home)
    app.router.add_get("/healthz", health)
    app.router.add_static("/static/", STATIC, name="static", append_version=False)
    for prefix, viewer in (("/c/{platform}/{community}", public_viewer), ("/s/{token}", signed_viewer)):
        app.router.add_get(prefix, _page(viewer, entry))
        app.router.add_get(prefix + "/", _page(viewer, entry))
        app.router.add_get(prefix + "/board", _page(viewer, board))
        app.router.add_get(prefix + "/bank", _page(viewer, bank))
        app.router.add_get(prefix + "/demos", _page(viewer, demos))
        app.router.add_get(prefix + "/demos/{job}/chart.png", _page(viewer, chart))
        app.router.add_get(prefix + "/me", _page(viewer, member))
        app.router.add_get(prefix + "/me/misses.apkg", _page(viewer, member_deck))
        app.router.add_get(prefix + "/bank.apkg", _page(viewer, bank_deck))
        app.router.add_get(prefix + "/admin", _page(viewer, admin))
    return app


@web.middleware
async def _headers(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> Any:
    try:
        response = await handler(request)
    except web.HTTPException as exc:  # a redirect, or aiohttp's own 404 and 405
        _secure(request, exc)
        raise
    _secure(request, response)
    return response


security_headers = _headers  # the same headers on every server of the process (Slack's HTTP port too)


def _secure(request: web.Request, response: web.StreamResponse) -> None:
    for key, value in HEADERS.items():
        response.headers.setdefault(key, value)
    response.headers["Server"] = SERVER
    if _over_tls(request):
        response.headers["Strict-Transport-Security"] = HSTS
    if request.path.startswith("/s/"):
        response.headers["Cache-Control"] = "private, no-store"
        response.headers["X-Robots-Tag"] = "noindex, nofollow"


def _over_tls(request: web.Request) -> bool:
    """Whether this request came over TLS: the configured URL is https, the connection is, or
    the proxy in front says so (its first X-Forwarded-Proto). Over plain HTTP a browser
    ignores HSTS, so a forged header gains nothing."""
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return request.app.get(HTTPS, False) or request.scheme == "https" or forwarded == "https"


def render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    html = request.app[JINJA].get_template(template).render(**context)
    return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")


def refuse(request: web.Request, status: int, title: str, text: str) -> web.Response:
    return render(request, "message.html", status=status, title=title, text=text, viewer=None, nav=None)


async def home(request: web.Request) -> web.Response:
    return render(
        request,
        "message.html",
        title="Checkpoint Study Bot",
        text="Ask the bot for your page: /score in your community replies with a private link.",
        viewer=None,
        nav=None,
    )


async def health(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def call(request: web.Request, viewer: Viewer, method: Callable[..., T], *args: Any) -> T:
    """`method(*args)` off the loop, in one hop: a signed link's community is checked by the
    page method itself (NotFound when the bot does not know it); a public page's first
    checks, in the same hop, that its community is public."""
    run: Any = request.app[RUN]
    if viewer.signed:
        result: T = await run(_if_current, request.app[ENGINE], viewer, method, *args)
    else:
        result = await run(_if_public, request.app[ENGINE], viewer.community, method, *args)
    return result


class _Revoked(Exception):
    """Raised in the pool: the link's versions are behind the store's."""


def _if_current(engine: StudyEngine, viewer: Viewer, method: Callable[..., T], *args: Any) -> T:
    if not engine.web.link_current(viewer.community, viewer.holder, viewer.admin, viewer.versions):
        raise _Revoked()
    return method(*args)


def _if_public(engine: StudyEngine, ref: CommunityRef, method: Callable[..., T], *args: Any) -> T:
    found = engine.web.web_community(ref)
    if found is None or not found.public:  # private looks exactly like unknown
        raise NotFound("Not found.")
    return method(*args)


# ---------------------------------------------------------------- who is looking


async def public_viewer(request: web.Request) -> Viewer:
    ref = CommunityRef(request.match_info["platform"], request.match_info["community"])
    return Viewer(ref, f"/c/{ref.platform}/{ref.community_id}")


async def signed_viewer(request: web.Request) -> Viewer:
    """Who a link names (no database work: the page's own call checks the community)."""
    token = request.match_info["token"]
    links = request.app.get(LINKS)
    if links is None:
        raise BadLink(expired=False)
    grant: Grant = links.read(token)
    return Viewer(
        grant.community,
        f"/s/{token}",
        user_id=grant.user_id,
        admin=grant.admin,
        signed=True,
        holder=grant.holder,
        versions=grant.versions,
    )


Handler = Callable[[web.Request, Viewer], Awaitable[web.StreamResponse]]


def _page(
    who: Callable[[web.Request], Awaitable[Viewer]], handler: Handler
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def page(request: web.Request) -> web.StreamResponse:
        try:
            viewer = await who(request)
            return await handler(request, viewer)
        except _Revoked:
            return refuse(request, 403, "Link not valid", LINK_REVOKED)
        except BadLink as exc:
            text = LINK_EXPIRED if exc.expired else LINK_INVALID
            return refuse(request, 403, "Link not valid", text)
        except NotFound:
            return refuse(request, 404, "Not found", "There is no page here.")
        except StudyBotError as exc:
            return refuse(request, 400, "Cannot show that", exc.message)
        except web.HTTPException:
            raise
        # Broad by design: any other error is a bug, answered with a 500 page; report_incident
        # logs its traceback under the id the page shows.
        except Exception:  # noqa: BLE001
            incident = report_incident(f"web page {request.rel_url.path.split('/')[-1]}")
            return refuse(request, 500, "Something went wrong", BUG.format(incident=incident))

    return page


def nav(viewer: Viewer, current: str) -> list[tuple[str, str, bool]]:
    items = [("Leaderboard", "board"), ("Bank", "bank"), ("Demos", "demos")]
    if viewer.user_id is not None:
        items.insert(1, ("My progress", "me"))
    if viewer.admin:
        items.append(("Admin", "admin"))
    return [(label, f"{viewer.prefix}/{path}", path == current) for label, path in items]


# --------------------------------------------------------------------- pages


async def entry(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    if await call(request, viewer, request.app[ENGINE].web.web_community, viewer.community) is None:
        raise NotFound("Not found.")
    where = "admin" if viewer.admin else "me" if viewer.user_id else "board"
    raise web.HTTPFound(f"{viewer.prefix}/{where}")


async def board(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    scope = query.week_scope(request.query.get("week"))
    number = query.page_number(request.query.get("page"))
    engine = request.app[ENGINE]
    page = await call(request, viewer, engine.web.leaderboard_page, viewer.community, scope, number, viewer.user_id)
    return render(request, "board.html", viewer=viewer, nav=nav(viewer, "board"), community=page.community, board=page)


async def member(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    if viewer.user_id is None:
        raise NotFound("Not found.")
    page = await call(request, viewer, request.app[ENGINE].web.member_page, viewer.community, viewer.user_id)
    return render(request, "member.html", viewer=viewer, nav=nav(viewer, "me"), community=page.community, page=page)


async def bank(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    topic = query.topic(request.query.get("topic"))
    number = query.page_number(request.query.get("page"))
    engine = request.app[ENGINE]
    page = await call(request, viewer, engine.web.bank_page, viewer.community, topic, number)
    return render(request, "bank.html", viewer=viewer, nav=nav(viewer, "bank"), community=page.community, page=page)


def _packaged(method: Callable[..., AnkiDeck], *args: Any) -> tuple[str, bytes]:
    """An engine deck and its .apkg, in one hop off the loop."""
    deck = method(*args)
    return deck.filename, anki.package(deck)


def _apkg(name: str, data: bytes) -> web.Response:
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}  # the name is [a-z0-9-] only
    return web.Response(body=data, content_type="application/octet-stream", headers=headers)


async def member_deck(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """The member's missed questions as an Anki deck (their own link only)."""
    if viewer.user_id is None:
        raise NotFound("Not found.")
    engine = request.app[ENGINE]
    name, data = await call(request, viewer, _packaged, engine.anki.missed_deck, viewer.community, viewer.user_id)
    return _apkg(name, data)


async def bank_deck(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    """The community's revealed bank as an Anki deck (whoever may see its bank page)."""
    engine = request.app[ENGINE]
    name, data = await call(request, viewer, _packaged, engine.anki.bank_deck, viewer.community)
    return _apkg(name, data)


async def demos(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    page = await call(request, viewer, request.app[ENGINE].web.demos_page, viewer.community)
    return render(request, "demos.html", viewer=viewer, nav=nav(viewer, "demos"), community=page.community, page=page)


async def chart(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    job = query.job_number(request.match_info["job"])
    if job is None:
        raise NotFound("Not found.")
    path = await call(request, viewer, request.app[ENGINE].web.demo_chart, viewer.community, job)
    if not path or not await asyncio.to_thread(Path(path).is_file):
        raise NotFound("Not found.")
    return web.FileResponse(path, headers={"Content-Type": "image/png"})


async def admin(request: web.Request, viewer: Viewer) -> web.StreamResponse:
    if not viewer.admin:
        if not viewer.signed:  # a private or unknown community's page stays a 404
            await call(request, viewer, request.app[ENGINE].web.web_community, viewer.community)
        return refuse(request, 403, "Admins only", "This page needs the link an admin gets from /config.")
    page = await call(request, viewer, request.app[ENGINE].web.admin_page, viewer.community)
    return render(request, "admin.html", viewer=viewer, nav=nav(viewer, "admin"), community=page.community, page=page)


# ------------------------------------------------------------------- serving


def hide_server_version() -> None:
    """The server (aiohttp) answers a request it cannot parse (a bad request line, a header too
    long) from its protocol, past every middleware, with `Server: Python/3.x aiohttp/3.y`: it reads that
    from web_response's module global when the response is sent (aiohttp issue #8870), so the
    process's servers say only SERVER."""
    from aiohttp import web_response

    web_response.SERVER_SOFTWARE = SERVER  # type: ignore[attr-defined]


class WebServer:
    """The app on a TCP port, on the running event loop (in the bot process, or alone).
    `keepalive_s`: aiohttp closes a connection that has not sent a whole request's headers
    within it (a half-sent request, from its first byte) or sits idle that long after a
    response (its default is an hour)."""

    def __init__(self, app: web.Application, host: str, port: int, keepalive_s: float = 15.0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.keepalive_s = keepalive_s
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        hide_server_version()
        self._runner = web.AppRunner(self.app, access_log=None, keepalive_timeout=self.keepalive_s)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        bound = self._runner.addresses
        if bound:
            self.port = int(bound[0][1])
        log.info("web page on http://%s:%s/", self.host, self.port)
        return self.port

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def start_web(
    engine: StudyEngine,
    settings: Any,
    run: Callable[..., Awaitable[Any]] | None = None,
    routes: Sequence[web.RouteDef] = (),
) -> WebServer:
    """The page on STUDYBOT_WEB_HOST:STUDYBOT_WEB_PORT, started on the running loop; `routes`:
    a platform's HTTP endpoints served beside it (Slack's /slack/events), one port for both."""
    from bot.web.links import make_links

    app = build_app(engine, make_links(settings), run, https=str(settings.web_url or "").startswith("https://"))
    app.add_routes(routes)
    server = WebServer(app, settings.web_host, settings.web_port, settings.web_keepalive_s)
    await server.start()
    return server
