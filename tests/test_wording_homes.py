"""Every sentence has a home (issue 29): the core's user-facing sentences live in the wording of
their feature (bot/core/wording/), not inline in a raise; what only one platform says lives in
that platform's text module; and none of these modules grows past 500 lines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from bot.core import wording

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "bot" / "core"
WORDING = CORE / "wording"
FEATURES = ("common", "rounds", "learning", "boards", "practice", "suggestions", "demos", "config", "web")
# What a user is told through: the errors written for them and a plain notice.
TOLD = {"InvalidInput", "NotFound", "StudyBotError", "StoreUnavailable", "Notice"}
MAX_LINES = 500


def _is_sentence(node: ast.expr) -> bool:
    """A literal a user would read: a string or f-string with a word in it, or one built from
    them with + or % (a lone "." or ": " joining worded parts is layout, not a sentence)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and any(c.isalpha() for c in node.value)
    if isinstance(node, ast.JoinedStr):
        return any(_is_sentence(part) for part in node.values if isinstance(part, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _is_sentence(node.left) or _is_sentence(node.right)
    return False


def inline_sentences(source: str, filename: str) -> list[str]:
    """`file:line` of every `InvalidInput("...")`, `NotFound(f"...")` or `Notice("...")` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name in TOLD and _is_sentence(node.args[0]):
            found.append(f"{filename}:{node.lineno}")
    return found


def core_modules() -> list[Path]:
    return sorted(path for path in CORE.rglob("*.py") if WORDING not in path.parents)


def test_the_checker_sees_a_literal_sentence_in_every_form() -> None:
    planted = (
        'raise InvalidInput("Bad.")\n'
        'raise errors.NotFound(f"No #{n}.")\n'
        'return Notice("A " + "b.")\n'
        "raise InvalidInput(wording.BAD)\n"
        "raise InvalidInput(wording.bad(n))\n"
        "raise InvalidInput(str(exc))\n"
        'raise InvalidInput(wording.USAGE + ".")\n'
        'raise NotFound(f"{wording.GONE}: {name}")\n'
    )
    assert inline_sentences(planted, "planted.py") == ["planted.py:1", "planted.py:2", "planted.py:3"]


def test_no_core_module_words_a_sentence_outside_the_wording() -> None:
    found = [hit for path in core_modules() for hit in inline_sentences(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, f"move these sentences into bot/core/wording/<feature>.py: {found}"


def defined_names(path: Path) -> set[str]:
    """The public names a module defines itself (its sentences), not the ones it imports."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return {name for name in found if not name.startswith("_")}


def test_the_wording_package_reexports_every_feature_sentence_once() -> None:
    """`wording.NAME` reaches every public name of every feature module, and no name is worded twice."""
    assert {path.stem for path in WORDING.glob("*.py")} == {"__init__", *FEATURES}
    seen: dict[str, str] = {}
    for feature in FEATURES:
        module = importlib.import_module(f"bot.core.wording.{feature}")
        for name in sorted(defined_names(WORDING / f"{feature}.py")):
            assert name not in seen, f"{name} is in both {seen[name]} and {feature}"
            seen[name] = feature
            assert getattr(wording, name) is getattr(module, name), f"wording.{name} is not {feature}.{name}"
    assert sorted(wording.__all__) == sorted(seen)


@pytest.mark.parametrize("platform", ["discord", "console"])
def test_a_platform_s_own_text_is_not_also_in_the_core(platform: str) -> None:
    own = defined_names(ROOT / "bot" / "platforms" / platform / "text.py")
    assert own, platform
    both = sorted(own & set(wording.__all__))
    assert not both, f"bot/platforms/{platform}/text.py and bot/core/wording both word {both}"
    text = importlib.import_module(f"bot.platforms.{platform}.text")
    assert all(hasattr(text, name) for name in own)


def test_the_wording_modules_stay_short() -> None:
    paths = [*WORDING.glob("*.py"), ROOT / "bot/platforms/discord/text.py", ROOT / "bot/platforms/console/text.py"]
    long = {str(path.relative_to(ROOT)): n for path in paths if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"
