"""Slack's Block Kit and Web API as slack_sdk publishes them: every `blocks` array through
`Block.parse` and `validate_json()`, every view through `View(**view)`, and the Web API
methods `AsyncWebClient` has (its methods' `api_call` names).

A key the model does not know is a violation too: slack_sdk drops it with a warning, and
Slack answers invalid_blocks or invalid_arguments."""

from __future__ import annotations

import functools
import inspect
import json
import re
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View
from slack_sdk.web.async_client import AsyncWebClient


@functools.cache
def web_api_methods() -> dict[str, str]:
    """Each Web API method AsyncWebClient calls, by its api_call name: the client method."""
    found: dict[str, str] = {}
    for name, function in inspect.getmembers(AsyncWebClient, inspect.iscoroutinefunction):
        if name.startswith("_") or name == "api_call":
            continue
        for called in re.findall(r'api_call\(\s*"([a-zA-Z0-9_.]+)"', inspect.getsource(function)):
            found.setdefault(called, name)
    return found


def check_method(method: str) -> list[str]:
    if method in web_api_methods():
        return []
    return [f"{method}: not a Web API method slack_sdk's AsyncWebClient has"]


def dropped(sent: Any, kept: Any, at: str) -> list[str]:
    """Keys in `sent` the model left out of `kept` (its to_dict()): ones it does not know."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        problems = [f"{at}.{k}" for k, v in sent.items() if v not in (None, "", [], {}) and k not in kept]
        for key, value in sent.items():
            if key in kept:
                problems += dropped(value, kept[key], f"{at}.{key}")
        return problems
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        return [p for n, (s, k) in enumerate(zip(sent, kept, strict=True)) for p in dropped(s, k, f"{at}[{n}]")]
    return []


def as_json(value: Any) -> Any:
    """Form-encoded parameters carry blocks and views as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def check_blocks(blocks: Any, where: str) -> list[str]:
    """What slack_sdk's Block Kit models refuse in a `blocks` array (empty: nothing)."""
    blocks = as_json(blocks)
    if not isinstance(blocks, list):
        return [f"{where}: blocks is {type(blocks).__name__}, not a list"]
    problems = []
    for n, raw in enumerate(blocks):
        if not isinstance(raw, dict):
            problems.append(f"{where}: block {n} is not an object")
            continue
        try:
            block = Block.parse(raw)
            if block is None:
                problems.append(f"{where}: block {n} has no type slack_sdk knows ({raw.get('type')!r})")
                continue
            block.validate_json()
        except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as error:
            problems.append(f"{where}: block {n} ({raw.get('type')}): {error}")
            continue
        unknown = dropped(raw, block.to_dict(), f"block {n}")
        if unknown:
            problems.append(f"{where}: keys slack_sdk's models do not know: {unknown}")
    return problems


def check_view(view: Any, where: str) -> list[str]:
    """What slack_sdk's View model refuses (a modal's title over 24 characters, no blocks or
    over 100, an input without a label...), then each of its blocks."""
    view = as_json(view)
    if not isinstance(view, dict):
        return [f"{where}: the view is {type(view).__name__}, not an object"]
    try:
        model = View(**view)
        model.validate_json()
    except (SlackObjectFormationError, TypeError, ValueError, KeyError, AttributeError) as error:
        return [f"{where}: view ({view.get('type')}): {error}"]
    problems = check_blocks(view.get("blocks") or [], f"{where} view")
    rest = {k: v for k, v in view.items() if k != "blocks"}
    unknown = dropped(rest, {k: v for k, v in model.to_dict().items() if k != "blocks"}, "view")
    if unknown:
        problems.append(f"{where}: view keys slack_sdk's View does not know: {unknown}")
    return problems


def check_ack(body: Any, where: str) -> list[str]:
    """A view_submission's ack (or a slash command's): a `response_action` of update or push
    carries a view; `errors` maps block ids to text; a message ack carries blocks."""
    if not isinstance(body, dict) or not body:
        return []
    action = body.get("response_action")
    if action in ("update", "push"):
        return check_view(body.get("view"), f"{where} ({action})")
    if action == "errors":
        errors = body.get("errors")
        if not isinstance(errors, dict) or not all(isinstance(v, str) and v for v in errors.values()):
            return [f"{where}: errors must map block ids to text, not {errors!r}"]
        return []
    if action == "clear" or action is None:
        return check_blocks(body["blocks"], where) if "blocks" in body else []
    return [f"{where}: response_action {action!r} is not one Slack knows"]
