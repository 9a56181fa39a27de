"""What `verify` observes, in pieces every stack shares: pod runs, probes, listings.

A stack's own state (`stacks/<stack>/state.py`) is built from these.

Raw API objects are kept as the plain JSON dicts the API returned (only `metadata.managedFields`
is dropped), so a recording is the evidence itself and a replay sees exactly what the live run
saw. Conventions used by every field:

- `None` means "not observed in this run" (the checks that need it report `error`);
- an empty tuple means "observed, and there was nothing";
- an `..._error` string is non-empty when the API call that would fill a field failed.

`to_dict`/`from_dict` define the recording format (docs/recording-format.md); unknown keys are
ignored on read and missing ones take their defaults, so older recordings of the same major
version still load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "PROBE_OUTCOMES",
    "CredentialProbe",
    "JsonObj",
    "Listing",
    "LogsProbe",
    "PodRun",
    "ProbeOutcome",
    "json_objs",
    "opt_json_obj",
    "opt_json_objs",
    "str_field",
]

JsonObj = dict[str, Any]
ProbeOutcome = Literal["rejected", "accepted", "forbidden", "error"]
PROBE_OUTCOMES: tuple[ProbeOutcome, ...] = ("rejected", "accepted", "forbidden", "error")


def json_objs(value: Any) -> tuple[JsonObj, ...]:
    """Recorded API objects (non-mappings dropped)."""
    return tuple(dict(v) for v in value or () if isinstance(v, Mapping))


def opt_json_objs(value: Any) -> tuple[JsonObj, ...] | None:
    return None if value is None else json_objs(value)


def opt_json_obj(value: Any) -> JsonObj | None:
    return dict(value) if isinstance(value, Mapping) else None


def str_field(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return "" if value is None else str(value)


def _outcome(value: str) -> ProbeOutcome:
    for known in PROBE_OUTCOMES:
        if value == known:
            return known
    return "error"


@dataclass(frozen=True)
class PodRun:
    """One GPU pod verify created from `render.verify_objects`, and how its wait ended.

    created: the object the tenant API returned on create, i.e. after admission webhooks (so
      `spec.schedulerName` shows whether HAMi's webhook was called); None if not created.
    pod: the last snapshot, taken after every verify pod of the tenant had been waited for (so
      the share pods' snapshots show them at the same moment); None if the pod vanished.
    events: core/v1 Events about the pod, oldest first, read with that last snapshot.
    outcome: how the bounded wait ended: running | refused (pending with the awaited reason) |
      scheduled (placed although it should not fit) | failed | timeout | gone | not-created |
      create-failed.
    """

    name: str
    check: str  # the TC the pod was made for (render's `gpulab.dev/check` label)
    created: JsonObj | None = None
    create_error: str = ""
    pod: JsonObj | None = None
    events: tuple[JsonObj, ...] = ()
    outcome: str = "not-created"
    waited: float = 0.0
    last_seen: str = ""
    notes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PodRun:
        return cls(
            name=str_field(data, "name"),
            check=str_field(data, "check"),
            created=opt_json_obj(data.get("created")),
            create_error=str_field(data, "create_error"),
            pod=opt_json_obj(data.get("pod")),
            events=json_objs(data.get("events")),
            outcome=str_field(data, "outcome") or "not-created",
            waited=float(data.get("waited") or 0.0),
            last_seen=str_field(data, "last_seen"),
            notes=tuple(str(n) for n in data.get("notes") or ()),
        )


@dataclass(frozen=True)
class LogsProbe:
    """Reading a pod's logs on a worker through the tenant API (proves the Konnectivity path)."""

    node: str
    namespace: str = ""
    pod: str = ""
    ok: bool = False
    excerpt: str = ""  # last log line, shortened
    error: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LogsProbe:
        return cls(
            node=str_field(data, "node"),
            namespace=str_field(data, "namespace"),
            pod=str_field(data, "pod"),
            ok=bool(data.get("ok")),
            excerpt=str_field(data, "excerpt"),
            error=str_field(data, "error"),
        )


@dataclass(frozen=True)
class CredentialProbe:
    """Tenant `credentials_of`'s admin credentials presented to tenant `server_of`'s API server.

    outcome: rejected (401 / TLS alert: what isolation needs) | accepted (the request succeeded) |
    forbidden (403: the server authenticated the identity) | error (no verdict, see detail).
    """

    credentials_of: str
    server_of: str
    outcome: ProbeOutcome
    detail: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CredentialProbe:
        outcome = str_field(data, "outcome")
        return cls(
            credentials_of=str_field(data, "credentials_of"),
            server_of=str_field(data, "server_of"),
            outcome=_outcome(outcome),
            detail=str_field(data, "detail"),
        )


@dataclass(frozen=True)
class Listing:
    """What one tenant's API listed (nodes, pods in all namespaces) while every tenant's verify
    pods existed; TC-08 compares the listings of all tenants. Nodes are kept whole, pods as
    observe.listing_pod summaries (name, namespace, uid, labels, node, phase)."""

    nodes: tuple[JsonObj, ...] = ()
    pods: tuple[JsonObj, ...] = ()
    error: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Listing:
        return cls(
            nodes=json_objs(data.get("nodes")),
            pods=json_objs(data.get("pods")),
            error=str_field(data, "error"),
        )
