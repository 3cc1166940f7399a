"""The product's text is for its users: it names no work sessions (the history, by date and
commit, is benchmarks/NOTES.md), and the benchmarks use the library, not its command line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Files and directories (searched recursively) whose text must not say "session". One list:
#: widen it here as more of the package is cleaned.
TEXT_PLACES: tuple[str, ...] = ("README.md", "docs", "blest")
#: The kinds of file read under a directory of TEXT_PLACES.
TEXT_SUFFIXES = (".md", ".py", ".j2", ".txt", ".toml")

SESSION = re.compile(r"\bsessions?\b", re.IGNORECASE)


def text_files(places: tuple[str, ...], root: Path = REPO) -> list[Path]:
    """Every file of ``places`` (relative to ``root``); a place that does not exist is an error."""
    files = []
    for place in places:
        path = root / place
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(
                p for p in path.rglob("*") if p.is_file() and p.name.endswith(TEXT_SUFFIXES)
            )
        else:
            raise FileNotFoundError(f"TEXT_PLACES names {place}, which does not exist")
    return files


def session_lines(path: Path) -> list[str]:
    """``path:line: text`` for each line that says "session"."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        f"{path}:{i}: {line.strip()}" for i, line in enumerate(lines, 1) if SESSION.search(line)
    ]


def cli_imports(path: Path) -> list[str]:
    """``path:line`` for each import of ``blest.cli`` (any form, also through importlib)."""

    def is_cli(name: str | None) -> bool:
        return bool(name) and (name == "blest.cli" or name.startswith("blest.cli."))

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        hit = False
        if isinstance(node, ast.Import):
            hit = any(is_cli(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            hit = is_cli(node.module) or (
                node.module == "blest" and any(a.name == "cli" for a in node.names)
            )
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            hit = (
                name in ("import_module", "__import__")
                and isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and is_cli(arg.value)
            )
        if hit:
            found.append(f"{path}:{node.lineno}")
    return found


def test_the_checked_places_hold_text():
    files = text_files(TEXT_PLACES)
    assert REPO / "README.md" in files
    assert any(p.suffix == ".j2" for p in files) and any(p.parent.name == "docs" for p in files)


@pytest.mark.parametrize("place", TEXT_PLACES)
def test_no_session_in_product_text(place):
    bad = [hit for path in text_files((place,)) for hit in session_lines(path)]
    assert not bad, "product text names work sessions (history goes to benchmarks/NOTES.md):\n" + (
        "\n".join(bad)
    )


def test_benchmarks_import_no_cli():
    scripts = sorted((REPO / "benchmarks").rglob("*.py"))
    assert scripts
    bad = [hit for path in scripts for hit in cli_imports(path)]
    assert not bad, "benchmarks must use the library, not the command line:\n" + "\n".join(bad)


def test_the_checks_find_what_they_look_for(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("fine\nas measured in Session 12\n")
    (tmp_path / "docs" / "b.md").write_text("possession, sessional and obsession are other words\n")
    (tmp_path / "t.cu.j2").write_text("// ok\n// (sessions 3-4)\n")
    found = [h for p in text_files(("docs", "t.cu.j2"), tmp_path) for h in session_lines(p)]
    assert [h.split(":")[-2] for h in found] == ["2", "2"]
    with pytest.raises(FileNotFoundError):
        text_files(("absent",), tmp_path)

    forms = [
        "import blest.cli",
        "import blest.cli.tune as t",
        "from blest.cli import tune_main",
        "from blest.cli.common import run",
        "from blest import cli",
        "import importlib\nimportlib.import_module('blest.cli')",
        "__import__('blest.cli.tune')",
    ]
    for i, form in enumerate(forms):
        (tmp_path / f"b{i}.py").write_text(form + "\n")
        assert cli_imports(tmp_path / f"b{i}.py"), form
    (tmp_path / "ok.py").write_text(
        "import blest\nfrom blest.tuning import tune\nfrom blest import client\n"
        "import blest.clique\nx = 'blest.cli'\n"
    )
    assert cli_imports(tmp_path / "ok.py") == []
