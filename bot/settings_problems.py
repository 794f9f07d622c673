"""Bad settings in one sentence: which variable, the value given (never a secret's), and what
is allowed; and a `.env` line that cannot be read, by its line number. Every CLI command loads
its settings through `load_settings`, so none of them shows pydantic's traceback.

The sentence is worded from pydantic's own report (`ValidationError.errors()`: the field, the
kind of problem, the value, a validator's words) and what the field allows from Settings' JSON
schema (its type and bounds), so a new setting needs no wording here."""

from __future__ import annotations

import contextlib
import functools
import io
import logging
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from bot.config import Settings
from bot.errors import OperatorError

# Longest value shown back in a sentence (a pasted paragraph is cut).
_SHOWN = 40


class SettingsError(OperatorError):
    """A setting the bot cannot start with, as one sentence for the person who set it."""


def variable_name(field: str) -> str:
    """The environment variable that sets a Settings field (a token's own name, else STUDYBOT_*)."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    choices = getattr(alias, "choices", None)
    if choices:
        return str(choices[0])
    return f"STUDYBOT_{field.upper()}" if field else "a setting"


@functools.cache
def _schemas() -> dict[str, dict[str, Any]]:
    """Each field's JSON schema by its name (an optional field's: the branch that is not null)."""
    fields: dict[str, dict[str, Any]] = Settings.model_json_schema(by_alias=False)["properties"]
    schemas: dict[str, dict[str, Any]] = {}
    for name, schema in fields.items():
        branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
        schemas[name] = branches[0] if branches else schema
    return schemas


def _is_secret(field: str) -> bool:
    return _schemas().get(field, {}).get("format") == "password"


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_KINDS = {"integer": "a whole number", "number": "a number", "boolean": "true or false"}


def allowed(field: str) -> str:
    """What a field accepts, in words: "a whole number from 1 to 48", "one of local, celery"."""
    schema = _schemas().get(field)
    if schema is None:
        return "a valid value"
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    kind = _KINDS.get(schema.get("type", ""), "text")
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"{kind} from {_number(low)} to {_number(high)}"
    bounds = []
    if "exclusiveMinimum" in schema:
        bounds.append(f"more than {_number(schema['exclusiveMinimum'])}")
    elif low is not None:
        bounds.append(f"at least {_number(low)}")
    if "exclusiveMaximum" in schema:
        bounds.append(f"less than {_number(schema['exclusiveMaximum'])}")
    elif high is not None:
        bounds.append(f"at most {_number(high)}")
    return kind + (" " + " and ".join(bounds) if bounds else "")


def _shown(value: Any, field: str = "") -> str:
    text = str(value).replace("\n", " ")
    if field.endswith("_url"):  # a database or Redis URL may carry a password: never shown
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        with contextlib.suppress(ArgumentError):
            text = make_url(text).render_as_string(hide_password=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _reason(error: ErrorDetails) -> str:
    """A validator's own words (a ValueError it raised), without pydantic's "Value error, "."""
    raised = (error.get("ctx") or {}).get("error")
    return str(raised) if raised is not None else str(error["msg"]).removeprefix("Value error, ")


def _field(error: ErrorDetails) -> str:
    """The Settings field an error is about ("" for a rule across fields); pydantic names a
    field set by its own variable (DISCORD_TOKEN) by that name."""
    name = str(error["loc"][0]) if error["loc"] else ""
    if not name or name in Settings.model_fields:
        return name
    return next((field for field in Settings.model_fields if variable_name(field) == name), name)


def _sentence(error: ErrorDetails) -> str:
    field = _field(error)
    if not field:  # a rule across fields (a model validator): its own words name the variables
        return f"The settings do not fit together: {_reason(error)}."
    shown = "" if _is_secret(field) else f"={_shown(error.get('input'), field)}"
    if error["type"] == "value_error":  # a field validator's rule, in its own words
        return f"{variable_name(field)}{shown} is not valid: {_reason(error)}."
    if _is_secret(field):
        return f"{variable_name(field)} is not valid: it must be {allowed(field)}."
    return f"{variable_name(field)}{shown} is not allowed: it must be {allowed(field)}."


def describe(exc: ValidationError) -> str:
    """The first problem of a Settings validation as one sentence (and how many more there are)."""
    errors = exc.errors()
    sentence = _sentence(errors[0])
    more = len(errors) - 1
    if more:
        sentence += f" ({more} more setting{'s' if more > 1 else ''} {'are' if more > 1 else 'is'} wrong too.)"
    return sentence


class _Unparsed(logging.Filter):
    """python-dotenv's report of a statement it cannot parse (a warning naming the line the
    statement starts at, its blank lines before it counted): kept here, not printed."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if "could not parse" in str(record.msg) and args and isinstance(args[0], int):
            self.lines.append(args[0])
            return False
        return True


def env_file_problem(path: Path) -> str | None:
    """A `.env` line that is neither NAME=value, a comment nor blank, by its number; the
    line itself is not repeated (it may hold a token)."""
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text: save it as UTF-8 with one NAME=value per line."
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror}): check its permissions."
    unparsed = _Unparsed()
    logger = logging.getLogger("dotenv.main")
    level = logger.level
    logger.setLevel(logging.WARNING)  # heard even when the process logs only errors; the filter keeps it quiet
    logger.addFilter(unparsed)
    try:
        dotenv_values(stream=io.StringIO(text), interpolate=False)
    finally:
        logger.removeFilter(unparsed)
        logger.setLevel(level)
    if not unparsed.lines:
        return None
    lines = text.splitlines()
    line = unparsed.lines[0]
    while line < len(lines) and not lines[line - 1].strip():  # the statement's own line, past the blank ones
        line += 1
    return f"{path} line {line} cannot be read: write it as NAME=value (or start it with # for a comment)."


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment and `.env`, or a SettingsError with one sentence."""
    problem = env_file_problem(Path(".env"))  # pydantic-settings reads it from the working folder
    if problem is not None:
        raise SettingsError(problem)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe(exc)) from None
