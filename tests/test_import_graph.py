"""The import graph of bot/ and demos/ (issue 18): no circles, function-level and TYPE_CHECKING
imports included; what each layer may import; the Celery worker never loads the engine.

`python -m tests.test_import_graph` prints the circles it finds."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "demos")

CORE_FORBIDDEN = (
    "sqlalchemy",
    "sqlmodel",
    "discord",
    "slack_bolt",
    "slack_sdk",
    "apscheduler",
    "torch",
    "celery",
    "redis",
    "bot.store",
    "bot.platforms",
)
DEMOS_MAY_USE = ("torch", "matplotlib", "demos")
# Hugging Face's GPT-2 (the demo extra pins it) is for its one module, imported inside the function that builds it.
DEMO_MODULE_MAY_USE = {"demos.hf": ("transformers",)}
# bot.core.scope holds only values (which communities a process serves, and the scheduler's row
# read back), made to be turned into SQL by the store; it imports nothing but other values.
STORE_MAY_USE = {"bot.core.values", "bot.core.records", "bot.core.community", "bot.core.errors", "bot.core.scope"}
# Values the store builds from rows that live beside the pure code reading them.
STORE_MAY_USE_NAMES = {("bot.core.item_analysis", "AnswerRow")}
CELERY_WORKER = "bot.worker"


@dataclass(frozen=True)
class Import:
    """One import statement's target: `import a.b` is ("a.b", None), `from a import b` is ("a", "b")."""

    module: str
    name: str | None
    line: int


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_under(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module of the packages: dotted name -> file."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(path, root)] = path
    return found


def imports_of(path: Path, package: str) -> list[Import]:
    """Every import in a file at any depth (module level, functions, TYPE_CHECKING blocks),
    relative imports resolved against `package`, the package the file's code runs in."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, None, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.extend(Import(module, alias.name, node.lineno) for alias in node.names)
    return found


def package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def targets(imp: Import, known: Mapping[str, Path] | set[str]) -> list[str]:
    """The modules an import loads: the module and its parent packages, and `x.y` for
    `from x import y` when y is a submodule."""
    loaded = [imp.module]
    if imp.name is not None and f"{imp.module}.{imp.name}" in known:
        loaded.append(f"{imp.module}.{imp.name}")
    parts = imp.module.split(".")
    loaded.extend(".".join(parts[:n]) for n in range(1, len(parts)))
    return loaded


def graph(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """module -> the modules of these packages it imports. A module's own parent packages are
    left out: Python loads them before the module, so they are no edge of its making."""
    known = modules_under(root, packages)
    edges: dict[str, set[str]] = {}
    for module, path in known.items():
        ancestors = {module.rsplit(".", n)[0] for n in range(1, module.count(".") + 1)}
        edges[module] = {
            target
            for imp in imports_of(path, package_of(module, path))
            for target in targets(imp, known)
            if target in known and target != module and target not in ancestors
        }
    return edges


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components larger than one module (Tarjan), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative so a deep graph never meets the recursion limit.
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def closure(edges: Mapping[str, set[str]], start: str) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for child in edges.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def external_imports(path: Path, module: str) -> Iterator[tuple[str, int]]:
    """Every module name an import in the file may load, with its line."""
    known = modules_under(ROOT)
    for imp in imports_of(path, package_of(module, path)):
        for target in targets(imp, known):
            yield target, imp.line
        if imp.name is not None:
            yield f"{imp.module}.{imp.name}", imp.line  # `from bot import store` may load bot.store


# ------------------------------------------------------------------------- tests


def test_there_is_no_import_circle_in_bot_or_demos() -> None:
    found = cycles(graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def test_the_checker_finds_a_planted_circle(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f() -> None:\n    from pkg import b\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    assert cycles(graph(tmp_path, ["pkg"])) == [["pkg.a", "pkg.b"]]


def test_the_checker_follows_packages_and_ignores_a_module_s_own_parents(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            # The package's __init__ re-exports its app, which imports a sibling: no circle.
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from pkg.sub.app import run\n",
            "pkg/sub/app.py": "from pkg.sub import views\ndef run() -> None: ...\n",
            "pkg/sub/views.py": "",
            # Loading pkg.sub runs its __init__, which loads other: a circle through a package.
            "pkg/other.py": "import pkg.sub.views\n",
            "pkg/sub/tool.py": "from .. import other\n",
        },
    )
    edges = graph(tmp_path, ["pkg"])
    assert edges["pkg.sub.app"] == {"pkg.sub.views"}
    assert edges["pkg.other"] == {"pkg.sub", "pkg.sub.views"}
    assert edges["pkg.sub.tool"] == {"pkg.other"}
    assert cycles(edges) == []
    (tmp_path / "pkg/sub/__init__.py").write_text("from pkg.sub import tool\n")
    assert cycles(graph(tmp_path, ["pkg"])) == [["pkg.other", "pkg.sub", "pkg.sub.tool"]]


def test_the_import_parser_sees_every_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import bot.store.tables\nfrom bot.store import repository\nfrom bot import store\n"
        "from ..store import database\ndef f():\n    import sqlalchemy.orm\n"
    )
    found = {t for imp in imports_of(sample, "bot.core") for t in [*targets(imp, set()), f"{imp.module}.{imp.name}"]}
    assert {"bot.store.tables", "bot.store", "bot.store.repository", "bot.store.database", "sqlalchemy.orm"} <= found


ALL = modules_under(ROOT)
CORE = sorted(m for m in ALL if within(m, "bot.core"))
DEMOS = sorted(m for m in ALL if within(m, "demos"))
STORE = sorted(m for m in ALL if within(m, "bot.store"))


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_database_scheduler_platform_queue_or_torch(module: str) -> None:
    for imported, line in external_imports(ALL[module], module):
        for forbidden in CORE_FORBIDDEN:
            assert not within(imported, forbidden), f"{module} (line {line}) imports {imported}"


@pytest.mark.parametrize("module", DEMOS)
def test_the_demos_import_only_torch_matplotlib_the_standard_library_and_hf_for_gpt2(module: str) -> None:
    for imported, line in external_imports(ALL[module], module):
        top = imported.partition(".")[0]
        allowed = top in sys.stdlib_module_names or top in DEMOS_MAY_USE or top == "__future__"
        allowed = allowed or top in DEMO_MODULE_MAY_USE.get(module, ())
        assert allowed, f"{module} (line {line}) imports {imported}"


def test_the_scheduler_imports_no_platform() -> None:
    for imported, line in external_imports(ALL["bot.schedule"], "bot.schedule"):
        assert not within(imported, "bot.platforms"), f"bot/schedule.py (line {line}) imports {imported}"


def test_the_web_page_imports_no_platform() -> None:
    for module in (m for m in ALL if within(m, "bot.web")):
        for imported, line in external_imports(ALL[module], module):
            assert not within(imported, "bot.platforms"), f"{module} (line {line}) imports {imported}"


@pytest.mark.parametrize("module", STORE)
def test_the_store_imports_from_the_core_only_the_values_it_stores(module: str) -> None:
    package = package_of(module, ALL[module])
    for imp in imports_of(ALL[module], package):
        if not within(imp.module, "bot.core") and not (imp.module == "bot" and imp.name == "core"):
            continue
        allowed = imp.module in STORE_MAY_USE or (imp.module, imp.name) in STORE_MAY_USE_NAMES
        assert allowed, f"{module} (line {imp.line}) imports {imp.name} from {imp.module}"


def test_the_scope_the_store_reads_stays_values_only() -> None:
    """bot.core.scope is in STORE_MAY_USE because it holds values: it may take others from the
    core only from the value modules the store may read itself."""
    for imp in imports_of(ALL["bot.core.scope"], "bot.core"):
        if within(imp.module, "bot"):
            assert imp.module in STORE_MAY_USE, f"bot/core/scope.py (line {imp.line}) imports {imp.module}"


def test_the_celery_worker_never_loads_the_engine() -> None:
    loaded = closure(graph(), CELERY_WORKER)
    assert "bot.core.engine" not in loaded, sorted(loaded)
    assert not any(within(m, "bot.store") or within(m, "bot.platforms") for m in loaded), sorted(loaded)


def test_a_worker_host_loads_neither_the_engine_nor_its_libraries() -> None:
    """What `import bot.worker` really loads (the graph above only reads the source). YAML is
    not asked about: Celery's serializers load it themselves."""
    probe = (
        "import sys, bot.worker; "
        "heavy = ('bot.core', 'bot.core.engine', 'bot.store', 'fsrs', 'sqlalchemy'); "
        "print(' '.join(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def main() -> None:
    found = cycles(graph())
    for component in found:
        print(" <-> ".join(component))
    print(f"{len(found)} circle(s)")


if __name__ == "__main__":
    main()
