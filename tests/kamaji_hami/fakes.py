"""In-memory API servers for the live path of `verify`, with the test playing HAMi's part.

`FakeApi` implements `KubeGateway` over a dict of objects (deep copies in and out, uids, label
selectors on `k=v`, events). `FakeHami` attaches HAMi v2.10's behaviour to a tenant's FakeApi as
the write-up observed it: the admission webhook rewrites `schedulerName` (unless the tunnel is
"broken"), the scheduler filters cards (pinned uuid, memory, then cores: HAMi's Fit order), writes
`hami.io/vgpu-node` / `hami.io/vgpu-devices-allocated`, binds under the node lock (which, as with
the mock device plugin, nobody releases unless verify does or it expires), emits the events, and
the kubelet turns bound pods Running.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.errors import AdapterError
from tests import kube_wire as kube
from tests.kamaji_hami import builders as b
from tests.kamaji_hami import hami_wire as wire

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

Key = tuple[str, str, str]  # kind, namespace, name


class FakeClock:
    """Monotonic time that only moves when someone sleeps (thread-safe)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.slept = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.t += seconds
            self.slept += seconds


def _matches(selector: str | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return True
    for part in selector.split(","):
        key, _, value = part.partition("=")
        if labels.get(key.strip()) != value.strip():
            return False
    return True


class FakeApi:
    """A KubeGateway in memory."""

    def __init__(self, name: str, version: str = "v1.36.4") -> None:
        self.name = name
        self.version = version
        self.objects: dict[Key, dict[str, Any]] = {}
        self.event_list: list[dict[str, Any]] = []
        self.logs: dict[tuple[str, str], str] = {}
        self.fail: dict[str, Exception] = {}  # "method" or "method:Kind" -> error raised
        self.calls: list[tuple[str, ...]] = []
        self.webhook: Callable[[dict[str, Any]], None] | None = None
        self.tick: Callable[[], None] | None = None
        self.lock = threading.RLock()
        self._uids = 0
        # a new namespace gets its `default` ServiceAccount (False: never, as when
        # kube-controller-manager is down; subclasses may play the delay themselves)
        self.default_service_account = True

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def key(obj: Mapping[str, Any]) -> Key:
        meta = obj["metadata"]
        namespaced = obj["kind"] not in ("Node", "Namespace")
        return obj["kind"], (meta.get("namespace") or "default") if namespaced else "", meta["name"]

    def put(self, *objs: Mapping[str, Any]) -> None:
        with self.lock:
            for obj in objs:
                self.objects[self.key(obj)] = copy.deepcopy(dict(obj))

    def obj(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def _hit(self, method: str, *args: str) -> None:
        self.calls.append((method, *args))
        for key in (method, f"{method}:{args[0]}" if args else method):
            if key in self.fail:
                raise self.fail[key]

    def _react(self) -> None:
        if self.tick is not None:
            self.tick()

    def add_event(self, pod: Mapping[str, Any], reason: str, message: str,
                  kind: str = "Warning", component: str = "hami-scheduler") -> None:
        uid = pod["metadata"]["uid"]
        for existing in self.event_list:
            if (existing["involvedObject"]["uid"] == uid and existing["reason"] == reason
                    and existing["message"] == message):
                existing["count"] += 1
                return
        new = b.event(pod["metadata"]["name"], reason, message, kind=kind, component=component)
        new["involvedObject"]["uid"] = uid
        namespace = pod["metadata"].get("namespace") or new["involvedObject"]["namespace"]
        new["involvedObject"]["namespace"] = new["metadata"]["namespace"] = namespace
        self.event_list.append(new)

    # ------------------------------------------------------------------ KubeGateway

    def server_version(self) -> str:
        self._hit("server_version")
        return self.version

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            self._hit("apply", obj["kind"], obj["metadata"]["name"])
            live = copy.deepcopy(obj)
            key = self.key(live)
            if key in self.objects:
                merged = copy.deepcopy(self.objects[key])
                merged["metadata"].setdefault("labels", {}).update(
                    live["metadata"].get("labels") or {})
                live = merged
            else:
                self._uids += 1
                live["metadata"]["uid"] = f"{self.name}-uid-{self._uids}"
                live["metadata"]["managedFields"] = [{"manager": "gpulab"}]
                if live["kind"] == "Pod":
                    live.setdefault("spec", {})
                    live["metadata"].setdefault("annotations", {})
                    live["status"] = {"phase": "Pending"}
                    if self.webhook is not None:
                        self.webhook(live)
                    live["spec"].setdefault("schedulerName", "default-scheduler")
                if live["kind"] == "Namespace":
                    live["status"] = {"phase": "Active"}
                    if self.default_service_account:  # kube-controller-manager's, at once
                        name = live["metadata"]["name"]
                        self.objects[("ServiceAccount", name, "default")] = {
                            "apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": "default", "namespace": name}}
            self.objects[key] = live
            return copy.deepcopy(live)

    def get(self, api_version: str, kind: str, name: str,
            namespace: str | None = None) -> dict[str, Any] | None:
        with self.lock:
            self._hit("get", kind, name)
            if kind == "Pod":
                self._react()
            found = self.objects.get((kind, namespace or "", name))
            return copy.deepcopy(found) if found else None

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None,
                     label_selector: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            self._hit("list_objects", kind, namespace or "")
            if kind == "Pod":
                self._react()
            return [copy.deepcopy(o) for (k, ns, _), o in sorted(self.objects.items())
                    if k == kind and (namespace is None or ns == namespace)
                    and _matches(label_selector, o["metadata"].get("labels") or {})]

    def delete(self, api_version: str, kind: str, name: str,
               namespace: str | None = None) -> bool:
        with self.lock:
            self._hit("delete", kind, name)
            gone = self.objects.pop((kind, namespace or "", name), None) is not None
            if kind == "Namespace":
                for key in [k for k in self.objects if k[1] == name]:
                    del self.objects[key]
            return gone  # events stay, as in Kubernetes (they expire after an hour)

    def patch_node_status(self, name: str, patch: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def annotate(self, api_version: str, kind: str, name: str,
                 annotations: Mapping[str, str | None], namespace: str | None = None, *,
                 resource_version: str | None = None) -> None:
        with self.lock:
            self._hit("annotate", kind, name, *sorted(annotations))
            obj = self.objects[(kind, namespace or "", name)]
            current = obj["metadata"].setdefault("annotations", {})
            for key, value in annotations.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value

    def secret_data(self, name: str, namespace: str, key: str) -> bytes | None:
        return None

    def pod_logs(self, name: str, namespace: str, *, tail_lines: int = 20,
                 container: str | None = None) -> str:
        self._hit("pod_logs", namespace, name, container or "")
        return self.logs.get((namespace, name), "line one\nlast line\n")

    def events(self, namespace: str, involved_name: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            self._hit("events", namespace, involved_name or "")
            self._react()
            return [copy.deepcopy(e) for e in self.event_list
                    if e["involvedObject"]["namespace"] == namespace
                    and (involved_name is None or e["involvedObject"]["name"] == involved_name)]


# --------------------------------------------------------------------------- HAMi


@dataclass
class FakeHami:
    """HAMi v2.10 + mock device plugin + kubelet, acting whenever pods are read."""

    api: FakeApi
    clock: FakeClock
    webhook_reachable: bool = True
    lock_expire: float | None = 5.0  # profile default 5s; None: the lock never expires
    honour_pinning: bool = True
    locks: dict[str, float] = field(default_factory=dict)

    def attach(self) -> FakeHami:
        self.api.webhook = self.webhook
        self.api.tick = self.tick
        return self

    def webhook(self, pod: dict[str, Any]) -> None:
        limits = [(c.get("resources") or {}).get("limits") or {}
                  for c in pod["spec"].get("containers") or []]
        gpu = any("nvidia.com/gpu" in lim for lim in limits)
        if gpu and self.webhook_reachable and pod["spec"].get("schedulerName") in (
                None, "default-scheduler"):
            pod["spec"]["schedulerName"] = "hami-scheduler"

    def _cards(self, node: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The node's cards as HAMi decodes them (its own decoder: tests/kamaji_hami/hami_wire)."""
        raw = (node["metadata"].get("annotations") or {}).get(wire.REGISTER)
        return wire.decode_node_devices(raw) or []

    def _usage(self, node_name: str) -> dict[str, tuple[int, int]]:
        pods = [pod for (kind, _, _), pod in self.api.objects.items() if kind == "Pod"]
        return wire.used_by_card(pods, node_name)

    def _locked(self, node: dict[str, Any]) -> bool:
        lock = (node["metadata"].get("annotations") or {}).get("hami.io/mutex.lock")
        if not lock:
            return False
        since = self.locks.get(node["metadata"]["name"], self.clock.now())
        if self.lock_expire is not None and self.clock.now() - since >= self.lock_expire:
            node["metadata"]["annotations"].pop("hami.io/mutex.lock", None)
            return False
        return True

    def tick(self) -> None:
        with self.api.lock:
            for (kind, _, _), pod in list(self.api.objects.items()):
                if kind != "Pod":
                    continue
                if pod["spec"].get("nodeName") and pod["status"].get("phase") == "Pending":
                    pod["status"] = {"phase": "Running", "containerStatuses": [
                        {"name": "app", "ready": True, "restartCount": 0,
                         "state": {"running": {}}}]}
                elif (pod["spec"].get("schedulerName") == "hami-scheduler"
                      and not pod["spec"].get("nodeName")):
                    self._schedule(pod)

    def _schedule(self, pod: dict[str, Any]) -> None:
        nodes = [n for (k, _, _), n in self.api.objects.items() if k == "Node"]
        name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        mem, cores = int(limits["nvidia.com/gpumem"]), int(limits["nvidia.com/gpucores"])
        pinned = (pod["metadata"].get("annotations") or {}).get("nvidia.com/use-gpuuuid")
        for node in nodes:
            node_name = node["metadata"]["name"]
            cards = self._cards(node)
            if not cards:  # no event names it: kube-scheduler's FitError does, HAMi says none fit
                self.api.add_event(pod, "FailedScheduling",
                                   kube.failed_scheduling(1, {wire.NODE_UNREGISTERED: 1}))
                self.api.add_event(pod, wire.FILTERING_FAILED, wire.no_available_node(1))
                continue
            used = self._usage(node_name)
            reasons: dict[str, int] = {}
            fits: list[dict[str, Any]] = []
            for card in reversed(cards):  # HAMi checks cards from last to first
                umem, ucores = used.get(card["id"], (0, 0))
                if pinned and self.honour_pinning and card["id"] != pinned:
                    reason = wire.CARD_UUID_MISMATCH
                elif card["devmem"] - umem < mem:
                    reason = wire.CARD_INSUFFICIENT_MEMORY
                elif card["devcore"] - ucores < cores:
                    reason = wire.CARD_INSUFFICIENT_CORE
                else:
                    fits.append(card)
                    continue
                reasons[reason] = reasons.get(reason, 0) + 1
            # gpuSchedulerPolicy spread: the least used card that fits.
            fit = min(fits, key=lambda c: used.get(c["id"], (0, 0))[1]) if fits else None
            if fit is None:
                total = len(cards)
                text = wire.gen_reason(reasons, total)
                self.api.add_event(pod, "FailedScheduling", kube.failed_scheduling(1, {text: 1}))
                for reason in sorted(reasons):
                    self.api.add_event(pod, "FilteringFailed",
                                       wire.filter_failed(reason, [node_name]))
                self.api.add_event(pod, "FilteringFailed", wire.no_available_node(1))
                continue
            allocation = wire.encode_pod_devices([[(fit["id"], "NVIDIA", mem, cores)]])
            pod["metadata"]["annotations"].update({
                "hami.io/vgpu-node": node_name,
                "hami.io/vgpu-devices-to-allocate": allocation,
            })
            pods = [p for (kind, _, _), p in self.api.objects.items() if kind == "Pod"]
            score = wire.node_score_of(cards, pods, node_name)
            self.api.add_event(pod, "FilteringSucceed",
                               wire.filter_succeeded(node_name, 1, [(node_name, score)]),
                               kind="Normal")
            if self._locked(node):
                self.api.add_event(pod, "BindingFailed", b.LOCK_MESSAGE.format(node=node_name))
                return
            node["metadata"]["annotations"]["hami.io/mutex.lock"] = (
                f"2026-11-20T10:15:00Z,{ns},{name}")
            self.locks[node_name] = self.clock.now()
            pod["metadata"]["annotations"].update({
                "hami.io/vgpu-devices-allocated": allocation,
                "hami.io/bind-phase": "allocating",
            })
            pod["spec"]["nodeName"] = node_name
            self.api.add_event(pod, "BindingSucceed", wire.bind_succeeded([node_name], ns, name),
                               kind="Normal")
            return


# --------------------------------------------------------------------------- the lab


@dataclass
class FakeLab:
    """Management API + one FakeApi (with FakeHami) per tenant, seeded like the write-up."""

    profile: KamajiHamiProfile
    clock: FakeClock
    management: FakeApi
    tenants: dict[str, FakeApi]
    hami: dict[str, FakeHami]
    share_ca: bool = False  # the credential probe is accepted (isolation broken)
    down: set[str] = field(default_factory=set)  # tenants whose gateway cannot be built

    def tenant(self, name: str) -> FakeApi:
        if name in self.down:
            raise AdapterError(f"get server version at https://{b.ENDPOINTS[name]}: connection "
                               f"failed (ConnectTimeoutError: timed out)")
        return self.tenants[name]

    def cross(self, credentials_of: str, server_of: str) -> FakeApi:
        server = self.tenants[server_of]
        if self.share_ca:
            return server
        probe = FakeApi(f"{credentials_of}-on-{server_of}")
        probe.fail["list_objects"] = AdapterError(b.rejected_probe(b.ENDPOINTS[server_of]))
        return probe


def seed_tenant(api: FakeApi, spec: TenantSpec) -> None:
    for i in range(spec.workers.count):
        api.put(b.node(spec, i), *b.system_pods(spec, i))
    api.put(b.calico(spec.workers.count, spec.workers.count),
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "hami-scheduler-device", "namespace": "kube-system"},
             "data": {"device-config.yaml": "nvidia: {}"}})
    api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})


def fake_lab(profile: KamajiHamiProfile, **hami: Any) -> FakeLab:
    clock = FakeClock()
    management = FakeApi("management")
    tenants: dict[str, FakeApi] = {}
    hamis: dict[str, FakeHami] = {}
    for spec in profile.tenants:
        management.put(b.tcp(spec), b.tcp_pod(spec))
        api = FakeApi(spec.name, spec.kubernetes_version)
        seed_tenant(api, spec)
        tenants[spec.name] = api
        hamis[spec.name] = FakeHami(api, clock, **hami).attach()
    return FakeLab(profile, clock, management, tenants, hamis)
