"""Bad settings in one sentence: which variable, the value given (never a secret's), and what
is allowed; and a `.env` line that cannot be read, by its line number. Every CLI command loads
its settings through `load_settings`, so none of them shows pydantic's traceback."""

from __future__ import annotations

import io
import typing
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from dotenv.parser import parse_stream
from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo

from bot.config import Settings

# Longest value shown back in a sentence (a pasted paragraph is cut).
_SHOWN = 40


class SettingsError(ValueError):
    """A setting the bot cannot start with, as one sentence for the person who set it."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


def variable_name(field: str) -> str:
    """The environment variable that sets a Settings field (a token's own name, else STUDYBOT_*)."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    choices = getattr(alias, "choices", None)
    if choices:
        return str(choices[0])
    return f"STUDYBOT_{field.upper()}" if field else "a setting"


def _is_secret(info: FieldInfo | None) -> bool:
    if info is None:
        return False
    return SecretStr in (info.annotation, *typing.get_args(info.annotation))


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _kind(info: FieldInfo) -> str:
    types = {info.annotation, *typing.get_args(info.annotation)} - {type(None)}
    if int in types:
        return "a whole number"
    if float in types:
        return "a number"
    if bool in types:
        return "true or false"
    literals = (
        [arg for t in types for arg in typing.get_args(t)]
        if any(typing.get_origin(t) is typing.Literal for t in types)
        else []
    )
    if literals:
        return "one of " + ", ".join(str(v) for v in literals)
    return "text"


def allowed(field: str) -> str:
    """What a field accepts, in words: "a whole number from 1 to 48", "one of local, celery"."""
    info = Settings.model_fields.get(field)
    if info is None:
        return "a valid value"
    kind = _kind(info)
    low: object = None
    high: object = None
    low_open = high_open = False
    for rule in info.metadata:
        if isinstance(rule, Ge):
            low = rule.ge
        elif isinstance(rule, Gt):
            low, low_open = rule.gt, True
        elif isinstance(rule, Le):
            high = rule.le
        elif isinstance(rule, Lt):
            high, high_open = rule.lt, True
    if low is not None and high is not None and not low_open and not high_open:
        return f"{kind} from {_number(low)} to {_number(high)}"
    bounds = []
    if low is not None:
        bounds.append(f"{'more than' if low_open else 'at least'} {_number(low)}")
    if high is not None:
        bounds.append(f"{'less than' if high_open else 'at most'} {_number(high)}")
    return kind + (" " + " and ".join(bounds) if bounds else "")


def _shown(value: Any, field: str = "") -> str:
    text = str(value).replace("\n", " ")
    if field.endswith("_url"):  # a database or Redis URL may carry a password: never shown
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            text = make_url(text).render_as_string(hide_password=True)
        except ArgumentError:
            pass
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def describe(exc: ValidationError) -> str:
    """The first problem of a Settings validation as one sentence (and how many more there are)."""
    errors = exc.errors()
    first = errors[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    info = Settings.model_fields.get(field)
    if not field:  # a rule across fields (a model validator): its own words name the variables
        message = str(first["msg"]).removeprefix("Value error, ")
        sentence = f"The settings do not fit together: {message}."
    elif first["type"] == "value_error":
        message = str(first["msg"]).removeprefix("Value error, ")
        shown = "" if _is_secret(info) else f"={_shown(first.get('input'), field)}"
        sentence = f"{variable_name(field)}{shown} is not valid: {message}."
    elif _is_secret(info):
        sentence = f"{variable_name(field)} is not valid: it must be {allowed(field)}."
    else:
        shown = _shown(first.get("input"), field)
        sentence = f"{variable_name(field)}={shown} is not allowed: it must be {allowed(field)}."
    more = len(errors) - 1
    if more:
        sentence += f" ({more} more setting{'s' if more > 1 else ''} {'are' if more > 1 else 'is'} wrong too.)"
    return sentence


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
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            text = binding.original.string  # it may start with the blank lines before it
            line = binding.original.line + text[: len(text) - len(text.lstrip())].count("\n")
            return f"{path} line {line} cannot be read: write it as NAME=value (or start it with # for a comment)."
    return None


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment and `.env`, or a SettingsError with one sentence."""
    problem = env_file_problem(Path(".env"))  # pydantic-settings reads it from the working folder
    if problem is not None:
        raise SettingsError(problem)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe(exc)) from None
