"""The reviewers' records next to the bank files: pairs judged distinct though they score as
near-duplicates (reviewed-pairs.yaml), and prompt echoes judged fair (reviewed-echoes.yaml),
each entry with the sentence that says why."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.core.bank.nodes import YAML_LOADER

# Pairs a reviewer judged distinct though they score above the threshold (next to the bank files).
REVIEWED_PAIRS = "reviewed-pairs.yaml"
# Prompt echoes (see similarity.echo_findings()) a reviewer judged fair, with why, in the same manner.
REVIEWED_ECHOES = "reviewed-echoes.yaml"
MIN_DISTINCT = 30


def _review_entries(path: Path, form: str) -> tuple[list[yaml.Node], list[str]]:
    """A reviewers' record file's entries (a YAML list, `form` each), or why it cannot be read
    as path:line; an empty file has no entries."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [f"{path}:{mark.line + 1 if mark else 1}: cannot be read as YAML ({exc})"]
    if root is None:
        return [], []
    if not isinstance(root, yaml.SequenceNode):
        return [], [f"{path}:{root.start_mark.line + 1}: must be a list of {form} entries"]
    return list(root.value), []


def reviewed_pairs(path: Path, ids: set[str]) -> tuple[set[frozenset[str]], list[str]]:
    """The pairs of questions/reviewed-pairs.yaml (`- pair: [id-a, id-b]` with a `distinct:`
    sentence saying what each asks that the other does not), and its problems as path:line."""
    pairs: set[frozenset[str]] = set()
    entries, problems = _review_entries(path, "`- pair: [id-a, id-b]`")
    first: dict[frozenset[str], int] = {}
    for entry in entries:
        line = entry.start_mark.line + 1
        fields = {k.value: v for k, v in entry.value} if isinstance(entry, yaml.MappingNode) else {}
        pair, distinct = fields.get("pair"), fields.get("distinct")
        names = [n.value for n in getattr(pair, "value", []) if isinstance(n, yaml.ScalarNode)]
        names = names if isinstance(pair, yaml.SequenceNode) else []
        if len(names) != 2 or names[0] == names[1]:
            problems.append(f"{path}:{line}: `pair` must name two different question ids")
            continue
        unknown = [n for n in names if n not in ids]
        for name in unknown:
            problems.append(f"{path}:{line}: unknown question id '{name}'")
        if not isinstance(distinct, yaml.ScalarNode) or len(str(distinct.value).strip()) < MIN_DISTINCT:
            problems.append(
                f"{path}:{line}: `distinct` must say in one sentence (at least {MIN_DISTINCT} characters) "
                "what each question asks that the other does not"
            )
            continue
        key = frozenset(names)
        if key in first:
            problems.append(f"{path}:{line}: the pair {names[0]}, {names[1]} is already listed at line {first[key]}")
        elif not unknown:
            first[key] = line
            pairs.add(key)
    return pairs, problems


def reviewed_echoes(path: Path, ids: set[str]) -> tuple[dict[str, frozenset[str]], list[str]]:
    """The entries of questions/reviewed-echoes.yaml (`- question: id`, `words: [...]` as lint
    names them, `why:` a sentence saying why the echo does not give the key away), by id, and
    the file's problems as path:line."""
    found: dict[str, frozenset[str]] = {}
    entries, problems = _review_entries(path, "`- question: id`")
    for entry in entries:
        line = entry.start_mark.line + 1
        fields = {k.value: v for k, v in entry.value} if isinstance(entry, yaml.MappingNode) else {}
        qnode, wnode, why = fields.get("question"), fields.get("words"), fields.get("why")
        qid = str(qnode.value) if isinstance(qnode, yaml.ScalarNode) else ""
        words = [str(n.value) for n in getattr(wnode, "value", []) if isinstance(n, yaml.ScalarNode)]
        if not qid or not isinstance(wnode, yaml.SequenceNode) or not words:
            problems.append(f"{path}:{line}: an entry names its `question` and the `words` lint reported")
            continue
        if qid not in ids:
            problems.append(f"{path}:{line}: unknown question id '{qid}'")
            continue
        if not isinstance(why, yaml.ScalarNode) or len(str(why.value).strip()) < MIN_DISTINCT:
            problems.append(
                f"{path}:{line}: `why` must say in one sentence (at least {MIN_DISTINCT} characters) "
                "why the echo does not give the key away"
            )
            continue
        if qid in found:
            problems.append(f"{path}:{line}: question '{qid}' is already listed")
            continue
        found[qid] = frozenset(words)
    return found, problems
