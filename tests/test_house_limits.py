"""The house's size limits, so that no class or module becomes the place every feature lands
again: no class in bot/ with more than 30 public methods (its bases' counted, as a caller sees
them), and no module in bot/ over 500 lines (the migrations aside: each is one schema step)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import bot

ROOT = Path(__file__).resolve().parent.parent
MAX_PUBLIC_METHODS = 30
MAX_LINES = 500


def bot_modules() -> list[str]:
    """Every module of bot/ but the migrations and `python -m bot`'s entry point."""
    return sorted(
        info.name
        for info in pkgutil.walk_packages(bot.__path__, "bot.")
        if ".migrations" not in info.name and info.name != "bot.__main__"
    )


def public_methods(cls: type) -> list[str]:
    """The public callables a caller of `cls` sees that bot/ wrote: its own and its bases'
    (a library's base class, discord.py's Bot, is not ours to count)."""
    names = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] != "bot":
            continue
        for name, value in vars(klass).items():
            method = inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod))
            if method and not name.startswith("_"):
                names.add(name)
    return sorted(names)


def classes_of_bot() -> list[type]:
    found = []
    for name in bot_modules():
        module = importlib.import_module(name)
        found.extend(
            cls for _, cls in inspect.getmembers(module, inspect.isclass) if cls.__module__ == module.__name__
        )
    return found


def test_no_class_has_more_than_30_public_methods() -> None:
    crowded = {
        f"{cls.__module__}.{cls.__qualname__}": len(methods)
        for cls in classes_of_bot()
        if len(methods := public_methods(cls)) > MAX_PUBLIC_METHODS
    }
    assert crowded == {}


def test_no_module_of_bot_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "bot").rglob("*.py"))
        if "migrations" not in path.parts and (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_count_sees_inherited_methods() -> None:
    """A class of 20 methods on a base of 20 has 40 for its callers: the limit counts them all."""
    base = type("Base", (), {f"m{i}": lambda _self: None for i in range(20)} | {"__module__": "bot.example"})
    child = type("Child", (base,), {f"n{i}": lambda _self: None for i in range(20)} | {"__module__": "bot.example"})
    assert len(public_methods(child)) == 40
