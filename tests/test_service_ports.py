"""Each feature service reaches the store through a narrow port of its own: its units of work
offer only the features its port names (`tx.rounds`, `tx.outbox`, ...), and mypy refuses a
service that reaches past them. The engine hands every service the one store, so the store
must satisfy every port (mypy checks that where the engine builds them)."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest
from mypy import api as mypy_api

from bot.core import units
from bot.core.services import base

ROOT = Path(__file__).resolve().parent.parent
SERVICES = ROOT / "bot" / "core" / "services"


def features(protocol: type) -> set[str]:
    """The store features a port names: the properties its With... protocols declare."""
    return {
        name
        for klass in protocol.__mro__
        if klass.__name__.startswith("With")
        for name, value in vars(klass).items()
        if isinstance(value, property)
    }


def service_ports() -> dict[str, set[str]]:
    """Each service class, by name, with the features of the port it is parameterised by."""
    import importlib

    found = {}
    for path in sorted(SERVICES.glob("*.py")):
        module = importlib.import_module(f"bot.core.services.{path.stem}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, base.EngineBase) or cls is base.EngineBase:
                continue
            (port,) = (typing.get_args(b)[0] for b in cls.__orig_bases__ if typing.get_origin(b) is base.EngineBase)
            found[name] = features(port)
    return found


def test_every_service_has_a_port_narrower_than_the_store() -> None:
    everything = features(units.StoreTx)
    assert len(everything) == 20
    found = service_ports()
    assert len(found) == 15
    wide = {name: sorted(used) for name, used in found.items() if not used < everything}
    assert wide == {}
    # the small services see only their own tables
    assert found["OpenedViews"] == {"views"}
    assert found["Streaks"] == {"reviews", "streaks"}
    assert found["ScheduleReads"] == {"communities", "scheduling"}
    assert found["CommunityFsrs"] == {"communities", "fsrs"}
    # and no service names the whole store's transaction
    assert [p.name for p in SERVICES.glob("*.py") if "StoreTx" in p.read_text()] == []


@pytest.mark.parametrize(
    ("service", "module", "feature"),
    [("Streaks", "streak_repair", "outbox"), ("OpenedViews", "opened_views", "rounds")],
)
def test_mypy_refuses_a_service_reaching_past_its_port(tmp_path: Path, service: str, module: str, feature: str) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        f"from bot.core.services.{module} import {service}\n\n\n"
        f"def reach(service: {service}) -> None:\n"
        f"    with service.store.read() as tx:\n"
        f"        print(tx.{feature})\n"
        f"    with service.store.read() as tx:\n"
        f"        print(tx.{next(iter(service_ports()[service]))})\n"
    )
    out, _, status = mypy_api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", "--cache-dir=/dev/null", str(probe)]
    )
    assert status == 1
    assert f'"{service}Port" has no attribute "{feature}"' in out
    assert "Found 1 error" in out  # the feature inside its port passes
