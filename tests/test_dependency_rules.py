"""The layering rules of the code, read from the imports themselves (``ast``), so they stay true.

1. The plug-in SDK (``adapters/``) and the wire types (``schemas/``) never import the server
   (``broker/``): a third-party adapter needs nothing of the server to be written or tested.
2. ``schemas/`` imports nothing of ours but ``schemas/``: it is the floor.
3. No module imports another that imports it back, directly or around a longer loop; imports
   made only for type checking count too.
4. The plug-ins written outside the tree (``examples/``) import of ours only the SDK and the wire
   types (README "Extending it"), so that a third party can copy them.
5. Inside ``broker/``, every module belongs to a layer of :data:`LAYERS` and imports only from its
   own layer and those below: nothing runs back up (each subpackage's docstring says the same).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("broker", "adapters", "schemas")
#: What a plug-in may import of ours (README "Extending it"): these modules and those under them.
SDK = (
    "adapters.base",
    "adapters.backoff",
    "adapters.conformance",
    "adapters.registry",
    "adapters.evm",
    "schemas",
)


#: The server's layers, from the floor up; a module is in the layer of the longest name listed that
#: is it or holds it. Two packages have a floor part and a part higher up: ``sessions`` (the
#: sans-io model at the floor; the service, approvals and signing over events and Redis) and
#: ``events`` (the bus, the event and change types and cursors under Redis; what follows them over
#: it).
LAYERS: tuple[tuple[str, ...], ...] = (
    # settings, and the session model (sans-io): nothing of the broker's
    ("broker.config", "broker.sessions"),
    # from a call to its answer; the metrics every part counts in (they read the cache's counts)
    ("broker.rpc", "broker.metrics"),
    # bytes on a connection: HTTP and WebSocket machines and shells (a WebSocket's calls: rpc)
    ("broker.transport",),
    # chain events and session changes as they travel: bus, types, cursors, ingestion
    ("broker.events",),
    # the Redis backends of the bus, the stores and the leases
    ("broker.redis",),
    # what follows the events: subscriptions, resume, the event path, webhooks; the worker
    (
        "broker.events.subscriptions",
        "broker.events.stream_methods",
        "broker.events.resume",
        "broker.events.event_path",
        "broker.events.webhooks",
        "broker.events.activity",
        "broker.worker",
    ),
    # the sessions' service, approvals and signing; access control per key and origin
    ("broker.sessions.service", "broker.sessions.approvals", "broker.sessions.signing"),
    ("broker.access",),
    # the WebSocket connections and the engine over them; the operator's API and console
    ("broker.connections", "broker.engine", "broker.operator"),
    ("broker.app",),
    # the composition root and the command line: the roof
    ("broker.compose", "broker.cli"),
)
#: At most this many entries at the top of broker/, so that its folders tell the architecture.
MAX_TOP_ENTRIES = 16


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (None: in no layer)."""
    found: tuple[int, int] | None = None
    for index, names in enumerate(LAYERS):
        for name in names:
            within = module == name or module.startswith(f"{name}.")
            if within and (found is None or len(name) > found[1]):
                found = (index, len(name))
    return None if found is None else found[0]


def upward(edges: dict[str, set[str]]) -> list[str]:
    """The imports in ``edges`` from a broker module to one in a higher layer."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in edges.items()
        for target in targets
        if module.startswith("broker.")
        and target.startswith("broker.")
        and (layer_of(module) or 0) < (layer_of(target) or 0)
    )


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The modules of ours that ``name`` imports (``from pkg import submodule`` names the
    submodule, not the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            if submodules:
                yield from submodules
            elif target in known:
                yield target


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imports(name, path, known)) for name, path in known.items()}


def test_the_sdk_and_the_wire_types_never_import_the_server() -> None:
    offending = sorted(
        f"{module} imports {target}"
        for module, targets in graph().items()
        if module.startswith(("adapters", "schemas"))
        for target in targets
        if target.split(".")[0] == "broker"
    )
    assert offending == []


def test_schemas_import_nothing_of_ours_but_schemas() -> None:
    offending = sorted(
        f"{module} imports {target}"
        for module, targets in graph().items()
        if module.split(".")[0] == "schemas"
        for target in targets
        if target.split(".")[0] != "schemas"
    )
    assert offending == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_every_broker_module_is_in_a_layer() -> None:
    assert sorted(m for m in modules() if m.startswith("broker.") and layer_of(m) is None) == []


def test_no_broker_module_imports_from_a_layer_above_its_own() -> None:
    assert upward(graph()) == []


def test_the_layer_check_sees_an_import_that_runs_back_up() -> None:
    edges = {
        "broker.transport.websocket": {"broker.rpc.dispatch", "broker.events.resume"},
        "broker.sessions.model": {"broker.sessions.service"},
        "broker.sessions.service": {"broker.sessions.model"},
    }
    assert upward(edges) == [
        "broker.sessions.model imports broker.sessions.service",
        "broker.transport.websocket imports broker.events.resume",
    ]


def test_the_top_of_broker_is_short() -> None:
    top = [p.name for p in (ROOT / "broker").iterdir() if p.name != "__pycache__"]
    assert len(top) <= MAX_TOP_ENTRIES, sorted(top)


def test_no_module_imports_another_that_imports_it_back() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def beyond_the_sdk(source: str) -> list[str]:
    """The modules of ours outside the SDK that ``source`` imports (absolute imports only: a
    plug-in's relative imports stay in its own package)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            ours = name.split(".")[0] in PACKAGES
            if ours and not any(name == m or name.startswith(f"{m}.") for m in SDK):
                found.append(name)
    return found


def test_the_plug_ins_outside_the_tree_import_only_the_sdk_and_the_wire_types() -> None:
    paths = sorted((ROOT / "examples").rglob("*.py"))
    assert paths  # the example plug-in is there to be checked
    offending = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in paths
        for name in beyond_the_sdk(path.read_text())
    )
    assert offending == []


def test_the_sdk_check_sees_an_import_of_the_server() -> None:
    source = "from adapters.base import ChainAdapter\nimport broker.errors\nfrom adapters.devchain import X\n"
    assert beyond_the_sdk(source) == ["broker.errors", "adapters.devchain"]
    assert beyond_the_sdk("from schemas.errors import InvalidParams\nfrom . import x\n") == []
