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
