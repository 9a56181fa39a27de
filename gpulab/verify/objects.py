"""Reading Kubernetes facts out of plain API objects (pure helpers every stack's checks use)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

__all__ = [
    "annots",
    "condition",
    "container_problems",
    "event_message",
    "event_source",
    "events_about",
    "events_with",
    "int_quantity",
    "labels",
    "metadata",
    "missing_containers",
    "name",
    "node_ready",
    "pod_node",
    "pod_phase",
    "pod_serving",
    "pod_summary",
    "scheduler_name",
    "short_events",
]


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def name(obj: Mapping[str, Any] | None) -> str:
    return str(metadata(obj).get("name") or "")


def labels(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return metadata(obj).get("labels") or {}


def annots(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return metadata(obj).get("annotations") or {}


def _section(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = (obj or {}).get(key)
    return value if isinstance(value, dict) else {}


def condition(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    for cond in _section(obj, "status").get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def node_ready(node: Mapping[str, Any]) -> tuple[bool, str]:
    """(Ready?, why not: the Ready condition's reason and message)."""
    cond = condition(node, "Ready")
    if cond is None:
        return False, "no Ready condition reported yet"
    if cond.get("status") == "True":
        return True, ""
    why = " ".join(str(p) for p in (cond.get("reason"), cond.get("message")) if p)
    return False, why or f"Ready={cond.get('status')}"


def int_quantity(value: Any) -> int | None:
    """An integer resource quantity ("81920", 10, "1k"); None if absent or not a whole number."""
    if value is None:
        return None
    text = str(value).strip()
    suffixes = {"k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in sorted(suffixes.items(), key=lambda s: -len(s[0])):
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * factor
    return int(text) if text.isdigit() else None


# --------------------------------------------------------------------------- pods


def pod_phase(pod: Mapping[str, Any] | None) -> str:
    return str(_section(pod, "status").get("phase") or "Unknown") if pod else "absent"


def scheduler_name(pod: Mapping[str, Any] | None) -> str:
    return str(_section(pod, "spec").get("schedulerName") or "default-scheduler")


def pod_node(pod: Mapping[str, Any] | None) -> str:
    return str(_section(pod, "spec").get("nodeName") or "")


def missing_containers(pod: Mapping[str, Any], wanted: Iterable[str]) -> list[str]:
    """The containers of `wanted` the pod neither declares nor has a status for, in order."""
    present = {str(c.get("name")) for c in _section(pod, "spec").get("containers") or []
               if isinstance(c, dict)}
    present |= {str(s.get("name")) for s in _section(pod, "status").get("containerStatuses") or []
                if isinstance(s, dict)}
    return [want for want in wanted if want not in present]


def container_problems(pod: Mapping[str, Any], wanted: Iterable[str] | None = None) -> list[str]:
    """Why containers are not running and ready: 'name: waiting CrashLoopBackOff (3 restarts)'.

    `wanted` names containers that must exist (a missing one is reported as 'missing').
    """
    statuses = {
        str(s.get("name")): s
        for s in _section(pod, "status").get("containerStatuses") or []
        if isinstance(s, dict)
    }
    declared = [
        str(c.get("name")) for c in _section(pod, "spec").get("containers") or []
        if isinstance(c, dict)
    ]
    problems = [f"{want}: missing" for want in missing_containers(pod, wanted or ())]
    for cname in declared or list(statuses):
        status = statuses.get(cname)
        if status is None:
            problems.append(f"{cname}: no status yet")
            continue
        state = status.get("state") or {}
        restarts = int(status.get("restartCount") or 0)
        tail = f" ({restarts} restarts)" if restarts else ""
        if "running" not in state:
            (kind, detail), *_ = list(state.items()) or [("unknown", {})]
            why = (detail or {}).get("reason") or ""
            problems.append(f"{cname}: {kind}{' ' + why if why else ''}{tail}")
        elif not status.get("ready"):
            problems.append(f"{cname}: running but not ready{tail}")
    return problems


def pod_serving(pod: Mapping[str, Any] | None) -> bool:
    """Phase Running with every container running and ready (a crash-looping or unready
    container does not count)."""
    return pod is not None and pod_phase(pod) == "Running" and not container_problems(pod)


def pod_summary(pod: Mapping[str, Any] | None) -> str:
    """'Pending, scheduler hami-scheduler, node -' style one-liner."""
    if pod is None:
        return "pod not found"
    node = pod_node(pod) or "-"
    return f"{pod_phase(pod)}, schedulerName {scheduler_name(pod)}, node {node}"


# --------------------------------------------------------------------------- events


def event_message(event: Mapping[str, Any]) -> str:
    return " ".join(str(event.get("message") or event.get("note") or "").split())


def event_source(event: Mapping[str, Any]) -> str:
    source = event.get("source") or {}
    return str(
        source.get("component")
        or event.get("reportingComponent")
        or event.get("reportingController")
        or ""
    )


_Event = TypeVar("_Event", bound="Mapping[str, Any]")


def events_about(events: Iterable[_Event], uids: Collection[str]) -> tuple[_Event, ...]:
    """The events about the objects with these uids: an event whose involvedObject (events.k8s.io:
    regarding) names another uid, e.g. a same-named object of an earlier run, is dropped; events
    without a uid are kept. No (non-empty) uid: every event."""
    wanted = {uid for uid in uids if uid}
    if not wanted:
        return tuple(events)
    return tuple(e for e in events
                 if str((e.get("involvedObject") or e.get("regarding") or {}).get("uid") or "")
                 in {"", *wanted})


def events_with(
    events: Sequence[Mapping[str, Any]], reason: str | None = None, text: str | None = None
) -> list[Mapping[str, Any]]:
    """Events with this `reason` and/or whose message contains `text`."""
    return [
        e for e in events
        if (reason is None or e.get("reason") == reason)
        and (text is None or text in event_message(e))
    ]


def short_events(events: Sequence[Mapping[str, Any]], limit: int = 4) -> str:
    """The last `limit` events as 'Reason: message' (messages shortened), or 'no events'."""
    if not events:
        return "no events"
    parts = []
    for event in list(events)[-limit:]:
        message = event_message(event)
        if len(message) > 140:
            message = message[:137] + "..."
        parts.append(f"{event.get('reason', '?')}: {message}")
    return " | ".join(parts)
