"""The status page: one self-contained HTML document (inline CSS, inline SVG charts, no script, no
font, no URL of anywhere else), so it works at a DR site without internet and a browser fetches
nothing but the page itself. It reloads itself with a meta refresh.

Everything shown comes from ``Controller.status()`` after the same redactor as ``/flows``, and every
text is escaped here (a flow's error quotes clients' messages). Rendering reads memory only.
"""
from __future__ import annotations

import html
import math
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mirrorspark.rest.history import KEEP_SECONDS, Sample, rates

STATUS_PATH = "/status"
LOGIN_PATH = "/status/login"
REFRESH_SECONDS = 10  # the page's meta refresh; also the history's sampling interval's order
# State badges: background and text colour. The headless-browser test finds the badges by these
# exact backgrounds, so no other part of the page uses them.
BADGES: dict[str, tuple[str, str]] = {
    "running": ("#1e9e3e", "#ffffff"),
    "degraded": ("#f5a000", "#1a1a1a"),
    "standby": ("#8a8f98", "#ffffff"),
    "failed": ("#c62828", "#ffffff"),
    "paused": ("#3d6fb6", "#ffffff"),
    "starting": ("#5fa8d3", "#1a1a1a"),
    "restarting": ("#5fa8d3", "#1a1a1a"),
}
UNKNOWN_BADGE = ("#b0b0b0", "#1a1a1a")
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 520, 110, 28
CHART_LINES = {"rate": "#2f5fd0", "lag": "#8e44ad"}

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#222}
header{background:#263238;color:#fff;padding:12px 24px}
header h1{font-size:20px;margin:0;display:inline}
header p{display:inline;margin-left:16px;color:#cfd8dc;font-size:13px}
main{padding:16px 24px}
section.flow{background:#fff;border:1px solid #d7dadf;border-radius:6px;padding:14px 18px;margin-bottom:16px}
.head{display:flex;align-items:center;gap:14px}
.head h2{margin:0;font-size:18px}
.badge{display:inline-block;width:120px;height:30px;line-height:30px;text-align:center;border-radius:4px;
font-weight:600;font-size:14px}
.role{font-size:14px;color:#455a64;border:1px solid #b0bec5;border-radius:4px;padding:2px 8px}
.error{background:#fff8e1;border-left:4px solid #8d6e00;padding:6px 10px;white-space:pre-wrap;word-break:break-word;
font-family:ui-monospace,monospace;font-size:12px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{text-align:left;padding:3px 10px 3px 0;vertical-align:top}
th{color:#546e7a;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:16px;margin:8px 0}
.charts figure{margin:0}
.charts figcaption{font-size:12px;color:#546e7a}
h3{font-size:14px;margin:12px 0 4px;color:#37474f}
.exact{color:#13723a;font-weight:600}
.inexact{color:#a31515;font-weight:600}
.muted{color:#78909c;font-size:12px}
.last-checkpoint{font-size:13px}
.promotion{background:#e3f2fd;border-left:4px solid #1565c0;padding:6px 10px;font-size:13px}
form{background:#fff;border:1px solid #d7dadf;border-radius:6px;padding:16px;max-width:520px}
input[type=password]{width:100%;box-sizing:border-box;padding:6px;margin:8px 0;font-family:monospace}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _count(value: Any) -> str:
    return f"{int(value or 0):,}"


def _when(epoch: float | None, now: float) -> str:
    if epoch is None:
        return "never"
    stamp = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{stamp} ({max(0.0, now - epoch):.0f} s ago)"


def _document(title: str, body: str, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>")


def chart(points: Sequence[tuple[float, float]], *, now: float, kind: str, title: str, unit: str) -> str:
    """An inline SVG line chart of ``points`` (epoch seconds, value) over the last hour."""
    width, height, pad = CHART_WIDTH, CHART_HEIGHT, CHART_PAD
    start = now - KEEP_SECONDS
    shown = [(t, v) for t, v in points if t >= start and math.isfinite(v)]
    top = max((v for _, v in shown), default=0.0)
    scale = top if top > 0 else 1.0
    plot_w, plot_h = width - 2 * pad, height - 2 * pad

    def xy(t: float, v: float) -> str:
        return f"{pad + (t - start) / KEEP_SECONDS * plot_w:.1f},{pad + plot_h - v / scale * plot_h:.1f}"

    line = (f'<polyline fill="none" stroke="{CHART_LINES[kind]}" stroke-width="2" '
            f'points="{" ".join(xy(t, v) for t, v in shown)}"/>' if len(shown) > 1 else
            f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" font-size="12" fill="#78909c">'
            "collecting samples</text>")
    return (f'<figure><svg class="chart chart-{kind}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">'
            f'<rect x="{pad}" y="{pad}" width="{plot_w}" height="{plot_h}" fill="#fafbfc" stroke="#cfd8dc"/>'
            f'<text x="{pad}" y="{pad - 8}" font-size="11" fill="#546e7a">max {top:,.1f} {_e(unit)}</text>'
            f'<text x="{pad}" y="{height - 8}" font-size="11" fill="#546e7a">-60 min</text>'
            f'<text x="{width - pad}" y="{height - 8}" font-size="11" fill="#546e7a" text-anchor="end">now</text>'
            f"{line}</svg><figcaption>{_e(title)}</figcaption></figure>")


def _figures(flow: Mapping[str, Any], rate: float | None, now: float) -> str:
    rows = [
        ("records replicated", _count(flow.get("records_replicated"))),
        ("records/s", "n/a" if rate is None else f"{rate:,.1f}"),
        ("lag (records)", _count(flow.get("lag_offsets"))),
        ("lag (seconds)", f"{float(flow.get('lag_seconds') or 0.0):,.1f}"),
        ("records lost", _count(flow.get("records_lost"))),
        ("records re-copied", _count(flow.get("records_recopied"))),
        ("restarts", _count(flow.get("restarts"))),
        ("last batch", _when(flow.get("last_batch_time"), now)),
    ]
    cells = "".join(f'<tr><th>{_e(name)}</th><td class="n">{_e(value)}</td></tr>' for name, value in rows)
    return f'<table class="figures">{cells}</table>'


def _lag_topics(flow: Mapping[str, Any]) -> str:
    topics = flow.get("lag_topics") or []
    if not topics:
        return '<p class="muted">no lag measured yet</p>'
    rows = "".join(f'<tr><td>{_e(t["topic"])}</td><td class="n">{_count(t["records"])}</td>'
                   f'<td class="n">{float(t["seconds"]):,.1f}</td></tr>' for t in topics)
    return f'<table class="lag"><tr><th>source topic</th><th>records</th><th>seconds</th></tr>{rows}</table>'


def _checkpoints(flow: Mapping[str, Any], now: float) -> str:
    found = flow.get("checkpoints")
    if flow.get("role") == "standby":
        return '<p class="muted">a standby: the instance that writes this flow shows its checkpoints</p>'
    if not flow.get("writing", True):
        return '<p class="muted">not written by this instance yet (its start is retried): no checkpoints</p>'
    if found is None:
        return '<p class="muted">reading the checkpoints (refreshed in the background; reload shortly)</p>'
    if found.get("error"):
        return (f'<p class="error">the checkpoints could not be read: {_e(found["error"])}</p>'
                f'<p class="muted">checked {_e(_when(found.get("checked_at"), now))}</p>')
    if not found.get("enabled", True):
        return '<p class="muted">checkpoints are off for this flow (emit.checkpoints.enabled = false)</p>'
    head = (f'<p class="last-checkpoint">last checkpoint emitted: {_e(_when(found.get("emitted_at"), now))}; '
            f'{_count(found.get("groups"))} group(s) in {_e(found.get("topic", ""))}</p>')
    verdicts = found.get("verdicts") or []
    if not verdicts:
        return head + '<p class="muted">no consumer group has checkpoints for this flow\'s topics</p>'
    rows = []
    for verdict in verdicts:
        exact = bool(verdict.get("safe"))
        reasons = "<br>".join(f'{"&#10004;" if r.get("ok") else "&#10008;"} {_e(r.get("text", ""))}'
                              for r in verdict.get("reasons", []))
        rows.append(f'<tr class="group" data-exact="{"yes" if exact else "no"}"><td>{_e(verdict.get("group"))}</td>'
                    f'<td class="{"exact" if exact else "inexact"}">{"exact" if exact else "not exact"}</td>'
                    f"<td>{reasons}</td></tr>")
    more = found.get("not_judged") or 0
    tail = f'<p class="muted">{more} more group(s): run `mirrorspark audit` for all</p>' if more else ""
    return (head + '<table class="failover"><tr><th>consumer group</th><th>failing over now</th><th>why</th></tr>'
            + "".join(rows) + "</table>" + tail
            + f'<p class="muted">checked {_e(_when(found.get("checked_at"), now))}; the records themselves are '
              "compared by `mirrorspark audit`</p>")


def _promotion(promotion: Mapping[str, Any] | None, now: float) -> str:
    """A ``promote`` under way: its steps, the ones done struck through, the next one in bold."""
    if not promotion:
        return ""
    if promotion.get("error"):
        return f'<p class="error promotion">promotion journal unreadable: {_e(promotion["error"])}</p>'
    steps = list(promotion.get("steps") or [])
    step = promotion.get("step")
    at = steps.index(step) if step in steps else len(steps)
    shown = " → ".join(f"<s>{_e(s)}</s>" if i < at else f"<b>{_e(s)}</b>" if i == at else _e(s)
                       for i, s in enumerate(steps))
    fenced = f', {_count(promotion["fenced"])} topic(s) fenced by ACLs' if promotion.get("fenced") else ""
    return (f'<p class="promotion" data-step="{_e(step)}">promotion under way, started '
            f'{_when(promotion.get("started"), now)}: {shown} ({_count(promotion.get("topics", 0))} topic(s), '
            f'{_count(promotion.get("groups", 0))} group(s){fenced})</p>')


def _flow(index: int, flow: Mapping[str, Any], samples: list[Sample], now: float) -> str:
    state = str(flow.get("state", "unknown"))
    role = str(flow.get("role", ""))  # "writer" or "standby", as the metrics' role label
    background, colour = BADGES.get(state, UNKNOWN_BADGE)
    speeds = rates(samples)
    rate = speeds[-1][1] if speeds else None
    error = flow.get("error")
    parts = [
        f'<section class="flow" id="flow-{index}" data-flow="{_e(flow.get("name"))}" data-state="{_e(state)}" '
        f'data-role="{_e(role)}"><div class="head">'
        f'<span class="badge" style="background:{background};color:{colour}">{_e(state)}</span>'
        f'<h2>{_e(flow.get("name"))}</h2><span class="role">{_e(role)}</span></div>',
        f'<p class="error">{_e(error)}</p>' if error else "",
        _promotion(flow.get("promotion"), now),
        _figures(flow, rate, now),
        '<div class="charts">',
        chart(speeds, now=now, kind="rate", title="records/s, last hour", unit="records/s"),
        chart([(s.at, s.lag_seconds) for s in samples], now=now, kind="lag", title="lag seconds, last hour",
              unit="s"),
        "</div><h3>Lag per source topic</h3>",
        _lag_topics(flow),
        "<h3>Checkpoints and failover</h3>",
        _checkpoints(flow, now),
        "</section>",
    ]
    return "".join(parts)


def render_status(flows: Sequence[Mapping[str, Any]], series: Callable[[str], list[Sample]],
                  now: float | None = None) -> str:
    """The page for ``flows`` (``Controller.status()``, redacted) with ``series`` (a flow's samples)."""
    now = time.time() if now is None else now
    sections = "".join(_flow(i, flow, series(str(flow.get("name"))), now) for i, flow in enumerate(flows))
    if not flows:
        sections = '<p class="muted">no flow runs in this process</p>'
    body = (f"<header><h1>mirrorspark</h1><p>{len(flows)} flow(s) &middot; "
            f"{_e(datetime.fromtimestamp(now, UTC).strftime('%Y-%m-%d %H:%M:%SZ'))} &middot; "
            f"reloads every {REFRESH_SECONDS} s</p></header><main>{sections}</main>")
    return _document("mirrorspark status", body, refresh=True)


def render_error(message: str) -> str:
    """What the page shows when building it failed (the flows are not affected)."""
    body = (f'<header><h1>mirrorspark</h1></header><main><p class="error">the status page could not be built: '
            f"{_e(message)}; see the mirrorspark log</p></main>")
    return _document("mirrorspark status", body, refresh=True)


def login_form(message: str | None = None) -> str:
    """The answer to a browser without the token: a form that posts it to ``LOGIN_PATH``, which
    sets a cookie for this page only (a browser cannot send a bearer header)."""
    note = f'<p class="error">{_e(message)}</p>' if message else ""
    body = (f"<header><h1>mirrorspark</h1></header><main>{note}"
            f'<form method="post" action="{LOGIN_PATH}"><label for="token">REST token (mirrorspark.rest.token, or '
            "the generated one in &lt;state-dir&gt;/rest.token)</label>"
            '<input type="password" id="token" name="token" autocomplete="off" required>'
            '<button type="submit">Show the status page</button></form></main>')
    return _document("mirrorspark status: token", body, refresh=False)
