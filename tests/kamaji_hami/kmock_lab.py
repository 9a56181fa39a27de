"""kmock API servers for the live path of `verify`, with the test playing Kamaji, HAMi and kubelet.

`KmockLab` serves one kmock `KubernetesEmulator` per cluster (the management cluster and every
tenant of the profile) over HTTP from one event loop in a daemon thread, and writes a kubeconfig
per cluster; `lab.gateways()` builds real `KubeClient`s from those files, as `gpulab verify` does
(gpulab/stacks/kamaji_hami.py). The sync client never runs on the loop's thread.

The other parts of the lab are played here, in the shapes of tests/kamaji_hami/builders.py (the
write-up, the Kamaji + HAMi write-up):

* Kamaji: the management cluster holds each TenantControlPlane (Ready) and its pod with the four
  containers; each tenant's API answers `/version` with the tenant's version.
* the workers: each tenant has its Node(s) (Ready, kubelet version, HAMi's allocatable and
  `hami.io/node-nvidia-register`), the kube-system pods, calico-node and HAMi's ConfigMap; reading
  a pod's logs answers like the kubelet (through Konnectivity).
* HAMi (`HamiPlayer`): its admission webhook is a reaction on pod creation (it rewrites
  `schedulerName` to hami-scheduler unless the tunnel is "broken"); a daemon thread (`_Player`)
  then plays HAMi's scheduler (cards filtered as HAMi's Fit does: pinned uuid, memory, cores;
  `hami.io/vgpu-node` / `hami.io/vgpu-devices-allocated`, the node lock, FilteringSucceed /
  BindingSucceed / FilteringFailed events as core/v1 Events) and the kubelet (bound pods Running).
  The player does not talk HTTP: each step is handed to the loop's thread, so the emulators'
  state is only ever touched by that one thread, and the request log holds verify's calls only.

kmock 0.8 limits worked around (the adapter contract tests, tests/contract, pin the rest):

* namespaces: `/api/v1/namespaces/<name>` parses as a namespace without a resource, and
  `/api/v1/namespaces` (the list) crashes kmock's request parser with a 500 before any reaction
  can answer. `Cluster` serves GET/PATCH (server-side apply, which creates)/DELETE of single
  namespaces from its own table; the namespace list cannot be served at all.
* no server-side apply of missing objects: PATCH answers 404 and `KubeClient.apply` falls back to
  a POST (its documented fallback), so every verify pod is a PATCH then a POST.
* no server-populated metadata: the admission reaction sets uid, creationTimestamp, the default
  schedulerName and `status.phase: Pending`, as the API server would.
* `/version` is canned (v1.26.4+k3s1); `/log` would answer the pod as JSON: reactions answer both.
* selectors (label and field) are ignored: `KubeClient` filters again client-side.
* reactions: a callable that returns NotImplemented is disabled for good, and one that returns a
  `Response` leaves its status on the reaction for later answers; so the reactions here always
  answer a complete `Response`, and fall through to the emulator by raising NotImplementedError.
* no authentication: see `RejectingClient` (TC-08's cross-tenant credential probe is simulated).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import itertools
import json
import re
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NoReturn

import kmock
import yaml
from kmock import Response  # type: ignore[attr-defined]  # exported, not in __all__
from kubernetes.client.exceptions import ApiException

from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.stacks.kamaji_hami.observe import Gateways
from gpulab.verify import observe as verify_observe
from gpulab.verify.observe import kubeconfig_cross_gateway
from tests import kube_wire as kube
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as wire

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from types import TracebackType

    from gpulab.adapters.base import KubeGateway
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

NS = verify_observe.VERIFY_NAMESPACE


# --------------------------------------------------------------------------- reading objects
# The players read the objects themselves (not with gpulab's readers, which they test).


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def _name(obj: dict[str, Any] | None) -> str:
    return str(_meta(obj).get("name") or "")


def _annotations(obj: dict[str, Any] | None) -> dict[str, str]:
    return _meta(obj).get("annotations") or {}


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _node_name(pod: dict[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _scheduler(pod: dict[str, Any]) -> str:
    """spec.schedulerName; the API server defaults it to default-scheduler."""
    return str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
MANAGEMENT = "management"
PODS = kmock.resource("v1/pods")
NODES = kmock.resource("v1/nodes")
EVENTS = kmock.resource("v1/events")
CONFIGMAPS = kmock.resource("v1/configmaps")
SERVICEACCOUNTS = kmock.resource("v1/serviceaccounts")
DAEMONSETS = kmock.resource("apps/v1/daemonsets")
TCPS = kmock.resource("kamaji.clastix.io/v1alpha1/tenantcontrolplanes")
_VERBS = {"create", "delete", "get", "list", "patch", "update", "watch"}
_NAMESPACE = re.compile(r"/api/v1/namespaces/[^/]+")
_POD_CREATE = re.compile(r"/api/v1/namespaces/[^/]+/pods")
_POD_LOG = re.compile(r"/api/v1/namespaces/[^/]+/pods/[^/]+/log")
FELIX = b.FELIX_LAST  # calico-node's last log line (Felix's loop summary, calico_wire)
_TIMEOUT = 10.0  # seconds for anything handed to the loop or waited for at start/stop

Key = tuple[Any, str | None, str]  # (kmock.resource, namespace, name)


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code: int, reason: str, message: str) -> Response:
    """A complete answer with a Kubernetes `Status` body (what API servers send on errors)."""
    return Response(status=code, payload={
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "code": code, "reason": reason, "message": message,
    })


def _ok(payload: Any) -> Response:
    return Response(status=200, payload=payload)


# --------------------------------------------------------------------------- one API server


@dataclass
class Cluster:
    """One emulated API server. Methods marked "loop" run on the event loop's thread only."""

    name: str
    km: kmock.KubernetesEmulator
    url: str
    loop: asyncio.AbstractEventLoop
    version: str | None = None  # what /version answers (None: kmock's canned v1.26.4+k3s1)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Admission webhooks (HAMi's): called with the stored pod on create, return a scheduler name
    # to set or None (loop).
    webhooks: list[Callable[[dict[str, Any]], str | None]] = field(default_factory=list)
    _uids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def token(self) -> str:
        return f"token-{self.name}"

    # ------------------------------------------------------------------ from any thread

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` on the loop's thread and return its result (never call on the loop)."""
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn(*args))
            except BaseException as err:  # handed back to the caller
                done.set_exception(err)

        self.loop.call_soon_threadsafe(run)
        return done.result(timeout=_TIMEOUT)

    def requests(self) -> list[kmock.Request]:
        """Every request this API server received, oldest first."""
        return list(self.call(lambda: list(self.km)))

    def calls(self) -> list[tuple[str, str]]:
        """(METHOD, path?query) of every request."""
        out = []
        for req in self.requests():
            query = "&".join(f"{k}={v}" for k, v in req.params.items())
            out.append((str(req.method.value), req.url.path + (f"?{query}" if query else "")))
        return out

    def writes(self) -> list[tuple[str, str]]:
        """The calls that are not reads."""
        return [c for c in self.calls() if c[0] != "GET"]

    def stored(self, resource: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A deep copy of the live object, None if it does not exist (any thread)."""
        return self.call(self._get, resource, namespace, name)  # type: ignore[no-any-return]

    def names(self, resource: Any, namespace: str | None) -> list[str]:
        """Names of the live objects of a resource in a namespace."""
        return [key[2] for key, _ in self.call(self.live, resource, namespace)]

    def server_errors(self) -> list[str]:
        """Errors inside the emulator other than its Kubernetes answers (404, 409): bugs here."""
        errors = self.call(lambda: list(self.km.errors))
        return [f"{self.name}: {type(e).__name__}: {e}" for e in errors
                if not isinstance(e, kmock.KubernetesError)]

    # ------------------------------------------------------------------ loop

    def _get(self, resource: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (resource, namespace, name)
        if key not in self.km.objects or self.km.objects[key].deleted:
            return None
        return copy.deepcopy(self.km.objects[key].raw)

    def put(self, resource: Any, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.km.objects[resource, meta.get("namespace"), meta["name"]] = copy.deepcopy(obj)

    def live(self, resource: Any, namespace: str | None = None) -> list[tuple[Key, Any]]:
        """(key, kmock Object) of the live objects of `resource` (in `namespace` if given)."""
        return [(key, obj) for key, obj in list(self.km.objects.items())
                if key[0] == resource and not obj.deleted
                and (namespace is None or key[1] == namespace)]

    def serve(self) -> None:
        """Register the API server behaviours kmock lacks (see the module docstring)."""
        km = self.km
        if self.version is not None:
            major, minor = self.version.lstrip("v").split(".")[:2]
            km["get /version"] << {"major": major, "minor": minor, "gitVersion": self.version,
                                   "platform": "linux/amd64"}
        km[_NAMESPACE] << self._namespace
        km["post", _POD_CREATE] << self._admit
        km["get", _POD_LOG] << self._logs
        for name in ("default", "kube-system"):
            self.namespaces[name] = {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name, "uid": self._uid()},
                                     "status": {"phase": "Active"}}

    def _uid(self) -> str:
        return f"{self.name}-uid-{next(self._uids):04d}"

    def _namespace(self, request: kmock.Request) -> Response:
        """GET / PATCH (server-side apply: creates or merges labels) / DELETE one namespace.

        DELETE removes what is in it at once (a real namespace is Terminating until its
        namespace controller has deleted its contents)."""
        name = request.url.path.rsplit("/", 1)[-1]
        method = str(request.method.value)
        found = self.namespaces.get(name)
        if method == "GET":
            if found is None:
                return status(404, "NotFound", f'namespaces "{name}" not found')
            return _ok(found)
        if method == "PATCH":
            body = request.data if isinstance(request.data, dict) else {}
            labels = (body.get("metadata") or {}).get("labels") or {}
            if found is None:
                found = {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": name, "uid": self._uid(),
                                      "creationTimestamp": now(), "labels": {}},
                         "status": {"phase": "Active"}}
                self.namespaces[name] = found
                # kube-controller-manager's serviceaccount controller (at once, here)
                self.put(SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                           "metadata": {"name": "default", "namespace": name,
                                                        "uid": self._uid()}})
            found["metadata"].setdefault("labels", {}).update(labels)
            return _ok(found)
        if method == "DELETE":
            if found is None:
                return status(404, "NotFound", f'namespaces "{name}" not found')
            del self.namespaces[name]
            for key, obj in list(self.km.objects.items()):
                if key[1] == name and not obj.deleted:
                    obj.delete()
            return _ok({**found, "status": {"phase": "Terminating"}})
        return status(405, "MethodNotAllowed", f"{method} is not served for namespaces")

    def _admit(self, request: kmock.Request) -> NoReturn:
        """The API server's part of a pod create, after kmock stored the pod as posted:
        metadata and defaults it fills in, then the mutating webhooks (HAMi's)."""
        meta = (request.data or {}).get("metadata") or {}
        key = (PODS, request.namespace, meta.get("name"))
        if key in self.km.objects and not self.km.objects[key].deleted:
            obj = self.km.objects[key]
            pod = copy.deepcopy(obj.raw)
            scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
            pod.setdefault("spec", {})["schedulerName"] = scheduler
            for webhook in self.webhooks:
                scheduler = webhook(pod) or scheduler
            obj.patch({"metadata": {"uid": self._uid(), "creationTimestamp": now()},
                       "spec": {"schedulerName": scheduler},
                       "status": {"phase": "Pending"}})
        raise NotImplementedError  # the emulator answers with the stored pod

    def _logs(self, request: kmock.Request) -> Response:
        """The kubelet's answer to a logs request (reached through Konnectivity)."""
        pod = self._get(PODS, request.namespace, str(request.name))
        if pod is None:
            return status(404, "NotFound", f'pods "{request.name}" not found')
        if _phase(pod) != "Running":
            return status(400, "BadRequest", f'container in pod "{request.name}" is waiting to '
                                             f'start: ContainerCreating')
        containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        container = request.params.get("container") or containers[0]
        if container == "calico-node":
            return Response(status=200, payload=b.FELIX_LOG.encode())
        # Typed, not copied: the other containers' lines stand for no component's format
        # (verify's logs probe reads calico-node's).
        return Response(status=200, payload=(
            f"2026-11-20 10:15:00.000 [INFO][1] {container} starting\n"
            f"2026-11-20 10:15:02.000 [INFO][1] {container} running on "
            f"{_node_name(pod)}\n").encode())


# --------------------------------------------------------------------------- HAMi


@dataclass
class HamiPlayer:
    """HAMi v2.10 (webhook, scheduler), the mock device plugin and the kubelet of one tenant.

    webhook_reachable: False plays a broken Konnectivity tunnel: the API server cannot call the
        webhook (failurePolicy Ignore), pods keep default-scheduler and nothing places them.
    lock_expire: seconds HAMi's node lock lives (the lab's nodeLockExpire is 5s; these tests run
        in real time, so it is scaled down); None: it never expires (upstream-like, as the mock
        device plugin never releases it).
    filter_retries: how often HAMi retries a pod no card fits (the write-up's `x2`).
    """

    cluster: Cluster
    spec: TenantSpec
    webhook_reachable: bool = True
    lock_expire: float | None = 0.05
    filter_retries: int = 2
    locks: dict[str, float] = field(default_factory=dict)  # node -> when HAMi locked it
    attempts: dict[str, int] = field(default_factory=dict)  # pod uid -> filtering attempts
    _events: dict[tuple[str, str, str], str] = field(default_factory=dict)
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(0x17f9a00000))

    def attach(self) -> HamiPlayer:
        self.cluster.webhooks.append(self.webhook)
        return self

    def seed(self) -> None:
        """The tenant's workers as Kamaji's kubeadm join, Calico and HAMi leave them (loop)."""
        spec, put = self.spec, self.cluster.put
        for i in range(spec.workers.count):
            node = b.node(spec, i)
            node["metadata"].setdefault("resourceVersion", "1")  # as a real API server sets it
            put(NODES, node)
            for pod in b.system_pods(spec, i):
                put(PODS, pod)
        put(DAEMONSETS, b.calico(spec.workers.count, spec.workers.count))
        put(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "hami-scheduler-device",
                                      "namespace": "kube-system"},
                         "data": {"device-config.yaml": "nvidia: {}"}})

    # ------------------------------------------------------------------ admission (loop)

    def webhook(self, pod: dict[str, Any]) -> str | None:
        """HAMi's mutating webhook: GPU pods that name no other scheduler go to hami-scheduler."""
        if not self.webhook_reachable:
            return None
        limits = [(c.get("resources") or {}).get("limits") or {}
                  for c in (pod.get("spec") or {}).get("containers") or []]
        gpu = any("nvidia.com/gpu" in lim for lim in limits)
        if gpu and (pod.get("spec") or {}).get("schedulerName") == "default-scheduler":
            return wire.SCHEDULER_NAME
        return None

    # ------------------------------------------------------------------ scheduler, kubelet (loop)

    def step(self) -> None:
        """One round: the kubelet starts pods bound earlier, then HAMi schedules pending ones."""
        pods = self.cluster.live(PODS)
        for _, obj in pods:
            pod = obj.raw
            if _node_name(pod) and _phase(pod) == "Pending":
                obj.patch({"status": {"phase": "Running", "startTime": now(),
                                      "containerStatuses": [b.running("app")]}})
        for _, obj in pods:
            pod = obj.raw
            if (_scheduler(pod) == wire.SCHEDULER_NAME and not _node_name(pod)
                    and not _meta(pod).get("deletionTimestamp")):
                self._schedule(obj)

    def _event(self, pod: dict[str, Any], reason: str, message: str,
               kind: str = "Warning") -> None:
        """Record an event as core/v1 Event, or count it again (as the event recorder does)."""
        meta = _meta(pod)
        key = (str(meta.get("uid")), reason, message)
        namespace = str(meta.get("namespace"))
        name = self._events.get(key)
        stored = (EVENTS, namespace, name or "")
        if name and stored in self.cluster.km.objects and not self.cluster.km.objects[stored].deleted:
            obj = self.cluster.km.objects[stored]
            obj.patch({"count": int(obj.raw.get("count") or 1) + 1, "lastTimestamp": now()})
            return
        name = f"{meta['name']}.{next(self._names):x}"
        self._events[key] = name
        event = b.event(str(meta["name"]), reason, message, kind=kind)
        event["metadata"].update({"name": name, "namespace": namespace,
                                  "uid": f"{self.cluster.name}-event-{name}"})
        event["involvedObject"].update({"namespace": namespace, "uid": meta.get("uid"),
                                        "apiVersion": "v1"})
        event.update({"firstTimestamp": now(), "lastTimestamp": now(),
                      "reportingComponent": "hami-scheduler"})
        self.cluster.put(EVENTS, event)

    def _cards(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """The node's cards as HAMi decodes them (its own decoder: tests/kamaji_hami/hami_wire)."""
        return wire.decode_node_devices(_annotations(node).get(wire.REGISTER)) or []

    def _usage(self, node_name: str) -> dict[str, tuple[int, int]]:
        return wire.used_by_card([obj.raw for _, obj in self.cluster.live(PODS)], node_name)

    def _locked(self, node: Any) -> bool:
        """Whether HAMi's lock on the node still holds (an expired lock is dropped)."""
        raw = node.raw
        if not _annotations(raw).get(wire.NODE_LOCK):
            return False
        since = self.locks.get(_name(raw), time.monotonic())
        if self.lock_expire is not None and time.monotonic() - since >= self.lock_expire:
            node.patch({"metadata": {"annotations": {wire.NODE_LOCK: None}}})
            return False
        return True

    def _schedule(self, obj: Any) -> None:
        pod = obj.raw
        meta = _meta(pod)
        uid = str(meta.get("uid"))
        if self.attempts.get(uid, 0) >= self.filter_retries:
            return  # backing off
        pod_name, ns = str(meta["name"]), str(meta.get("namespace"))
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        mem, cores = int(limits["nvidia.com/gpumem"]), int(limits["nvidia.com/gpucores"])
        pinned = _annotations(pod).get(wire.USE_UUID)
        for _, node in self.cluster.live(NODES):
            node_name = _name(node.raw)
            cards = self._cards(node.raw)
            if not cards:  # no event names it: kube-scheduler's FitError does, HAMi says none fit
                self.attempts[uid] = self.attempts.get(uid, 0) + 1
                if self.attempts[uid] == 1:
                    self._event(pod, "FailedScheduling",
                                kube.failed_scheduling(1, {wire.NODE_UNREGISTERED: 1}))
                self._event(pod, wire.FILTERING_FAILED, wire.no_available_node(1))
                continue
            used = self._usage(node_name)
            reasons: dict[str, int] = {}
            fits: list[dict[str, Any]] = []
            for card in reversed(cards):  # HAMi checks cards from last to first
                umem, ucores = used.get(card["id"], (0, 0))
                if pinned and card["id"] != pinned:
                    reason = wire.CARD_UUID_MISMATCH
                elif card["devmem"] - umem < mem:
                    reason = wire.CARD_INSUFFICIENT_MEMORY
                elif card["devcore"] - ucores < cores:
                    reason = wire.CARD_INSUFFICIENT_CORE
                else:
                    fits.append(card)
                    continue
                reasons[reason] = reasons.get(reason, 0) + 1
            if not fits:
                self.attempts[uid] = self.attempts.get(uid, 0) + 1
                if self.attempts[uid] == 1:
                    text = wire.gen_reason(reasons, len(cards))
                    self._event(pod, "FailedScheduling", kube.failed_scheduling(1, {text: 1}))
                for reason in sorted(reasons):
                    self._event(pod, "FilteringFailed", wire.filter_failed(reason, [node_name]))
                self._event(pod, "FilteringFailed", wire.no_available_node(1))
                continue
            # gpuSchedulerPolicy spread: the least used card that fits.
            fit = min(fits, key=lambda c: used.get(c["id"], (0, 0))[1])
            allocation = wire.encode_pod_devices([[(fit["id"], "NVIDIA", mem, cores)]])
            obj.patch({"metadata": {"annotations": {
                wire.ASSIGNED_NODE: node_name,
                wire.TO_ALLOCATE: allocation,
                "hami.io/vgpu-time": str(int(time.time())),
            }}})
            score = wire.node_score_of(
                cards, [o.raw for _, o in self.cluster.live(PODS)], node_name)
            self._event(pod, "FilteringSucceed",
                        wire.filter_succeeded(node_name, 1, [(node_name, score)]), kind="Normal")
            if self._locked(node):
                self._event(pod, "BindingFailed", b.LOCK_MESSAGE.format(node=node_name))
                return
            node.patch({"metadata": {"annotations": {wire.NODE_LOCK: f"{now()},{ns},{pod_name}"}}})
            self.locks[node_name] = time.monotonic()
            obj.patch({"metadata": {"annotations": {wire.ALLOCATED: allocation,
                                                    wire.BIND_PHASE: wire.BIND_ALLOCATING}},
                       "spec": {"nodeName": node_name}})
            self._event(pod, "BindingSucceed",
                        wire.bind_succeeded([node_name], ns, pod_name),
                        kind="Normal")
            return


class _Player(threading.Thread):
    """Drives every HamiPlayer's step on the loop's thread, every `interval` seconds."""

    def __init__(self, players: list[HamiPlayer], interval: float) -> None:
        super().__init__(name="kmock-hami-player", daemon=True)
        self.players = players
        self.interval = interval
        self.halt = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            for player in self.players:
                try:
                    player.cluster.call(player.step)
                except Exception:  # a bug in the player: reported by KmockLab.problems()
                    self.errors.append(f"{player.spec.name}: {traceback.format_exc(limit=3)}")


# --------------------------------------------------------------------------- credentials


UNAUTHORIZED = kube.unauthorized()  # the API server's 401 Status (kube_wire, apiserver v0.36.3)


class RejectingClient(KubeClient):
    """A KubeClient whose API server rejects its credentials with 401 Unauthorized.

    SIMULATED: kmock cannot authenticate anybody (every request is served whatever credentials
    it carries), and the request TC-08's probe makes (GET /api/v1/namespaces) crashes kmock's
    request parser before a reaction could answer it. So the answer a real tenant API server gives
    to another tenant's admin credentials (its own CA does not trust them: 401) is produced here,
    where the client would have sent the request; everything around it (the merged kubeconfig
    file, loading it, the error's wording and status, classifying it) is gpulab's own code.
    """

    def _send(self, **_: Any) -> NoReturn:
        raise ApiException(status=401, reason="Unauthorized", body=json.dumps(UNAUTHORIZED))


# --------------------------------------------------------------------------- the lab


class KmockLab:
    """Emulated management + tenant API servers, kubeconfigs for them, and the players.

    Use as a context manager; `gateways()` gives what `run_verify` takes.
    """

    def __init__(self, profile: KamajiHamiProfile, folder: Path, *, interval: float = 0.01,
                 **hami: Any) -> None:
        self.profile = profile
        self.folder = folder
        self.interval = interval
        self.hami_options = hami
        self.clusters: dict[str, Cluster] = {}
        self.hami: dict[str, HamiPlayer] = {}
        self.probes: list[tuple[str, str]] = []  # (credentials of, server of) per cross probe
        self._clients: list[KubeClient] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._player: _Player | None = None

    @property
    def management(self) -> Cluster:
        return self.clusters[MANAGEMENT]

    def tenant(self, name: str) -> Cluster:
        return self.clusters[name]

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> KmockLab:
        started = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run_loop, args=(started, failure),
                                        name="kmock", daemon=True)
        self._thread.start()
        if not started.wait(_TIMEOUT) or failure:
            raise RuntimeError(f"kmock did not start: {failure[0] if failure else 'timeout'!r}")
        for cluster in self.clusters.values():
            self._write_kubeconfig(cluster)
        self._player = _Player(list(self.hami.values()), self.interval)
        self._player.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._player is not None:
            self._player.halt.set()
            self._player.join(_TIMEOUT)
        for client in self._clients:
            client.close()
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(_TIMEOUT)

    def _run_loop(self, started: threading.Event, failure: list[BaseException]) -> None:
        try:
            asyncio.run(self._serve(started))
        except BaseException as err:  # surface start-up failures instead of hanging
            failure.append(err)
            started.set()

    async def _serve(self, started: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            for name in (MANAGEMENT, *(t.name for t in self.profile.tenants)):
                km = await stack.enter_async_context(kmock.KubernetesEmulator())
                server = await stack.enter_async_context(kmock.Server(km))
                with warnings.catch_warnings():  # kmock uses a deprecated importlib.resources call
                    warnings.simplefilter("ignore", DeprecationWarning)
                    km.resources.load_bundled()
                km.resources[TCPS] = kmock.ResourceInfo(kind="TenantControlPlane",
                                                        namespaced=True, verbs=_VERBS,
                                                        subresources={"status"})
                spec = next((t for t in self.profile.tenants if t.name == name), None)
                cluster = Cluster(name, km, str(server.url).rstrip("/"), self._loop,
                                  version=spec.kubernetes_version if spec else None)
                cluster.serve()
                self.clusters[name] = cluster
                if spec is not None:
                    player = HamiPlayer(cluster, spec, **self.hami_options).attach()
                    player.seed()
                    self.hami[name] = player
            self._seed_management()
            started.set()
            await self._stop.wait()

    def _seed_management(self) -> None:
        """What Kamaji keeps in the management cluster for each tenant (loop)."""
        management = self.management
        management.namespaces["tenants"] = {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": "tenants"},
                                            "status": {"phase": "Active"}}
        for spec in self.profile.tenants:
            management.put(TCPS, b.tcp(spec))
            management.put(PODS, b.tcp_pod(spec))

    # ------------------------------------------------------------------ gateways

    def _write_kubeconfig(self, cluster: Cluster) -> None:
        user = f"{cluster.name}-admin"
        self.kubeconfig(cluster.name).write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": cluster.name,
            "clusters": [{"name": cluster.name, "cluster": {"server": cluster.url}}],
            "users": [{"name": user, "user": {"token": cluster.token}}],
            "contexts": [{"name": cluster.name,
                          "context": {"cluster": cluster.name, "user": user}}],
        }))

    def kubeconfig(self, name: str) -> Path:
        return self.folder / f"{name}.kubeconfig"

    def client(self, path: Path) -> KubeClient:
        made = KubeClient(path, retry=RetryPolicy.disabled(), request_timeout=5)
        self._clients.append(made)
        return made

    def _probe_client(self, path: Path) -> KubeGateway:
        """The gateway `kubeconfig_cross_gateway` builds from the merged kubeconfig."""
        config = yaml.safe_load(path.read_text())
        token = config["users"][0]["user"]["token"]
        server = config["clusters"][0]["cluster"]["server"]
        owner = {c.token: c.name for c in self.clusters.values()}[token]
        target = {c.url: c.name for c in self.clusters.values()}[server]
        self.probes.append((owner, target))
        made = RejectingClient(path, retry=RetryPolicy.disabled(), request_timeout=5)
        self._clients.append(made)
        return made

    def gateways(self) -> Gateways:
        """As `gpulab verify` builds them: one KubeClient per kubeconfig file."""
        return Gateways(
            management=self.client(self.kubeconfig(MANAGEMENT)),
            tenant=lambda name: self.client(self.kubeconfig(name)),
            cross=kubeconfig_cross_gateway(self.kubeconfig, self._probe_client,
                                           scratch=self.folder / "verify"),
        )

    def problems(self) -> list[str]:
        """Bugs of this harness seen so far (emulator exceptions, player crashes)."""
        found = [e for c in self.clusters.values() for e in c.server_errors()]
        return found + (list(self._player.errors) if self._player else [])
