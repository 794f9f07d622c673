"""README and docs/: every relative link leads to a file (and a heading) that exists, every
docs page is linked from README, and README stays a short front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 12_000

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(_CODE_SPAN.sub("", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text, lower case, punctuation dropped
    (letters, digits, `-` and `_` kept), each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file; a repeated heading gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    return [m.group(1) for line in prose_lines(path.read_text(encoding="utf-8")) for m in _LINK.finditer(line)]


def broken(path: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of `path` whose file, or heading, does not exist in `root`, with the reason."""
    problems = []
    root = root.resolve()
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http(s), mailto: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path.resolve()
        if not resolved.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading #{anchor} in {resolved.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_readme_is_a_short_front_door() -> None:
    size = len(README.read_text(encoding="utf-8"))
    assert size < README_LIMIT, f"README.md is {size:,} characters; keep it under {README_LIMIT:,}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(README) if not t.startswith("#")}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert missing == []


def test_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    """The checker itself: a good link passes, a wrong file and a wrong heading are caught,
    and links inside code are not links."""
    (tmp_path / "docs" / "images").mkdir(parents=True)
    (tmp_path / "docs" / "images" / "shot.png").write_bytes(b"")
    (tmp_path / "README.md").write_text("# Front door\n", encoding="utf-8")
    page = tmp_path / "docs" / "probe.md"
    page.write_text(
        "# The Page's `first` heading\n\n## Again\n\n## Again\n\n"
        "[ok](#the-pages-first-heading) [ok](#again-1) [ok](../README.md#front-door) ![ok](images/shot.png)\n"
        "[bad](nowhere.md) [bad](#no-such-heading) [bad](../README.md#nor-here) [bad](../../outside.md)\n"
        "`[code](not-a-link.md)`\n\n```\n[fenced](not-a-link-either.md)\n```\n",
        encoding="utf-8",
    )
    assert broken(page, root=tmp_path) == [
        "nowhere.md: no such file",
        "#no-such-heading: no heading #no-such-heading in docs/probe.md",
        "../README.md#nor-here: no heading #nor-here in README.md",
        "../../outside.md: outside the repository",
    ]
