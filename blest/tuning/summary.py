"""Human-readable summaries of a tuned config (``blest-tune`` output and ``blest info CONFIG``)."""

from __future__ import annotations

from typing import Any

from blest.tuning.config import TunedConfig

__all__ = ["summary_lines", "timing_lines"]


def _ms(x: Any) -> str:
    return "-" if x is None else f"{x:.4f} ms"


def _geometry(cfg: TunedConfig) -> str:
    g = cfg.geometry
    bps = "occupancy" if g.blocks_per_sm is None else f"{g.blocks_per_sm}/SM"
    sq = "default" if g.small_queue is None else str(g.small_queue)
    return f"{g.block_size} threads x {bps}, small_queue {sq}"


def summary_lines(cfg: TunedConfig) -> list[str]:
    """Graph, preparation, choice, and (when tuned) the held-out comparison."""
    g, p = cfg.graph, cfg.preparation
    kind = "directed" if g.directed else "undirected"
    secs = p.seconds.get(p.ordering, {})
    prep_s = sum(v for v in secs.values() if isinstance(v, (int, float)))
    lines = [
        f"graph      {g.source or '(unknown)'}",
        f"           {g.n:,} vertices ({g.isolated:,} isolated), {g.arcs:,} arcs, {kind}",
        f"prepared   ordering {p.ordering}"
        + (f" (W={p.W})" if p.W else "")
        + f", sigma={p.sigma}: compression {p.compression_ratio:.4f}, "
        f"U_div {p.u_div:.1f} (at sigma=8: {p.u_div_sigma8:.1f}), "
        f"{prep_s:.2f} s",
        f"variant    {cfg.spec.name}"
        + (f"  eta={cfg.eta:g}" if cfg.spec.switching else "")
        + (f"  beta={cfg.beta:g}" if cfg.spec.switching and cfg.beta else "")
        + (f"  alpha={cfg.alpha:g}" if cfg.spec.switching and cfg.alpha else "")
        + f"  [{_geometry(cfg)}]",
    ]
    if cfg.tuned:
        gpu = cfg.gpu
        name, cc = (gpu.name, gpu.compute_capability) if gpu else ("?", "?")
        t = cfg.timing
        n_ok = len(_timed_rows(cfg, confirm=False))
        lines.append(
            f"tuned      on {name} (sm {cc}): {n_ok} "
            f"candidates in {t.get('elapsed_s', 0):.1f} s (budget {t.get('budget_s', 0):g} s), "
            f"{len(t.get('tuning_sources', []))} tuning sources"
        )
    else:
        lines.append("tuned      no: the paper's rules chose (run blest-tune on a GPU to tune)")
    r = cfg.report
    if r:
        lines.append(f"held-out   {r['sources']} sources, mean traversal time")
        lines.append(f"  pick     {_ms(r.get('pick_ms'))}  {r['pick']}")
        lines.append(
            f"  paper    {_ms(r.get('paper_ms'))}  {r['paper']}  (pick/paper {r['pick_vs_paper']})"
        )
        lines.append(
            f"  oracle   {_ms(r.get('oracle_ms'))}  {r['oracle']}  "
            f"(pick/oracle {r['pick_vs_oracle']})"
        )
    return lines


def _score(row: dict) -> float:
    """What the search ranked a row by: its mean (older configs ranked by
    the median, and rows of theirs without a mean show it)."""
    return row["mean_ms"] if row.get("mean_ms") is not None else row["median_ms"]


def timing_lines(cfg: TunedConfig, limit: int = 15) -> list[str]:
    """The fastest rows of the timing table (mean ms over the tuning sources)."""
    rows, confirmed = _timed_rows(cfg, confirm=False), _timed_rows(cfg, confirm=True)
    failed = [c for c in cfg.timing.get("candidates", []) if c.get("error")]
    if not rows and not failed:
        return []
    rows.sort(key=_score)
    out = [f"timings    {len(rows)} candidates timed (fastest {min(limit, len(rows))} shown)"]
    out += [f"  {_score(c):9.4f} ms  {c['stage']:<11} {c['label']}" for c in rows[:limit]]
    if confirmed:
        n = len(cfg.timing.get("confirmation_sources", []))
        rounds = cfg.timing.get("confirmation_rounds", 1)
        out.append(f"confirmed  on {n} other sources, {rounds} round(s) (mean ms)")
        confirmed.sort(key=_score)
        out += [f"  {_score(c):9.4f} ms  {'confirm':<11} {c['label']}" for c in confirmed]
    if failed:
        out.append(
            f"  {len(failed)} candidates failed, e.g. {failed[0]['label']}: {failed[0]['error']}"
        )
    return out


def _timed_rows(cfg: TunedConfig, *, confirm: bool) -> list[dict]:
    """Timed rows of the table: on the confirmation sources, or on the tuning sources."""
    timed = [c for c in cfg.timing.get("candidates", []) if c.get("median_ms") is not None]
    return [c for c in timed if (c.get("stage") == "confirm") == confirm]
