"""Rendering and compiling the variant space (CPU only: NVRTC needs no GPU)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from blest.codegen.contract import claims_form
from blest.codegen.render import (
    graph_params,
    has_serving_kernel,
    kernel_names,
    render,
    state_params,
)
from blest.codegen.spec import VariantSpec, variants
from blest.errors import ArgumentError

ALL = list(variants())
MMA = "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc"

# Every value of every axis at least once.
COVERING = [
    VariantSpec(sigma=4, update="eager", queue="vss", switching=False, launch="persistent"),
    VariantSpec(sigma=8, update="lazy", dirty_sets=True, queue="sweep", switching=True),
    VariantSpec(sigma=16, update="lazy", queue="vss", switching=False, launch="per_level"),
    VariantSpec(sigma=32, update="eager", queue="sweep", switching=False, launch="per_level"),
    VariantSpec(sigma=32, update="lazy", dirty_sets=True, switching=True, launch="persistent"),
    VariantSpec(sigma=16, update="eager", queue="vss", switching=False, launch="block"),
    VariantSpec.block(8, 2),
    VariantSpec.block(32, 4),
    VariantSpec.block(4, 8),
    VariantSpec.block(16, 16),
    VariantSpec.csr(4, switching=False),
    VariantSpec(sigma=16, update="eager", queue="resident", switching=False),
    VariantSpec(sigma=32, update="eager", queue="resident", switching=False, registers=128),
    VariantSpec(sigma=8, update="eager", queue="vss", switching=False, hops=2),
    VariantSpec(sigma=16, update="eager", queue="vss", switching=False, hops=3),
]


def test_space_size_and_validity():
    # 80 BVSS variants on tensor cores (and per sigma the resident queue), 8 expanding on CUDA
    # cores (per sigma, with and without switching); per sigma, the block launch on one block
    # and on clusters of 2 to 16; the 12 eager persistent ones again with 128 registers; the
    # eager vss persistent ones (with both register budgets) with two and three levels a phase
    assert len(ALL) == len(set(ALL)) == 140
    for key, values in {
        "sigma": {4, 8, 16, 32},
        "update": {"eager", "lazy"},
        "dirty_sets": {False, True},
        "queue": {"vss", "sweep", "resident"},
        "switching": {False, True},
        "launch": {"persistent", "per_level", "block"},
        "cluster": {1, 2, 4, 8, 16},
        "expand": {"mma", "csr"},
        "registers": {64, 128},
        "hops": {1, 2, 3},
    }.items():
        assert {getattr(s, key) for s in ALL} == values
        assert {getattr(s, key) for s in COVERING} == values
    assert all(not (s.update == "eager" and (s.dirty_sets or s.switching)) for s in ALL)
    # 4 BVSS, the resident queue, block, 4 clusters; the 3 eager persistent with 128 registers;
    # the eager vss persistent with two and three levels a phase, at both register budgets
    assert len(list(variants(sigma=8, update="eager"))) == 17
    resident = [s for s in ALL if s.queue == "resident" and s.registers == 64]
    assert [s.name for s in resident] == [f"s{s}_eager_resident_pers" for s in (4, 8, 16, 32)]
    wide = [s for s in ALL if s.registers == 128]
    assert {(s.update, s.launch) for s in wide} == {("eager", "persistent")} and len(wide) == 20
    assert all(s.name == replace(s, registers=64, hops=1).name[:-5] + "_r128" +
               (f"_hop{s.hops}" if s.hops > 1 else "") + "_pers" for s in wide)  # fmt: skip
    with pytest.raises(ValueError, match="sigma must be one of"):
        list(variants(sigma=7))  # a value no spec takes is an error, not an empty space
    block = list(variants(launch="block", cluster=1))
    assert [s.sigma for s in block] == [4, 8, 16, 32]
    assert all(s == VariantSpec.block(s.sigma) and s.name == f"s{s.sigma}_block" for s in block)
    clusters = [s for s in ALL if s.cluster > 1]
    assert len(clusters) == 16 and all(s.launch == "block" for s in clusters)
    assert all(s.name == f"s{s.sigma}_block_c{s.cluster}" for s in clusters)
    assert all((s.update, s.dirty_sets, s.queue, s.switching) == ("eager", False, "vss", False)
               for s in block)  # fmt: skip
    assert list(variants(launch="block", update="lazy")) == []
    csr = [s for s in ALL if s.expand == "csr"]
    assert csr == [VariantSpec.csr(s, sw) for s in (4, 8, 16, 32) for sw in (False, True)]
    assert all(s.name == f"s{s.sigma}_lazy_csr{'_switch' * s.switching}_pers" for s in csr)
    assert len({s.name for s in ALL}) == len(ALL)


@pytest.mark.parametrize(
    "bad",
    [
        {"sigma": 6},
        {"update": "fast"},
        {"update": "eager", "switching": True},
        {"update": "eager", "dirty_sets": True, "switching": False},
        {"sigma": 8.0},
        {"dirty_sets": 1},
        {"launch": "grid"},
        {"launch": "block"},  # the defaults are lazy with switching
        {"launch": "block", "update": "eager", "switching": False, "queue": "sweep"},
        {"launch": "block", "update": "lazy", "switching": False},
        {"launch": "block", "update": "lazy", "dirty_sets": True, "switching": False},
        {"cluster": 2},  # clusters are block launches
        {"launch": "per_level", "cluster": 4},
        {"launch": "block", "update": "eager", "switching": False, "cluster": 3},
        {"launch": "block", "update": "eager", "switching": False, "cluster": 32},
        {"expand": "csr"},  # the defaults queue VSSs
        {"expand": "csr", "queue": "sweep", "dirty_sets": True},
        {"expand": "csr", "queue": "sweep", "launch": "per_level"},
        {"expand": "csr", "update": "eager", "queue": "sweep", "switching": False},
        {"expand": "tensor"},
        {"queue": "resident"},  # the defaults are lazy
        {"queue": "resident", "update": "eager", "switching": False, "launch": "per_level"},
        {"registers": 128},  # the defaults are lazy
        {"registers": 96},
        {"update": "eager", "switching": False, "launch": "per_level", "registers": 128},
        {"launch": "block", "update": "eager", "switching": False, "registers": 128},
    ],
)
def test_invalid_specs_raise(bad):
    with pytest.raises(ValueError):
        VariantSpec(**bad)


def test_block_launch_refusal_names_what_it_needs():
    with pytest.raises(ValueError, match=r"launch='block'.*reads no BVSS.*got update='lazy'"):
        VariantSpec(sigma=8, launch="block", switching=False)


def test_csr_refusal_names_what_it_needs():
    with pytest.raises(ValueError, match=r"expand='csr'.*needs update='lazy'.*got queue='vss'"):
        VariantSpec(sigma=8, expand="csr")
    spec = VariantSpec.csr(16)
    assert spec.to_dict()["expand"] == "csr"
    assert VariantSpec.from_json(spec.to_json()) == spec
    assert "expand" not in VariantSpec(sigma=16).to_dict()


def test_the_register_budget_changes_only_the_launch_bounds():
    """A registers=128 kernel is its 64-register sibling compiled under other bounds: the CPU
    runner (which ignores the bounds) and the emulator stand for both."""
    for spec in (s for s in ALL if s.registers == 128):
        wide, narrow = render(spec).splitlines(), render(replace(spec, registers=64)).splitlines()
        assert len(wide) == len(narrow)
        differ = [(a, b) for a, b in zip(wide, narrow, strict=True) if a != b]
        assert len(differ) == 3, spec.name  # the name in the banner, the comment, the bounds
        assert differ[-1][0].replace("(512, 1)", "(1024)") == differ[-1][1]


def test_json_round_trip_and_hash():
    for spec in ALL:
        again = VariantSpec.from_json(spec.to_json())
        assert again == spec and hash(again) == hash(spec)
    # JSON written before the block launch existed still reads, with the same meaning
    old = '{"dirty_sets": false, "format": 1, "launch": "per_level", "queue": "vss", '
    old += '"sigma": 16, "switching": true, "update": "lazy"}'
    assert VariantSpec.from_json(old) == VariantSpec(sigma=16, launch="per_level")
    # ... and a spec on one block writes no cluster field, so its JSON is what it was
    assert "cluster" not in VariantSpec.block(8).to_dict()
    assert VariantSpec.block(8, 4).to_dict()["cluster"] == 4
    # ... and so does every spec of 64 registers (the axis came later)
    eager = VariantSpec(sigma=32, update="eager", switching=False)
    assert "registers" not in eager.to_dict()
    assert replace(eager, registers=128).to_dict()["registers"] == 128
    with pytest.raises(ValueError):
        VariantSpec.from_dict({"format": 99})
    with pytest.raises(ValueError):
        VariantSpec.from_dict({"sigma": 8, "colour": "red"})


def test_claims_form_is_rendered_for_the_graph():
    """An eager kernel rendered for one graph compiles one way of claiming a row: by level
    when the graph is reordered, on visited when it is in its own ids; unrendered, both with
    the graph's pick at run time. Lazy and one-block variants have no form to fix."""
    eager = VariantSpec(sigma=32, update="eager", queue="vss", switching=False)
    assert claims_form(eager, True) == "level" and claims_form(eager, False) == "visited"
    runtime = "bool claims_by_level(const Graph& g) { return g.new_of_old != nullptr; }"
    assert runtime in render(eager)
    level, visited = render(eager, claims="level"), render(eager, claims="visited")
    assert runtime not in level and "bool claims_by_level(const Graph&) { return true; }" in level
    assert runtime not in visited and "(const Graph&) { return false; }" in visited
    assert "return true; }" in render(eager, serving=True, claims="level")
    for spec in (VariantSpec(sigma=8, update="lazy"), replace(eager, launch="block")):
        assert claims_form(spec, True) is None and claims_form(spec, False) is None
    for bad in ("both", "LEVEL"):
        with pytest.raises(ArgumentError, match="claims"):
            render(eager, claims=bad)
    with pytest.raises(ArgumentError, match="eager"):
        render(VariantSpec(sigma=8, update="lazy"), claims="level")


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_render_is_deterministic_and_specific(spec):
    render.cache_clear()
    text = render(spec)
    render.cache_clear()
    assert render(spec) == text
    assert f"blest generated kernel: {spec.name}" in text.splitlines()[1]
    assert "{{ " not in text and "{% " not in text and "{#" not in text
    # No dead branches of other variants.
    block = spec.launch == "block"
    assert ("v_next" in text) == (spec.update == "lazy")
    assert ("bottom_up(" in text) == spec.switching
    assert ("dirty" in text.split("struct State")[1].split("};")[0]) == spec.dirty_sets
    assert ("int2* queue" in text) == (spec.queue == "vss" and not block)
    assert ("grid_barrier(" in text) == (spec.launch == "persistent")
    assert (f"#define SIGMA {spec.sigma}\n" in text) == (not block)
    # The block launch: one kernel on CUDA cores over the out-adjacency, no BVSS, no MMA.
    assert ("blest_bfs_block(" in text) == block
    assert ("extern __shared__" in text) == block
    assert ("__cluster_dims__(CLUSTER" in text) == (spec.cluster > 1)
    assert ("cluster_sync()" in text) == (spec.cluster > 1)
    for bvss_only in ("row_ids", "masks", "blest_init(", "Workers"):
        assert (bvss_only in text) == (not block), bvss_only
    assert "blest_deliver(" in text  # every launch ends with it in a captured call
    # expand=csr: top-down from the out-CSR with hub lists; no MMA.
    csr = spec.expand == "csr"
    assert ("mma.sync" in text) == (not block and not csr)
    assert ("const long long* __restrict__ out_ptr" in text) == (block or csr)
    assert ("hub_push(" in text) == csr
    # The persistent kernel's register budget: 64 (1,024 threads) or 128 (512 threads, 1 block).
    bounds = "512, 1" if spec.registers == 128 else "1024"
    assert (f"__launch_bounds__({bounds}) blest_bfs(" in text) == (spec.launch == "persistent")
    # Kernel signatures list the parameters in the order the engine passes them.
    names = [p.name for p in graph_params(spec) + state_params(spec)]
    for kernel in kernel_names(spec).values():
        sig = re.search(kernel + r"\(([^)]*)\)", text, re.S).group(1)
        declared = [a.split()[-1] for a in sig.split(",")]
        assert declared[: len(names)] == names


def test_covering_set_compiles_to_cubin_in_parallel():
    pytest.importorskip("cupy")
    from blest.codegen.compile import compile_many

    for arch in ("sm_80", "sm_90"):  # clusters need sm_90
        specs = [s for s in COVERING if s.cluster == 1 or arch == "sm_90"]
        servers = [render(s, serving=True) for s in specs if has_serving_kernel(s)]
        cubins = compile_many([render(s) for s in specs] + servers, arch=arch, target="cubin")
        assert len(cubins) == len(specs) + len(servers)
        assert all(c[:4] == b"\x7fELF" for c in cubins)
        assert all(b"blest_serve" in c for c in cubins[len(specs) :])


def test_the_serving_kernel_is_a_module_of_its_own():
    """render(spec, serving=True) holds the serving kernel alone; the timed module holds none
    of the serving code (so that it cannot change how the timed kernel compiles), and the two
    share the traversal's code."""
    assert any(s.launch == "block" and s.cluster == 1 for s in COVERING)
    for spec in COVERING:
        timed = render(spec)
        if not has_serving_kernel(spec):  # the per-level loop, the block launch on a cluster
            assert spec.launch == "per_level" or spec.cluster > 1, spec.name
            with pytest.raises(ArgumentError, match="no serving kernel"):
                render(spec, serving=True)
            with pytest.raises(ArgumentError, match="no serving kernel"):
                kernel_names(spec, serving=True)
            continue
        served = render(spec, serving=True)
        entries = re.findall(
            r'extern "C" __global__ void __launch_bounds__\([^)]*\) (\w+)\(', served
        )
        assert entries == list(kernel_names(spec, serving=True).values()) == ["blest_serve"]
        for serving_only in ("await_call(", "SERVE_ANSWER"):
            assert serving_only in served and serving_only not in timed, serving_only
        if spec.launch == "block":  # one block: no barrier to meet, no fill ahead
            assert "meet_and_answer(" not in served and "prefill_levels(" not in served
            assert "void block_traversal(" in timed and "void block_traversal(" in served
            continue
        for serving_only in ("meet_and_answer(", "prefill_levels("):
            assert serving_only in served and serving_only not in timed, serving_only
        assert "int fused)" in timed and "constexpr int fused = FUSED_SERVE;" in served
        for shared in ("void deliver_state(", "void init_state(", "read_level_top("):
            assert shared in timed and shared in served, shared


def test_every_block_variant_compiles_to_cubin():
    pytest.importorskip("cupy")
    from blest.codegen.compile import compile_many

    for arch in ("sm_80", "sm_90"):  # clusters need sm_90
        specs = [s for s in variants(launch="block") if s.cluster == 1 or arch == "sm_90"]
        cubins = compile_many([render(s) for s in specs], arch=arch, target="cubin")
        assert all(c[:4] == b"\x7fELF" and b"blest_bfs_block" in c for c in cubins)


@pytest.mark.parametrize("spec", COVERING, ids=lambda s: s.name)
def test_ptx_holds_the_entry_points_and_the_binary_mma(spec):
    pytest.importorskip("cupy")
    from blest.codegen.compile import compile_ptx

    ptx = compile_ptx(spec, arch="sm_90" if spec.cluster > 1 else "sm_80").decode()
    block = spec.launch == "block"
    assert (MMA in ptx) == (not block and spec.expand == "mma")
    assert (".entry blest_init" in ptx) == (not block)
    if spec.expand == "csr":  # marks are OR atomics; a hub push is one 64-bit add
        assert "atom.or.b32" in ptx and re.search(r"\batom(\.global)?\.add\.u64", ptx)
    if spec.launch == "persistent":  # the grid barrier: a release arrival, acquire polls
        assert "red.release.gpu.global.add.u64" in ptx and "ld.acquire.gpu.global.u64" in ptx
    for name in kernel_names(spec).values():
        assert f".entry {name}(" in ptx
    if block and spec.cluster == 1:  # the visited bitmap and the queues' heads: shared memory
        assert ".extern .shared" in ptx and "atom.shared.or.b32" in ptx
    if spec.cluster > 1:  # a cluster's: one hardware barrier, other blocks' shared memory
        assert ".extern .shared" in ptx and ".reqnctapercluster " + str(spec.cluster) in ptx
        assert "barrier.cluster.arrive" in ptx and "mapa.u64" in ptx
    if block:
        assert "globaltimer" in ptx
