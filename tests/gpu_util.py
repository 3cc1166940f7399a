"""Shared helpers of the gpu-marked tests: the skip condition and the graph zoo."""

from __future__ import annotations

import pytest

from blest.codegen import toolchain
from blest.datasets.classes import graph_zoo, path_like  # noqa: F401  (re-exported)
from blest.datasets.classes import zoo_sources as sources  # noqa: F401

requires_gpu = pytest.mark.skipif(not toolchain.have_gpu(), reason="needs an NVIDIA GPU with CuPy")
