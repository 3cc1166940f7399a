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
BASE = {"blest._version", "blest.defaults", "blest.errors", "blest.cachedirs", "blest.signals"}
ALLOWED: dict[str, set[str]] = {
    "graph": {"graph"},
    "datasets": {"graph", "datasets"},
    "reference": {"graph", "reference"},
    "codegen": {"codegen"},
    "runtime": {"graph", "reference", "codegen", "runtime"},
    "tuning": {"graph", "reference", "codegen", "runtime", "tuning", "datasets"},
}
TOP = {"blest", "blest.cli", "blest.api", "blest.nx", "blest.centrality"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def _imports(path: Path, module: str) -> set[str]:
    """Every blest module ``path`` imports, at module level or inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.add(name)
            found |= {f"{name}.{a.name}" for a in node.names}
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
