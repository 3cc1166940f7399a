"""Shared directories and stop signals, in-process: the tuner's lock refuses what another
user could have planted (a symbolic link, a FIFO, a hard link, a foreign file) without creating
or touching its target; signals are held over a publication and what must follow it, ignored
ones stay ignored, and a signal after the config is out no longer removes what it names."""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
import warnings
from pathlib import Path

import faults
import numpy as np
import pytest
from random_graphs import make_directed, make_grid

import blest
from blest.errors import ConfigError
from blest.reference import bfs_levels
from blest.signals import held_signals
from blest.tuning import storage as files
from blest.tuning.tuner import tune, write_tuned

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another user needs root")


def _outcome(graph):
    return tune(graph, source="/data/g.mtx", use_gpu=False, orderings=["rcm"])


def _listing(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir() if not p.is_symlink() and p.is_file()}


def _loads_as(config: Path, graph) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eng = blest.load_tuned(config)
    for src in (0, graph.n - 1):
        assert np.array_equal(eng.bfs(src), bfs_levels(graph, src))


# ---------------------------------------------------------------------- the lock (item 3)
def test_a_planted_symbolic_link_lock_is_refused_and_its_target_not_created(tmp_path, rng):
    old = make_directed(rng, 120)
    config = tmp_path / "g.blest.json"
    write_tuned(_outcome(old), config)
    before = _listing(tmp_path)
    victim = tmp_path / "elsewhere" / "victim"
    victim.parent.mkdir()
    (tmp_path / "g.blest.json.lock").symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link") as info:
        write_tuned(_outcome(make_grid(rng, 90)), config)
    assert f"{config}.lock" in str(info.value)
    assert not victim.exists() and not os.path.lexists(victim)
    assert _listing(tmp_path) == before
    _loads_as(config, old)


def test_the_tune_command_refuses_it_in_one_line(tmp_path, rng, capsys):
    from blest.cli import tune_main
    from blest.datasets import write_mtx

    write_mtx(make_grid(rng, 80), tmp_path / "g.mtx")
    victim = tmp_path / "victim"
    (tmp_path / "g.blest.json.lock").symlink_to(victim)
    argv = [str(tmp_path / "g.mtx"), "-o", str(tmp_path / "g.blest.json"), "-q"]
    assert tune_main([*argv, "--ordering", "rcm"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing the lock file" in err and "symbolic link" in err
    assert not victim.exists() and not (tmp_path / "g.blest.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.blest.json.lock", "g.mtx"]


def test_a_planted_fifo_lock_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "x.json.lock")
    outcome = []

    def attempt():
        try:
            with files.exclusive_lock(tmp_path / "x.json"):
                outcome.append("locked")
        except ConfigError as exc:
            outcome.append(str(exc))

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "opening the FIFO blocked"
    assert len(outcome) == 1 and "not a regular file" in outcome[0]


def test_a_hard_linked_lock_is_refused_and_its_other_name_untouched(tmp_path):
    precious = tmp_path / "precious"
    precious.write_bytes(b"someone's data")
    os.link(precious, tmp_path / "x.json.lock")
    with pytest.raises(ConfigError, match="other hard links"):
        with files.exclusive_lock(tmp_path / "x.json"):
            pass
    assert precious.read_bytes() == b"someone's data"
    assert (tmp_path / "x.json.lock").exists()  # not ours to remove


@as_root
def test_a_foreign_lock_is_refused(tmp_path):
    lock = tmp_path / "x.json.lock"
    lock.write_bytes(b"")
    os.chown(lock, 54321, 54321)
    with pytest.raises(ConfigError, match="belongs to another user"):
        with files.exclusive_lock(tmp_path / "x.json"):
            pass


def test_the_lock_is_opened_safely_and_removed_only_if_still_ours(tmp_path, monkeypatch):
    opened = []
    real_open = os.open

    def spy(path, flags, mode=0o777, **kw):
        if str(path).endswith(".lock"):
            opened.append((flags, mode))
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(files.os, "open", spy)
    lock = tmp_path / "x.json.lock"
    with files.exclusive_lock(tmp_path / "x.json"):
        assert stat.S_IMODE(lock.stat().st_mode) & 0o077 == 0
        replacement = tmp_path / "other"
        replacement.write_bytes(b"not the lock")
        os.replace(replacement, lock)  # someone put another file in its place
    ((flags, mode),) = opened
    assert flags & os.O_NOFOLLOW and flags & os.O_CLOEXEC and flags & os.O_CREAT
    assert mode == 0o600
    assert lock.read_bytes() == b"not the lock"  # left alone on release


def test_a_lock_removed_between_its_open_and_its_check_is_opened_again(tmp_path, monkeypatch):
    """Its holder releases (unlinks) it just after we open it: not 'other hard links', we
    open the new one and lock that."""
    real_open = os.open
    calls = []

    def racing(path, flags, mode=0o777, **kw):
        fd = real_open(path, flags, mode, **kw)
        if str(path).endswith(".lock"):
            calls.append(path)
            if len(calls) == 1:
                os.unlink(path)  # the holder's release lands here
        return fd

    monkeypatch.setattr(files.os, "open", racing)
    with files.exclusive_lock(tmp_path / "x.json"):
        assert (tmp_path / "x.json.lock").exists()
    assert len(calls) == 2
    assert not (tmp_path / "x.json.lock").exists()


# ---------------------------------------------------------------------- held signals
def test_held_signals_act_after_the_block():
    ran = []
    with pytest.raises(KeyboardInterrupt):
        with held_signals() as held:
            signal.raise_signal(signal.SIGINT)
            ran.append("after the signal")
            assert held == [signal.SIGINT]
    assert ran == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_held_signals_leave_ignored_and_default_ones_alone():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with held_signals() as held:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # still ends us at once
            signal.raise_signal(signal.SIGINT)
        assert held == [] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_process_forked_while_signals_are_held_still_stops():
    """A worker forked within the block (a compile pool's) inherits the recording handler; a
    SIGTERM sent to it must still end it, not be recorded in a list nobody reads."""
    old = signal.signal(signal.SIGTERM, lambda *_: None)  # a Python handler: held in the block
    try:
        with held_signals() as held:
            pid = os.fork()
            if pid == 0:  # the child
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
                os._exit(0)
            _, status = os.waitpid(pid, 0)
        assert held == []
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_command_line_keeps_an_ignored_sigint_ignored():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with files.stops_recorded():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
            files.raise_if_stopped()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)


def test_after_a_final_write_a_command_line_ignores_stops(tmp_path):
    out = tmp_path / "result.txt"
    with files.stops_recorded():
        files.atomic_write(
            out, lambda f: f.write(b"done"), then=lambda: signal.raise_signal(signal.SIGINT),
            final=True,
        )  # fmt: skip
        signal.raise_signal(signal.SIGINT)  # later ones too
        files.raise_if_stopped()
    assert out.read_bytes() == b"done"
    with files.stops_recorded(), pytest.raises(KeyboardInterrupt):  # the next command stops
        signal.raise_signal(signal.SIGINT)


def test_a_signal_in_the_finishing_step_does_not_cut_it(tmp_path):
    """Outside a command line (a program using the API) the signal is acted on once the
    published file's follow-up step has run."""
    out, steps = tmp_path / "result.txt", []

    def then():
        signal.raise_signal(signal.SIGINT)
        steps.append("cleaned up")

    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(out, lambda f: f.write(b"done"), then=then)
    assert steps == ["cleaned up"] and out.read_bytes() == b"done"


@pytest.mark.parametrize("action", ["int", "term"])
def test_a_signal_after_the_config_is_out_keeps_the_new_pair(tmp_path, rng, monkeypatch, action):
    """The reproduction of a loss: a stop right after the new config was published used to
    delete the artifact it names. Now the pair is whole and the old artifact gone."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("SIGTERM is handled by the test runner")
    config = tmp_path / "g.blest.json"
    old_cfg = write_tuned(_outcome(make_directed(rng, 100)), config)
    new = make_grid(rng, 90)
    monkeypatch.setattr(files, "fault_hook", faults.hook(f"after-config:{action}"))
    with files.signals_raise(), pytest.raises((KeyboardInterrupt, files.Terminated)):
        write_tuned(_outcome(new), config)
    monkeypatch.setattr(files, "fault_hook", None)
    _loads_as(config, new)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert old_cfg.artifact not in names and len(names) == 2  # the config and its artifact


def test_failpoints_do_nothing_without_a_hook(tmp_path, rng, monkeypatch):
    monkeypatch.setenv("BLEST_FAILPOINT", "artifact-written:kill")
    assert files.fault_hook is None
    g = make_grid(rng, 70)
    write_tuned(_outcome(g), tmp_path / "g.blest.json")
    _loads_as(tmp_path / "g.blest.json", g)


def test_a_stop_before_the_replace_still_stops(tmp_path):
    with files.stops_recorded():
        with pytest.raises(KeyboardInterrupt):
            files.atomic_write(
                tmp_path / "x", lambda f: (f.write(b"x"), signal.raise_signal(signal.SIGINT))
            )
    assert list(tmp_path.iterdir()) == []
    time.sleep(0)  # the handlers are back
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_command_run_by_another_leaves_its_state(tmp_path):
    """``blest demo`` runs blest-tune inside itself: once the inner command is done, the outer
    one is stopped by a signal again, and its own final write still counts."""

    def inner() -> None:
        with files.stops_recorded():
            files.atomic_write(tmp_path / "inner", lambda f: f.write(b"x"), final=True)
            signal.raise_signal(signal.SIGINT)  # ignored: the inner result is out

    with files.stops_recorded(), pytest.raises(KeyboardInterrupt):
        inner()
        signal.raise_signal(signal.SIGINT)
    with files.stops_recorded():
        inner()
        files.atomic_write(tmp_path / "outer", lambda f: f.write(b"y"), final=True)
        signal.raise_signal(signal.SIGINT)
        files.raise_if_stopped()
    assert (tmp_path / "outer").read_bytes() == b"y"
