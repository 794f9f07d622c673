"""docs/design.md's layout is the tree: every module and package of bot/ is named in it (the
migrations as one folder), and every path it names exists. The layout is the fenced block
under "## Layout": one entry per line, indented two spaces per folder level, a folder ending
in "/", a line whose name starts with a space continuing the line above; several names may
share a line ("budget.py, hf.py")."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
NAME = re.compile(r"[\w.\-]+/?")


def layout_block(text: str) -> list[str]:
    section = text.split("## Layout", 1)[1]
    return section.split("```", 2)[1].strip("\n").splitlines()


def named_paths(lines: list[str]) -> set[str]:
    """Every path the layout names, as a path from the repository root ("bot/core/services/rounds.py")."""
    stack: list[tuple[int, str]] = []
    found: set[str] = set()
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        head = line.strip()
        if not head or indent % 2 or line[:20] == " " * 20:  # a continuation of the line above
            continue
        names = []
        for part in re.split(r"\s{2,}", head, maxsplit=1)[0].split(","):
            match = NAME.fullmatch(part.strip())
            if match:
                names.append(match.group(0))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = "".join(folder for _, folder in stack)
        for name in names:
            found.add(prefix + name.rstrip("/"))
        if len(names) == 1 and names[0].endswith("/"):
            stack.append((indent, names[0]))
    return found


def bot_tree() -> set[str]:
    """bot/'s modules and packages, as the layout names them (__init__.py and the migrations'
    files aside: a package is its folder)."""
    tree = set()
    kept_whole = ("static", "templates", "migrations")  # folders named as one entry
    for path in (ROOT / "bot").rglob("*"):
        relative = path.relative_to(ROOT)
        if "__pycache__" in relative.parts or path.name == "__init__.py":
            continue
        if any(part in kept_whole for part in relative.parts[:-1]):
            continue
        if path.is_dir() or path.suffix in (".py", ".yml"):
            tree.add(str(relative))
    return tree


def test_every_module_of_bot_is_in_the_layout() -> None:
    named = named_paths(layout_block(DESIGN.read_text()))
    missing = sorted(bot_tree() - named)
    assert missing == [], "in bot/ but not in docs/design.md's layout:\n" + "\n".join(missing)


def test_every_path_the_layout_names_exists() -> None:
    named = named_paths(layout_block(DESIGN.read_text()))
    gone = sorted(path for path in named if not (ROOT / path).exists())
    assert gone == [], "named in docs/design.md's layout but not in the tree:\n" + "\n".join(gone)


def test_the_reader_follows_folders_and_shared_lines() -> None:
    lines = [
        "bot/                    the bot",
        "  core/                 the rules",
        "    rounds.py           the daily round",
        "                        continued here",
        "  cli.py                the CLI",
        "demos/                  the demos",
        "  budget.py, hf.py      two at once",
    ]
    assert named_paths(lines) == {
        "bot",
        "bot/core",
        "bot/core/rounds.py",
        "bot/cli.py",
        "demos",
        "demos/budget.py",
        "demos/hf.py",
    }
