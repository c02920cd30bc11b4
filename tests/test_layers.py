"""The layers that the imports show: pages -> services -> memory_core, no cycles, SQL in storage.

Every import statement of every project module is read with ``ast`` (module level, inside
functions, under ``if TYPE_CHECKING:``): an import hidden in a function is still a dependency,
and a cycle hidden that way is still a cycle a reader has to untangle. Nothing is imported.

Rules (the developer guide's):
* no import cycle among project modules;
* ``memory_core`` imports no ``services``, ``pages``, ``ui``, ``api`` and no Streamlit;
* ``services`` imports no ``pages``, ``ui`` or ``api``;
* only ``memory_core/storage/`` imports SQLAlchemy, Alembic or the ORM rows (the SQL adapter;
  everything else talks to its repositories, which take and return plain values).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The application's code. bench/ and scripts/ are tools around it (they may reach into storage
# to load data or measure); tests/ may use anything to set up and check.
PACKAGES = ("memory_core", "services", "api", "pages", "ui")
TOP_MODULES = ("app.py",)

# Known violations still to fix, each with why it is still here. Empty is the goal; a new entry
# needs a reason a reviewer accepts. (importer module, imported name)
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}
ALLOWED_SQLALCHEMY: dict[str, str] = {}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _project_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            files[_module_name(path)] = path
    for name in TOP_MODULES:
        files[_module_name(ROOT / name)] = ROOT / name
    return files


FILES = _project_files()


def _statements(name: str, path: Path) -> list[tuple[int, str, list[str]]]:
    """Every import statement as ``(line, module, names)``: ``import a.b`` is ``("a.b", [])``,
    ``from .c import d, e`` is ``("<package>.c", ["d", "e"])`` with the relative part resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            out.append((node.lineno, base, [alias.name for alias in node.names]))
    return out


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """Every imported dotted name with its line: the module, and ``module.name`` for each name
    of a ``from`` import (a submodule or a name defined in the module)."""
    out: list[tuple[str, int]] = []
    for line, module, names in _statements(name, path):
        out.append((module, line))
        out.extend((f"{module}.{n}", line) for n in names if n != "*")
    return out


def _project_target(imported: str) -> str | None:
    """The project module an imported name lands in: the longest dotted prefix that is one."""
    parts = imported.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in FILES:
            return candidate
    return None


def _graph() -> dict[str, set[str]]:
    """module -> the project modules that importing it runs.

    ``from pkg import sub`` runs ``pkg.sub``; ``from pkg import name`` runs ``pkg``. Either also
    runs the ``__init__`` of every package above the target, unless the importer is inside that
    package (then it is already running): a module outside ``memory_core.maintenance`` that
    imports ``memory_core.maintenance.x`` depends on ``maintenance/__init__.py`` and all it imports.
    """
    graph: dict[str, set[str]] = {name: set() for name in FILES}
    for name, path in FILES.items():
        for _line, module, names in _statements(name, path):
            targets = {f"{module}.{n}" if f"{module}.{n}" in FILES else _project_target(module) for n in names}
            if not names:
                targets = {_project_target(module)}
            for target in targets - {None}:
                assert target is not None
                pieces = target.split(".")
                for end in range(1, len(pieces) + 1):
                    runs = ".".join(pieces[:end])
                    inside = name == runs or name.startswith(runs + ".")
                    if runs in FILES and not inside:
                        graph[name].add(runs)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _path_in(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete loop through the component, to name in the failure message."""
    members = set(component)
    start = component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                loop = [node]
                while loop[-1] != start:
                    loop.append(parents[loop[-1]])
                return list(reversed(loop)) + [start]
            if nxt not in parents:
                parents[nxt] = node
                frontier.append(nxt)
    return component


def _violations(prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for name, path in FILES.items():
        if name != prefix and not name.startswith(prefix + "."):
            continue
        for imported, line in _imports(name, path):
            top = imported.split(".")[0]
            if top in forbidden and (name, top) not in ALLOWED_UPWARD:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    return sorted(set(out))


def test_the_scan_sees_the_project() -> None:
    """A scan that found nothing would pass every rule below: it must see the modules and the
    edges we know are there."""
    graph = _graph()
    assert {"memory_core.engine", "services.chat", "api.app", "memory_core.storage.repository"} <= set(FILES)
    assert "memory_core.storage.repository" in graph["memory_core.engine"]
    assert any(name.startswith("pages.") for name in FILES)


def test_the_cycle_finder_finds_cycles() -> None:
    """Negative control: a made-up graph with a loop through an import inside a function."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _path_in(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_are_seen(tmp_path: Path) -> None:
    source = ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from memory_core.engine import MemoryEngine\n"
              "def f():\n    from .sibling import thing\n    import services.chat\n")
    path = tmp_path / "mod.py"
    path.write_text(source, encoding="utf-8")
    names = {n for n, _ in _imports("memory_core.maintenance.mod", path)}
    assert {"memory_core.engine.MemoryEngine", "memory_core.maintenance.sibling.thing", "services.chat"} <= names


def test_no_import_cycles() -> None:
    graph = _graph()
    loops = [f"{', '.join(c)}\n  e.g. " + " -> ".join(_path_in(graph, c)) for c in _cycles(graph)]
    assert not loops, "import cycles (the modules of each, and one loop through it):\n" + "\n".join(loops)


@pytest.mark.parametrize(("layer", "forbidden"), [
    ("memory_core", ("services", "pages", "ui", "api", "streamlit")),
    ("services", ("pages", "ui", "api")),
])
def test_layers_import_only_downward(layer: str, forbidden: tuple[str, ...]) -> None:
    found = _violations(layer, forbidden)
    assert not found, f"{layer} imports a layer above it:\n" + "\n".join(found)


def test_only_storage_knows_sqlalchemy() -> None:
    found = []
    for name, path in FILES.items():
        if name.startswith("memory_core.storage.") or name in ALLOWED_SQLALCHEMY:
            continue
        for imported, line in _imports(name, path):
            if imported.split(".")[0] in ("sqlalchemy", "alembic"):
                found.append(f"{path.relative_to(ROOT)}:{line}")
    assert not sorted(set(found)), ("SQLAlchemy or Alembic outside memory_core/storage:\n"
                                    + "\n".join(sorted(set(found))))


def test_orm_rows_stay_in_storage() -> None:
    """The ORM row classes (``storage.schema``) are storage's: callers get ``MemoryRecord`` and
    friends from repository methods, so a query never leaks into a pipeline or a service."""
    found = [f"{path.relative_to(ROOT)}:{line}" for name, path in FILES.items()
             if not name.startswith("memory_core.storage.")
             for imported, line in _imports(name, path) if imported.startswith("memory_core.storage.schema")]
    assert not found, "ORM rows used outside memory_core/storage:\n" + "\n".join(sorted(set(found)))


def test_allow_lists_name_real_modules() -> None:
    """An allow-list entry for a module that no longer exists (or no longer needs it) is stale."""
    for importer, _top in ALLOWED_UPWARD:
        assert importer in FILES, importer
    for importer in ALLOWED_SQLALCHEMY:
        assert importer in FILES, importer


# ---- callers above the facade use its methods, not its parts ---------------------------------
FRONT_ENDS = ("services", "api", "pages", "ui", "app")
# Attributes of the engine that are SQL adapter internals: a front end that reads them bypasses
# the facade's validation and couples to one adapter (``engine.repo.get_many(...)``).
ENGINE_INTERNALS = frozenset({"repo"})


def _reaches_past(tree: ast.AST) -> list[tuple[int, str]]:
    """``<anything but self>.repo`` and ``getattr(x, "repo")``: the engine's SQL port read from
    outside. A class's own ``self.repo`` (api/keys.py keeps its key repository there) is its own."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENGINE_INTERNALS:
            if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in ENGINE_INTERNALS):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_repo_scan_finds_reaches_past_the_facade() -> None:
    """Negative control: each way of reaching the engine's repository is caught; a class's own
    ``self.repo`` and the facade's methods are not."""
    source = ("engine.repo.get_many(ids)\nself.engine.repo.session_messages(u, s)\n"
              "runtime.get_engine().repo.engine\nmemory.parts.repo.ping()\ngetattr(engine, 'repo')\n"
              "self.repo.get(key_id)\nengine.get_many(ids)\nrepository.get(1)\n")
    assert sorted(line for line, _ in _reaches_past(ast.parse(source))) == [1, 2, 3, 4, 5]


def test_front_ends_call_the_facade_not_its_repository() -> None:
    found = []
    for name, path in FILES.items():
        if name.split(".")[0] not in FRONT_ENDS:
            continue
        for line, text in _reaches_past(ast.parse(path.read_text(encoding="utf-8"))):
            found.append(f"{path.relative_to(ROOT)}:{line} {text}")
    assert any(name.startswith("pages.") for name in FILES) and "services.chat" in FILES and "api.app" in FILES
    assert not found, "callers above the engine reach into its SQL repository:\n" + "\n".join(sorted(found))


def _engine_parts(tree: ast.AST) -> list[tuple[int, str]]:
    """``engine.parts`` (also ``self.engine.parts``, ``get_engine().parts``): the engine's parts
    handed to pipeline functions from above the facade. A search result's ``.parts`` (its score
    parts) is data, not the engine."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "parts":
            value = node.value
            if ((isinstance(value, ast.Name) and value.id == "engine")
                    or (isinstance(value, ast.Attribute) and value.attr == "engine")
                    or (isinstance(value, ast.Call) and ast.unparse(value.func).endswith("get_engine"))):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_parts_scan_finds_the_engine_parts_only() -> None:
    source = ("maintenance.expire_due(engine.parts)\nself.engine.parts.repo\nruntime.get_engine().parts\n"
              "result.parts.relevance\nengine.expire_due()\n")
    assert sorted(line for line, _ in _engine_parts(ast.parse(source))) == [1, 2, 3]


def test_front_ends_run_maintenance_through_the_facade() -> None:
    """The scheduler and the admin page ran the maintenance pipeline on ``engine.parts``; they
    call the facade's job methods (``engine_jobs.py``) instead."""
    found = [f"{path.relative_to(ROOT)}:{line} {text}" for name, path in FILES.items()
             if name.split(".")[0] in FRONT_ENDS
             for line, text in _engine_parts(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "callers above the engine hand its parts to pipelines:\n" + "\n".join(sorted(found))


def test_pipelines_depend_on_the_sql_port_not_the_adapter() -> None:
    """Above storage, only the composition root (``engine.open_memory``) and the operator's health
    probe build the SQL adapter; every other module takes the ports of ``memory_core.sql_ports``."""
    allowed = {"memory_core.engine", "memory_core.health"}
    found = [f"{path.relative_to(ROOT)}:{line}" for name, path in FILES.items()
             if not name.startswith("memory_core.storage.") and name not in allowed
             for imported, line in _imports(name, path)
             if imported.startswith("memory_core.storage.repository")]
    assert not found, "the SQL adapter imported above storage (use memory_core.sql_ports):\n" + "\n".join(found)
