"""Every Python snippet of the README runs on this machine (no GPU needed), in order, after the
tuned config the README's `blest demo` writes."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_the_promised_snippets():
    text = "\n".join(_snippets())
    for needle in ("blest.bfs(", "parents=True", "blest.validate(", 'backend="blest"',
                   "closeness(", "load_tuned("):  # fmt: skip
        assert needle in text, needle


def test_every_snippet_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("networkx")
    from blest.cli import tune_main
    from blest.datasets import example_path

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "blest-demo" / "luxembourg_osm.blest.json"
    config.parent.mkdir()
    assert tune_main([str(example_path()), "-o", str(config), "-q"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(_snippets()):
            try:
                exec(compile(code, f"README snippet {i + 1}", "exec"), {"__name__": "readme"})
            except Exception as exc:  # the snippet's number and text make the failure readable
                raise AssertionError(f"README snippet {i + 1} failed: {exc!r}\n{code}") from exc
    assert "arc span" in capsys.readouterr().out


def _bash_lines() -> list[str]:
    """The command lines of the README's bash blocks, comments and continuations folded."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line:
                lines.append(line)
    return lines


def test_every_blest_name_in_the_readme_exists():
    import importlib

    import blest

    names = set(re.findall(r"(?<![\w.\-/])blest(?:\.[A-Za-z_]\w*)+", README.read_text()))
    assert {"blest.bfs", "blest.load_tuned", "blest.closeness"} <= names
    missing = []
    for name in sorted(names):
        obj = blest
        for part in name.split(".")[1:]:
            try:
                obj = getattr(obj, part)
            except AttributeError:
                try:
                    obj = importlib.import_module(f"{obj.__name__}.{part}")
                except (ImportError, AttributeError):
                    missing.append(name)
                    break
    assert not missing, f"the README names what blest does not have: {missing}"


def test_every_command_line_in_the_readme_parses(capsys):
    import shlex

    from blest.cli import build_parser, build_tune_parser

    parsers = {"blest": build_parser, "blest-tune": build_tune_parser}
    seen = set()
    for line in _bash_lines():
        for command in line.split("&&"):
            argv = shlex.split(command)
            if argv and argv[0] in parsers:
                seen.add(argv[0])
                try:
                    parsers[argv[0]]().parse_args(argv[1:])
                except SystemExit as exc:
                    err = capsys.readouterr().err
                    raise AssertionError(
                        f"README: {command.strip()!r} does not parse: {err}"
                    ) from exc
    assert seen == set(parsers)


def test_the_readme_benchmark_commands_name_real_scripts_and_options():
    repo = README.parent
    import shlex

    commands = [shlex.split(c) for c in _bash_lines() if c.startswith("python3 benchmarks/")]
    assert len(commands) >= 2
    for argv in commands:
        script = repo / argv[1]
        assert script.is_file(), argv[1]
        text = script.read_text()
        for flag in (a for a in argv[2:] if a.startswith("--")):
            assert f'"{flag}"' in text, f"{argv[1]} has no option {flag}"
