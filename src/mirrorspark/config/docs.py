"""Generate docs/configuration.md from the key declarations: ``python -m mirrorspark.config.docs``."""
from __future__ import annotations

import sys
from pathlib import Path

from mirrorspark.config.keys import CONNECT_PREFIXES, KEYS, PASSTHROUGH_PREFIXES, READ_CONNECT_PREFIXES, UNSUPPORTED


def render() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated from `src/mirrorspark/config/keys.py` by `python -m mirrorspark.config.docs`; do not edit.",
        "",
        "mirrorspark reads MirrorMaker 2's `mm2.properties`. Precedence, as in MM2: flow (`A->B.key`) over",
        "cluster (`A.key`, for client settings) over top level (`key`); `A.consumer.x` beats `A->B.consumer.x`.",
        "",
        "| key | type | default | where | status | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for key in KEYS:
        default = f"`{key.default}`" if key.default is not None else "—"
        status = "deprecated" if key.deprecated_by else ("used" if key.used else "accepted, no effect yet")
        choices = f" One of: {', '.join(key.choices)}." if key.choices else ""
        bounds = f" Range: {key.bounds()}." if key.bounds() else ""
        lines.append(f"| `{key.name}` | {key.type.value} | {default.replace('|', '&#124;')} | {key.scope.value} "
                     f"| {status} | {key.doc}{choices}{bounds} |")
    lines += [
        "",
        "Passed through to clients or Spark as they are: keys starting with "
        + ", ".join(f"`{p}`" for p in PASSTHROUGH_PREFIXES) + ", and the client connection keys "
        "`bootstrap.servers`, `security.protocol`, `ssl.*`, `sasl.*` at top or cluster level.",
        "",
        "Kafka Connect worker settings that MM2 files often carry: `transforms*`, `predicates*` and the "
        "`*.converter` keys are read by the sink's transformation chain, as MM2's worker reads them "
        "([ADR 0025](adr/0025-single-message-transforms.md)); `client.dns.lookup` goes to the clients; "
        "`metric.reporters` (top or cluster level) goes to every client of the cluster, the control plane's "
        "included, as MM2 gives it to each of its clients (classes on `plugin.path` or `spark.jars`); "
        "`errors.*` keys are refused unless they hold MM2's default (below). Accepted and ignored, "
        "as they configure a Connect worker mirrorspark does not run: keys starting with "
        + ", ".join(f"`{p}`" for p in CONNECT_PREFIXES if p not in READ_CONNECT_PREFIXES) + ".",
        "",
        "Refused at top level, per cluster (`A.key`) and per flow (`A->B.key`), because ignoring them would change "
        "what is copied without a word; MM2's default value is accepted and has no effect:",
        "",
        "| key | accepted value | why refused otherwise |",
        "|---|---|---|",
        *(f"| `{u.name}` | {', '.join(f'`{d}`' if d else '(empty)' for d in u.defaults) or '—'} | {u.why} |"
          for u in UNSUPPORTED),
        "",
        "Intervals (`*.interval.seconds`) are whole seconds of at least 1: MM2 silently skips a task whose interval is",
        "negative and 0 would run it without pause, so both are refused (unless the task's `*.enabled` is false); turn",
        "a task off with its `*.enabled` key.",
        "",
        "Any other key gets a warning naming it and the closest known one, as MM2 logs an unused key (e.g.",
        "`emit.heartbeats` -> `emit.heartbeats.enabled`); it is an error in mirrorspark's own namespace",
        "(`mirrorspark.*`), and when it is a near miss of a key that selects what is copied (`topics`,",
        "`topics.exclude`, `topic.map`, `enabled`, the policy and filter classes), since ignoring it would copy other",
        "topics than the file asks for.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/configuration.md")
    target.write_text(render())
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
