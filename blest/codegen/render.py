"""Render a :class:`VariantSpec` into CUDA C++ through the jinja2 templates in blest/templates.

One template per concern (MMA fragments, queue, top-down loop, eager/lazy update,
finalization, bottom-up step, grid barrier, drivers, and the one-block kernel of
``launch="block"``); ``bfs.cu.j2`` stitches those the spec needs, so the rendered source holds
no dead branches for other variants. Rendering is
deterministic: the same spec gives byte-identical source.
"""

from __future__ import annotations

import functools

from blest.codegen.contract import (
    CLAIMS_FORMS,
    CLUSTER_HEAD_WORDS,
    CLUSTER_SCAN_WORDS,
    DST_HOST_BIT,
    DST_TAG_MASK,
    DST_TAG_SHIFT,
    FUSED_ONCE,
    FUSED_SERVE,
    HUB_COUNT_SHIFT,
    HUB_DEGREE,
    SERVE_FIELDS,
    SERVE_QUIT,
    SERVE_WORDS,
    block_smem_bytes,
    entry_with_top,
    frontier_buffers,
    launch_bounds,
    queue_buffers,
    resident_vss,
)
from blest.codegen.program import (
    KERNEL_PREFIX,
    KernelParam,
    KernelProgram,
    ParamGroup,
    environment,
    kernel_context,
    render_file,
)
from blest.codegen.spec import VariantSpec
from blest.errors import ArgumentError

__all__ = [
    "render",
    "program",
    "has_serving_kernel",
    "render_snippet",
    "render_jaccard",
    "graph_params",
    "state_params",
    "call_params",
    "kernel_names",
]


def graph_params(spec: VariantSpec) -> list[KernelParam]:
    """Read-only graph arrays and sizes, in kernel-parameter order."""
    if spec.launch == "block":  # no BVSS: the out-adjacency of the reordered graph
        return [
            KernelParam("const int4* __restrict__", "heads", "2n: degree, first 7 out-arcs"),
            KernelParam("const long long* __restrict__", "out_ptr", "n + 1 (out_csr)"),
            KernelParam("const int* __restrict__", "out_idx", "out-neighbours"),
            KernelParam("const int* __restrict__", "old_of_new", "n, or null for the identity"),
            KernelParam("int", "n"),
            KernelParam("int", "n_words", "ceil(n / 32)"),
        ]
    params = [
        KernelParam("const int* __restrict__", "row_ids", "Nv * TAU row ids"),
        KernelParam("const u32* __restrict__", "masks", "Nv * 32 mask words"),
        KernelParam("const int* __restrict__", "real_ptrs", "Ns + 1: VSS range of each slice set"),
        KernelParam("const int* __restrict__", "virtual_to_real", "Nv: slice set of each VSS"),
    ]
    if spec.switching:
        params += [
            KernelParam("const long long* __restrict__", "in_ptr", "n + 1 (in_csr)"),
            KernelParam("const int* __restrict__", "in_idx", "in-neighbours"),
        ]
    if spec.expand == "csr":
        params += [
            KernelParam("const long long* __restrict__", "out_ptr", "n + 1 (out_csr)"),
            KernelParam("const int* __restrict__", "out_idx", "out-neighbours"),
            KernelParam("const u32* __restrict__", "hubs", "n_words: bit v set when v is a hub"),
        ]
    params += [
        KernelParam("const int* __restrict__", "old_of_new", "n, or null for the identity"),
        KernelParam(
            "const int* __restrict__", "new_of_old", "n, or null: the deliver pass gathers by it"
        ),
        KernelParam("int", "n"),
        KernelParam("int", "n_words", "ceil(n / 32)"),
        KernelParam("int", "n_vss"),
        KernelParam("int", "n_sets"),
    ]
    return params


def state_params(spec: VariantSpec) -> list[KernelParam]:
    """Per-traversal device state, in kernel-parameter order (after :func:`graph_params`)."""
    if spec.launch == "block":
        return [
            KernelParam(
                "int*", "queue", "2 * cluster * n: the global part of each block's two queues"
            ),
            KernelParam("int", "smem_queue", "entries of each queue in shared memory"),
            KernelParam("u32*", "ctl", "CTL_WORDS counters"),
            KernelParam("int*", "levels", "n, internal ids (-1: not reached)"),
            KernelParam("int*", "user_levels", "n, the user's ids, or null (identity ordering)"),
            KernelParam("u64*", "level_clock", "null, or n + 2: when each level starts (ns)"),
        ]
    params = [
        KernelParam("u32*", "visited", "n_words"),
        KernelParam("u32*", "frontier", "FRONTIER_BUFFERS * n_words"),
    ]
    if spec.update == "lazy":
        params.append(KernelParam("u32*", "v_next", "n_words"))
    if spec.dirty_sets:
        params += [
            KernelParam("u32*", "dirty", "2 * dirty_words; bit w % 32 of word w / 32 <-> word w"),
            KernelParam("int", "dirty_words", "ceil(n_words / 32)"),
        ]
    if spec.queue == "vss":
        params.append(KernelParam("int2*", "queue", "QUEUE_BUFFERS * n_vss {VSS id, slice set}"))
    if spec.expand == "csr":
        params += [
            KernelParam(
                "long long*", "hub_queue", "QUEUE_BUFFERS * 2 * max_hubs {hub, first arc offset}"
            ),
            KernelParam("int", "max_hubs", "the graph's hubs (vertices of > HUB_DEGREE out-arcs)"),
        ]
    params += [
        KernelParam("u32*", "ctl", "CTL_WORDS counters"),
        KernelParam("u32*", "bottom_up_levels", "n_words; bit L set when level L ran bottom-up"),
        KernelParam("int*", "levels", "n, internal ids (-1: not reached)"),
        KernelParam("u64*", "level_clock", "null, or 2(n + 2): level, then stage-2 starts (ns)"),
    ]
    return params


def kernel_names(spec: VariantSpec, serving: bool = False) -> dict[str, str]:
    """Entry points of the rendered module, by role (``serving``: of the serving module,
    ``render(spec, serving=True)``, whose traversal kernel is the server)."""
    if serving:
        _check_serving(spec)
        return {"serve": f"{KERNEL_PREFIX}_serve"}
    names = {"parents": f"{KERNEL_PREFIX}_parents", "deliver": f"{KERNEL_PREFIX}_deliver"}
    if spec.launch == "block":  # no init pass: the one kernel initializes, in the user's ids
        return {"bfs": f"{KERNEL_PREFIX}_bfs_block", **names}
    names["init"] = f"{KERNEL_PREFIX}_init"
    if spec.launch == "persistent":
        names["bfs"] = f"{KERNEL_PREFIX}_bfs"
    else:
        names["stage1"] = f"{KERNEL_PREFIX}_stage1"
        if spec.update == "lazy":
            names["stage2"] = f"{KERNEL_PREFIX}_stage2"
    return names


#: Arguments each role's kernel takes after the common ones (the templates spell them out; the
#: ABI tests check that they agree).
_SEEDS = (
    KernelParam("const int* __restrict__", "seeds", "null, or n_seeds internal seeds"),
    KernelParam("int", "n_seeds"),
    KernelParam("int", "src", "the one seed when seeds is null"),
)
_RULES = (
    KernelParam("int", "depth_limit", "-1: none"),
    KernelParam("double", "eta"),
    KernelParam("double", "beta"),
    KernelParam("double", "alpha"),
    KernelParam("unsigned int", "small_queue"),
    KernelParam("u32*", "ctl_out", "where a fused call delivers the control block, or null"),
)


def call_params(spec: VariantSpec, role: str) -> tuple[KernelParam, ...]:
    """The arguments kernel ``role`` of ``spec``'s modules takes after the common ones (its
    part of the ABI; :func:`kernel_names` lists the roles)."""
    block = spec.launch == "block"
    if role == "init":
        return _SEEDS
    if role == "bfs":
        if block:
            return (*_SEEDS, KernelParam("int", "depth_limit"))
        return (*_RULES, KernelParam("int", "fused", "FUSED_ONCE: init, traverse, deliver"))
    if role == "stage1":
        return (KernelParam("int", "L"), *_RULES[:3])
    if role == "stage2":
        return (KernelParam("int", "L"),)
    if role == "deliver":
        return (
            KernelParam("const unsigned long long*", "dst_slot", "holds where the levels go"),
            KernelParam("u32*", "ctl_out", "where the control block goes, or null"),
        )
    if role == "parents":
        return (
            KernelParam("const long long* __restrict__", "adj_in_ptr"),
            KernelParam("const int* __restrict__", "adj_in_idx"),
            KernelParam("int* __restrict__", "user_parents"),
        )
    if role == "serve":
        ends = (KernelParam("u32*", "ctl_out"), KernelParam("u32*", "ctl_copy"))
        return ends if block else (*_RULES[:5], *ends)
    raise ArgumentError(f"{spec.name} has no kernel role {role!r}")


def _groups(spec: VariantSpec) -> tuple[ParamGroup, ...]:
    return (
        ParamGroup("Graph", "g", "graph", tuple(graph_params(spec))),
        ParamGroup("State", "st", "state", tuple(state_params(spec))),
    )


def _context(spec: VariantSpec, serving: bool = False, claims: str | None = None) -> dict:
    context = kernel_context(
        spec,
        _groups(spec),
        serving=serving,
        claims=claims,
        sets_per_word=32 // spec.sigma,
        frontier_buffers=frontier_buffers(spec),
        queue_buffers=queue_buffers(spec),
        resident=resident_vss(spec),
        entry_with_top=entry_with_top(spec),
        launch_bounds=", ".join(str(x) for x in launch_bounds(spec)),
        serve_fields=SERVE_FIELDS,
        serve_words=SERVE_WORDS,
        serve_quit=SERVE_QUIT,
        dst_tag_shift=DST_TAG_SHIFT,
        dst_tag_mask=DST_TAG_MASK,
        dst_host_bit=DST_HOST_BIT,
        fused_once=FUSED_ONCE,
        fused_serve=FUSED_SERVE,
        reset_ahead=1 if spec.update == "eager" else 0,
        cluster_head_words=CLUSTER_HEAD_WORDS,
        cluster_scan_words=CLUSTER_SCAN_WORDS,
        hub_degree=HUB_DEGREE,
        hub_count_shift=HUB_COUNT_SHIFT,
    )
    # The persistent driver aims st.levels at each fused call's destination (deliver.cu.j2).
    context["unpack_aimed"] = context["unpack"].replace("const State st", "State st")
    return context


@functools.lru_cache(maxsize=256)
def render(spec: VariantSpec, serving: bool = False, claims: str | None = None) -> str:
    """The CUDA C++ source of ``spec``: readable, self-contained, deterministic.

    ``serving`` (:func:`has_serving_kernel`): the module of the serving kernel (``Engine.serving``)
    instead, whose traversal kernel answers call after call; the timed module holds none of
    its code, so that the serving code cannot change how the timed kernel compiles.
    ``claims`` (eager variants; :func:`~blest.codegen.contract.claims_form`): ``"level"`` or
    ``"visited"`` compiles that one way of claiming a row, for a graph that is reordered or in
    its own ids; None compiles both and picks one at run time."""
    if serving:
        _check_serving(spec)
    if claims is not None and (claims not in CLAIMS_FORMS or spec.update != "eager"):
        raise ArgumentError(
            f"claims={claims!r}: one of {CLAIMS_FORMS} for an eager variant, not {spec.name}"
        )
    return render_file("bfs.cu.j2", _context(spec, serving, claims))


@functools.lru_cache(maxsize=256)
def program(spec: VariantSpec, serving: bool = False, claims: str | None = None) -> KernelProgram:
    """The module of ``spec`` (arguments as :func:`render`) as the runtime loads it."""
    roles = kernel_names(spec, serving)
    block = spec.launch == "block"
    cluster = spec.cluster

    def shared(n: int, smem_queue: int = 0) -> int:
        return block_smem_bytes(n, smem_queue, cluster) if block else 0

    return KernelProgram(
        family="single",
        name=spec.name + ("_serve" if serving else ""),
        source=render(spec, serving, claims),
        kernels=roles,
        groups=_groups(spec),
        extras={role: call_params(spec, role) for role in roles},
        launch_bounds=launch_bounds(spec) if spec.launch == "persistent" else (1024,),
        tables=("CTL", "SERVE") if has_serving_kernel(spec) else ("CTL",),
        shared_bytes=shared,
    )


def has_serving_kernel(spec: VariantSpec) -> bool:
    """Whether ``spec`` has a serving kernel: the persistent variants (serve.cu.j2) and the
    one-block launch (serve_block.cu.j2); not the per-level host loop nor a cluster."""
    return spec.launch == "persistent" or (spec.launch == "block" and spec.cluster == 1)


def _check_serving(spec: VariantSpec) -> None:
    if not has_serving_kernel(spec):
        raise ArgumentError(
            f"{spec.name} has no serving kernel (persistent variants and the one-block launch only)"
        )


def render_snippet(text: str, spec: VariantSpec) -> str:
    """Render template text that includes blest's templates, in ``spec``'s context.

    For probes and micro-benchmarks that reuse one concern (say ``grid_barrier.cu.j2``) outside
    a whole kernel.
    """
    return environment().from_string(text).render(**_context(spec)).strip() + "\n"


def render_jaccard(sigma: int, block: int, kernel_name: str) -> str:
    """CUDA C++ of the JaccardWithWindows kernel (one thread block per window) for ``sigma`` and
    ``block`` threads; the kernel is ``extern "C"`` ``kernel_name``."""
    if block % 32 or not 32 <= block <= 1024:
        raise ArgumentError(f"block must be a multiple of 32 in 32..1024, got {block}")
    template = environment().get_template("jaccard.cu.j2")
    return template.render(sigma=int(sigma), block=int(block), kernel_name=kernel_name)
