"""The import graph of bot/ and demos/ (issue 18): no circles, function-level and TYPE_CHECKING
imports included; what each layer may import; the Celery worker never loads the engine.

The rules are import-linter contracts in pyproject.toml ([tool.importlinter]); `lint-imports`
checks them from the command line, the first test here in process. The others show that the
contracts catch what they are for, on small packages written for the test, and what a worker
host really loads."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from importlinter.api import read_configuration
from importlinter.application.use_cases import lint_imports

ROOT = Path(__file__).resolve().parent.parent
# Every rule the hand-written checker enforced before import-linter, by contract id.
CONTRACTS = {
    "no-circles",
    "core-is-pure",
    "store-reads-values",
    "scope-is-values",
    "no-platform-below",
    "worker-side",
    "demos-stand-alone",
}
CONTRACT_TYPES = """contract_types = [
  "allowed_imports: tests.import_contracts.AllowedImportsContract",
  "acyclic_modules: tests.import_contracts.AcyclicModulesContract",
]
"""


def lint(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[bool, str]:
    """Whether every contract in `config` is kept, and lint-imports' report with its line breaks
    taken out (the console wraps long lines)."""
    passed = lint_imports(config_filename=str(config), cache_dir=None, no_logo=True)
    return passed, " ".join(capsys.readouterr().out.split())


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def planted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, files: Mapping[str, str], contracts: str
) -> Path:
    """A package written under tmp_path, importable, and a configuration checking it."""
    write(tmp_path, files)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "importlinter.toml"
    session = f'[tool.importlinter]\nroot_packages = ["{package}"]\ninclude_external_packages = true\n'
    config.write_text(session + CONTRACT_TYPES + contracts)
    return config


# ------------------------------------------------------------------------- the project


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    passed, report = lint(ROOT / "pyproject.toml", capsys)
    assert passed, report
    assert "BROKEN" not in report


def test_every_rule_of_the_import_graph_is_configured() -> None:
    configured = read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]
    assert {contract["id"] for contract in configured} >= CONTRACTS


def test_a_worker_host_loads_neither_the_engine_nor_its_libraries() -> None:
    """What `import bot.worker.celery_app` really loads (the contracts only read the source: bot.config
    imports SQLAlchemy inside a function the worker never calls). YAML is not asked about:
    Celery's serializers load it themselves."""
    probe = (
        "import sys, bot.worker.celery_app; "
        "heavy = ('bot.core', 'bot.core.engine', 'bot.store', 'fsrs', 'sqlalchemy'); "
        "print(' '.join(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


# ------------------------------------------------------------------------- the contracts catch


def test_the_layer_contracts_catch_a_planted_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The core reaching the store through a helper, the store reading the core's use cases, and
    a demo importing a library outside its list, each caught with its module."""
    config = planted(
        tmp_path,
        monkeypatch,
        "layered",
        {
            "layered/__init__.py": "",
            "layered/core/__init__.py": "",
            "layered/core/values.py": "import dataclasses\n",
            "layered/core/engine.py": "from layered import helper\n",
            "layered/helper.py": "def f() -> None:\n    import layered.store.tables\n",
            "layered/store/__init__.py": "",
            "layered/store/tables.py": "from layered.core.values import dataclasses\nfrom layered.core import engine\n",
            "layered/demos/__init__.py": "",
            "layered/demos/run.py": "import json\nimport yaml\nimport layered.demos\n",
        },
        """
[[tool.importlinter.contracts]]
name = "core is pure"
type = "forbidden"
source_modules = ["layered.core"]
forbidden_modules = ["layered.store", "sqlalchemy"]

[[tool.importlinter.contracts]]
name = "store reads values"
type = "allowed_imports"
source_modules = ["layered.store"]
judged_modules = ["layered.core"]
allowed_modules = ["layered.core.values"]

[[tool.importlinter.contracts]]
name = "demos stand alone"
type = "allowed_imports"
source_modules = ["layered.demos"]
allowed_modules = ["layered.demos"]
allow_standard_library = true
""",
    )
    passed, report = lint(config, capsys)
    assert not passed
    assert "Contracts: 0 kept, 3 broken." in report, report
    assert "layered.core is not allowed to import layered.store" in report, report
    assert "layered.core.engine -> layered.helper (l.1) layered.helper -> layered.store.tables (l.2)" in report
    assert "layered.store.tables imports layered.core.engine (line 2), which is not allowed." in report
    assert "layered.demos.run imports yaml (line 2), which is not allowed." in report
    assert "imports json" not in report and "imports layered.core.values" not in report


def test_the_circle_contract_finds_a_planted_circle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A function-level import one way, a TYPE_CHECKING import the other: a circle."""
    config = planted(
        tmp_path,
        monkeypatch,
        "circled",
        {
            "circled/__init__.py": "",
            "circled/a.py": "def f() -> None:\n    from circled import b\n",
            "circled/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
            "circled/c.py": "import circled.a\n",
        },
        '\n[[tool.importlinter.contracts]]\nname = "no circles"\ntype = "acyclic_modules"\n',
    )
    passed, report = lint(config, capsys)
    assert not passed
    assert "circled.a -> circled.b -> circled.a" in report
    assert "circled.c ->" not in report


def test_the_circle_contract_follows_packages_and_ignores_a_module_s_own_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        # The package's __init__ re-exports its app, which imports a sibling: no circle.
        "nested/__init__.py": "",
        "nested/sub/__init__.py": "from nested.sub.app import run\n",
        "nested/sub/app.py": "from nested.sub import views\ndef run() -> None: ...\n",
        "nested/sub/views.py": "",
        # Loading nested.sub runs its __init__: a circle once that __init__ loads tool.
        "nested/other.py": "import nested.sub.views\n",
        "nested/sub/tool.py": "from .. import other\n",
    }
    contract = '\n[[tool.importlinter.contracts]]\nname = "no circles"\ntype = "acyclic_modules"\n'
    config = planted(tmp_path, monkeypatch, "nested", files, contract)
    passed, report = lint(config, capsys)
    assert passed, report
    (tmp_path / "nested/sub/__init__.py").write_text("from nested.sub import tool\n")
    passed, report = lint(config, capsys)
    assert not passed
    assert "nested.other -> nested.sub -> nested.sub.tool -> nested.other" in report
