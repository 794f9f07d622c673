"""Issue 27: `/forget-me` forgets the member in every table. The test walks every table and
column of the migrated database (SQLite and PostgreSQL): each table must be named below as
holding a member or as holding none, so a new table or a new member column fails here until
someone says how /forget-me treats it. A member is seeded into every holder through the
engine, forgotten, and then no column anywhere holds their id, name or member id."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import create_engine, inspect, text

from bot.core.engine import DemoPolicy, StudyEngine
from bot.core.values import ChannelRef, CommunityRef, Forgotten, QuestionCard, SuggestionReceived, UserRef
from bot.core.wording import FORGOTTEN_MEMBER
from tests.conftest import run_studybot
from tests.test_suggestions import good_form

USER_ID, NAME = "U0FORGET7", "Zed Forgetful"
ZED = UserRef("discord", "guild", USER_ID, NAME)
CH = ChannelRef("discord", "guild", "quiz")

# Each table's columns that can hold a member: their platform id, their name, their row id.
HOLDERS: dict[str, set[str]] = {
    "members": {"id", "user_id", "display_name"},
    "answers": {"member_id"},
    "weekly_points": {"member_id"},
    "reviews": {"member_id"},
    "rounds": {"member_id"},
    "member_ratings": {"member_id"},
    "suggestions": {"member_id"},
    "demo_jobs": {"user_id", "user_name"},  # no foreign key: anonymised, the job stays
    "demo_guesses": {"member_id"},
    "streak_repairs": {"member_id"},
    "item_picks": {"member_id"},
    "item_members": {"member_id"},
    "outbox": {"channel_id"},  # a decision on a member's question is sent to them: their id
    "forgotten_answers": {"user_key"},  # a salted hash only, never the id (deleted at the close)
    "link_versions": {"holder"},  # a salted hash only: the row outlives the forget, revoking old links
    "slack_views": {"holder"},  # the modals the bot opened: a salted hash of who, kept a day
}
HASHED = ("forgotten_answers", "link_versions", "slack_views")  # written by the forget (or a link), never the id
# Tables that hold no member, and why.
NO_MEMBER: dict[str, str] = {
    "alembic_version": "the schema's version",
    "communities": "a community's settings",
    "community_fsrs": "a community's fitted parameters",
    "item_counts": "counts per question and choice, no member",
    "leaderboard_posts": "which weeks were posted",
    "platform_events": "Slack event ids already handled",
    "platform_state": "an adapter's own keys (command tree hashes, tokens of the item analysis)",
    "question_ratings": "a question's difficulty",
    "slack_bots": "the workspace's bot installation",
    # Bolt's OAuth store: the workspace's installation (its bot token) is kept while the app is
    # installed; an installer's id and user token are forgotten with them (a test below)
    "slack_installations": "the app's installation in a workspace",
    "slack_oauth_states": "OAuth state values, minutes long",
}
MEMBERISH = ("user", "member", "name", "author")  # a column name that may hold a member


def tables(url: str) -> dict[str, list[str]]:
    db = create_engine(url)
    try:
        found = inspect(db)
        return {t: [c["name"] for c in found.get_columns(t)] for t in found.get_table_names()}
    finally:
        db.dispose()


def rows(url: str, table: str) -> list[dict[str, object]]:
    db = create_engine(url)
    try:
        with db.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(text(f'SELECT * FROM "{table}"'))]
    finally:
        db.dispose()


def test_every_table_is_classified_for_forget_me(db_url: str) -> None:
    schema = tables(db_url)
    unclassified = sorted(set(schema) - set(HOLDERS) - set(NO_MEMBER))
    assert not unclassified, f"say how /forget-me treats {unclassified} (HOLDERS or NO_MEMBER)"
    for table, columns in schema.items():
        if table in NO_MEMBER:
            continue
        looks = {c for c in columns if any(word in c for word in MEMBERISH)}
        assert looks <= HOLDERS[table], f"{table}: {sorted(looks - HOLDERS[table])} may hold a member"


def shown(engine: StudyEngine, card: QuestionCard, correct: bool) -> int:
    """The shown position of the card's right choice (or of a wrong one)."""
    question = engine.bank.get(card.question_id)
    assert question is not None
    text = next(c.text for c in question.choices if c.correct is correct)
    return card.choices.index(text)


def seed(engine: StudyEngine, db_url: str) -> int:
    """Zed in every holder, through the engine (a streak repair's row written directly)."""
    engine.demos.policy = DemoPolicy(cooldown_s=0)
    daily = engine.rounds.open_daily(CH)
    assert isinstance(daily, QuestionCard)
    engine.rounds.answer(ZED, daily.round_id, shown(engine, daily, True))  # points; still open: a hash stays
    practice = engine.practice.quiz(ZED, CH)
    engine.rounds.answer(ZED, practice.round_id, shown(engine, practice, False))  # a miss: a review
    for _ in range(2):
        assert isinstance(engine.practice.suggest(ZED, CH, good_form()), SuggestionReceived)
    community = CommunityRef("discord", "guild")
    queue = engine.practice.suggestion_queue(community)
    engine.practice.decide_suggestion(community, queue.items[0].suggestion_id, "approve")
    job = engine.demos.request_demo(ZED, CH, "checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block")
    engine.guesses.guess(ZED, job.job_id, 1)  # before the first figure
    assert engine.demos.claim_demo("w", "local") is not None
    none_row = {"strategy": "none", "peak_bytes": 100, "saved_bytes": 100, "step_ms": 1.0, "grads_identical": True}
    engine.demos.demo_progress(job.job_id, {"total": 2, "info": {}, "rows": [none_row]})
    db = create_engine(db_url)
    try:
        with db.begin() as conn:
            member_id = int(
                conn.execute(text("SELECT id FROM members WHERE user_id = :u"), {"u": USER_ID}).scalar_one()
            )
            community_id = int(
                conn.execute(text("SELECT community_id FROM members WHERE id = :m"), {"m": member_id}).scalar_one()
            )
            conn.execute(
                text(
                    "INSERT INTO streak_repairs (community_id, member_id, round_id, repaired_at) "
                    "VALUES (:c, :m, :r, :t)"
                ),
                {"c": community_id, "m": member_id, "r": daily.round_id, "t": engine.now().replace(tzinfo=None)},
            )
    finally:
        db.dispose()
    return member_id


def holds_zed(value: object, member_id: int, column: str) -> bool:
    if isinstance(value, str):
        return USER_ID in value or NAME in value
    return column in HOLDERS_IDS and value == member_id


HOLDERS_IDS = {"member_id", "author_member"}


def test_forget_me_leaves_the_member_in_no_table(engine: StudyEngine, db_url: str) -> None:
    member_id = seed(engine, db_url)
    schema = tables(db_url)
    for table, columns in HOLDERS.items():
        if table in HASHED:
            continue
        held = [
            r for r in rows(db_url, table) if any(holds_zed(r[c], member_id, c) or r[c] == member_id for c in columns)
        ]
        assert held, f"the test seeds no row of {table}: seed one so the forget is checked there"
    assert isinstance(engine.admin.forget_me(ZED, confirm=True), Forgotten)
    for table, columns in schema.items():
        for row in rows(db_url, table):
            for column in columns:
                assert not holds_zed(row[column], member_id, column), f"{table}.{column} still holds the member"
            if table == "members":
                assert row["id"] != member_id
    # the demo job stays for the community's history, with no one's name on it
    [job] = engine.demos.demo_jobs()
    assert job.user_name == FORGOTTEN_MEMBER and job.user_id == "" and json.loads(job.progress)["rows"]


def test_forget_me_deletes_the_consoles_exported_deck(tmp_path: Path) -> None:
    done = run_studybot(
        tmp_path, ["console", "--jsonl", "--no-schedule"], stdin="/quiz\na\n/quiz\nb\n/quiz\nc\n/review export\n"
    )
    assert done.returncode == 0, done.stderr
    decks = list((tmp_path / "charts").glob("*.apkg"))
    assert len(decks) == 1, done.stdout
    outside = tmp_path / "kept.apkg"
    outside.write_bytes(b"not theirs")
    done = run_studybot(tmp_path, ["console", "--jsonl", "--no-schedule"], stdin="/forget-me confirm\n")
    assert done.returncode == 0, done.stderr
    assert not decks[0].exists() and outside.read_bytes() == b"not theirs"


def test_forget_me_removes_a_link_in_the_export_folder_never_its_target(tmp_path: Path) -> None:
    from bot import anki

    target = tmp_path / "elsewhere.txt"
    target.write_text("someone else's file")
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "studybot-misses-zed.apkg").symlink_to(target)
    assert anki.remove_saved(folder, "studybot-misses-zed.apkg") is True
    assert target.read_text() == "someone else's file" and not (folder / "studybot-misses-zed.apkg").exists()


def test_forget_me_leaves_no_trace_of_a_slack_installer_but_keeps_the_workspaces_bot(
    engine: StudyEngine, db_url: str
) -> None:
    """A member who installed the app in their workspace asks /forget-me: the installation
    row no longer names them or holds their user token, and the workspace's bot still works."""
    from slack_sdk.oauth.installation_store import Installation
    from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore

    zed = UserRef("slack", "T0FORGET", USER_ID, NAME)
    db = create_engine(db_url)
    try:
        store = SQLAlchemyInstallationStore(client_id="cid", engine=db)
        store.save(
            Installation(
                app_id="A1",
                team_id="T0FORGET",
                user_id=USER_ID,
                user_token="xoxp-zeds-own",
                bot_token="xoxb-the-bot",
                bot_id="B1",
                bot_user_id="UBOT",
            )
        )
        engine.rounds.answer(zed, engine.practice.quiz(zed, ChannelRef("slack", "T0FORGET", "C1")).round_id, 0)
        assert any(USER_ID in str(r.values()) for r in rows(db_url, "slack_installations"))
        assert isinstance(engine.admin.forget_me(zed, confirm=True), Forgotten)
        for table in tables(db_url):
            for row in rows(db_url, table):
                assert USER_ID not in str(row.values()) and "xoxp-zeds-own" not in str(row.values()), table
        found = store.find_installation(enterprise_id=None, team_id="T0FORGET")
        assert found is not None and found.bot_token == "xoxb-the-bot" and found.user_token is None
    finally:
        db.dispose()


def test_forget_me_forgets_someone_who_only_asked_for_demos(engine: StudyEngine, db_url: str) -> None:
    """A member who never answered has no member row: their demo jobs still lose their id and name."""
    engine.demos.policy = DemoPolicy(cooldown_s=0)
    engine.demos.request_demo(ZED, CH, "checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block")
    assert [job.user_name for job in engine.demos.demo_jobs()] == [NAME]
    assert isinstance(engine.admin.forget_me(ZED, confirm=True), Forgotten)
    for row in rows(db_url, "demo_jobs"):
        assert USER_ID not in str(row["user_id"]) and NAME not in str(row["user_name"])
    [job] = engine.demos.demo_jobs()
    assert job.user_name == FORGOTTEN_MEMBER and job.user_id == ""


def test_deleting_a_member_row_takes_their_rows_with_it_by_the_schema(db_url: str) -> None:
    """`delete_member` deletes the member row and trusts the schema for the rest: every foreign
    key to members.id is ON DELETE CASCADE but the author of an approved question's (SET NULL),
    on SQLite and PostgreSQL alike (a batch migration on SQLite that dropped it would fail here)."""
    db = create_engine(db_url)
    try:
        found = inspect(db)
        on_delete = {
            (table, tuple(fk["constrained_columns"])): (fk.get("options") or {}).get("ondelete", "").upper()
            for table in found.get_table_names()
            for fk in found.get_foreign_keys(table)
            if fk["referred_table"] == "members"
        }
    finally:
        db.dispose()
    member_tables = {table for table, columns in HOLDERS.items() if "member_id" in columns}
    assert {table for table, _ in on_delete} == member_tables
    assert on_delete.pop(("suggestions", ("member_id",))) == "SET NULL"
    assert set(on_delete.values()) == {"CASCADE"}, on_delete
