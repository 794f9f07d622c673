"""The YAML side of the loader: a bank file's node tree as the plain data the schema reads, and
a schema location (pydantic's `loc`) as the line it stands on.

PyYAML's nodes keep line numbers that plain dicts lose, so the loader composes nodes, converts
them once (read_document) and, for each problem, walks the nodes along its location (line_of).
What pydantic cannot see in a dict, a key written twice or a key that is not a word, is found
here. Aliases are converted once and shared, and an alias inside itself becomes a value no
field accepts, so no document, however hostile, makes the conversion loop or explode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from bot.core.bank.schema import Loc, Written

# libyaml's parser when PyYAML was built with it (its wheels are): the bank parses in a fifth of
# the pure-Python parser's time, which is most of the bot's start-up.
YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


class Cycle:
    """An alias met inside the node it names (`&a [*a]`): neither text, a list nor a mapping."""


@dataclass
class Document:
    """A composed YAML document: its data for the schema, and the problems of its keys
    (location of the mapping, line, sentence), which the schema never sees."""

    root: yaml.Node
    data: object = None
    key_problems: list[tuple[Loc, int, str]] = field(default_factory=list)


def read_document(root: yaml.Node) -> Document:
    """The document's data: strings as str, null as None, other scalars as Written, sequences
    as lists and mappings as dicts (a key's first value kept)."""
    document = Document(root)
    document.data = _Converter(document).convert(root, ())
    return document


def _mapping_name(loc: Loc) -> str | None:
    """How a mapping of the schema is named in a sentence; None for one the schema does not hold."""
    if loc == ():
        return "the file"
    if len(loc) == 2 and loc[0] == "questions":
        return "a question"
    if len(loc) == 4 and loc[0] == "questions" and loc[2] == "choices":
        return "a choice"
    return None


class _Converter:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.done: dict[int, object] = {}
        self.open: set[int] = set()

    def convert(self, node: yaml.Node, loc: Loc) -> object:
        key = id(node)
        if key in self.done:
            return self.done[key]
        if key in self.open:
            return Cycle()
        self.open.add(key)
        try:
            value: object
            if isinstance(node, yaml.ScalarNode):
                value = _scalar(node)
            elif isinstance(node, yaml.SequenceNode):
                value = [self.convert(item, (*loc, i)) for i, item in enumerate(node.value)]
            elif isinstance(node, yaml.MappingNode):
                value = self._mapping(node, loc)
            else:
                value = None
        finally:
            self.open.discard(key)
        self.done[key] = value
        return value

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[str, object]:
        what = _mapping_name(loc)
        entries: dict[str, object] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                if what:
                    self.document.key_problems.append(
                        (loc, _line(key_node), f"{what} has a key that is not a plain word")
                    )
                continue
            key = str(key_node.value)
            if key in entries:
                if what:
                    self.document.key_problems.append((loc, _line(key_node), f"duplicate key '{key}' in {what}"))
                continue
            entries[key] = self.convert(value_node, (*loc, key))
        return entries


def _scalar(node: yaml.ScalarNode) -> object:
    if node.tag == _STR:
        return str(node.value)
    if node.tag == _NULL:
        return None
    loader = yaml.SafeLoader("")
    try:
        return Written(str(node.value), loader.construct_object(node, deep=True))
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        return Written(str(node.value), problem=str(getattr(exc, "problem", None) or exc))
    finally:
        loader.dispose()


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def line_of(root: yaml.Node, loc: Loc, key: bool = False) -> int:
    """The line of what `loc` names: its value's line, or with `key` its key's line (a value's
    own when it has no key). Where the location goes further than the nodes, the deepest
    node it reaches."""
    node, key_node = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = next(
                (kv for kv in node.value if isinstance(kv[0], yaml.ScalarNode) and str(kv[0].value) == part), None
            )
            if found is None:
                break
            key_node, node = found
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            key_node, node = None, node.value[part]
        else:
            break
    return _line(key_node if key and key_node is not None else node)
