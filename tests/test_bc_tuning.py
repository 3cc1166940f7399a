"""The betweenness workload's host side without a GPU: ``blest-tune --workload betweenness``,
the config's ``betweenness`` section and ``load_tuned`` applying it; the runner's width, the
default variant and the candidate order; the CPU rows that replace a flagged batch's; an
engine's runners (the choice, the warning, endpoints per call, edge scores on the CPU)."""

from __future__ import annotations

import json
import warnings

import pytest
from random_graphs import make_power_law

import blest
from blest.cli import tune_main
from blest.codegen.bcspec import BCSpec
from blest.datasets import write_mtx
from blest.datasets.classes import make_directed, path_like
from blest.errors import ConfigError
from blest.reference.betweenness import CPURunner, batch_contributions
from blest.reference.treesum import tree_sum
from blest.runtime import bc_runner
from blest.runtime.bc_runner import BCChoice, BCRunners, cpu_rows, default_choice, plan_width
from blest.tuning.bc_search import BCCandidate, bc_candidates
from blest.tuning.config import TunedConfig


@pytest.fixture
def tuned(tmp_path, rng):
    g = make_power_law(rng, 200)
    write_mtx(g, tmp_path / "g.mtx")
    cfg = tmp_path / "g.blest.json"
    argv = [str(tmp_path / "g.mtx"), "-o", str(cfg), "--workload", "betweenness", "-q"]
    assert tune_main(argv) == 0
    return g, cfg


def test_betweenness_workload_without_a_gpu(tuned):
    g, cfg = tuned
    data = json.loads(cfg.read_text())
    assert data["tuned"] is False and data["betweenness"] is None
    assert any("betweenness variant is chosen" in n for n in data["notes"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = blest.betweenness(str(cfg), k=20, seed=3)
    assert ours.tobytes() == blest.betweenness(g, k=20, seed=3).tobytes()


def test_section_round_trip_and_checks(tuned):
    _, path = tuned
    cfg = TunedConfig.read(path)
    cfg.betweenness = {"spec": BCSpec(16, "grid").to_dict(), "block_size": 1024,
                       "wide_degree": 512}  # fmt: skip
    cfg.write(path)
    assert TunedConfig.read(path).betweenness == cfg.betweenness
    data = json.loads(path.read_text())
    del data["betweenness"]["wide_degree"]  # absent: the form's default
    path.write_text(json.dumps(data))
    assert TunedConfig.read(path).betweenness["wide_degree"] is None
    data = json.loads(path.read_text())
    for bad in ({"spec": {"kappa": 64}, "block_size": 256},
                {"spec": BCSpec().to_dict(), "block_size": 100},
                {"spec": BCSpec().to_dict()}, [1],
                {"spec": BCSpec().to_dict(), "block_size": 256, "wide_degree": -1}):  # fmt: skip
        data["betweenness"] = bad
        path.write_text(json.dumps(data))
        with pytest.raises(ConfigError, match="betweenness"):
            TunedConfig.read(path)


def test_load_tuned_applies_the_choice(tuned, monkeypatch):
    _, path = tuned
    cfg = TunedConfig.read(path)
    cfg.betweenness = {"spec": BCSpec(8, "block").to_dict(), "block_size": 256,
                       "wide_degree": 64}  # fmt: skip
    cfg.write(path)
    seen = {}

    class FakeRunners:
        def configure(self, spec, block_size, wide_degree):
            seen.update(spec=spec, block_size=block_size, wide_degree=wide_degree)

    class FakeEngine:
        device_name = "NVIDIA H200"

        def __init__(self, prepared, spec, **kw):
            self.betweenness_runners = FakeRunners()

    monkeypatch.setattr("blest.runtime.engine.Engine", FakeEngine)
    monkeypatch.setattr(
        "blest.codegen.toolchain.require_gpu", lambda d=None: (0, "sm_90", "NVIDIA H200")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        blest.load_tuned(path, device="gpu")
    assert seen == {"spec": BCSpec(8, "block"), "block_size": 256, "wide_degree": 64}


def test_width_default_and_candidates():
    assert plan_width(1, 32) == 128 and plan_width(1, 8) == 32
    assert plan_width(264, 32) == 32768 and plan_width(3, 16) == 128 and plan_width(5, 8) == 128
    assert plan_width(10**5, 8) == 32768  # at most MAX_WIDTH
    assert plan_width(264, 32, 10**6, 64 * 8 * 10**6) == 2048  # 64 rows of a million vertices
    assert plan_width(264, 32, 10**6, 0) == 32  # at least one batch
    assert all(plan_width(s, k) & (plan_width(s, k) - 1) == 0 for s in (1, 7, 99) for k in (8, 32))
    assert default_choice(115_000, 239_000, 1000) == BCChoice(BCSpec(32, "block"), 512, 256)
    road = default_choice(115_000, 239_000, 1000, max_degree=6)  # deep, small degrees
    assert road == BCChoice(BCSpec(2, "queue"), 256, 256)
    assert default_choice(115_000, 239_000, 1000, max_degree=65).spec == BCSpec(32, "block")
    assert default_choice(115_000, 239_000, 40, max_degree=6).spec == BCSpec(32, "block")
    assert default_choice(22_000, 342_000, 11).spec == BCSpec(32, "block")  # small
    big = default_choice(2_100_000, 63_500_000, 7)  # big, shallow
    assert big == BCChoice(BCSpec(32, "grid"), 1024, 2048)
    deep = bc_candidates(115_000, 239_000, 1000)
    shallow = bc_candidates(2_100_000, 63_500_000, 7)
    road = bc_candidates(115_000, 239_000, 1000, max_degree=6)
    assert deep[0].spec == BCSpec(32, "block") and shallow[0].spec == BCSpec(32, "grid")
    assert road[0] == BCCandidate(BCSpec(2, "queue"), 256, 256)
    assert [c.spec.form for c in road[:12]] == ["queue"] * 12
    assert [c.spec.form for c in deep[9:12]] == ["queue"] * 3  # before the grid form
    assert shallow[-1].spec.form == "queue"
    assert len(set(deep)) == len(deep) == 27
    assert {c.spec for c in deep} == {c.spec for c in shallow} == {c.spec for c in road}
    assert {(c.spec.form, c.wide_degree) for c in deep} == {
        ("block", 256),
        ("grid", 2048),
        ("queue", 256),
    }


def test_cpu_rows_are_the_batches_nodes(rng):
    g = make_directed(rng, 90)
    sources = rng.choice(g.n, 32, replace=False)
    rows = cpu_rows(g, sources, 8, [0, 3], endpoints=True)
    assert sorted(rows) == [0, 3]
    for b, row in rows.items():
        part = sources[8 * b : 8 * b + 8]
        want = tree_sum(batch_contributions(g, part, endpoints=True))
        assert row.tobytes() == want.tobytes()
    small = cpu_rows(g, sources[:2], 8, [0], endpoints=False)[0]  # fewer than kappa
    assert small.tobytes() == CPURunner(g).run_batch(sources[:2]).tobytes()


class FakeRunner:
    """Stands for the GPU runner: the CPU runner's node, and what it was built with."""

    built: list = []

    def __init__(self, graph, spec, *, device, block_size, wide_degree):
        FakeRunner.built.append((spec, block_size, device, wide_degree))
        self.graph, self.width, self.length = graph, 64, graph.n
        self.closed = False

    def run_batch(self, sources, *, endpoints=None):
        return CPURunner(self.graph, endpoints=bool(endpoints)).run_batch(sources)

    def close(self):
        self.closed = True


def test_an_engines_runners(rng, monkeypatch):
    monkeypatch.setattr(bc_runner, "BCRunner", FakeRunner)
    FakeRunner.built = []
    g = path_like(rng, 150)
    depths = []
    runners = BCRunners(g, 3, lambda: depths.append(1) or 140)
    with pytest.warns(RuntimeWarning, match="not tuned for betweenness.*bc_k2_queue"):
        plain = runners.runner(endpoints=False)  # deep, small degrees: the queue form
    ends = runners.runner(endpoints=True)
    assert depths == [1] and FakeRunner.built == [(BCSpec(2, "queue"), 256, 3, 256)]  # once
    src = rng.choice(g.n, 16, replace=False)
    assert plain.run_batch(src).tobytes() == CPURunner(g).run_batch(src).tobytes()
    want = CPURunner(g, endpoints=True).run_batch(src)
    assert ends.run_batch(src).tobytes() == want.tobytes()
    assert (plain.width, plain.length) == (64, g.n)
    edges = runners.runner(edges=True)  # edge scores stay on the CPU
    assert isinstance(edges, CPURunner) and edges.length == g.n + g.nnz
    first = runners._runner
    runners.configure(BCSpec(8, "grid"), 1024)
    assert first.closed and runners.choice == BCChoice(BCSpec(8, "grid"), 1024, 2048)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # configured: no warning
        runners.runner()
    assert FakeRunner.built[-1] == (BCSpec(8, "grid"), 1024, 3, 2048)
    runners.configure(BCSpec(16, "block"), 256, 99)
    runners.runner()
    assert FakeRunner.built[-1] == (BCSpec(16, "block"), 256, 3, 99)
    runners.close()
    assert runners._runner is None
