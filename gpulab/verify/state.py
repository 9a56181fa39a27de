"""What `verify` observes, in pieces every stack shares: pod runs, probes, listings.

A stack's own state (`stacks/<stack>/state.py`) is built from these.

Raw API objects are kept as the plain JSON dicts the API returned (only `metadata.managedFields`
is dropped), so a recording is the evidence itself and a replay sees exactly what the live run
saw. Conventions used by every field:

- `None` means "not observed in this run" (the checks that need it report `error`);
- an empty tuple means "observed, and there was nothing";
- an `..._error` string is non-empty when the API call that would fill a field failed.

These dataclasses are the recording format's types (docs/recording-format.md): recordings are
written with `dataclasses.asdict` and read back by pydantic in strict mode
(gpulab.verify.recording), which also derives the published JSON Schemas from them.
"""

from __future__ import annotations

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
]

JsonObj = dict[str, Any]
ProbeOutcome = Literal["rejected", "accepted", "forbidden", "error"]
PROBE_OUTCOMES: tuple[ProbeOutcome, ...] = ("rejected", "accepted", "forbidden", "error")


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

@dataclass(frozen=True)
class LogsProbe:
    """Reading a pod's logs on a worker through the tenant API (proves the Konnectivity path)."""

    node: str
    namespace: str = ""
    pod: str = ""
    ok: bool = False
    excerpt: str = ""  # last log line, shortened
    error: str = ""

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

@dataclass(frozen=True)
class Listing:
    """What one tenant's API listed (nodes, pods in all namespaces) while every tenant's verify
    pods existed; TC-08 compares the listings of all tenants. Nodes are kept whole, pods as
    observe.listing_pod summaries (name, namespace, uid, labels, node, phase)."""

    nodes: tuple[JsonObj, ...] = ()
    pods: tuple[JsonObj, ...] = ()
    error: str = ""
