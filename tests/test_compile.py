"""NVRTC compilation, the kernel cache, toolchain discovery and GPU guards (CPU; GPU-marked last).

Needs CuPy's NVRTC binding and an NVRTC library (skipped cleanly otherwise); no GPU or driver.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import types
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="CuPy (with NVRTC) not installed")

from blest.codegen import cache, toolchain  # noqa: E402
from blest.codegen import compile as bc  # noqa: E402
from blest.errors import CompileError, GPUUnavailableError  # noqa: E402

try:
    toolchain.nvrtc_version()
except GPUUnavailableError as exc:  # the binding imports but libnvrtc is missing
    pytest.skip(f"NVRTC not loadable: {exc}", allow_module_level=True)

MMA = "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc"

# A persistent-kernel skeleton: b1 MMA + grid-wide sync through cooperative groups.
COOP_SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ __forceinline__ void mma_b1(unsigned a, unsigned b, int &c0, int &c1) {
  asm volatile("MMA {%0,%1}, {%2}, {%3}, {%4,%5};\n"
               : "=r"(c0), "=r"(c1) : "r"(a), "r"(b), "r"(0), "r"(0));
}

extern "C" __global__ void coop_mma(const unsigned *a, const unsigned *b, int *out,
                                    unsigned *arrived, unsigned *seen) {
  cg::grid_group grid = cg::this_grid();
  int c0, c1;
  mma_b1(a[threadIdx.x % 32], b[threadIdx.x % 32], c0, c1);
  out[2 * grid.thread_rank()] = c0;
  out[2 * grid.thread_rank() + 1] = c1;
  if (threadIdx.x == 0) atomicAdd(arrived, 1u);
  grid.sync();
  if (threadIdx.x == 0) seen[blockIdx.x] = atomicAdd(arrived, 0u);
}
""".replace("MMA", MMA)

CHEAP_SOURCE = 'extern "C" __global__ void cheap(int *p) { p[threadIdx.x] = threadIdx.x; }\n'

BROKEN_SOURCE = """extern "C" __global__ void broken(int *p) {
  int unused;
  p[0] = undefined_thing;
}
"""


def _need_headers() -> None:
    if not toolchain.include_dirs():
        pytest.skip(toolchain.headers_hint())


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch) -> Path:
    """A private, empty cache directory per test (never the user's ~/.cache)."""
    monkeypatch.setenv("BLEST_CACHE_DIR", str(tmp_path / "blest-cache"))
    cache.reset_stats()
    return cache.cache_dir()


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.iterdir()) if directory.is_dir() else []


# --------------------------------------------------------------------------- toolchain
def test_include_dirs_find_cooperative_groups_and_cccl():
    _need_headers()
    dirs = [Path(d) for d in toolchain.include_dirs()]
    assert any((d / "cooperative_groups.h").is_file() for d in dirs)
    assert any((d / "cuda" / "std" / "version").is_file() for d in dirs)
    assert any((d / "nv" / "target").is_file() for d in dirs)


def _fake_include(root: Path, version: int, cccl: Path | None) -> Path:
    root.mkdir(parents=True)
    (root / "cooperative_groups.h").write_text("// fake\n")
    (root / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {version}\n")
    if cccl is not None:
        (cccl / "cuda" / "std").mkdir(parents=True)
        (cccl / "cuda" / "std" / "version").write_text("// fake\n")
        (cccl / "nv").mkdir()
        (cccl / "nv" / "target").write_text("// fake\n")
    return root


def _discover(monkeypatch, wheel_roots: list[Path], **env: str) -> list[str]:
    for var in ("CUDA_PATH", "CUDA_HOME", "BLEST_CUDA_INCLUDE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    monkeypatch.setattr(toolchain, "_wheel_roots", lambda: wheel_roots)
    toolchain._find_include_dirs.cache_clear()
    try:
        return toolchain.include_dirs()
    finally:
        toolchain._find_include_dirs.cache_clear()


def test_include_dirs_cuda12_wheel_layout(tmp_path, monkeypatch):
    nv = tmp_path / "nvidia"
    rt = _fake_include(nv / "cuda_runtime" / "include", 12090, nv / "cuda_cccl" / "include")
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: (12, 9))
    assert _discover(monkeypatch, [nv]) == [str(nv / "cuda_cccl" / "include"), str(rt)]


def test_include_dirs_prefer_headers_matching_nvrtc(tmp_path, monkeypatch):
    # A CUDA 12 toolkit on CUDA_PATH (CCCL inside include/) must not shadow CUDA 13 wheels
    # when NVRTC is 13.0; with NVRTC 12.9 the toolkit wins (and needs no separate CCCL dir).
    tk = tmp_path / "cuda-12.9" / "include"
    _fake_include(tk, 12090, tk)
    nv = tmp_path / "nvidia"
    cu13 = _fake_include(nv / "cu13" / "include", 13000, nv / "cu13" / "include" / "cccl")
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: (13, 0))
    found = _discover(monkeypatch, [nv], CUDA_PATH=str(tk.parent))
    assert found == [str(cu13 / "cccl"), str(cu13)]
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: (12, 9))
    assert _discover(monkeypatch, [nv], CUDA_PATH=str(tk.parent)) == [str(tk)]
    override = f"{tmp_path}/a{os.pathsep}{tmp_path}/b"
    assert _discover(monkeypatch, [nv], BLEST_CUDA_INCLUDE=override) == [
        f"{tmp_path}/a",
        f"{tmp_path}/b",
    ]


def test_nvrtc_build_names_the_release():
    major, minor = toolchain.nvrtc_version()
    assert toolchain.nvrtc_build().startswith(f"{major}.{minor}")
    assert 80 in toolchain.supported_archs() and 90 in toolchain.supported_archs()


def test_require_gpu_without_gpu():
    assert isinstance(toolchain.have_gpu(), bool)
    if toolchain.have_gpu():
        pytest.skip("a GPU is present")
    with pytest.raises(GPUUnavailableError) as info:
        toolchain.require_gpu()
    assert "\n" not in str(info.value) and str(info.value)


class _FakeRuntime:
    """Stands in for cupy.cuda.runtime to drive require_gpu's decisions without a GPU."""

    def __init__(self, cc=(9, 0), name=b"NVIDIA H100", count=1, count_error=None, driver=13000):
        self.cc, self.name, self.count, self.count_error, self.driver = (
            cc,
            name,
            count,
            count_error,
            driver,
        )

    def driverGetVersion(self):
        return self.driver

    def runtimeGetVersion(self):
        return 13000

    def getDeviceCount(self):
        if self.count_error is not None:
            raise self.count_error
        return self.count

    def getDevice(self):
        return 0

    def getDeviceProperties(self, device):
        return {"name": self.name, "major": self.cc[0], "minor": self.cc[1]}


class _StatusError(RuntimeError):
    def __init__(self, status):
        super().__init__(f"cuda error {status}")
        self.status = status


@pytest.mark.parametrize(
    ("fake", "reason"),
    [
        (
            _FakeRuntime(cc=(7, 5), name=b"Tesla T4"),
            "blest needs sm_80 or newer (binary MMA m8n8k128 with .and.popc); Tesla T4 is sm_75",
        ),
        (_FakeRuntime(driver=0), "no NVIDIA driver"),
        (_FakeRuntime(count_error=_StatusError(35), driver=12020), "older than CuPy's CUDA"),
        (_FakeRuntime(count_error=_StatusError(100)), "no CUDA device is visible"),
        (_FakeRuntime(count=0), "no CUDA device is visible"),
    ],
)
def test_require_gpu_reasons(monkeypatch, fake, reason):
    monkeypatch.setattr(toolchain, "_cupy_runtime", lambda: fake)
    with pytest.raises(GPUUnavailableError) as info:
        toolchain.require_gpu()
    assert reason in str(info.value) and "\n" not in str(info.value)


def test_require_gpu_accepts_sm90_and_checks_the_index(monkeypatch):
    monkeypatch.setattr(toolchain, "_cupy_runtime", lambda: _FakeRuntime())
    assert toolchain.require_gpu() == (0, "sm_90", "NVIDIA H100")
    assert toolchain.device_arch(0) == "sm_90"
    with pytest.raises(GPUUnavailableError, match="device 3 requested but 1 device"):
        toolchain.require_gpu(3)


def test_require_gpu_without_cupy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy → ImportError
    with pytest.raises(GPUUnavailableError, match=r'pip install "blest-bfs\[cuda13\]"'):
        toolchain.require_gpu()
    assert toolchain.have_gpu() is False


@pytest.mark.parametrize(
    ("arch", "target", "flag"),
    [
        ("sm_90", "cubin", "sm_90"),
        ("90", "ptx", "compute_90"),
        (80, "cubin", "sm_80"),
        ("compute_80", "cubin", "sm_80"),
        ("sm_90a", "ptx", "compute_90a"),
    ],
)
def test_normalize_arch(arch, target, flag):
    assert bc.normalize_arch(arch, target) == flag


@pytest.mark.parametrize(
    ("arch", "number"), [("sm_90", 90), ("compute_80", 80), ("sm_90a", 90), (100, 100)]
)
def test_arch_number(arch, number):
    assert bc.arch_number(arch) == number


def test_normalize_arch_rejects_garbage():
    with pytest.raises(ValueError):
        bc.normalize_arch("hopper")
    with pytest.raises(ValueError):
        bc.normalize_arch("sm_90", "sass")


# --------------------------------------------------------------------------- compiling
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cooperative_mma_kernel_compiles_to_cubin(arch):
    _need_headers()
    cubin = bc.compile_source(COOP_SOURCE, arch=arch, cache=False)
    assert cubin[:4] == b"\x7fELF"
    assert b"coop_mma" in cubin


def test_cooperative_mma_kernel_compiles_to_ptx():
    _need_headers()
    ptx = bc.compile_source(COOP_SOURCE, arch="sm_90", target="ptx", cache=False).decode()
    assert MMA in ptx
    assert ".target sm_90" in ptx and ".entry coop_mma" in ptx


def test_compile_error_names_and_quotes_the_line():
    with pytest.raises(CompileError) as info:
        bc.compile_source(BROKEN_SOURCE, cache=False)
    err = info.value
    message = str(err)
    assert 'blest.cu(3): error: identifier "undefined_thing" is undefined' in message
    assert "p[0] = undefined_thing;" in message
    assert "undefined_thing" in err.log and err.source == BROKEN_SOURCE


def test_ptxas_error_points_at_inline_ptx():
    source = 'extern "C" __global__ void k() {\n  asm volatile("bogus.instr;");\n}\n'
    with pytest.raises(CompileError) as info:
        bc.compile_source(source, cache=False)
    assert "ptxas" in str(info.value) and 'asm volatile("bogus.instr;")' in str(info.value)


def test_unsupported_arch_is_a_compile_error():
    with pytest.raises(CompileError, match="cannot target sm_"):
        bc.compile_source(CHEAP_SOURCE, arch="sm_10", cache=False)


def test_compile_cubin_renders_specs(monkeypatch):
    import blest.codegen.family as family
    from blest.codegen.spec import VariantSpec

    def cheap(spec):
        return types.SimpleNamespace(source=CHEAP_SOURCE.replace("cheap", f"k_{spec.name}"))

    monkeypatch.setattr(family, "emit", cheap)
    spec = VariantSpec()
    ptx = bc.compile_ptx(spec, arch="sm_90", cache=False).decode()
    assert f".entry k_{spec.name}" in ptx
    assert bc.compile_cubin(spec, arch="sm_80", cache=False)[:4] == b"\x7fELF"


# --------------------------------------------------------------------------- cache
def test_cache_hits_the_second_time(kernel_cache):
    first = bc.compile_source(CHEAP_SOURCE)
    assert cache.stats()["misses"] == 1 and cache.stats()["stores"] == 1
    second = bc.compile_source(CHEAP_SOURCE)
    assert second == first and cache.stats()["hits"] == 1
    assert [p.suffix for p in _entries(kernel_cache)] == [".cubin"]
    # another arch, target or option is another entry
    bc.compile_source(CHEAP_SOURCE, arch="sm_80")
    bc.compile_source(CHEAP_SOURCE, target="ptx")
    bc.compile_source(CHEAP_SOURCE, options=("-DX=1",))
    assert len(_entries(kernel_cache)) == 4 and cache.stats()["hits"] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_damaged_cache_entry_is_not_used(kernel_cache, damage):
    good = bc.compile_source(CHEAP_SOURCE)
    (entry,) = _entries(kernel_cache)
    blob = entry.read_bytes()
    if damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "flip":
        blob = blob[:-100] + bytes([blob[-100] ^ 1]) + blob[-99:]
    elif damage == "garbage":
        blob = b"\x7fELF" + blob[4:]
    else:
        blob = b""
    entry.write_bytes(blob)
    cache.reset_stats()
    assert bc.compile_source(CHEAP_SOURCE) == good
    assert cache.stats() == {"hits": 0, "misses": 1, "stores": 1, "store_errors": 0}
    assert entry.read_bytes() != blob  # rewritten whole
    assert bc.compile_source(CHEAP_SOURCE) == good and cache.stats()["hits"] == 1


def test_unwritable_cache_dir_compiles_without_caching(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("BLEST_CACHE_DIR", str(blocker))
    with pytest.warns(RuntimeWarning, match="not writable"):
        assert bc.compile_source(CHEAP_SOURCE)[:4] == b"\x7fELF"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bc.compile_source(CHEAP_SOURCE, arch="sm_80")[:4] == b"\x7fELF"  # warned once
    assert cache.stats()["store_errors"] == 2 and cache.stats()["hits"] == 0


def test_concurrent_compiles_leave_one_valid_entry(kernel_cache):
    _need_headers()  # the cooperative source: long enough for the two compiles to overlap
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        futures = [pool.submit(bc.compile_source, COOP_SOURCE, arch="sm_80") for _ in range(2)]
        a, b = (f.result() for f in futures)
    assert a == b and a[:4] == b"\x7fELF"
    entries = _entries(kernel_cache)
    assert [p.suffix for p in entries] == [".cubin"]  # no temporary files left behind
    assert bc.compile_source(COOP_SOURCE, arch="sm_80") == a
    assert cache.stats()["hits"] == 1


_WRITER = """
import sys
from blest.codegen import cache
for i in range(int(sys.argv[1])):
    cache.store("k" * 64, "cubin", bytes([i % 2]) * (200_000 + 7 * (i % 2)))
"""


def test_readers_never_see_partial_entries(kernel_cache):
    # A writer process republishes one key (two payloads of different sizes) while we read.
    root = str(Path(bc.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, "400"], env=env)
    valid = {bytes([0]) * 200_000, bytes([1]) * 200_007}
    hits = 0
    try:
        while writer.poll() is None:
            payload = cache.load("k" * 64, "cubin")
            assert payload is None or payload in valid
            hits += payload is not None
    finally:
        writer.wait(timeout=60)
    assert writer.returncode == 0
    print(f"{hits} reads overlapped the writer")
    assert cache.load("k" * 64, "cubin") in valid
    assert [p.name for p in _entries(kernel_cache)] == ["k" * 64 + ".cubin"]


# --------------------------------------------------------------------------- compile_many
def _named(i: int) -> str:
    return CHEAP_SOURCE.replace("cheap", f"kernel{i}")


def test_compile_many_keeps_order_and_uses_the_cache():
    sources = [_named(i) for i in range(4)]
    ptxs = bc.compile_many(sources, arch="sm_90", target="ptx", max_workers=2)
    assert [f".entry kernel{i}" in p.decode() for i, p in enumerate(ptxs)] == [True] * 4
    assert cache.stats()["stores"] == 4
    again = bc.compile_many([*sources, sources[0]], arch="sm_90", target="ptx")
    assert again == [*ptxs, ptxs[0]] and cache.stats()["hits"] == 5


@pytest.mark.parametrize("threads", [1, 2], ids=["fork", "forkserver"])
def test_compile_many_names_the_failing_item(monkeypatch, threads):
    # With other Python threads alive compile_many does not fork: that path pickles the
    # CompileError back from a forkserver / spawn worker.
    monkeypatch.setattr(bc.threading, "active_count", lambda: threads)
    with pytest.raises(CompileError) as info:
        bc.compile_many([_named(0), BROKEN_SOURCE, _named(2)], max_workers=2, cache=False)
    assert "item 1" in str(info.value) and "p[0] = undefined_thing;" in str(info.value)
    assert info.value.source == BROKEN_SOURCE and "undefined_thing" in info.value.log


def test_compile_many_in_process():
    out = bc.compile_many([_named(0), _named(0), _named(1)], max_workers=1, cache=False)
    assert out[0] == out[1] != out[2]


# --------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_load_and_cooperative_launch():
    if not toolchain.have_gpu():
        pytest.skip("no GPU")
    import cupy
    import numpy as np

    from blest.runtime import device_program as bl

    device, arch, _ = toolchain.require_gpu()
    module = bl.load_module(bc.compile_source(COOP_SOURCE, arch=arch), device)
    kernel = module["coop_mma"]
    with pytest.raises(KeyError):
        module["missing"]
    assert bl.max_active_blocks(kernel, 256) >= 1
    grid = bl.max_cooperative_grid(kernel, 256)
    with cupy.cuda.Device(device):
        ones = cupy.full(32, 0xFFFFFFFF, dtype=cupy.uint32)
        out = cupy.zeros(2 * grid * 256, dtype=cupy.int32)
        arrived = cupy.zeros(1, dtype=cupy.uint32)
        seen = cupy.zeros(grid, dtype=cupy.uint32)
        bl.launch(kernel, grid, 256, (ones, ones, out, arrived, seen), cooperative=True)
        cupy.cuda.Device(device).synchronize()
        assert (out.get() == 128).all()  # 4 words x popc(0xFFFFFFFF)
        assert (seen.get() == np.uint32(grid)).all()  # every block passed the grid barrier
        with pytest.raises(ValueError, match="co-resident"):
            bl.launch(kernel, grid + 1, 256, (ones, ones, out, arrived, seen), cooperative=True)
