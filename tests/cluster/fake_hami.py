"""HAMi v2.10.0 and the kube-scheduler it extends, played on a fake cluster
(tests/cluster/builders.ClusterApi) for the runs of `verify --kubeconfig` on HAMi clusters.

It decodes everything itself, from upstream's rules (never with gpulab's parsers), each written
from the source at the pin (Project-HAMi/HAMi v2.10.0; kubernetes as cited):

- its settings: the scheduler Deployment's command line (`--scheduler-name`,
  `--node-label-selector`: cmd/scheduler/main.go:69, 73) and the device config it mounts
  (`nvidia.resourceCountName` & co., yaml: pkg/scheduler/config/config.go:484-496);
- the webhook (pkg/scheduler/webhook.go:64-113): a pod asking the count resource (or memory or
  cores, given defaultGPUNum 1) gets `schedulerName: <--scheduler-name>`, unless it names
  another scheduler, or `default-scheduler` while `--force-overwrite-default-scheduler=false`
  (cmd/scheduler/main.go:81); the API server calls it only for pods whose namespace's labels
  (with `kubernetes.io/metadata.name`) and own labels match the MutatingWebhookConfiguration's
  `namespaceSelector` and `objectSelector` (apiserver predicates/namespace/matcher.go:105-136,
  predicates/object/matcher.go:37-61; requirements as apimachinery labels/selector.go:247-264);
- the GPU policy: `--gpu-scheduler-policy` (main.go:71, default spread), replaced by the pod's
  `hami.io/gpu-scheduler-policy` (pkg/util/util.go:277-285); with `mutex` in the list a card
  some pod uses is refused, `ExclusiveDeviceAllocateConflict` (pkg/device/nvidia/device.go:
  767-770, after slices left and before memory);
- kube-scheduler's filters for that scheduler name: `spec.unschedulable`
  (nodeunschedulable) and NoSchedule/NoExecute taints the pod does not tolerate (tainttoleration;
  the API server adds not-ready/unreachable NoExecute tolerations, defaulttolerationseconds);
- HAMi's nodes: listed with the label selector (scheduler.go:417-459), cards from the register
  annotation decoded as encoding/json does into DeviceInfo (pkg/device/devices.go:127-140:
  `health` omitempty, a wrong type drops the node), dropped when the handshake is an expired
  `Requesting_` with allocatable 0 (devices.go:576-596);
- usage: pods with `hami.io/vgpu-node`, not Failed/Succeeded (scheduler.go:137-171), grants
  decoded strictly (devices.go:496-556);
- Fit per card from the last to the first (pkg/device/nvidia/device.go:727-827): health,
  `hami.io/device-cordon`, uuid pin, slices left, memory, cores, MIG profiles;
- events as HAMi writes them (score.go:348-353, scheduler.go:1111, 1150, event.go:56-77), from
  the component `--scheduler-name` (its recorder's source, event.go:53), the node lock
  (nodelock.go:290: nobody releases it here, as with the mock device plugin, until it expires),
  and the kubelet turning bound pods Running.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import yaml

from tests.cluster.command_line import flag
from tests.kamaji_hami import hami_wire as hw

if TYPE_CHECKING:
    from tests.cluster.builders import ClusterApi
    from tests.kamaji_hami.fakes import FakeClock

DEFAULT_SCHEDULER = "default-scheduler"  # corev1.DefaultSchedulerName
LOCK = "hami.io/mutex.lock"
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)  # the fake's wall clock
_TYPES = {"id": str, "type": str, "mode": str, "devicevendor": str, "health": bool,
          "migprofiles": list, "migtemplate": list, "custominfo": dict,
          "index": int, "count": int, "devmem": int, "devcore": int, "numa": int}


@functools.cache
def _device_config(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}



def _decode_devices(raw: str | None) -> list[dict[str, Any]]:
    """json.Unmarshal into []*DeviceInfo: names match case-insensitively, a value of another
    type fails the whole annotation (no cards), absent fields are zero: health false."""
    if raw is None:
        return []
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        if not isinstance(item, dict):
            return []
        device: dict[str, Any] = {"health": False, "count": 0, "devmem": 0, "devcore": 0,
                                  "mode": "", "id": "", "migprofiles": []}
        for key, value in item.items():
            want = _TYPES.get(key.lower())
            if want is None or value is None:
                continue
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                return []
            device[key.lower()] = value
        out.append(device)
    return out


def _decode_grants(raw: str) -> list[tuple[str, int, int]] | None:
    grants = []
    for container in raw.split(";"):
        for entry in container.split(":"):
            if "," not in entry:
                continue
            parts = entry.split(",")
            if len(parts) < 4 or not all(re.fullmatch(r"[+-]?\d+", p) for p in parts[2:4]):
                return None
            grants.append((parts[0], int(parts[2]), int(parts[3])))
    return grants


def _tolerated(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("key") and t["key"] != taint.get("key"):
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" or (op == "Equal" and t.get("value", "") == taint.get("value", "")):
            return True
    return False


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector over `labels`: None or empty selects all (helpers.go:36-42);
    matchLabels and each expression must hold (labels/selector.go:247-264)."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req["key"], req["operator"], req.get("values") or []
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if (op == "Exists") != (key in labels) and op in ("Exists", "DoesNotExist"):
            return False
    return True


@dataclass
class FakeHami:
    """HAMi + kube-scheduler + kubelet, acting whenever pods are read."""

    api: ClusterApi
    clock: FakeClock
    webhook_reachable: bool = True
    honour_pinning: bool = True
    lock_expire: float | None = 5.0
    locks: dict[str, float] = field(default_factory=dict)

    def attach(self) -> FakeHami:
        self.api.webhook = self.webhook
        self.api.tick = self.tick
        return self

    # ---------------------------------------------------------------- configuration

    def _objects(self, kind: str) -> list[dict[str, Any]]:
        return [o for (k, _ns, _n), o in sorted(self.api.objects.items()) if k == kind]

    def _settings(self) -> tuple[str, dict[str, str], dict[str, str]]:
        """(scheduler name, node label selector, nvidia resource names)."""
        name, selector = "", {}
        names = {"count": "", "memory": "", "cores": ""}
        for deploy in self._scheduler_deployments():
            for command in _commands(deploy, "scheduler"):
                name = flag(command, "scheduler-name") or ""
                pairs = flag(command, "node-label-selector") or ""
                selector = dict(p.split("=", 1) for p in pairs.split(",") if "=" in p)
            for volume in deploy["spec"]["template"]["spec"].get("volumes") or []:
                if volume.get("name") != "device-config":
                    continue
                config = self.api.obj("ConfigMap", volume["configMap"]["name"],
                                      deploy["metadata"]["namespace"])
                text = ((config or {}).get("data") or {}).get("device-config.yaml", "")
                nvidia = _device_config(text).get("nvidia") or {}
                names = {"count": nvidia.get("resourceCountName") or "",
                         "memory": nvidia.get("resourceMemoryName") or "",
                         "cores": nvidia.get("resourceCoreName") or ""}
        return name, selector, names

    def _flags(self) -> tuple[str, bool]:
        """(--gpu-scheduler-policy, --force-overwrite-default-scheduler) as pflag reads them."""
        policy, force = "spread", True
        for deploy in self._scheduler_deployments():
            for command in _commands(deploy, "scheduler"):
                policy = flag(command, "gpu-scheduler-policy") or policy
                force = (flag(command, "force-overwrite-default-scheduler") or "true") in (
                    "1", "t", "T", "TRUE", "true", "True")
        return policy, force

    def _scheduler_deployments(self) -> list[dict[str, Any]]:
        """HAMi's scheduler Deployments (the chart's component label)."""
        return [d for d in self._objects("Deployment")
                if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component")
                == "hami-scheduler"]

    def _called_for(self, pod: dict[str, Any]) -> bool:
        """Whether the API server calls HAMi's webhook for this pod (its selectors)."""
        namespace = pod["metadata"].get("namespace") or "default"
        ns = self.api.obj("Namespace", namespace) or {"metadata": {}}
        ns_labels = {**(ns["metadata"].get("labels") or {}),
                     "kubernetes.io/metadata.name": namespace}
        for config in self._objects("MutatingWebhookConfiguration"):
            for hook in config.get("webhooks") or []:
                if hook.get("name") == "vgpu.hami.io":
                    return (_selects(hook.get("namespaceSelector"), ns_labels)
                            and _selects(hook.get("objectSelector"),
                                         pod["metadata"].get("labels") or {}))
        return False  # no webhook configured: nothing calls it

    # ---------------------------------------------------------------- webhook

    def webhook(self, pod: dict[str, Any]) -> None:
        if not self.webhook_reachable:
            return  # failurePolicy Ignore: the pod goes on unchanged
        if not self._called_for(pod):
            return
        name, _selector, names = self._settings()
        _policy, force = self._flags()
        current = pod["spec"].get("schedulerName") or DEFAULT_SCHEDULER  # defaulted before
        if (current != DEFAULT_SCHEDULER or not force) and (not name or current != name):
            return
        asked = False
        for c in pod["spec"].get("containers") or []:
            limits = (c.get("resources") or {}).get("limits") or {}
            if names["count"] in limits:
                asked = True
            elif names["memory"] in limits or names["cores"] in limits:
                limits[names["count"]] = "1"  # defaultGPUNum 1 (device-configmap.yaml:25)
                asked = True
        if asked and name:
            pod["spec"]["schedulerName"] = name

    # ---------------------------------------------------------------- scheduling

    def tick(self) -> None:
        name, selector, names = self._settings()
        with self.api.lock:
            for pod in self._objects("Pod"):
                if pod["spec"].get("nodeName"):
                    if pod["status"].get("phase") == "Pending":
                        pod["status"] = {"phase": "Running", "containerStatuses": [
                            {"name": "app", "ready": True, "restartCount": 0,
                             "state": {"running": {}}}]}
                elif name and pod["spec"].get("schedulerName") == name:
                    self._schedule(pod, selector, names, name)

    def _kube_scheduler_fits(self, pod: dict[str, Any], node: dict[str, Any]) -> bool:
        tolerations = [*(pod["spec"].get("tolerations") or []),
                       {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                        "effect": "NoExecute"},
                       {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                        "effect": "NoExecute"}]
        spec = node.get("spec") or {}
        if spec.get("unschedulable") and not _tolerated(
                tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
            return False
        return all(_tolerated(tolerations, t) for t in spec.get("taints") or []
                   if t.get("effect") in ("NoSchedule", "NoExecute"))

    def _resources_fit(self, pod: dict[str, Any], node: dict[str, Any], count: str) -> bool:
        """kube-scheduler's NodeResourcesFit on the count resource: what the node's unfinished
        pods ask plus this pod's must fit its allocatable, whichever device plugin set it."""
        def asked(p: dict[str, Any]) -> int:
            return sum(int((c.get("resources") or {}).get("limits", {}).get(count, 0))
                       for c in p["spec"].get("containers") or [])
        name = node["metadata"]["name"]
        held = sum(asked(p) for p in self._objects("Pod") if p["spec"].get("nodeName") == name
                   and p["status"].get("phase") not in ("Succeeded", "Failed"))
        allocatable = int((node.get("status") or {}).get("allocatable", {}).get(count, 0))
        return held + asked(pod) <= allocatable

    def _registered(self, node: dict[str, Any], selector: dict[str, str],
                    count: str) -> list[dict[str, Any]]:
        labels = node["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return []
        notes = node["metadata"].get("annotations") or {}
        handshake = notes.get("hami.io/node-handshake", "")
        if "Requesting" in handshake:
            stamp = handshake.partition("_")[2]
            try:
                since = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(
                    tzinfo=timezone.utc)
            except ValueError:
                since = NOW
            allocatable = str((node.get("status") or {}).get("allocatable", {}).get(count, "0"))
            if since + timedelta(seconds=60) <= NOW and allocatable in ("0", ""):
                return []
        return _decode_devices(notes.get("hami.io/node-nvidia-register"))

    def _usage(self, node_name: str) -> dict[str, list[int]]:
        used: dict[str, list[int]] = {}
        for pod in self._objects("Pod"):
            notes = pod["metadata"].get("annotations") or {}
            if notes.get("hami.io/vgpu-node") != node_name:
                continue
            if pod["status"].get("phase") in ("Failed", "Succeeded"):
                continue
            grants = _decode_grants(notes.get("hami.io/vgpu-devices-allocated", ""))
            for uuid, memory, cores in grants or []:
                slot = used.setdefault(uuid, [0, 0, 0])
                slot[0] += 1
                slot[1] += memory
                slot[2] += cores
        return used

    def _fit(self, cards: list[dict[str, Any]], used: dict[str, list[int]], node: dict[str, Any],
             pod: dict[str, Any], memory: int, cores: int) -> tuple[dict[str, Any] | None,
                                                                   dict[str, int]]:
        notes = node["metadata"].get("annotations") or {}
        cordoned = {u.strip() for u in notes.get("hami.io/device-cordon", "").split(",")
                    if u.strip()}
        pinned = (pod["metadata"].get("annotations") or {}).get("nvidia.com/use-gpuuuid", "")
        reasons: dict[str, int] = {}
        policy = (pod["metadata"].get("annotations") or {}).get(
            "hami.io/gpu-scheduler-policy", self._flags()[0])
        mutex = "mutex" in [p.strip() for p in policy.split(",")]
        fits = []
        for card in reversed(cards):
            n, umem, ucores = used.get(card["id"], [0, 0, 0])
            want = memory or card["devmem"]  # no memory asked: 100% of the card
            if not card["health"]:
                reason = hw.CARD_NOT_HEALTH
            elif card["id"] in cordoned:
                reason = hw.CARD_CORDONED
            elif pinned and self.honour_pinning and card["id"] not in pinned.split(","):
                reason = hw.CARD_UUID_MISMATCH
            elif card["count"] <= n:
                reason = hw.CARD_TIME_SLICING_EXHAUSTED
            elif mutex and n > 0:
                reason = hw.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
            elif card["devmem"] - umem < want:
                reason = hw.CARD_INSUFFICIENT_MEMORY
            elif card["devcore"] - ucores < cores:
                reason = hw.CARD_INSUFFICIENT_CORE
            elif card["mode"] == "mig" and not any(
                    p.get("memoryMB", 0) >= want for p in card["migprofiles"]):
                reason = hw.CARD_MIG_TOPOLOGY_INFEASIBLE
            else:
                fits.append(card)
                continue
            reasons[reason] = reasons.get(reason, 0) + 1
        # gpuSchedulerPolicy spread (the chart's default): the least used card that fits.
        best = min(fits, key=lambda c: used.get(c["id"], [0, 0, 0])[2]) if fits else None
        return best, reasons

    def _score(self, cards: list[dict[str, Any]], node_name: str) -> float:
        """The node's score before the pod is placed (scoreNode, score.go:320-342): every
        registered card's slots, cores and memory against what the node's pods hold, one slot
        a grant (getNodesUsage, scheduler.go:757-786), in float32 (hami_wire.node_score)."""
        used = self._usage(node_name)
        held = [used.get(c["id"], [0, 0, 0]) for c in cards]
        return hw.node_score((sum(h[0] for h in held), sum(h[2] for h in held),
                              sum(h[1] for h in held)),
                             (sum(c["count"] for c in cards), sum(c["devcore"] for c in cards),
                              sum(c["devmem"] for c in cards)))

    def _schedule(self, pod: dict[str, Any], selector: dict[str, str],
                  names: dict[str, str], scheduler: str) -> None:
        """HAMi's Filter (scheduler.go:1095-1151): every node kube-scheduler passed is scored
        (calcScore, score.go:356-419); no fit: a FilteringFailed event per reason and one for
        the whole (score.go:348-353, 410-412; scheduler.go:1109-1111); else the scores sorted
        for the chart's node policy binpack (policy/node_policy.go:48-54, values.yaml:77), the
        last one chosen (scheduler.go:1117-1118; equal scores keep the nodes' order here, Go's
        insertion sort on fewer than 12 being stable), FilteringSucceed naming every fit
        node's score (genSuccessMsg, scheduler.go:1150, 1201-1209)."""
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        memory = int(limits.get(names["memory"], 0))
        cores = int(limits.get(names["cores"], 0))
        name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
        nodes = [n for n in self._objects("Node") if self._kube_scheduler_fits(pod, n)
                 and self._resources_fit(pod, n, names["count"])]
        failures: dict[str, list[str]] = {}
        fits: list[tuple[float, dict[str, Any], dict[str, Any]]] = []
        for node in nodes:
            node_name = node["metadata"]["name"]
            cards = self._registered(node, selector, names["count"])
            if not cards:
                continue  # "node unregistered": no event of its own (scheduler.go:846-853)
            fit, reasons = self._fit(cards, self._usage(node_name), node, pod, memory, cores)
            if fit is None:
                for reason in reasons:
                    failures.setdefault(reason, []).append(node_name)
                continue
            fits.append((self._score(cards, node_name), node, fit))
        if not fits:
            for reason, where in sorted(failures.items()):
                self.api.add_event(pod, hw.FILTERING_FAILED, hw.filter_failed(reason, where),
                                   component=scheduler)
            self.api.add_event(pod, hw.FILTERING_FAILED, hw.no_available_node(len(nodes)),
                               component=scheduler)
            return
        fits.sort(key=lambda f: f[0])
        _score, node, card = fits[-1]
        node_name = node["metadata"]["name"]
        found = hw.filter_succeeded(node_name, len(nodes),
                                    [(n["metadata"]["name"], score) for score, n, _c in fits])
        self._bind(pod, node, node_name, card, memory or card["devmem"], cores, ns, name,
                   found, scheduler)

    def _locked(self, node: dict[str, Any]) -> bool:
        if not (node["metadata"].get("annotations") or {}).get(LOCK):
            return False
        since = self.locks.get(node["metadata"]["name"], self.clock.now())
        if self.lock_expire is not None and self.clock.now() - since >= self.lock_expire:
            node["metadata"]["annotations"].pop(LOCK, None)
            return False
        return True

    def _bind(self, pod: dict[str, Any], node: dict[str, Any], node_name: str,
              card: dict[str, Any], memory: int, cores: int, ns: str, name: str, found: str,
              scheduler: str) -> None:
        allocation = hw.encode_pod_devices([[(card["id"], "NVIDIA", memory, cores)]])
        pod["metadata"].setdefault("annotations", {}).update({
            "hami.io/vgpu-node": node_name, "hami.io/vgpu-devices-to-allocate": allocation})
        self.api.add_event(pod, hw.FILTERING_SUCCEED, found, kind="Normal", component=scheduler)
        if self._locked(node):
            self.api.add_event(pod, hw.BINDING_FAILED, hw.node_locked(node_name),
                               component=scheduler)
            return
        node["metadata"].setdefault("annotations", {})[LOCK] = (
            f"2026-12-01T10:00:00Z,{ns},{name}")
        self.locks[node_name] = self.clock.now()
        pod["metadata"]["annotations"].update({"hami.io/vgpu-devices-allocated": allocation,
                                               "hami.io/bind-phase": "allocating"})
        pod["spec"]["nodeName"] = node_name
        self.api.add_event(pod, hw.BINDING_SUCCEED, hw.bind_succeeded([node_name], ns, name),
                           kind="Normal", component=scheduler)


def _commands(deploy: dict[str, Any], program: str) -> list[list[str]]:
    """Each container's command and args of `deploy` whose command is `program`."""
    out = []
    for c in deploy["spec"]["template"]["spec"]["containers"]:
        command = [*(c.get("command") or []), *(c.get("args") or [])]
        if command[:1] == [program]:
            out.append(command)
    return out
