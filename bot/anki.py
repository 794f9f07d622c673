"""Anki packages (.apkg) from the core's AnkiDeck values, written with genanki.

One note type and two decks, with ids fixed here, and each note's guid derived from its
question id: importing a newer export of the same deck updates the notes it already holds
instead of adding copies (Anki matches notes by guid and note type, and takes the newer one).

The package is a zip holding the collection (`collection.anki2`, SQLite) and a `media` list.
It is built in memory: genanki's `Package.write_to_file` leaves its temporary database file
behind, so this writes genanki's tables into an in-memory SQLite database and zips its bytes."""

from __future__ import annotations

import html
import io
import itertools
import os
import re
import sqlite3
import tempfile
import time
import zipfile
from pathlib import Path

import genanki

from bot.core import wording
from bot.core.values import AnkiDeck, BankEntry

MODEL_ID = 1_730_482_911  # the note type "Checkpoint Study Bot question"; never change it
DECK_IDS = {"misses": 1_730_482_923, "bank": 1_730_482_937}  # never change these either
GUID_SPACE = "checkpoint-study-bot"  # guid = genanki.guid_for(GUID_SPACE, question id)
FIELDS = ("Question", "Choices", "Answer", "Whys", "Explanation", "References", "Topic", "Id")
_URL = re.compile(r"https?://[^\s<>\"']*[^\s<>\"'.,;:)]")

CSS = """.card { font-family: sans-serif; font-size: 18px; text-align: left; color: #111; background: #fff; }
.choices, .whys { padding-left: 0; list-style: none; }
.choices li, .whys li { margin: 0.3em 0; }
.right { color: #15803d; }
.meta { color: #6b7280; font-size: 14px; }
.nightMode .card, .night_mode .card { color: #eee; background: #222; }
"""
FRONT = '{{Question}}<ul class="choices">{{Choices}}</ul><p class="meta">{{Topic}} · {{Id}}</p>'
BACK = (
    '{{FrontSide}}<hr id="answer"><p class="right"><b>{{Answer}}</b></p><ul class="whys">{{Whys}}</ul>'
    "{{#Explanation}}<p>{{Explanation}}</p>{{/Explanation}}{{#References}}<p>{{References}}</p>{{/References}}"
)
MODEL = genanki.Model(
    MODEL_ID,
    "Checkpoint Study Bot question",
    fields=[{"name": name} for name in FIELDS],
    templates=[{"name": "Recall", "qfmt": FRONT, "afmt": BACK}],
    css=CSS,
)


def _text(value: str) -> str:
    """Plain text as note HTML: escaped, line breaks kept."""
    return html.escape(value).replace("\n", "<br>")


def _linked(value: str) -> str:
    """Escaped text with its web addresses as links."""
    escaped = html.escape(value, quote=False)
    return _URL.sub(lambda m: f'<a href="{html.escape(m.group(0))}">{m.group(0)}</a>', escaped)


def note_guid(question_id: str) -> str:
    return str(genanki.guid_for(GUID_SPACE, question_id))


def note_fields(entry: BankEntry) -> list[str]:
    """A question's fields, in FIELDS' order."""
    right = next((c for c in entry.choices if c.correct), None)
    choices = "".join(f"<li><b>{c.letter})</b> {_text(c.text)}</li>" for c in entry.choices)
    whys = "".join(
        f"<li{' class=right' if c.correct else ''}><b>{c.letter})</b> {_text(c.why)}</li>" for c in entry.choices
    )
    answer = f"{right.letter}) {_text(right.text)}" if right else ""
    explain = [_text(entry.explain)] if entry.explain else []
    if entry.trap:
        explain.append(_text(wording.trap_line(entry.trap)))
    # "Read more:", then each reference on a line of its own
    refs = "<br>".join([_text(wording.refs_line(()).strip()), *map(_linked, entry.refs)]) if entry.refs else ""
    topic, question_id = _text(entry.topic), _text(entry.question_id)
    return [_text(entry.prompt), choices, answer, whys, "<br><br>".join(explain), refs, topic, question_id]


def note_tags(entry: BankEntry) -> list[str]:
    """The topic (Anki tags have no spaces) and the bot's own tag."""
    return ["checkpoint-study-bot", re.sub(r"\s+", "_", entry.topic.strip()) or "untagged"]


def build(deck: AnkiDeck) -> genanki.Deck:
    built = genanki.Deck(DECK_IDS[deck.kind], deck.name)
    for entry in deck.notes:
        built.add_note(
            genanki.Note(
                model=MODEL, fields=note_fields(entry), tags=note_tags(entry), guid=note_guid(entry.question_id)
            )
        )
    return built


def package(deck: AnkiDeck, timestamp: float | None = None) -> bytes:
    """The .apkg's bytes. `timestamp` (default now) is every note's modification time: a
    later export is newer, so Anki takes its text over what it imported before."""
    moment = time.time() if timestamp is None else timestamp
    db = sqlite3.connect(":memory:")
    try:
        genanki.Package(build(deck)).write_to_db(db.cursor(), moment, itertools.count(int(moment * 1000)))
        db.commit()
        collection = db.serialize()
    finally:
        db.close()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("collection.anki2", collection)
        archive.writestr("media", "{}")
    return out.getvalue()


def save(deck: AnkiDeck, directory: Path) -> Path:
    """Write the package into `directory` (created if needed) under the deck's file name,
    replacing an older one whole; returns its absolute path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = (directory / deck.filename).resolve()
    data = package(deck)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".anki-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def remove_saved(directory: Path, filename: str) -> bool:
    """/forget-me: the member's package that `save` wrote into `directory`, deleted (a link
    there is removed itself, never what it points at); whether there was one."""
    target = directory / Path(filename).name
    if not target.is_symlink() and not target.is_file():
        return False
    target.unlink()
    return True
