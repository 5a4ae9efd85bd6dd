"""What the flow graph alone says is unsafe or special: cycles records could go round forever, cycles
that keep topic names (active/active on the same names), and two sources that would write one remote topic.

MM2 stops records looping only because a DefaultReplicationPolicy remote name carries the source
alias (``B.orders``), so a flow can see that a topic came from its own target. A cycle in which
every flow keeps names (IdentityReplicationPolicy or MM2's "no prefix" recipe, no ``topic.map``)
would copy the same topic back and forth forever under MM2. mirrorspark runs it as active/active on
the same names instead: each flow of such a cycle marks the records it copies with the clusters they
have been in (``pipeline.provenance``) and skips a record that has already been in its target, so
every cluster ends with each record once and nothing comes back. Cycles that mix naming schemes, a
custom policy mirrorspark cannot inspect without importing it, or ``topic.map`` entries chained
around the cycle are still refused; so is a layout where one record could reach a cluster along
two paths of same-name flows (it would arrive twice). The same naming rules say statically when two
map entries, or a map entry and a policy-generated name, land on one remote topic; collisions that
depend on which topics exist are caught when the runner plans remote names
(``control.remote_topics.RemoteNames``).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator

from mirrorspark.config.java_regex import JavaRegexError, compile_java
from mirrorspark.config.keys import builtin_policy
from mirrorspark.config.model import FlowConfig
from mirrorspark.config.values import compile_patterns
from mirrorspark.errors import ConfigError

POLICY_KEY = "replication.policy.class"
_LAPS = 3  # a mapped name still travelling after this many laps round a cycle travels forever
_MAX_CYCLES = 1000  # cycles followed per flow with a topic.map (a full mesh of many clusters has millions)
_MAX_PATHS = 10000  # same-name paths followed from one cluster when looking for a record's second way in


def policy_kind(flow: FlowConfig) -> str:
    """``default``, ``identity`` or ``custom``: what the flow's policy is, read without importing it. The
    default policy with an empty separator (MM2's "no prefix" recipe) names like identity: no remote name
    shows its source, so identity's cycle rules apply."""
    kind = builtin_policy(flow.options.policy_class) or "custom"
    return "identity" if kind == "default" and not flow.options.separator else kind


def separator(flow: FlowConfig) -> str:
    return flow.options.separator


def check_topology(flows: list[FlowConfig]) -> frozenset[str]:
    """Refuse unsafe cycles and static remote-name collisions among the enabled ``flows``; return the
    names of the flows that run active/active on the same names (they mark and skip provenance)."""
    enabled = [f for f in flows if f.enabled]
    same_names: set[str] = set()
    for flow in enabled:
        if policy_kind(flow) != "default":
            for back in itertools.islice(_paths_back(enabled, flow), _MAX_CYCLES):
                cycle = [flow, *back]
                if filters_keep_apart(cycle):
                    continue
                if _custom_cycle(cycle):
                    continue  # MM2 runs it, trusting the policy's topicSource: checked once imported (run)
                if not all(_keeps_names(f) for f in cycle):
                    _refuse_policy_cycle(cycle, flow)
                same_names.update(f.name for f in cycle)
    if same_names:
        _check_second_ways(enabled)
    for flow in enabled:
        if flow.options.topic_map:
            for back in itertools.islice(_paths_back(enabled, flow), _MAX_CYCLES):
                _check_cycle_maps([flow, *back])
    _check_map_collisions(enabled)
    return frozenset(same_names)


def _custom_cycle(cycle: list[FlowConfig]) -> bool:
    """A cycle of renaming flows where some use a custom policy: MM2 stops it when the custom policy's
    remote names carry their source alias (its ``topicSource``), as DefaultReplicationPolicy's do."""
    return any(policy_kind(f) == "custom" for f in cycle) and all(
        policy_kind(f) == "custom" or (policy_kind(f) == "default" and f.options.separator) for f in cycle)


def custom_policy_cycles(flows: list[FlowConfig]) -> list[list[FlowConfig]]:
    """The cycles of enabled flows accepted on their custom policies' word (``_custom_cycle``)."""
    enabled = [f for f in flows if f.enabled]
    found: list[list[FlowConfig]] = []
    for flow in enabled:
        if policy_kind(flow) == "custom":
            for back in itertools.islice(_paths_back(enabled, flow), _MAX_CYCLES):
                cycle = [flow, *back]
                if not filters_keep_apart(cycle) and _custom_cycle(cycle):
                    found.append(cycle)
    return found


def _keeps_names(flow: FlowConfig) -> bool:
    """The flow's remote topics have their source topics' names (identity naming, no ``topic.map``)."""
    return policy_kind(flow) == "identity" and not flow.options.topic_map


def _check_second_ways(flows: list[FlowConfig]) -> None:
    """A record copied along same-name flows never enters a cluster it has been in, but it could
    still reach one cluster along two paths (a full mesh: A->C directly and A->B->C) and be written
    there twice. Refused unless two flows of the two paths select provably different topics."""
    keep = [f for f in flows if _keeps_names(f)]
    out: dict[str, list[FlowConfig]] = {}
    for flow in keep:
        out.setdefault(flow.source.alias, []).append(flow)
    for origin in sorted(out):
        reached: dict[str, list[list[FlowConfig]]] = {}
        for path in itertools.islice(_walk(out, origin), _MAX_PATHS):
            ways = reached.setdefault(path[-1].target.alias, [])
            for other in ways:
                union = list({f.name: f for f in (*path, *other)}.values())
                if not any(_disjoint(a.options.topics, b.options.topics) for a, b in itertools.combinations(union, 2)):
                    key, there = path[-1].where("topics"), path[-1].target.alias
                    raise ConfigError(
                        f"{key}: a record produced on {origin} reaches {there} along two paths of flows "
                        f"that keep topic names ({' then '.join(f.name for f in other)}; and "
                        f"{' then '.join(f.name for f in path)}), so it would be written there "
                        "twice; disable one of those flows, or give their topics filters that keep them apart", key)
            ways.append(path)


def _walk(out: dict[str, list[FlowConfig]], origin: str) -> Iterator[list[FlowConfig]]:
    """Every path of flows from ``origin`` that enters no cluster twice (the way marked records travel)."""
    def step(node: str, path: list[FlowConfig], seen: set[str]) -> Iterator[list[FlowConfig]]:
        for flow in out.get(node, []):
            nxt = flow.target.alias
            if nxt not in seen:
                yield [*path, flow]
                yield from step(nxt, [*path, flow], seen | {nxt})

    yield from step(origin, [], {origin})


def _paths_back(flows: list[FlowConfig], first: FlowConfig) -> Iterator[list[FlowConfig]]:
    """Every elementary path of flows from ``first``'s target back to its source: with ``first``, a cycle."""
    out: dict[str, list[FlowConfig]] = {}
    for flow in flows:
        out.setdefault(flow.source.alias, []).append(flow)
    goal = first.source.alias

    def walk(node: str, path: list[FlowConfig], seen: set[str]) -> Iterator[list[FlowConfig]]:
        for flow in out.get(node, []):
            nxt = flow.target.alias
            if nxt == goal:
                yield [*path, flow]
            elif nxt not in seen:
                yield from walk(nxt, [*path, flow], seen | {nxt})

    yield from walk(first.target.alias, [], {goal, first.target.alias})


def filters_keep_apart(cycle: list[FlowConfig]) -> bool:
    """A cycle of flows that all keep names (IdentityReplicationPolicy, no ``topic.map``) where two flows'
    ``topics`` provably match no common name: no topic can travel the whole cycle, so none comes back
    (``A->B.topics = na\\..*`` and ``B->A.topics = eu\\..*``; heartbeats keep their alias prefix, and
    MM2's cycle check stops them). Anything not provable is treated as able to come back."""
    if any(policy_kind(f) != "identity" or f.options.topic_map for f in cycle):
        return False
    return any(_disjoint(a.options.topics, b.options.topics) for a, b in itertools.combinations(cycle, 2))


def _disjoint(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """No topic name fully matches an entry of both lists of regexes (proved from literal prefixes). MM2
    joins each list, so an inline flag in one entry may reach the others: not provable."""
    if any("(?" in p for p in (*first, *second)):
        return False
    return bool(first) and bool(second) and all(_apart(a, b) for a in first for b in second)


def _apart(a: str, b: str) -> bool:
    (prefix_a, literal_a), (prefix_b, literal_b) = _literal_prefix(a), _literal_prefix(b)
    try:
        if literal_a:
            return compile_java(b).fullmatch(prefix_a) is None
        if literal_b:
            return compile_java(a).fullmatch(prefix_b) is None
    except JavaRegexError:  # an entry that compiles only joined with the others: not provable
        return False
    return not (prefix_a.startswith(prefix_b) or prefix_b.startswith(prefix_a))


_SPECIAL = set(".^$*+?{}[]()|")
_OPTIONAL = set("*?{")


def _literal_prefix(pattern: str) -> tuple[str, bool]:
    """The text every full match of ``pattern`` starts with, and whether the pattern is exactly that text.
    An alternation anywhere gives no prefix (it could apply to the whole pattern)."""
    if "|" in pattern:
        return "", False
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern) or pattern[i + 1].isalnum():
                break  # \d, \w...: a class, not a literal
            char, step = pattern[i + 1], 2
        elif char in _SPECIAL:
            break
        else:
            step = 1
        if i + step < len(pattern) and pattern[i + step] in _OPTIONAL:
            break  # this character may be absent or repeated
        out.append(char)
        i += step
    return "".join(out), i == len(pattern)


def _names(cycle: list[FlowConfig]) -> str:
    return ", ".join(f.name for f in cycle)


def _refuse_policy_cycle(cycle: list[FlowConfig], flow: FlowConfig) -> None:
    culprit = next((f for f in cycle if not _keeps_names(f) and policy_kind(f) != "default"), None)
    if culprit is not None:  # a custom policy, or identity naming with topic.map entries
        flow = culprit
    key = flow.where(POLICY_KEY)
    name = flow.options.policy_class
    if policy_kind(flow) == "custom":
        why = f"the custom policy {name!r} cannot be checked for cycle safety without importing it"
    elif flow.options.topic_map:
        key, why = flow.where("topic.map"), "its topic.map renames some topics while the others keep their names"
    elif builtin_policy(name) == "default" and not flow.options.separator:
        key, why = flow.where("replication.policy.separator"), "an empty separator keeps topic names"
    else:
        why = "IdentityReplicationPolicy keeps topic names"
    renaming = next((f for f in cycle if policy_kind(f) == "default"), None)
    if renaming is None:
        example = " (the same topics copied round and round)"
    elif len(cycle) == 2:
        alias = renaming.source.alias
        example = f" (orders, {alias}.orders, {alias}.{alias}.orders...)"
    else:
        example = ""
    raise ConfigError(
        f"{key}: the enabled flows {_names(cycle)} form a cycle and {flow.name} does not use "
        f"DefaultReplicationPolicy ({why}), so records can come back to the cluster they came from and be copied "
        f"again, possibly forever{example}; MM2 stops a cycle only when every remote name carries its source alias, "
        "and mirrorspark also runs a cycle in which every flow keeps topic names (active/active on the same names): "
        "use DefaultReplicationPolicy on every flow of the cycle, or IdentityReplicationPolicy without topic.map on "
        "every flow of it, or disable one of them", key)


def _from_target(name: str, target: str, sep: str) -> bool:
    """MM2's cycle detection under the default policy: the name came, over any hops, from ``target``."""
    while True:
        source, found, rest = name.partition(sep)
        if not found:
            return False
        if source == target:
            return True
        name = rest


def _check_cycle_maps(cycle: list[FlowConfig]) -> None:
    """A topic.map entry bypasses the policy (a mapped topic is always replicated, under the given
    name), so entries can carry a topic round a cycle of default-policy flows: follow each entry of
    the cycle's first flow for a few laps."""
    first = cycle[0]
    for mapped in first.options.topic_map:
        name = mapped
        for hop in range(_LAPS * len(cycle)):
            flow = cycle[hop % len(cycle)]
            if name in flow.options.topic_map:
                name = flow.options.topic_map[name]
            elif _from_target(name, flow.target.alias, separator(flow)):
                break  # MM2's cycle detection stops it here
            else:
                name = f"{flow.source.alias}{separator(flow)}{name}"
        else:
            key = first.where("topic.map")
            raise ConfigError(
                f"{key} maps {mapped} to {first.options.topic_map[mapped]}, and the flows {_names(cycle)} carry it "
                "back under names their policy does not recognise as their own: records would loop between the "
                "clusters forever; remove the entry or the one that sends it back", key)


def _accepts(flow: FlowConfig, topic: str) -> bool:
    """The flow's ``topics`` / ``topics.exclude`` would select ``topic`` (regexes checked already)."""
    include = compile_patterns(flow.options.topics, flow.options.topics_key)
    exclude = compile_patterns(flow.options.topics_exclude, flow.options.topics_exclude_key)
    return bool(include and include.fullmatch(topic)) and not (exclude and exclude.fullmatch(topic))


def _check_map_collisions(flows: list[FlowConfig]) -> None:
    """Two map entries onto one remote topic (in one flow or in two flows with the same target), or a
    map entry onto the name a default-policy flow of the same target gives one of its topics."""
    claimed: dict[tuple[str, str], tuple[FlowConfig, str]] = {}
    for flow in flows:
        for source_topic, remote in flow.options.topic_map.items():
            earlier = claimed.get((flow.target.alias, remote))
            if earlier is not None:
                key = flow.where("topic.map")
                raise ConfigError(
                    f"{key}: {flow.name} maps {source_topic} to {remote!r} and {earlier[0].name} maps {earlier[1]} to "
                    f"it too: two sources would write one remote topic on {flow.target.alias}; give one of them "
                    "another name", key)
            claimed[(flow.target.alias, remote)] = (flow, source_topic)
    for flow in flows:
        for source_topic, remote in flow.options.topic_map.items():
            for other in flows:
                if other.target.alias != flow.target.alias or policy_kind(other) != "default":
                    continue
                prefix = f"{other.source.alias}{separator(other)}"
                rest = remote[len(prefix):] if remote.startswith(prefix) else ""
                if not rest or rest in other.options.topic_map or not _accepts(other, rest):
                    continue
                key = flow.where("topic.map")
                raise ConfigError(
                    f"{key}: {flow.name} maps {source_topic} to {remote!r}, the name {other.name}'s "
                    f"replication policy gives its topic {rest!r} (selected by {other.where('topics')}): two "
                    f"sources would write one remote topic on {flow.target.alias}; map to a name that does not "
                    f"start with {prefix!r}, or exclude {rest!r}", key)
