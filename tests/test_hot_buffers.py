"""The engine's hot buffers (hot_buffers.py): one allocation, a fixed layout, an aligned base.
The layout is checked without a GPU; a GPU engine's buffers are checked where they landed, and
its levels against SciPy after the buffers were poisoned through their views."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_util import requires_gpu
from random_graphs import make_power_law

from blest import VariantSpec
from blest.runtime.hot_buffers import ALIGN_MIN, PITCH, _layout


@pytest.mark.parametrize("words", [1, 7, 128, 129, 40_000])
def test_the_layout_keeps_order_and_pitch_and_aligns_above_its_span(words):
    sizes = [("ctl", 64), ("visited", words), ("frontier", 3 * words), ("bottom_up", words)]
    offsets, total, align = _layout(sizes)
    assert offsets[0] == 0 and offsets == sorted(offsets)
    for (_, w), at, nxt in zip(sizes, offsets, [*offsets[1:], total], strict=True):
        assert at % PITCH == 0 and at + 4 * w <= nxt  # in order, without overlap
    assert total - offsets[-1] < 4 * sizes[-1][1] + PITCH
    assert align >= max(total, ALIGN_MIN) and align & (align - 1) == 0
    assert align < 2 * max(total, ALIGN_MIN)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    "spec",
    [
        VariantSpec(sigma=32, update="eager", queue="resident", switching=False),
        VariantSpec(sigma=16, update="lazy", dirty_sets=True, queue="vss", switching=True),
    ],
    ids=lambda s: s.name,
)
def test_an_engine_places_its_hot_buffers_together(spec):
    from blest.reference import bfs_levels
    from blest.runtime.engine import Engine

    rng = np.random.default_rng()
    graph = make_power_law(rng, 3000)
    with Engine(graph, spec) as eng:
        st = eng._tr.values
        names = ["ctl", "visited", "frontier"]
        names += ["v_next"] if spec.update == "lazy" else []
        names += ["dirty"] if spec.dirty_sets else []
        names += ["bottom_up_levels"]
        offsets, _, align = _layout([(k, st[k].size) for k in names])
        base = st["ctl"].data.ptr
        assert base % align == 0
        assert [st[k].data.ptr - base for k in names] == offsets
        for k in names[1:]:  # the bitmaps: init must clear whatever the last call left
            st[k].fill(0xA5A5A5A5)
        for src in rng.choice(np.flatnonzero(graph.out_degree > 0), 3, replace=False):
            np.testing.assert_array_equal(eng.bfs(int(src)), bfs_levels(graph, int(src)))
