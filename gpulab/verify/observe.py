"""Pieces of `verify`'s I/O every stack shares: bounded polling, cleaning objects for
recordings, verify's own namespace, credential probes between members, a crash guard per phase.

A stack's `observe.py` composes these into its observation; nothing here knows a stack.
"""

from __future__ import annotations

import copy
import re
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from tenacity import Retrying, retry_if_result, wait_fixed

from gpulab.errors import GpulabError
from gpulab.naming import LABEL_LAB, LABEL_TENANT
from gpulab.verify import objects as o
from gpulab.verify.state import CredentialProbe, ProbeOutcome

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from pathlib import Path

    from tenacity import RetryCallState

    from gpulab.adapters.base import KubeGateway
    from gpulab.verify.state import JsonObj

__all__ = [
    "CHECK_LABEL",
    "VERIFY_NAMESPACE",
    "Clock",
    "CrossTenantGateway",
    "Interrupted",
    "classify_probe_error",
    "clean_all",
    "clean_object",
    "clear_leftovers",
    "cross_kubeconfig",
    "default_service_account",
    "delete_verify_objects",
    "guard",
    "kubeconfig_cross_gateway",
    "labelled",
    "listing_pod",
    "one_line",
    "poll",
    "probe_credentials",
    "stop_on_interrupt",
    "stoppable",
]

VERIFY_NAMESPACE = "gpulab-verify"  # every object verify creates in a cluster lives here
NS = VERIFY_NAMESPACE
CHECK_LABEL = "gpulab.dev/check"  # which check a verify pod was made for


class CrossTenantGateway(Protocol):
    """Builds a gateway that presents `credentials_of`'s admin credentials to `server_of`'s API
    server, trusting `server_of`'s CA (so the server, not the client, decides). Raising
    `GpulabError` (or OSError/ValueError) means the probe could not be made."""

    def __call__(self, credentials_of: str, server_of: str) -> KubeGateway: ...


@dataclass(frozen=True)
class Clock:
    """Time as the observe layer sees it; tests pass a fake that advances on sleep."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


class Interrupted(BaseException):
    """Raised in a member's thread when verify is interrupted (Ctrl-C, SIGTERM), so its waits end
    at once and the cleanup can run. Not an Exception: `guard` must not file it as a bug."""


def stoppable(clock: Clock | None) -> tuple[Clock, threading.Event]:
    """`clock` (default: the real one) whose sleep raises Interrupted once the returned event is
    set (checked before and after each sleep, so a wait ends within one poll interval)."""
    base = clock or Clock()
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        if stop.is_set():
            raise Interrupted
        base.sleep(seconds)
        if stop.is_set():
            raise Interrupted

    return Clock(now=base.now, sleep=sleep), stop


@contextmanager
def stop_on_interrupt(stop: threading.Event) -> Iterator[None]:
    """Set `stop` when the block ends by an exception (Ctrl-C, SIGTERM, a bug), so the members'
    waits end and the cleanup that follows does not wait for them."""
    try:
        yield
    except BaseException:
        stop.set()
        raise


def clean_object(obj: Mapping[str, Any] | None) -> JsonObj | None:
    """A deep copy without `metadata.managedFields` (noise, never evidence)."""
    if obj is None:
        return None
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return out


def clean_all(objs: Iterable[Mapping[str, Any]]) -> tuple[JsonObj, ...]:
    return tuple(c for c in (clean_object(x) for x in objs) if c is not None)


def listing_pod(pod: Mapping[str, Any]) -> JsonObj:
    """What TC-08 needs of a pod in an all-namespaces listing (identity, labels, node, phase):
    the listing covers every namespace of a tenant, so recordings keep no more than that."""
    meta = o.metadata(pod)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {key: meta[key] for key in ("name", "namespace", "uid", "labels")
                     if key in meta},
        "spec": {"nodeName": o.pod_node(pod)} if o.pod_node(pod) else {},
        "status": {"phase": o.pod_phase(pod)},
    }


def one_line(text: str, limit: int = 300) -> str:
    """An API error or message folded onto one line, cut to `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def delete_verify_objects(kube: KubeGateway, pods: Iterable[str]) -> list[str]:
    """Delete verify's pods, then its namespace; the errors, one line each (none: all gone)."""
    errors = []
    for name in pods:
        try:
            kube.delete("v1", "Pod", name, NS)
        except GpulabError as err:
            errors.append(one_line(str(err), 160))
    try:
        kube.delete("v1", "Namespace", NS)
    except GpulabError as err:
        errors.append(one_line(str(err), 160))
    return errors


def labelled(obj: JsonObj, lab: str, tenant: str) -> JsonObj:
    """A copy of `obj` labelled for the lab and the member (tenant or team) it belongs to."""
    out = copy.deepcopy(obj)
    labels = out.setdefault("metadata", {}).setdefault("labels", {})
    labels[LABEL_LAB] = lab
    labels[LABEL_TENANT] = tenant
    return out


def poll(
    probe: Callable[[], tuple[str | None, str]],
    timeout: float,
    interval: float,
    clock: Clock,
) -> tuple[str, str]:
    """Call `probe` (→ outcome or None to keep waiting, observation) until an outcome or timeout.

    API errors while polling are observations, not outcomes. Returns (outcome | 'timeout', last
    observation). Time is `clock`'s alone (tenacity repeats, `clock.sleep` pauses).
    """
    deadline = clock.now() + timeout

    def attempt() -> tuple[str | None, str]:
        try:
            return probe()
        except GpulabError as err:
            return None, f"API error: {one_line(str(err))}"

    def timed_out(state: RetryCallState) -> tuple[str, str]:
        return "timeout", state.outcome.result()[1] if state.outcome else ""

    outcome, seen = Retrying(
        retry=retry_if_result(lambda result: not result[0]),
        stop=lambda _state: clock.now() >= deadline,
        wait=wait_fixed(interval),
        sleep=clock.sleep,
        retry_error_callback=timed_out,
    )(attempt)
    return outcome or "timeout", seen


def clear_leftovers(kube: KubeGateway, cleanup: float, interval: float, clock: Clock) -> str:
    """Make sure no earlier run's pods are in verify's namespace; '' when ready, else why not
    (`cleanup` seconds at most, polling every `interval`)."""
    existing = kube.get("v1", "Namespace", NS)
    if existing is None:
        return ""
    terminating = bool(o.metadata(existing).get("deletionTimestamp")) or (
        (existing.get("status") or {}).get("phase") == "Terminating")
    if terminating:
        def gone() -> tuple[str | None, str]:
            ns = kube.get("v1", "Namespace", NS)
            return ("gone" if ns is None else None), "namespace still terminating"

        outcome, _ = poll(gone, cleanup, interval, clock)
        if outcome != "gone":
            return (f"namespace {NS} (left by an earlier run) is still terminating after "
                    f"{cleanup:.0f}s; wait for it to go and re-run")
        return ""
    for pod in kube.list_objects("v1", "Pod", NS):
        kube.delete("v1", "Pod", o.name(pod), NS)

    def empty() -> tuple[str | None, str]:
        left = kube.list_objects("v1", "Pod", NS)
        return ("empty" if not left else None), f"{len(left)} earlier verify pod(s) left"

    outcome, last = poll(empty, cleanup, interval, clock)
    if outcome != "empty":
        return f"earlier verify pods in {NS} did not go away within {cleanup:.0f}s: {last}"
    return ""


def default_service_account(kube: KubeGateway, namespace: str, timeout: float, interval: float,
                            clock: Clock) -> str:
    """Wait until ServiceAccount `default` exists in `namespace`; '' then, else why not.

    A new namespace gets its `default` ServiceAccount from kube-controller-manager's
    serviceaccount controller, asynchronously; until it exists the ServiceAccount admission
    plugin refuses every pod that names no other account, with 403 Forbidden "error looking up
    service account <ns>/default: serviceaccount \"default\" not found" (kubernetes
    plugin/pkg/admission/serviceaccount/admission.go, `Admit`/`getServiceAccount`: docs/vcluster-
    kai.md, "What verify does"). Kubernetes' own e2e framework waits for it the same way before
    it creates pods ("Waiting for a default service account to be provisioned in namespace").
    """
    def exists() -> tuple[str | None, str]:
        account = kube.get("v1", "ServiceAccount", "default", namespace)
        return ("exists" if account is not None else None), "not created yet"

    outcome, last = poll(exists, timeout, interval, clock)
    if outcome == "exists":
        return ""
    return (f"ServiceAccount {namespace}/default did not appear within {timeout:.0f}s (last seen: "
            f"{last}); the API server refuses pods until it exists: is the cluster's "
            f"kube-controller-manager running?")


# The HTTP status of a call gpulab's Kubernetes client saw answered: `<verb> <what> at
# <server>: <status> <reason>[: <message>]` (gpulab/adapters/kube.py).
_ANSWERED = re.compile(r" at \S+: (\d{3})(?=[ :(]|$)")


def classify_probe_error(err: BaseException) -> ProbeOutcome:
    """How an API server answered foreign credentials.

    401 (or a TLS alert from the server about the client certificate) = rejected; 403 = the server
    authenticated the identity (forbidden); anything else (connection refused, the client not
    trusting the server) = error, no verdict.
    """
    status = getattr(err, "status", None)
    if not isinstance(status, int) or not status:  # no attribute, or no HTTP answer (0)
        answered = _ANSWERED.search(str(err))
        status = int(answered.group(1)) if answered else None
    text = f"{err} {getattr(err, 'output', '')}".lower()
    # The words only when no status is known: digits anywhere in the text (a port such as
    # 127.0.0.1:40123) say nothing of the answer.
    if status == 401 or (status is None and "unauthorized" in text):
        return "rejected"
    if status == 403 or (status is None and "forbidden" in text):
        return "forbidden"
    if "alert" in text and ("certificate" in text or "unknown ca" in text):
        return "rejected"
    return "error"


def probe_credentials(cross: CrossTenantGateway, credentials_of: str, server_of: str
                      ) -> CredentialProbe:
    """Present `credentials_of`'s credentials to `server_of`'s API server; how it answered."""
    try:
        gateway = cross(credentials_of, server_of)
        items = gateway.list_objects("v1", "Namespace")
    except (GpulabError, OSError, ValueError) as err:
        return CredentialProbe(credentials_of, server_of, classify_probe_error(err),
                               one_line(str(err)))
    return CredentialProbe(credentials_of, server_of, "accepted",
                           f"it listed {len(items)} namespaces")


def _current(config: Mapping[str, Any], section: str, key: str) -> JsonObj:
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or []}
    ctx = contexts.get(config.get("current-context")) or next(iter(contexts.values()), {})
    wanted = ctx.get(key)
    entries = config.get(section) or []
    for entry in entries:
        if entry.get("name") == wanted:
            return dict(entry)
    if entries:
        return dict(entries[0])
    raise ValueError(f"kubeconfig has no {section}")


def cross_kubeconfig(credentials: str, server: str, name: str = "cross-tenant-probe") -> str:
    """A kubeconfig with the user of `credentials` and the cluster (URL and CA) of `server`.

    Both arguments are kubeconfig texts (their current contexts are used). Pure: no file I/O.
    """
    creds = yaml.safe_load(credentials) or {}
    target = yaml.safe_load(server) or {}
    cluster = _current(target, "clusters", "cluster")
    user = _current(creds, "users", "user")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster.get("cluster") or {}}],
        "users": [{"name": name, "user": user.get("user") or {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    return str(yaml.safe_dump(config, sort_keys=False))


def kubeconfig_cross_gateway(
    kubeconfig_of: Callable[[str], Path],
    gateway: Callable[[Path], KubeGateway],
    scratch: Path,
) -> CrossTenantGateway:
    """The usual `Gateways.cross`: merge two tenants' admin kubeconfigs (cross_kubeconfig), write
    the result (mode 0600) under `scratch`, build a gateway from it, delete the file again.

    `gateway` must read the file when called (KubeClient does, in its constructor).
    """
    from gpulab.paths import write_secret

    def cross(credentials_of: str, server_of: str) -> KubeGateway:
        text = cross_kubeconfig(kubeconfig_of(credentials_of).read_text(),
                                kubeconfig_of(server_of).read_text())
        path = write_secret(scratch / f"probe-{credentials_of}-on-{server_of}.kubeconfig",
                            text.encode())
        try:
            return gateway(path)
        finally:
            path.unlink(missing_ok=True)

    return cross


def guard(fields: dict[str, Any], phase: str, body: Callable[[], None]) -> None:
    """Run one phase of one tenant (or team); a crash (a bug) becomes its `internal_error` in
    `fields`, and later phases of that member are skipped, while the others go on."""
    if fields.get("internal_error"):
        return
    try:
        body()
    except Exception as err:  # a bug, not a lab problem: report it, keep the other members
        last = traceback.extract_tb(err.__traceback__)[-1:]
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        fields["internal_error"] = f"{phase}: {type(err).__name__}: {err}{where}"
