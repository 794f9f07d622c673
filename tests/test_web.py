"""The study web page in a real browser: Debian's Chromium, headless, driven by Selenium
through Debian's chromedriver, against the app served on 127.0.0.1 from a SQLite database
seeded through the console chat (the same engine calls a member makes).

Locally a missing Chromium skips with the reason; in CI (.ci/run installs it) it fails.
Screenshots land in tests/artifacts/; STUDYBOT_UPDATE_DOCS_IMAGES=1 also copies one of each
page to docs/images/ for the README. The accessibility check is axe-core (vendored, pinned:
tests/vendor/axe.min.js)."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from bot.core.bank import load_bank
from bot.core.engine import StudyEngine
from bot.core.rules import choices as codec
from bot.core.values import CommunityRef
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.web.app import WebServer, build_app
from bot.web.links import WebLinks
from tests.conftest import IN_CI, ROOT, FakeClock, migrated_sqlite
from tests.console_chat import Console

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
AXE = ROOT / "tests" / "vendor" / "axe.min.js"
ARTIFACTS = ROOT / "tests" / "artifacts"
DOCS_IMAGES = ROOT / "docs" / "images"
SECRET = "test-web-secret-not-for-production"
WEEK_SECONDS = 7 * 24 * 3600
GUILD = CommunityRef("console", "guild")
OPEN = CommunityRef("console", "open")


def browser_or_skip() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if not missing:
        return
    reason = f"{', '.join(missing)} not installed (apt-get install chromium chromium-driver; pip install -e '.[dev]')"
    if IN_CI:
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)


@dataclass
class Site:
    base: str
    engine: StudyEngine
    links: WebLinks
    clock: FakeClock
    names: dict[str, Any]  # what the seed made: question ids, expected ranks


def _answer(chat: Console, who: str, question_id: str, correct: bool, said: str = "") -> None:
    question = chat.engine.bank.get(question_id)
    assert question is not None
    index = question.answer_index if correct else (question.answer_index + 1) % len(question.choices)
    chat.handle(f"/as {who}")
    out = chat.handle(f"daily {question.choices[index].text}")  # `daily ...` answers the open daily round
    assert any(m.kind == "feedback" for m in out), out
    if said:  # how sure, on the next line
        assert any(m.kind == "confidence" for m in chat.handle(said))


def _daily(chat: Console) -> str:
    posts = chat.handle("/daily")
    ids = [m.data["question_id"] for m in posts if m.kind == "question"]
    assert ids, posts
    return str(ids[0])


def _seed(engine: StudyEngine, clock: FakeClock) -> dict[str, Any]:
    """Three daily rounds in 'guild' (private), answered through the console so that Ann and
    Bob tie first and Cy and Dee tie third; Ann misses the third. A fourth round stays open
    (its question must not show in the bank). A finished demo. 'open' is public."""
    chat = Console(engine, "guild", "Ann")
    chat.handle("/config channel console")
    first = _daily(chat)
    for who, ok in (("Ann", True), ("Bob", True), ("Cy", False), ("Dee", True)):
        _answer(chat, who, first, ok, "sure")
    chat.handle("/close")
    clock.advance(days=1)
    second = _daily(chat)
    for who, ok in (("Ann", True), ("Bob", True), ("Cy", True), ("Dee", False)):
        _answer(chat, who, second, ok, "unsure")
    chat.handle("/close")
    clock.advance(days=1)
    third = _daily(chat)
    _answer(chat, "Ann", third, False, "sure")
    chat.handle("/close")
    clock.advance(days=1)
    open_now = _daily(chat)
    chat.handle("/as Ann")
    chat.handle("/quiz")
    job = engine.demos.request_demo(chat.user, chat.channel, "checkpoint").job_id
    assert engine.demos.claim_demo("test", "local") is not None
    mib = 1024 * 1024
    same = {"grads_identical": True}
    results = [
        {"strategy": "none", "peak_bytes": 96 * mib, "saved_bytes": 0, "step_ms": 41.0, **same},
        {"strategy": "block", "peak_bytes": 40 * mib, "saved_bytes": 56 * mib, "step_ms": 55.0, **same},
    ]
    engine.demos.demo_finished(job, {"results": results, "device": "cpu", "torch": "2.13.0", "wall_s": 3.0}, None)
    chat.deliver()
    other = Console(engine, "open", "Eve")
    other.handle("/config channel console")
    shown = _daily(other)
    _answer(other, "Eve", shown, True)
    _answer(other, "Fay", shown, True)
    _answer(other, "Gus", shown, False)
    other.handle("/close")
    other.handle("/as Eve")  # the console's operator makes the community's page public
    other.handle("/config web public")
    return {"revealed": (first, second, third), "open_now": open_now, "missed": third, "demo": job}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    url = migrated_sqlite(tmp_path_factory.mktemp("web") / "web.db")
    database = Database(url)
    clock = FakeClock(datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc))  # a Monday, W48
    links = WebLinks("http://127.0.0.1", SECRET, WEEK_SECONDS)
    engine = StudyEngine(SqlStore(database), load_bank(ROOT / "questions"), clock=clock, links=links)
    saved = codec._RANDOM
    codec._RANDOM = random.Random(20261123)
    try:
        names = _seed(engine, clock)
    finally:
        codec._RANDOM = saved
    app = build_app(engine, links)
    server = WebServer(app, "127.0.0.1", 0)
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def main() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        started.set()
        loop.run_forever()
        loop.run_until_complete(server.close())

    thread = threading.Thread(target=main, name="web-test", daemon=True)
    thread.start()
    assert started.wait(30)
    base = f"http://127.0.0.1:{server.port}"
    links.base_url = base
    yield Site(base, engine, links, clock, names)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    database.dispose()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--window-size=1200,900",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    browser.set_page_load_timeout(30)
    browser.set_script_timeout(60)
    yield browser
    browser.quit()


def status(url: str) -> tuple[int, str]:
    """The HTTP status and body of a GET (what the browser is not asked for)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def shot(driver: Any, name: str, docs: bool = False) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / f"{name}.png"
    if docs:  # most of the page, for the README
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1000, min(max(height + 120, 600), 1500))
    driver.save_screenshot(str(target))
    if docs:
        driver.set_window_size(1200, 900)
    if docs and os.environ.get("STUDYBOT_UPDATE_DOCS_IMAGES") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, DOCS_IMAGES / f"web-{name}.png")


def member_link(site: Site, name: str) -> str:
    return site.links.member(GUILD, name.casefold())


def admin_link(site: Site) -> str:
    return site.links.admin(GUILD, "ann")


def body_text(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.TAG_NAME, "body").text)


# ----------------------------------------------------------------------- tests


def test_score_and_config_carry_signed_links(site: Site) -> None:
    """/score in the console prints a link to the member's page; /config one to the admin page."""
    chat = Console(site.engine, "guild", "Ann")
    score = "\n".join(m.text for m in chat.handle("/score"))
    link = next(word for word in score.split() if word.startswith(site.base + "/s/"))
    assert link.endswith("/me")
    code, html = status(link)
    assert code == 200 and "progress</h1>" in html and "Ann" in html
    config = "\n".join(m.text for m in chat.handle("/config"))
    assert "web: private" in config
    admin = next(word for word in config.split() if word.startswith(site.base + "/s/"))
    assert admin.endswith("/admin") and status(admin)[0] == 200


def test_leaderboard_ranks_and_ties(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(member_link(site, "Ann").replace("/me", "/board?week=2026-W48"))
    rows = [
        [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td, th")]
        for row in driver.find_elements(By.CSS_SELECTOR, "table.board tbody tr")
    ]
    board = site.engine.boards.leaderboard(GUILD, week="2026-W48")
    expected = [[str(r.rank), r.user, str(r.points)] for r in board.rows]
    assert [[rank, user.removesuffix(" you"), points] for rank, user, points in rows] == expected
    ranks = {user.removesuffix(" you"): int(rank) for rank, user, _ in rows}
    assert ranks["Ann"] == ranks["Bob"] == 1 and ranks["Cy"] == ranks["Dee"] == 3
    assert driver.find_element(By.CSS_SELECTOR, "tr.me").text.startswith("1 Ann")
    shot(driver, "leaderboard", docs=True)
    driver.find_element(By.LINK_TEXT, "Previous week (2026-W47)").click()
    assert "No points yet in 2026-W47" in body_text(driver)
    driver.find_element(By.PARTIAL_LINK_TEXT, "All time").click()
    assert driver.find_element(By.TAG_NAME, "h1").text == "All-time leaderboard"


def test_public_community_without_link(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{site.base}/c/console/open/board?week=2026-W48")
    rows = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "table.board tbody tr")]
    expected = site.engine.boards.leaderboard(OPEN, week="2026-W48").rows
    assert rows == [f"{r.rank} {r.user} {r.points}" for r in expected]
    assert [r.rank for r in expected] == [1, 1]  # Eve and Fay tie; Gus scored nothing
    assert status(f"{site.base}/c/console/open/me")[0] == 404  # nobody's own page without their link
    assert status(f"{site.base}/c/console/open/admin")[0] == 403


def test_member_page_after_console_answers(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(member_link(site, "Ann"))
    assert driver.find_element(By.TAG_NAME, "h1").text == "Ann's progress"
    text = body_text(driver)
    score = site.engine.boards.score(site.engine.boards.leaderboard(GUILD) and _ann())
    assert f"{score.total_points} points" in text
    assert "fundamentals" in text or driver.find_elements(By.CSS_SELECTOR, "#topics + .scroll table")
    missed = site.engine.bank.get(site.names["missed"])
    assert missed is not None
    articles = driver.find_elements(By.CSS_SELECTOR, "article.question")
    assert articles and missed.prompt.split("\n")[0][:40] in articles[0].text
    for choice in missed.choices:  # every choice's why
        assert choice.why.split("\n")[0][:40] in articles[0].text
    assert "your choice" in articles[0].text
    assert driver.find_element(By.CSS_SELECTOR, "svg[role=img] title").get_attribute("textContent")
    assert "Bob" not in text  # only Ann's data on Ann's link
    # How sure she was: right on 1 of 2 sure answers, 1 of 1 unsure; the Brier score after 7 more
    assert "Right when sure\n50% of 2" in text and "Right when unsure\n100% of 1" in text
    assert "after 7 more answers" in text
    shot(driver, "member", docs=True)


def _ann() -> Any:
    from bot.core.values import UserRef

    return UserRef("console", "guild", "ann", "Ann")


def test_bank_shows_only_revealed_questions(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(member_link(site, "Bob").replace("/me", "/bank"))
    shown = {el.text.split(" · ")[-1] for el in driver.find_elements(By.CSS_SELECTOR, "article.question .meta")}
    assert shown == set(site.names["revealed"]) - {site.names["open_now"]}
    assert site.names["open_now"] not in driver.page_source
    shot(driver, "bank", docs=True)


def test_demos_page(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(member_link(site, "Ann").replace("/me", "/demos"))
    assert f"Demo #{site.names['demo']}" in driver.find_element(By.CSS_SELECTOR, "article.demo h2").text
    assert "block" in body_text(driver) and driver.find_elements(By.CSS_SELECTOR, "article.demo svg rect.bar")
    shot(driver, "demos", docs=True)


def test_admin_page_needs_the_admin_link(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.get(admin_link(site))
    assert driver.find_element(By.TAG_NAME, "h1").text.startswith("Admin")
    assert "Next daily round" in body_text(driver) and "web" in body_text(driver)
    # the community's: 9 answers with a confidence (_seed: sure 3 of 5 right, unsure 3 of 4), one short of 10
    assert "How sure the community was" in body_text(driver) and "after 1 more answer" in body_text(driver)
    shot(driver, "admin", docs=True)
    code, html = status(member_link(site, "Ann").replace("/me", "/admin"))
    assert code == 403 and "Settings" not in html
    assert status(admin_link(site).replace("/admin", "/me"))[0] == 404


def test_expired_or_tampered_link_is_403_without_data(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    good = member_link(site, "Ann")
    token = good.split("/s/")[1].split("/")[0]
    tampered = good.replace(token, token[:-2] + ("AA" if token[-2:] != "AA" else "BB"))
    old = WebLinks(site.base, SECRET, WEEK_SECONDS, clock=lambda: datetime.now(timezone.utc).timestamp() - 8 * 86400)
    expired = old.member(GUILD, "ann")
    forged = WebLinks(site.base, "another-secret", WEEK_SECONDS).member(GUILD, "ann")
    for url, word in ((tampered, "not valid"), (expired, "expired"), (forged, "not valid")):
        code, html = status(url)
        assert code == 403, url
        assert "Ann" not in html and "points" not in html
        driver.get(url)
        assert driver.find_element(By.TAG_NAME, "h1").text == "Link not valid"
        assert word in body_text(driver)
    shot(driver, "expired")


def test_private_community_without_link_is_404(site: Site, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    for page in ("board", "bank", "demos", "me", "admin", ""):
        private = status(f"{site.base}/c/console/guild/{page}")
        unknown = status(f"{site.base}/c/console/nobody/{page}")
        assert private[0] == unknown[0] == 404
        assert private[1] == unknown[1]  # a private community looks exactly like none
    code, html = status(f"{site.base}/")
    assert code == 200 and "guild" not in html and "open" not in html.replace("opens", "")
    driver.get(f"{site.base}/c/console/guild/board")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Not found"


PAGES = ("board", "me", "bank", "demos", "admin")


def _page_url(site: Site, page: str) -> str:
    if page == "admin":
        return admin_link(site)
    return member_link(site, "Ann").replace("/me", f"/{page}")


def test_phone_viewport_has_no_horizontal_scroll(site: Site, driver: Any) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True}
    )
    try:
        for page in PAGES:
            driver.get(_page_url(site, page))
            width, inner = driver.execute_script("return [document.scrollingElement.scrollWidth, window.innerWidth]")
            assert inner == 375
            assert width <= inner, f"{page}: {width}px wide on a {inner}px phone"
            shot(driver, f"phone-{page}")
        if os.environ.get("STUDYBOT_UPDATE_DOCS_IMAGES") == "1":
            DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ARTIFACTS / "phone-me.png", DOCS_IMAGES / "web-phone-member.png")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_pages_pass_axe_accessibility_check(site: Site, driver: Any) -> None:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing (axe-core is vendored in the repository)")
    source = AXE.read_text()
    urls = [_page_url(site, p) for p in PAGES] + [
        f"{site.base}/c/console/open/board",
        f"{site.base}/c/console/guild/board",  # the 404 page
        member_link(site, "Ann").replace("/s/", "/s/x"),  # the 403 page
    ]
    found = {}
    for url in urls:
        driver.get(url)
        driver.execute_script(source)
        result = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice']}})"
            ".then(r => done(r.violations.map(v => [v.id, v.impact, v.nodes.length, v.nodes[0].target.join(' ')])))"
            ".catch(e => done([['axe-error', String(e), 0, '']]));"
        )
        if result:
            found[url.split("/")[-1]] = result
    assert not found, found


def test_discord_and_slack_render_the_links() -> None:
    """The link line is worded once (bot/core/wording/boards.py); Discord shows it in the embed,
    Slack as a <url|label> link so the token is never read as mrkdwn."""
    from bot.core import wording
    from bot.core.values import ConfigCard, ScoreCard, StatsLine
    from bot.platforms.discord import render as discord_render
    from bot.platforms.slack import render as slack_render

    link = "https://study.example.org/s/eyJwIjoi_x-y.aw4f.0l2x_n6g/me"
    card = ScoreCard("Ann", "2026-W48", 21, 1, 21, StatsLine(3, 2), StatsLine(0, 0), 0, 2, 1, link=link)
    embed = discord_render.render(card).embed
    assert embed is not None and link in (embed.description or "")
    blocks = slack_render.render(card).blocks
    assert {"type": "section", "text": {"type": "mrkdwn", "text": f"<{link}|{wording.MEMBER_LINK}>"}} in blocks
    config = ConfigCard("guild", (("web", "private"),), link=link.replace("/me", "/admin"))
    assert any(link.replace("/me", "/admin") in str(b) for b in slack_render.render(config).blocks)
    assert f"{wording.ADMIN_LINK}: {config.link}" in wording.config_lines(config)
    assert not any("http" in line for line in wording.score_lines(card, with_link=False))


def test_page_values_on_sqlite_and_postgresql(engine: StudyEngine, clock: FakeClock) -> None:
    """The pages' store queries on both databases (the browser tests use SQLite): ranks with
    ties, a member's weeks, topics and misses in the bank's letters, the bank's reveal rule,
    demos and the admin page, and nothing of another community."""
    chat = Console(engine, "guild", "Ann")
    chat.handle("/config channel console")
    first = _daily(chat)
    for who, ok in (("Ann", True), ("Bob", True), ("Cy", False)):
        _answer(chat, who, first, ok)
    chat.handle("/close")
    clock.advance(days=1)
    second = _daily(chat)
    _answer(chat, "Ann", second, False)
    other = Console(engine, "elsewhere", "Zed")
    other.handle("/config channel console")
    _answer(other, "Zed", _daily(other), True)

    board = engine.web.leaderboard_page(GUILD, "2026-W48", 1, "ann")
    assert [(r.rank, r.user) for r in board.rows] == [(1, "Ann"), (1, "Bob")]
    assert board.members == 2 and board.highlight == "Ann" and board.previous_week == "2026-W47"
    assert board.next_week is None and engine.web.leaderboard_page(GUILD, "all").scope == "all"

    page = engine.web.member_page(GUILD, "ann")
    assert page.score.user == "Ann" and page.weeks[-1].week == "2026-W48" and page.weeks[-1].points > 0
    assert sum(t.answered for t in page.topics) == 2 and sum(t.correct for t in page.topics) == 1
    (missed,) = page.missed
    question = engine.bank.get(second)
    assert question is not None and missed.question_id == second
    right = question.choices[question.answer_index].text  # letters are the round's shown ones
    assert missed.answer == next(c.letter for c in missed.choices if c.text == right)
    assert sorted(c.why for c in missed.choices) == sorted(c.why for c in question.choices)
    assert [c.count for c in missed.choices].count(1) == 1 and missed.chosen != missed.answer

    bank = engine.web.bank_page(GUILD)
    assert [q.question_id for q in bank.questions] == [first]  # the second is the open round
    assert bank.hidden == len(engine.bank.questions) - 1

    assert engine.web.demos_page(GUILD).demos == ()
    admin = engine.web.admin_page(GUILD)
    assert ("web", "private") in admin.settings and admin.next_close is not None
    engine.admin.config(GUILD, "web", "public")
    found = engine.web.web_community(GUILD)
    assert found is not None and found.public
    assert engine.web.web_community(CommunityRef("console", "nobody")) is None
    assert [r.user for r in engine.web.leaderboard_page(CommunityRef("console", "elsewhere")).rows] == ["Zed"]


# ------------------------------------------------------------ issue 27: the web side


WEAK_SECRETS = ("a", "change-me", "x" * 31, "é" * 15, "test-web-secret-not-for-production")


def documented_secrets() -> list[str]:
    """Every STUDYBOT_WEB_SECRET=value the docs and .env.example show (a $(...) command is not a value)."""
    import re

    found = []
    for page in [ROOT / "README.md", ROOT / ".env.example", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.exists():
            for value in re.findall(r"STUDYBOT_WEB_SECRET=([^\s`'\"$|)]+)", page.read_text(encoding="utf-8")):
                found.append(value)
    return found


@pytest.mark.parametrize("secret", [*WEAK_SECRETS, *documented_secrets()])
def test_weak_web_secret_is_refused_at_start_and_by_doctor(
    secret: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret under 32 bytes or one the docs show: `studybot web` exits 2 before serving, and
    doctor fails, each in one sentence naming STUDYBOT_WEB_SECRET and never the secret."""
    from typer.testing import CliRunner

    from bot.cli import app
    from bot.config import WEB_SECRET_HOWTO
    from tests.conftest import run_studybot

    (tmp_path / ".env").write_text(
        f"STUDYBOT_WEB_SECRET={secret}\nSTUDYBOT_WEB_URL=http://127.0.0.1:9\nSTUDYBOT_WEB_PORT=1\n", encoding="utf-8"
    )
    done = run_studybot(tmp_path, ["web", "--port", "0"], timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    sentence = done.stderr.strip()
    assert sentence.startswith("STUDYBOT_WEB_SECRET is not valid: ") and sentence.count("\n") == 0
    assert WEB_SECRET_HOWTO in sentence and "Traceback" not in done.stderr
    assert f"={secret}" not in sentence and "web page on" not in done.stdout + done.stderr

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STUDYBOT_DATABASE_URL", f"sqlite:///{tmp_path / 'doctor.db'}")
    report = CliRunner().invoke(app, ["doctor"])
    assert report.exit_code == 2, report.output
    assert sentence in report.output.replace("\n", " ") or "STUDYBOT_WEB_SECRET is not valid" in report.output
    assert secret not in report.output or len(secret) == 1  # "a" is in every sentence


def test_a_generated_web_secret_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import secrets

    from bot.settings_problems import load_settings

    monkeypatch.chdir(tmp_path)
    generated = secrets.token_urlsafe(32)
    settings = load_settings(web_secret=generated, web_url="https://study.example.org")
    assert settings.web_secret is not None and settings.web_secret.get_secret_value() == generated


class Served:
    """A WebServer (or start_web's) on its own event loop in a thread, for raw-socket tests."""

    def __init__(self, start: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.server: Any = None
        started = threading.Event()

        def main() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(start())
            started.set()
            self.loop.run_forever()
            self.loop.run_until_complete(self.server.close())

        self.thread = threading.Thread(target=main, name="web-raw-test", daemon=True)
        self.thread.start()
        assert started.wait(30)
        self.port = int(self.server.port)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def raw(port: int, data: bytes, wait_s: float = 30) -> bytes:
    """Send bytes on a fresh connection and read until the server closes it."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def headers_of(url: str, extra: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=extra or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


BAD_QUERIES = (
    ("board?week=0001-W01", "week must be"),  # OverflowError in the week before
    ("board?week=9999-W52", "week must be"),  # and in the week after
    ("board?week=2026-W54", "week must be"),
    ("board?week=\u0662\u0660\u0662\u0666-W48", "week must be"),  # Arabic-Indic digits: int() reads them
    ("board?week=2026-W\u00b9\u00b2", "week must be"),
    ("board?week=nonsense", "week must be"),
    ("board?page=\u00b2", "page must be"),  # "²".isdigit() is True, int("²") fails
    ("board?page=\u0663", "page must be"),
    ("board?page=0", "page must be"),
    ("board?page=-1", "page must be"),
    ("board?page=1e3", "page must be"),
    ("board?page=99999999999999999999", "page must be"),
    ("bank?page=\u00b2", "page must be"),
    ("bank?topic=nope", "topic must be"),
    ("bank?topic=fundamentals&page=\u00b2", "page must be"),
)


@pytest.mark.parametrize("path, words", BAD_QUERIES, ids=[p for p, _ in BAD_QUERIES])
def test_bad_query_parameters_get_400_with_a_sentence(site: Site, path: str, words: str) -> None:
    """Every query parameter is read as ASCII digits within bounds: a bad one is 400 with one
    sentence, on a member's link and on a public page; never a 500."""
    from urllib.parse import quote

    target, _, parameters = path.partition("?")
    safe = "?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in (pair.split("=", 1) for pair in parameters.split("&")))
    for base in (member_link(site, "Ann").removesuffix("/me"), f"{site.base}/c/console/open"):
        code, html = status(f"{base}/{target}{safe}")
        assert code == 400, (base, path, html)
        assert words in html and "Something went wrong" not in html and "Traceback" not in html


def test_good_query_parameters_still_show_the_page(site: Site) -> None:
    base = member_link(site, "Ann").removesuffix("/me")
    for path in (
        "board?week=2026-W48",
        "board?week=2026-w48",
        "board?week=all",
        "board?page=1",
        "board?page=",
        "bank?topic=fundamentals",
        "bank?page=2",
        "board?page=500",
    ):
        assert status(f"{base}/{path}")[0] == 200, path
    assert status(f"{base}/demos/\u00b2/chart.png".replace("\u00b2", "%C2%B2"))[0] == 404  # a path, not a query


def test_signed_tokens_never_reach_the_log(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    """At DEBUG: aiohttp writes a request line it cannot parse into the log, path and all; the
    token in it is redacted (a page viewed, and a page that fails, log none either)."""
    import logging

    link = member_link(site, "Ann")
    token = link.split("/s/")[1].split("/")[0]
    port = int(site.base.rsplit(":", 1)[1])
    caplog.set_level(logging.DEBUG)
    raw(port, f"GET /s/{token}/me HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n".encode())  # a bad header line
    raw(port, f"GET /s/{token}/me HTTP/9.9\r\nHost: x\r\n\r\n".encode())  # a bad version
    raw(port, f"G\x01T /s/{token}/me HTTP/1.1\r\nHost: x\r\n\r\n".encode())  # a bad method (logged at DEBUG)
    raw(port, f"GET /s/{token}/me\r\nmore HTTP/1.1\r\nHost: x\r\n\r\n".encode())  # a CR/LF in the line
    assert status(link)[0] == 200 and status(link.replace("/me", "/board?page=%C2%B2"))[0] == 400
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    lines = [formatter.format(record) for record in caplog.records]
    assert any("/s/<redacted>" in line for line in lines if line.startswith("aiohttp.server")), lines
    assert not [line for line in lines if token in line or token[:20] in line]
    assert not any("\n" in record.getMessage() for record in caplog.records if record.name == "aiohttp.server")


def test_half_sent_request_is_closed_after_the_header_timeout(site: Site) -> None:
    """A connection that never finishes its headers is closed after STUDYBOT_WEB_KEEPALIVE_S
    (aiohttp's default is an hour): recv returns the end of the stream, not the socket's 30 s
    timeout. A whole request on a fresh connection is still answered."""
    import socket

    from bot.config import Settings
    from bot.web.app import start_web

    with socket.socket() as probe:  # a free port (Settings refuses port 0)
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    settings = Settings(web_port=free, web_host="127.0.0.1", web_keepalive_s=0.5, web_url=None, web_secret=None)
    served = Served(lambda: start_web(site.engine, settings))
    try:
        assert raw(served.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") == b""
        answer = raw(served.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")
    finally:
        served.close()


def test_hsts_behind_tls_and_no_server_version(site: Site) -> None:
    """HSTS when the page's URL is https or the proxy says X-Forwarded-Proto: https, not over
    plain HTTP; the Server header names no version, on pages, aiohttp's own 404 and a request
    aiohttp could not parse."""
    link = member_link(site, "Ann")
    for url in (link, f"{site.base}/nothing-here", f"{site.base}/c/console/guild/board"):
        code, headers = headers_of(url)
        assert headers["Server"] == "studybot", (url, code)
        assert "Strict-Transport-Security" not in headers
        code, headers = headers_of(url, {"X-Forwarded-Proto": "https"})
        assert headers["Strict-Transport-Security"].startswith("max-age=")
    port = int(site.base.rsplit(":", 1)[1])
    answer = raw(port, b"GET / HTTP/9.9\r\nHost: x\r\n\r\n").decode("latin-1")
    assert answer.startswith("HTTP/1.") and " 400 " in answer.split("\r\n")[0]
    assert "Server: studybot\r\n" in answer and "aiohttp/" not in answer and "Python/" not in answer

    https_links = WebLinks("https://study.example.org", SECRET, WEEK_SECONDS)
    served = Served(lambda: _started(WebServer(build_app(site.engine, https_links), "127.0.0.1", 0)))
    try:
        code, headers = headers_of(f"http://127.0.0.1:{served.port}/")
        assert code == 200 and headers["Strict-Transport-Security"] == "max-age=31536000"
    finally:
        served.close()


async def _started(server: WebServer) -> WebServer:
    await server.start()
    return server


# ------------------------------------------------------------ links that can be revoked


def _link_in(lines: list[Any], base: str) -> str:
    text = "\n".join(m.text for m in lines)
    return next(word for word in text.split() if word.startswith(base + "/s/"))


def _revoked(url: str) -> None:
    from bot.web.app import LINK_REVOKED

    code, html = status(url)
    assert code == 403, url
    assert LINK_REVOKED.split(":")[0].replace("'", "&#39;") in html and "points" not in html


def test_forget_me_revokes_the_members_link(site: Site) -> None:
    """/forget-me advances the member's link version: the link /score gave them gets 403 with
    a sentence (it used to open their page for up to 168 hours); another member's still opens."""
    chat = Console(site.engine, "revoke-forget", "Hal")
    chat.handle("/config channel console")
    round_question = _daily(chat)
    _answer(chat, "Hal", round_question, True)
    hal = _link_in(chat.handle("/score"), site.base)
    _answer(chat, "Ivy", round_question, False)
    ivy = _link_in(chat.handle("/score"), site.base)
    assert status(hal)[0] == 200 and status(ivy)[0] == 200
    chat.handle("/as Hal")
    chat.handle("/forget-me confirm")
    _revoked(hal)
    _revoked(hal.replace("/me", "/board"))
    assert status(ivy)[0] == 200


def test_config_web_rotate_revokes_every_link(site: Site) -> None:
    """`/config web rotate` (the console's, the same engine call as Discord's and Slack's):
    every member's and admin's link to the community gets 403; the reply says so and carries
    the admin's new link; links asked for afterwards open; another community's are untouched."""
    from bot.core import wording

    chat = Console(site.engine, "revoke-rotate", "Jo")
    chat.handle("/config channel console")
    _answer(chat, "Jo", _daily(chat), True)
    member = _link_in(chat.handle("/score"), site.base)
    admin = _link_in(chat.handle("/config"), site.base)
    elsewhere = member_link(site, "Ann")
    assert status(member)[0] == 200 and status(admin)[0] == 200
    reply = chat.handle("/config web rotate")
    assert wording.LINKS_ROTATED in "\n".join(m.text for m in reply)
    new_admin = _link_in(reply, site.base)
    for old in (member, admin, member.replace("/me", "/bank"), admin.replace("/admin", "/board")):
        _revoked(old)
    assert status(new_admin)[0] == 200 and new_admin != admin
    assert status(_link_in(chat.handle("/score"), site.base))[0] == 200
    assert status(elsewhere)[0] == 200


def test_admin_link_names_its_admin_and_losing_the_right_revokes_it(site: Site) -> None:
    """An admin link names its admin; when a platform next sees them without the right (a
    /config refused, or answered as a member who may only look), that link gets 403 while
    another admin's link and their own member link still open. A link of old that names no
    admin is not valid."""
    from bot.core.values import UserRef

    club = CommunityRef("console", "revoke-admin")
    kim, lee = (UserRef("console", "revoke-admin", uid, name) for uid, name in (("kim", "Kim"), ("lee", "Lee")))
    chat = Console(site.engine, "revoke-admin", "Kim")
    chat.handle("/config channel console")
    _answer(chat, "Kim", _daily(chat), True)
    kim_member = _link_in(chat.handle("/score"), site.base)
    kim_admin = site.engine.admin.configure(club, "show", None, kim).link  # type: ignore[union-attr]
    lee_admin = site.engine.admin.configure(club, "show", None, lee).link  # type: ignore[union-attr]
    assert kim_admin and lee_admin and kim_admin != lee_admin
    assert site.links.read(kim_admin.split("/s/")[1].split("/")[0]).holder == "kim"
    assert status(kim_admin)[0] == 200 and status(lee_admin)[0] == 200
    # a member who may only look (Slack's /studybot-config show by a non-admin): no link, and Kim's old one goes
    card = site.engine.admin.configure(club, "show", None, None, kim)
    assert card.link is None  # type: ignore[union-attr]
    _revoked(kim_admin)
    assert status(lee_admin)[0] == 200 and status(kim_member)[0] == 200
    # a refused /config (Discord without Manage Server) revokes Lee's the same way
    assert site.engine.admin.config_refused(lee, "Only admins.").text == "Only admins."
    _revoked(lee_admin)
    # given the right again, a new link opens
    again = site.engine.admin.configure(club, "show", None, kim).link  # type: ignore[union-attr]
    assert again is not None and status(again)[0] == 200
    nobody = site.links.token(club, "kim", admin=True).replace('"u"', "")  # not a token: any change breaks it
    assert status(f"{site.base}/s/{nobody}/admin")[0] == 403


def test_page_titles_name_the_bot_once(site: Site) -> None:
    """The browser tab says the page, then the bot's name once: the home page is the bot's name
    alone, never 'Checkpoint Study Bot · Checkpoint Study Bot'."""
    import re

    def title(url: str) -> str:
        code, html = status(url)
        assert code == 200
        found = re.search(r"<title>(.*?)</title>", html, re.S)
        assert found is not None
        return found.group(1).strip()

    assert title(f"{site.base}/") == "Checkpoint Study Bot"
    assert title(f"{site.base}/c/console/open/board?week=2026-W48") == "Leaderboard 2026-W48 · Checkpoint Study Bot"
