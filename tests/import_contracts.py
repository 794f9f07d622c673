"""Two import-linter contract types the built-in ones do not cover (pyproject.toml's
[tool.importlinter] registers them; `lint-imports` runs them with the rest):

- allowed_imports: an allow-list. The source modules may import directly only the allowed
  modules (and what lies under them), the standard library when `allow_standard_library` is
  set, and, when `judged_modules` is given, anything outside those (e.g. "from the core, only
  its values"). Forbidden contracts name what may not be imported; this names what may.
- acyclic_modules: no import circle between modules, counting the parent packages an import
  loads (`import a.b.c` runs a/__init__.py and a/b/__init__.py first) and leaving out a
  module's own parents (Python has loaded them before the module). Function-level and
  TYPE_CHECKING imports count: the graph has them unless the configuration leaves them out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

import grimp
from importlinter import Contract, ContractCheck, fields, output
from importlinter.application import contract_utils
from importlinter.domain.helpers import module_expressions_to_modules


def within(module: str, packages: Iterable[str]) -> bool:
    """Whether `module` is one of `packages` or lies under one."""
    return any(module == package or module.startswith(package + ".") for package in packages)


def ancestors(module: str) -> list[str]:
    """The packages above `module`, outermost first: a.b.c -> [a, a.b]."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def is_standard_library(module: str) -> bool:
    return module.partition(".")[0] in sys.stdlib_module_names | {"__future__"}


def lines_of(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    found = sorted({detail["line_number"] for detail in details})
    return f" (line {', '.join(map(str, found))})" if found else ""


class AllowedImportsContract(Contract):
    """Source modules import directly only the allowed modules (see the module's docstring)."""

    type_name = "allowed_imports"

    source_modules = fields.ListField(subfield=fields.ModuleExpressionField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField())
    judged_modules = fields.ListField(subfield=fields.ModuleField(), required=False)
    allow_standard_library = fields.BooleanField(required=False, default=False)
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)
    unmatched_ignore_imports_alerting = fields.EnumField(
        contract_utils.AlertLevel, default=contract_utils.AlertLevel.ERROR
    )

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:  # noqa: ARG002 - import-linter's
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,
            unmatched_alerting=self.unmatched_ignore_imports_alerting,
        )
        # A module named here that is not in the graph (moved, renamed) is an error, not a pass.
        sources = module_expressions_to_modules(graph, self.source_modules, raise_if_unmatched=True)
        allowed = [module.name for module in self.allowed_modules]
        judged = [module.name for module in self.judged_modules or ()]
        checked = {module.name for module in sources}
        for module in list(checked):
            checked |= graph.find_descendants(module)
        violations = sorted(self._violations(graph, checked, allowed, judged))
        return ContractCheck(
            kept=not violations,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"violations": violations},
        )

    def _violations(
        self, graph: grimp.ImportGraph, checked: set[str], allowed: list[str], judged: list[str]
    ) -> Iterator[tuple[str, str, str]]:
        for importer in checked:
            for imported in graph.find_modules_directly_imported_by(importer):
                if judged and not within(imported, judged):
                    continue
                if within(imported, allowed) or (self.allow_standard_library and is_standard_library(imported)):
                    continue
                yield importer, imported, lines_of(graph, importer, imported)

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, lines in check.metadata["violations"]:
            output.print_error(f"{importer} imports {imported}{lines}, which is not allowed.", bold=False)
            output.new_line()


class AcyclicModulesContract(Contract):
    """No import circle between the modules of the root packages (see the module's docstring)."""

    type_name = "acyclic_modules"

    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)
    unmatched_ignore_imports_alerting = fields.EnumField(
        contract_utils.AlertLevel, default=contract_utils.AlertLevel.ERROR
    )

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:  # noqa: ARG002 - import-linter's
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,
            unmatched_alerting=self.unmatched_ignore_imports_alerting,
        )
        internal = {m for m in graph.modules if not graph.is_module_squashed(m)}
        edges = {(importer, imported) for importer in internal for imported in loaded_by(graph, importer, internal)}
        for importer, imported in list(edges):
            if not graph.direct_import_exists(importer=importer, imported=imported):
                graph.add_import(importer=importer, imported=imported)
        for importer in internal:
            for parent in ancestors(importer):
                if graph.direct_import_exists(importer=importer, imported=parent):
                    graph.remove_import(importer=importer, imported=parent)
        circles: set[tuple[str, ...]] = set()
        for importer in sorted(internal):
            for imported in sorted(graph.find_modules_directly_imported_by(importer) & internal):
                back = graph.find_shortest_chain(importer=imported, imported=importer)
                if back is not None:
                    circle = (importer, *back)
                    start = circle.index(min(circle[:-1]))
                    circles.add(circle[start:-1] + circle[:start] + (circle[start],))
        return ContractCheck(
            kept=not circles,
            warnings=list(removal.warnings),
            ignored_import_count=removal.ignored_import_count,
            metadata={"circles": sorted(circles)},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for circle in check.metadata["circles"]:
            output.print_error(" -> ".join(circle), bold=False)
            output.new_line()


def loaded_by(graph: grimp.ImportGraph, importer: str, internal: set[str]) -> set[str]:
    """The internal modules an import statement of `importer` loads: what it names and the
    packages above that, less the packages above `importer` itself."""
    own = set(ancestors(importer))
    loaded: set[str] = set()
    for imported in graph.find_modules_directly_imported_by(importer) & internal:
        loaded |= {imported, *ancestors(imported)}
    return {m for m in loaded - own - {importer} if m in internal}
