"""The package's structure holds: layers import only downwards, every file stays readable, and
each of the paper's constants is defined once (in blest/defaults.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "blest"

#: Layer of each top-level part of the package, lowest first. A module may import its own part
#: and the parts listed as allowed for it; the package root and the user-facing modules on top
#: may import anything.
BASE = {
    "blest._version",
    "blest.defaults",
    "blest.errors",
    "blest.cachedirs",
    "blest.signals",
    "blest.inputs",
    "blest.environment",
}
ALLOWED: dict[str, set[str]] = {
    "graph": {"graph"},
    "datasets": {"graph", "datasets"},
    "reference": {"graph", "reference"},
    "codegen": {"codegen"},
    "runtime": {"graph", "reference", "codegen", "runtime"},
    "tuning": {"graph", "reference", "codegen", "runtime", "tuning", "datasets"},
}
TOP = {"blest", "blest.cli", "blest.api", "blest.nx", "blest.centrality", "blest.checkpoint"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def _imports(path: Path, module: str, submodules: bool = False) -> set[str]:
    """Every blest module ``path`` imports, at module level or inside functions (not those
    under ``if TYPE_CHECKING:``, which only a type checker reads). ``submodules``: ``from
    package import submodule`` counts as the submodule only (what runs), else as both."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            names = {f"{name}.{a.name}" for a in node.names}
            if not submodules:
                found |= names | {name}
                continue
            subs = {n for n in names if _is_module(n)}
            found |= subs | ({name} if len(subs) < len(names) else set())
    return {n for n in found if n == "blest" or n.startswith("blest.")}


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


def _on_top(module: str) -> bool:
    return any(module == t or module.startswith(t + ".") for t in TOP)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PACKAGE.parent / rel).with_suffix(".py").exists() or (PACKAGE.parent / rel).is_dir()


@pytest.mark.parametrize("module,path", _modules(), ids=lambda x: str(x))
def test_layers_import_only_downwards(module, path):
    if _on_top(module) and _part(module) is None:
        return
    own = _part(module)
    bad = []
    for name in sorted(_imports(path, module)):
        if not _is_module(name):
            continue  # a name imported from a module, not a module itself
        if name in BASE:
            continue
        if name == "blest":
            bad.append(f"{name} (the package root pulls in every layer)")
            continue
        target = _part(name)
        if own is None:  # a base module: only other base modules
            bad.append(name)
        elif target is None or target not in ALLOWED[own]:
            bad.append(name)
    assert not bad, f"{module} imports across layers: {bad}"


def test_every_module_is_placed():
    for module, _ in _modules():
        assert module in BASE or _part(module) or _on_top(module), f"{module} has no layer"


MAX_LINES = 500


@pytest.mark.parametrize("module,path", _modules(), ids=lambda x: str(x))
def test_files_stay_readable(module, path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{module}: {lines} lines (split it by concern)"


#: The paper's constants: their values may appear as literals only in blest/defaults.py.
PAPER_VALUES = {27491095: "SOURCE_SEED", 25_000: "U_DIV_LAZY", 65536: "JACCARD_WINDOW"}


def test_paper_constants_are_defined_once():
    offenders = []
    for module, path in _modules():
        if module == "blest.defaults":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and type(node.value) is int:
                if node.value in PAPER_VALUES:
                    offenders.append(f"{module}:{node.lineno} {node.value}")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift):
                left, right = node.left, node.right
                if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
                    if left.value == 1 and right.value == 16:
                        offenders.append(f"{module}:{node.lineno} 1 << 16")
            if isinstance(node, ast.Tuple) and len(node.elts) == 4:
                values = [getattr(e, "value", None) for e in node.elts]
                if values in ([4, 8, 16, 32], [32, 64, 128, 256]):
                    offenders.append(f"{module}:{node.lineno} {tuple(values)}")
    assert not offenders, f"use blest.defaults instead: {offenders}"


def test_eta_defaults_come_from_defaults():
    """No function spells the switching constants' defaults as literals."""
    offenders = []
    for module, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            positional = args.args[len(args.args) - len(args.defaults) :]
            pairs = list(zip(positional, args.defaults, strict=True))
            kw = zip(args.kwonlyargs, args.kw_defaults, strict=True)
            pairs += [(a, d) for a, d in kw if d is not None]
            for arg, default in pairs:
                literal = isinstance(default, ast.Constant) and default.value is not None
                if arg.arg in ("eta", "beta") and literal:
                    offenders.append(f"{module}:{node.lineno} {node.name}")
    assert not offenders, f"eta/beta defaults must come from blest.defaults: {offenders}"


def test_docs_cite_nothing_outside_the_repository():
    needles = ("DESIGN.md", "../shared", "issue 4", "issue 5", "issue 3")
    offenders = []
    files = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.j2"), PACKAGE.parent / "README.md"]
    files += list((PACKAGE.parent / "docs").glob("*.md"))
    for path in files:
        text = path.read_text()
        offenders += [f"{path.name}: {n}" for n in needles if n in text]
    assert not offenders, offenders


# ---------------------------------------------------------------------- the runtime's shape
def _class_defs() -> dict[str, list[tuple[str, ast.ClassDef]]]:
    """Every class of the package by name: (module, node)."""
    out: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for module, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append((module, node))
    return out


def _own_and_read(node: ast.ClassDef) -> tuple[set[str], dict[str, int]]:
    """(names a class defines: methods, class attributes, attributes it assigns on self;
    attributes it reads on self, with a line)."""
    defined: set[str] = set()
    read: dict[str, int] = {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            defined.add(item.target.id)
        elif isinstance(item, ast.Assign):
            defined |= {t.id for t in item.targets if isinstance(t, ast.Name)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            if sub.value.id == "self":
                if isinstance(sub.ctx, ast.Store):
                    defined.add(sub.attr)
                else:
                    read.setdefault(sub.attr, sub.lineno)
    return defined, read


def test_no_class_reads_attributes_that_other_classes_define():
    """Cohesion: what a class reads on ``self`` it defines itself or inherits from its bases (no
    mixin that reads state a sibling or a subclass defines). Classes with a base from outside
    the package (argparse, ...) may read what that base defines."""
    classes = _class_defs()

    def defined(name: str, seen: tuple[str, ...] = ()) -> tuple[set[str], bool]:
        names, external = set(), False
        for _, node in classes.get(name, []):
            names |= _own_and_read(node)[0]
            for base in node.bases:
                base_name = ast.unparse(base).split(".")[-1].split("[")[0]
                if base_name in classes and base_name not in seen:
                    more, ext = defined(base_name, (*seen, name))
                    names |= more
                    external |= ext
                elif base_name not in ("object", "Protocol", "NamedTuple", "Exception"):
                    external |= base_name not in classes
        return names, external

    offenders = []
    for name, defs in classes.items():
        have, external = defined(name)
        if external:
            continue
        for module, node in defs:
            _, read = _own_and_read(node)
            missing = sorted(a for a in read if a not in have and not a.startswith("__"))
            if missing:
                offenders.append(f"{module}.{name} reads {missing}")
    assert not offenders, offenders


def test_the_engine_has_no_base_but_its_protocol():
    from blest.runtime.engine import Engine
    from blest.runtime.engine_protocol import BFSEngine

    bases = [b for b in Engine.__mro__[1:] if b.__module__.startswith("blest")]
    assert bases == [BFSEngine], bases
    path = PACKAGE / "runtime" / "engine.py"
    assert "super()" not in path.read_text()


#: Module names that name one concept at its layers: the CPU reference, the one-call API or
#: command, the NetworkX backend. Any other name is used once in the package.
SAME_CONCEPT = {"centrality", "betweenness"}


def test_one_meaning_per_module_name():
    seen: dict[str, list[str]] = {}
    for module, path in _modules():
        if path.name != "__init__.py":
            seen.setdefault(path.stem, []).append(module)
    repeated = {k: v for k, v in seen.items() if len(v) > 1}
    assert set(repeated) <= SAME_CONCEPT, repeated
    for name, modules in repeated.items():
        parts = [m.split(".")[1] if m.count(".") > 1 else "top" for m in modules]
        assert len(set(parts)) == len(parts), f"{name}: twice in one part: {modules}"


def test_the_import_graph_is_a_dag():
    """No module imports, even lazily, one that imports it back (through any chain)."""
    graph = {
        m: {n for n in _imports(p, m, submodules=True) if _is_module(n)} - {m}
        for m, p in _modules()
    }
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(u: str, stack: list[str]) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cycles.append([*stack[stack.index(v) :], v])
            elif v not in state:
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not cycles, [" -> ".join(c) for c in cycles]


#: A source vertex's way from ``blest.bfs(g, s)`` to the kernel launch: (module, function, the
#: name it calls next). Four modules, each entered once.
LAUNCH_PATH = [
    ("blest.api", "bfs", "runner.bfs"),
    ("blest.runtime.engine", "Engine._launched", "tr.submit_init"),
    ("blest.runtime.traversal", "Traversal.init_from", "self.launch"),
    ("blest.runtime.traversal", "Traversal.launch", "self.program.launch"),
    ("blest.runtime.device_program", "DeviceProgram.launch", "prepared()"),
]


def test_a_source_reaches_the_launch_through_four_modules():
    modules = [m for m, _, _ in LAUNCH_PATH]
    entered = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
    assert len(entered) <= 4 and len(set(entered)) == len(entered), entered
    for module, qualname, calls in LAUNCH_PATH:
        path = PACKAGE.parent / Path(*module.split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text())
        node: ast.AST = tree
        for part in qualname.split("."):
            node = [  # the last definition of that name (after its typing overloads)
                n
                for n in ast.iter_child_nodes(node)
                if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part
            ][-1]
        assert calls in ast.unparse(node), f"{module}.{qualname} does not call {calls}"


def test_the_public_api_is_typed_without_any():
    """Every function ``blest`` exports, and every public method of its engine, says what it
    takes and returns (blest.inputs names the kinds of input) rather than ``Any``."""
    import inspect

    import blest
    from blest.runtime.engine import Engine

    callables = [getattr(blest, n) for n in blest.__all__ if inspect.isfunction(getattr(blest, n))]
    callables += [f for n, f in vars(Engine).items() if not n.startswith("_") and callable(f)]
    offenders = []
    for f in callables:
        for name, annotation in inspect.get_annotations(f).items():
            if "Any" in str(annotation):
                offenders.append(f"{f.__qualname__}: {name}")
    assert not offenders, offenders
