"""Discord's HTTP API as its OpenAPI 3.1 document describes it: which operation a request is,
whether its body and query fit the operation, whether a response fits what the document says
that operation answers with that status.

One relaxation, for request bodies only: where the document says a snowflake (a string of
digits), a non-negative JSON integer is taken too. discord.py sends ids as numbers
(recipient_id, message_reference, an upload's attachment id 0), Discord takes them, and
Discord's own docs upload example sends `"attachments": [{"id": 0, ...}]`. Answers the fake
gives are held to strings, as Discord sends them.

The document is loaded and its validators compiled once per test session (`contract()`)."""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT = Path(__file__).resolve().parent.parent / "vendor" / "discord-openapi.json"
BASE = "urn:discord-openapi"
METHODS = ("get", "put", "post", "patch", "delete")


def pointer(*parts: str) -> str:
    """A JSON pointer to `parts` (RFC 6901 escapes: ~ as ~0, / as ~1)."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    template: str  # as the document spells it, e.g. /channels/{channel_id}/messages
    pointer: str  # where it lies in the document
    query: frozenset[str]  # the query parameters it takes
    has_body: bool
    body_required: bool


class DiscordContract:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        lenient = copy.deepcopy(document)
        schemas = lenient["components"]["schemas"]
        schemas["SnowflakeType"] = {"anyOf": [schemas["SnowflakeType"], {"type": "integer", "minimum": 0}]}
        self.registries: dict[bool, Registry[Any]] = {
            strict: Registry().with_resource(BASE, Resource.from_contents(doc, default_specification=DRAFT202012))
            for strict, doc in ((True, document), (False, lenient))
        }
        self._validators: dict[tuple[str, bool], Draft202012Validator] = {}
        # path templates by segment count, literal segments before {placeholders}
        self._routes: dict[int, list[tuple[tuple[str | None, ...], dict[str, Operation]]]] = {}
        for template, item in document["paths"].items():
            segments = tuple(None if s.startswith("{") else s for s in template.strip("/").split("/"))
            shared = [p for p in item.get("parameters", []) if p.get("in") == "query"]
            operations = {}
            for method in METHODS:
                spec = item.get(method)
                if spec is None:
                    continue
                query = shared + [p for p in spec.get("parameters", []) if p.get("in") == "query"]
                body = spec.get("requestBody")
                operations[method.upper()] = Operation(
                    method.upper(),
                    template,
                    pointer("paths", template, method),
                    frozenset(p["name"] for p in query),
                    body is not None,
                    bool(body and body.get("required")),
                )
            self._routes.setdefault(len(segments), []).append((segments, operations))
        for routes in self._routes.values():
            routes.sort(key=lambda route: tuple(s is None for s in route[0]))

    def operation(self, method: str, path: str) -> Operation | None:
        """The operation a request is (None: the document has no such path and method)."""
        parts = path.strip("/").split("/")
        for segments, operations in self._routes.get(len(parts), []):
            if method.upper() in operations and all(s is None or s == p for s, p in zip(segments, parts, strict=True)):
                return operations[method.upper()]
        return None

    def validator(self, where: str, strict: bool = True) -> Draft202012Validator:
        """A compiled validator for the schema at `where` (a JSON pointer into the document);
        not `strict`: numbers taken for snowflakes."""
        found = self._validators.get((where, strict))
        if found is None:
            schema = {"$ref": f"{BASE}#{where}"}
            found = Draft202012Validator(schema, registry=self.registries[strict])
            self._validators[(where, strict)] = found
        return found

    @staticmethod
    def describe(validator: Draft202012Validator, instance: Any) -> str | None:
        error = best_match(validator.iter_errors(instance))
        if error is None:
            return None
        error = narrow(error)
        at = "/".join(str(p) for p in error.absolute_path) or "(the body)"
        return f"at {at}: {error.message[:300]}"

    def check_request(self, method: str, path: str, query: set[str], body: Any) -> list[str]:
        """What the document says is wrong with this request (empty: nothing)."""
        if self.operation(method, path) is None:
            return [f"{method} {path}: the document has no such operation"]
        return self.check_query(method, path, query) + self.check_body(method, path, body)

    def check_query(self, method: str, path: str, query: set[str]) -> list[str]:
        """Query parameters the operation does not document (Discord ignores them, so a
        parameter the bot means is lost)."""
        found = self.operation(method, path)
        unknown = sorted(query - found.query) if found else []
        if found is None or not unknown:
            return []
        return [f"{method} {found.template}: query parameters {unknown} are not documented"]

    def check_body(self, method: str, path: str, body: Any) -> list[str]:
        """What is wrong with the body (a multipart one: its payload_json part), which
        Discord refuses with 400 Invalid Form Body."""
        found = self.operation(method, path)
        if found is None:
            return []
        if body is None:
            return [f"{method} {found.template}: a body is required"] if found.body_required else []
        if not found.has_body:
            return [f"{method} {found.template}: the operation takes no body"]
        where = found.pointer + pointer("requestBody", "content", "application/json", "schema")
        problem = self.describe(self.validator(where, strict=False), body)
        return [f"{method} {found.template} request {problem}"] if problem else []

    def check_response(self, method: str, path: str, status: int, body: Any) -> list[str]:
        """What the document says is wrong with this answer. 5xx answers are faults the tests
        inject; the document describes none, so they are not checked."""
        found = self.operation(method, path)
        if found is None or status >= 500:
            return []
        responses = self.resolve(found.pointer + pointer("responses"))
        key = next((k for k in (str(status), f"{status // 100}XX", "default") if k in responses), None)
        if key is None:
            return [f"{method} {found.template}: status {status} is not a documented answer"]
        schema_at = self.schema_pointer(found.pointer + pointer("responses", key))
        if schema_at is None:
            return [] if body is None else [f"{method} {found.template}: a {status} answer has no body"]
        if body is None:
            return [f"{method} {found.template}: a {status} answer has a JSON body"]
        problem = self.describe(self.validator(schema_at), body)
        return [f"{method} {found.template} {status} response {problem}"] if problem else []

    def schema_pointer(self, at: str) -> str | None:
        """Where the JSON schema of the answer at `at` lies (following a $ref to a shared
        answer); None when the answer has no JSON body."""
        answer = self.node(at)
        while "$ref" in answer:
            at = answer["$ref"].removeprefix("#")
            answer = self.node(at)
        if "application/json" not in answer.get("content", {}):
            return None
        return at + pointer("content", "application/json", "schema")

    def node(self, where: str) -> dict[str, Any]:
        found: Any = self.document
        for part in where.strip("/").split("/"):
            found = found[part.replace("~1", "/").replace("~0", "~")]
        return found  # type: ignore[no-any-return]

    def resolve(self, where: str) -> dict[str, Any]:
        """The node at `where`, following $refs."""
        found = self.node(where)
        while "$ref" in found:
            found = self.node(found["$ref"].removeprefix("#"))
        return found


def narrow(error: ValidationError) -> ValidationError:
    """Into an anyOf/oneOf, the branch the body meant: those of another JSON type, or whose
    `type` discriminator it does not match, are set aside, then the one with fewest errors."""
    while error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[object, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.schema_path[0], []).append(sub)
        fitting = [
            errors
            for errors in branches.values()
            if not any(
                (e.validator in ("enum", "const") and list(e.relative_path) == ["type"])
                or (e.validator == "type" and not e.relative_path)
                for e in errors
            )
        ]
        if not fitting:
            break
        chosen = best_match(min(fitting, key=len))
        if chosen is None:
            break
        error = chosen
    return error


@functools.cache
def contract() -> DiscordContract:
    return DiscordContract(json.loads(DOCUMENT.read_text(encoding="utf-8")))
