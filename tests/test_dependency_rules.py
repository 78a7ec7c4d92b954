"""The layering rules of the code, read from the imports themselves (``ast``), so they stay true.

1. The plug-in SDK (``adapters/``) and the wire types (``schemas/``) never import the server
   (``broker/``): a third-party adapter needs nothing of the server to be written or tested.
2. ``schemas/`` imports nothing of ours but ``schemas/``: it is the floor.
3. No module imports another that imports it back, directly or around a longer loop; imports
   made only for type checking count too.
4. The plug-ins written outside the tree (``examples/``) import of ours only the SDK and the wire
   types (README "Extending it"), so that a third party can copy them.
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
