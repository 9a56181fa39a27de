"""An existing cluster played by kmock over HTTP (gpulab's real KubeClient talks to it), a fake
helm that records installs and plays what the charts would create, and a kmock API server per
vCluster. `state()` is what the cluster holds, to compare the cluster before `up` with the
cluster after `down`.

Every request is logged: when `running` exits, also after a failing test, every request each
API server received (the host's, then each vCluster's or tenant's, oldest first; a write with
its body, a Secret's body left out), then FakeHelm's installs and uninstalls, is written to
`<folder>/<name>.requests.log`, the folder the cluster was given: the test's `tmp_path`, e.g.
microk8s.requests.log. `log_also` adds the calls of the in-memory fakes a test runs beside it
(verify's copy of the host). pytest keeps the `tmp_path` folders of its last three runs
(`/tmp/pytest-of-<user>/pytest-current/<test name>0/`); `--basetemp=DIR` puts them in DIR
instead (emptied when the run starts). tests/existing/README.md says more.

Shapes: the write-up's one-node MicroK8s + GPU Operator host (one node, nvidia.com/gpu 1, the
L40S labels of GPU feature discovery as gpulab already writes them: render.gpu_node_labels, and
the GPU Operator's RuntimeClasses: gpu_operator_runtime_classes), and
the same with KAI Scheduler v0.16.8 installed (the operator Deployment as its chart renders it:
deployments/kai-scheduler/templates/services/operator.yaml:4-24, registry from the pinned
values.yaml:5; Config kai-config: templates/_helpers.tpl:18-24,172,195). The KAI CRDs are the
pinned upstream files in tests/data/pinned.

`shape="multi-node"`: a control-plane node and CPU nodes listed first (by name), then three GPU
nodes with 8, 4 and 2 GPUs advertised by the NVIDIA device plugin: its DaemonSet is the pinned
upstream manifest (k8s-device-plugin v0.20.0 deployments/static/nvidia-device-plugin.yml), one
pod of it running on each GPU node, and the GPU nodes carry the labels of GPU feature
discovery's own example (docs/gpu-feature-discovery/README.md:134-147 at v0.20.0) with their
`nvidia.com/gpu.count`; no LoadBalancer. `shape="no-gpu"`: the control-plane and three CPU
nodes, no GPU at all (for `cluster.fake_gpu_nodes`). Nodes answer merge-patches of their labels
as an API server does (a null removes the key; a stale resourceVersion is a 409).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import json
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kmock
import yaml
from kmock import Response  # type: ignore[attr-defined]

from gpulab.adapters.base import HelmRelease, LabAdapters
from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.stacks.vcluster_kai import render as kr
from tests.kamaji_hami.kmock_lab import Cluster, status

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.kamaji_hami.kmock_lab import Key

PINNED = Path(__file__).parents[1] / "data" / "pinned"
_VERBS = {"create", "delete", "get", "list", "patch", "update", "watch"}
_SSAR = re.compile(r"/apis/authorization\.k8s\.io/v1/selfsubjectaccessreviews")
_NAMESPACES = re.compile(r"/api/v1/namespaces/?")
DEPLOYMENTS = kmock.resource("apps/v1/deployments")
SECRETS = kmock.resource("v1/secrets")
SERVICES = kmock.resource("v1/services")
NODES = kmock.resource("v1/nodes")
CRDS = kmock.resource("apiextensions.k8s.io/v1/customresourcedefinitions")
STORAGE = kmock.resource("storage.k8s.io/v1/storageclasses")
QUEUES = kmock.resource("scheduling.run.ai/v2/queues")
CONFIGS = kmock.resource("kai.scheduler/v1/configs")
REVIEWS = kmock.resource("authorization.k8s.io/v1/selfsubjectaccessreviews")
DAEMONSETS = kmock.resource("apps/v1/daemonsets")
PODS = kmock.resource("v1/pods")
RUNTIMECLASSES = kmock.resource("node.k8s.io/v1/runtimeclasses")
CLUSTERROLES = kmock.resource("rbac.authorization.k8s.io/v1/clusterroles")
CONFIGMAPS = kmock.resource("v1/configmaps")
_NODE = re.compile(r"/api/v1/nodes/[^/]+$")
UPSTREAM = PINNED / "upstream"
DEVICE_PLUGIN = UPSTREAM / "nvidia-device-plugin_v0.20.0_deployments_static_nvidia-device-plugin.yml"
GFD_README = UPSTREAM / "nvidia-device-plugin_v0.20.0_docs_gpu-feature-discovery_README.md"
# multi-node: (name, role, InternalIP, GPUs); the control-plane and CPU nodes sort first
MULTI_NODE = (("cp-1", "control-plane", "10.0.1.1", 0), ("cpu-1", "", "10.0.1.11", 0),
              ("cpu-2", "", "10.0.1.12", 0), ("gpu-1", "", "10.0.1.21", 8),
              ("gpu-2", "", "10.0.1.22", 4), ("gpu-3", "", "10.0.1.23", 2))
NO_GPU = (("cp-1", "control-plane", "10.0.1.1", 0), ("cpu-1", "", "10.0.1.11", 0),
          ("cpu-2", "", "10.0.1.12", 0), ("cpu-3", "", "10.0.1.13", 0))
KAI_IMAGE = "registry/local/kai-scheduler/operator:v0.16.8"  # values.yaml:5 + operator.yaml:24
# the GPU Operator's RuntimeClasses (v26.7.0 assets/pre-requisites/02{00,10,20}_*.yaml; the
# first's FILLED_BY_OPERATOR is `nvidia`, name and handler, without operator.runtimeClass:
# controllers/object_controls.go:2740-2745,5178-5190 at 10ee5b36)
GPU_OPERATOR_RUNTIME_CLASSES = tuple(
    UPSTREAM / f"gpu-operator_v26.7.0_assets_pre-requisites_{n}.yaml"
    for n in ("0200_runtime_class", "0210_runtime_class_legacy", "0220_runtime_class_cdi"))


def gpu_operator_runtime_classes() -> list[dict[str, Any]]:
    out = []
    for path in GPU_OPERATOR_RUNTIME_CLASSES:
        obj = yaml.safe_load(path.read_text())
        if obj["metadata"]["name"] == "FILLED_BY_OPERATOR":
            obj["metadata"]["name"] = obj["handler"] = "nvidia"
        out.append(obj)
    return out
VERSION = "v1.34.2"


@functools.cache
def _gpu_labels() -> dict[str, str]:
    from gpulab.stacks import load_profile

    profile: Any = load_profile("vcluster-kai").profile
    return {k: v for k, v in kr.gpu_node_labels(profile).items() if k != kr.POOL_LABEL}


def gpu_node(name: str = "gpu-node-1", address: str = "10.0.0.5") -> dict[str, Any]:
    labels = _gpu_labels()
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": "32", kr.GPU_RESOURCE: "1"},
                       "capacity": {kr.GPU_RESOURCE: "1"},
                       "addresses": [{"type": "InternalIP", "address": address}],
                       "nodeInfo": {"kubeletVersion": VERSION}}}


@functools.cache
def gfd_labels() -> dict[str, str]:
    """The node labels of GPU feature discovery's example (`kubectl get nodes -o yaml`,
    docs/gpu-feature-discovery/README.md:134-147 at v0.20.0), read from the pinned copy."""
    lines = GFD_README.read_text().splitlines()[133:147]
    assert lines[0].strip() == "labels:", lines[0]
    return {str(k): str(v) for k, v in (yaml.safe_load("\n".join(lines)) or {})["labels"].items()}


def node(name: str, role: str, address: str, gpus: int) -> dict[str, Any]:
    """A node of the multi-node shape: a GPU node labelled as GFD's example with its own
    count, its GPUs in capacity and allocatable (what the device plugin's kubelet reports)."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    spec: dict[str, Any] = {}
    if role == "control-plane":
        labels["node-role.kubernetes.io/control-plane"] = ""
        spec["taints"] = [{"key": "node-role.kubernetes.io/control-plane",
                           "effect": "NoSchedule"}]
    resources = {"cpu": "16", "memory": "65536Mi", "pods": "110"}
    if gpus:
        labels.update(gfd_labels())
        labels["nvidia.com/gpu.count"] = str(gpus)
        resources[kr.GPU_RESOURCE] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "resourceVersion": "1",
                         "uid": f"node-{name}"},
            "spec": spec,
            "status": {"capacity": dict(resources), "allocatable": dict(resources),
                       "addresses": [{"type": "InternalIP", "address": address},
                                     {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": VERSION}}}


def device_plugin(gpu_nodes: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The NVIDIA device plugin DaemonSet as upstream ships it, scheduled on `gpu_nodes`, and
    its running pods (named as the DaemonSet controller names them: <daemonset>-<suffix>)."""
    daemonset = yaml.safe_load(DEVICE_PLUGIN.read_text())
    daemonset["metadata"]["uid"] = "ds-nvidia-device-plugin"
    count = len(gpu_nodes)
    daemonset["status"] = {"currentNumberScheduled": count, "desiredNumberScheduled": count,
                           "numberAvailable": count, "numberReady": count,
                           "updatedNumberScheduled": count, "numberMisscheduled": 0}
    template = daemonset["spec"]["template"]
    pods = []
    for index, name in enumerate(gpu_nodes):
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{daemonset['metadata']['name']}-{index:05x}",
            "namespace": daemonset["metadata"]["namespace"],
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                 "name": daemonset["metadata"]["name"],
                                 "uid": daemonset["metadata"]["uid"], "controller": True}]},
            "spec": {**copy.deepcopy(template["spec"]), "nodeName": name},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": c["name"], "ready": True, "state": {"running": {}}}
                for c in template["spec"]["containers"]]}})
    return daemonset, pods


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 JSON merge patch (what `application/merge-patch+json` means)."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = _merge(out.get(key) if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = value
    return out


def _established(crd: dict[str, Any]) -> dict[str, Any]:
    return {**crd, "status": {"conditions": [{"type": "Established", "status": "True"}]}}


def kai_crds() -> list[dict[str, Any]]:
    return [_established(yaml.safe_load((PINNED / f"kai_v0.16.8_crd_scheduling.run.ai_{n}.yaml")
                                        .read_text()))
            for n in ("queues", "podgroups")]


def _deployment(name: str, namespace: str, image: str = "") -> dict[str, Any]:
    containers = [{"name": "operator", "image": image}] if image else []
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}},
            "status": {"availableReplicas": 1}}


@dataclass
class HostCluster(Cluster):
    """The existing cluster's API server, which knows what each helm release made: every object
    a FakeHelm install (kmock_kamaji's KamajiHelm's too) stores while it runs (`installing`:
    what its thread hands to the loop through `call`) is that release's, unless it is put with
    `owned=False` (what a controller makes at run time that the release's deletion does not take
    with it); an object that was there already (a node it updates) is not. Keys in the order
    made."""

    made: dict[tuple[str, str], dict[Key, None]] = field(default_factory=dict)
    _release: tuple[str, str] | None = None  # loop: the release whose install is storing
    _caller: threading.local = field(default_factory=threading.local)

    @contextlib.contextmanager
    def installing(self, release: tuple[str, str]) -> Iterator[None]:
        """(any thread but the loop's) What this thread stores meanwhile is `release`'s
        (namespace, name)."""
        self._caller.release = release
        try:
            yield
        finally:
            self._caller.release = None

    def call(self, fn: Any, *args: Any) -> Any:
        release = getattr(self._caller, "release", None)
        if release is None:
            return super().call(fn, *args)

        def as_release(*a: Any) -> Any:
            self._release = release
            try:
                return fn(*a)
            finally:
                self._release = None

        return super().call(as_release, *args)

    def put(self, resource: Any, obj: dict[str, Any], *, owned: bool = True) -> None:
        meta = obj["metadata"]
        key = (resource, meta.get("namespace"), meta["name"])
        new = key not in self.km.objects or self.km.objects[key].deleted
        super().put(resource, obj)
        if new and owned and self._release is not None:  # a node it only updated is not its
            self.made.setdefault(self._release, {})[key] = None


class ExistingCluster:
    """One kmock API server standing for a cluster gpulab did not build, plus vClusters."""

    def __init__(self, folder: Path, name: str = "microk8s", *, kai: bool = False,
                 gpu_sharing: bool = True, denied: set[tuple[str, str]] | None = None,
                 load_balancer: bool = False, gpu_nodes: int = 1, shape: str = "gpu-operator",
                 member_version: str = VERSION, version: str | None = None,
                 storage_class: bool = True, nodes: list[dict[str, Any]] | None = None,
                 objects: Iterable[tuple[Any, dict[str, Any]]] = (),
                 storage_classes: list[dict[str, Any]] | None = None,
                 forbidden: Iterable[str] = ()) -> None:
        self.folder, self.name, self.kai, self.gpu_sharing = folder, name, kai, gpu_sharing
        self.shape = shape  # gpu-operator (one node) | multi-node | no-gpu
        self.gpu_nodes = gpu_nodes  # how many nodes advertise nvidia.com/gpu (the scale bench)
        self.denied = denied or set()  # (verb, resource) the user may not
        self.load_balancer = load_balancer
        self.member_version = member_version  # what each vCluster's (tenant's) /version says
        self.version = version or VERSION  # what the host cluster's /version says
        self.storage_class = storage_class  # it has a default StorageClass
        # a cluster of its own shape (tests/existing/flavours.py): these nodes instead of the
        # shape's, these StorageClasses instead of the default one, more objects, and the
        # paths (regular expressions) whose GET answers 403 Forbidden
        self.nodes, self.objects = nodes, list(objects)
        self.storage_classes, self.forbidden = storage_classes, tuple(forbidden)
        self.host: HostCluster
        self.vclusters: dict[str, Cluster] = {}
        self.releases: dict[tuple[str, str], HelmRelease] = {}
        self._box: dict[str, Any] = {}
        # FakeHelm: how long each install takes (`helm_gate` N: until N installs run at once,
        # then 0.1 s more, at most `helm_seconds`), and the most installs seen running at once
        self.helm_seconds = 0.0
        self.helm_gate = 0
        self.helm_most = 0
        self._helm_running = 0
        self._helm_lock = threading.Lock()
        self._clients: list[KubeClient] = []
        self._also_logged: dict[str, Callable[[], Iterable[str]]] = {}
        self.helm_log: list[str] = []  # FakeHelm's installs and uninstalls, in order

    # ------------------------------------------------------------------ lifecycle

    @contextlib.contextmanager
    def running(self, teams: list[str]) -> Iterator[ExistingCluster]:
        ready = threading.Event()

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            self._box["loop"], self._box["stop"] = loop, asyncio.Event()
            async with contextlib.AsyncExitStack() as stack:
                for name in (self.name, *teams):
                    km = await stack.enter_async_context(kmock.KubernetesEmulator())
                    server = await stack.enter_async_context(kmock.Server(km))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", DeprecationWarning)
                        km.resources.load_bundled()
                    for path, kind in (("scheduling.run.ai/v2/queues", "Queue"),
                                       ("kai.scheduler/v1/configs", "Config")):
                        km.resources[kmock.resource(path)] = kmock.ResourceInfo(
                            kind=kind, namespaced=False, verbs=_VERBS)
                    kind = HostCluster if name == self.name else Cluster
                    cluster = kind(name, km, str(server.url).rstrip("/"), loop,
                                   version=self.version if name == self.name
                                   else self.member_version)
                    cluster.serve()
                    if name == self.name:
                        self.host = cluster
                        km[_SSAR] << self._review
                        km["get", _NAMESPACES] << self._namespace_list
                        km["patch", _NODE] << self._patch_node
                        for path in self.forbidden:
                            km["get", re.compile(path)] << self._forbidden
                    else:
                        self.vclusters[name] = cluster
                self._seed()
                ready.set()
                await self._box["stop"].wait()

        thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
        thread.start()
        assert ready.wait(10), "kmock did not start"
        self._write_kubeconfig()
        try:
            yield self
        finally:
            for client in self._clients:
                client.close()
            try:
                self._write_request_log()
            finally:
                self._box["loop"].call_soon_threadsafe(self._box["stop"].set)
                thread.join(10)

    def _forbidden(self, request: kmock.Request) -> Response:
        """What an API server answers a read RBAC does not allow."""
        return status(403, "Forbidden", f'"{request.url.path}" is forbidden: User "admin" '
                                        "cannot get this resource")

    def _seed(self) -> None:
        put = self.host.put
        if self.nodes is not None:
            nodes = copy.deepcopy(self.nodes)
        elif self.shape in ("multi-node", "no-gpu"):
            nodes = [node(*row) for row in (MULTI_NODE if self.shape == "multi-node"
                                            else NO_GPU)]
            gpus = [n["metadata"]["name"] for n in nodes
                    if kr.GPU_RESOURCE in n["status"]["allocatable"]]
            if gpus:
                daemonset, pods = device_plugin(gpus)
                put(DAEMONSETS, daemonset)
                for pod in pods:
                    put(PODS, pod)
        else:
            nodes = [gpu_node()] + [gpu_node(f"gpu-node-{i}", f"10.0.{i // 250}.{i % 250 + 5}")
                                    for i in range(2, self.gpu_nodes + 1)]
            for runtime_class in gpu_operator_runtime_classes():  # the GPU Operator's
                put(RUNTIMECLASSES, runtime_class)
        for one in nodes:
            put(NODES, one)
        for resource, obj in self.objects:
            put(resource, copy.deepcopy(obj))
        if self.storage_classes is not None:
            for one in self.storage_classes:
                put(STORAGE, copy.deepcopy(one))
        elif self.storage_class:
            put(STORAGE, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": "microk8s-hostpath", "annotations": {
                              "storageclass.kubernetes.io/is-default-class": "true"}},
                          "provisioner": "microk8s.io/hostpath"})
        if self.load_balancer:
            put(SERVICES, {"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": "ingress", "namespace": "default"},
                           "spec": {"type": "LoadBalancer"},
                           "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}})
        if self.kai:
            self.host.namespaces["kai-scheduler"] = {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "kai-scheduler", "uid": "kai-ns-uid"},
                "status": {"phase": "Active"}}
            for crd in kai_crds():
                put(CRDS, crd)
            for name in kr.KAI_DEPLOYMENTS:
                put(DEPLOYMENTS, _deployment(name, "kai-scheduler",
                                             KAI_IMAGE if name == "kai-operator" else ""))
            put(CONFIGS, {"apiVersion": "kai.scheduler/v1", "kind": "Config",
                          "metadata": {"name": "kai-config"},
                          "spec": {"namespace": "kai-scheduler",
                                   "admission": {"gpuSharing": self.gpu_sharing}}})
        for team in self.vclusters:
            for one in nodes:  # the vCluster syncs the nodes its pods may go to
                self.vclusters[team].put(NODES, one)

    def _patch_node(self, request: kmock.Request) -> Response:
        """PATCH of a node (merge patch): a null removes a key; a resourceVersion in the patch
        that is not the node's answers 409 Conflict, as an API server's optimistic lock."""
        name = request.url.path.rsplit("/", 1)[-1]
        stored = self.host._get(NODES, None, name)
        if stored is None:
            return status(404, "NotFound", f'nodes "{name}" not found')
        body = request.data if isinstance(request.data, dict) else {}
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        have = str(stored["metadata"].get("resourceVersion") or "1")
        if wanted is not None and str(wanted) != have:
            return status(409, "Conflict", f'Operation cannot be fulfilled on nodes "{name}": '
                                           "the object has been modified")
        merged = _merge(stored, body)
        merged["metadata"]["resourceVersion"] = str(int(have) + 1)
        self.host.put(NODES, merged)
        return Response(status=200, payload=merged)

    def node(self, name: str) -> dict[str, Any] | None:
        return self.host.stored(NODES, None, name)

    def edit_node_labels(self, name: str, labels: dict[str, str | None]) -> None:
        """Someone else changes a node's labels (as `kubectl label` would)."""
        def edit() -> None:
            stored = self.host._get(NODES, None, name)
            assert stored is not None
            merged = _merge(stored, {"metadata": {"labels": labels}})
            merged["metadata"]["resourceVersion"] = str(
                int(stored["metadata"].get("resourceVersion") or "1") + 1)
            self.host.put(NODES, merged)

        self.host.call(edit)

    def _review(self, request: kmock.Request) -> Response:
        """The API server's SelfSubjectAccessReview: allowed unless (verb, resource) is denied."""
        body = copy.deepcopy(request.data or {})
        attributes = (body.get("spec") or {}).get("resourceAttributes") or {}
        key = (attributes.get("verb"), attributes.get("resource"))
        body["status"] = {"allowed": key not in self.denied}
        # kmock stores what is posted (a review has no name); an API server keeps no review
        for stored in [k for k in self.host.km.objects if k[0] == REVIEWS]:
            del self.host.km.objects[stored]
        return Response(status=201, payload=body)

    def _namespace_list(self, request: kmock.Request) -> Response:
        """LIST namespaces (kmock_lab's Cluster serves them one by one)."""
        return Response(status=200, payload={
            "apiVersion": "v1", "kind": "NamespaceList", "metadata": {},
            "items": copy.deepcopy(list(self.host.namespaces.values()))})

    # ------------------------------------------------------------------ the request log

    @property
    def request_log(self) -> Path:
        """Where `running` writes every request when it exits (appended to, if it exists)."""
        return self.folder / f"{self.name}.requests.log"

    def log_also(self, title: str, calls: Callable[[], Iterable[str]]) -> None:
        """Write `calls()` (one line each) under `title` in the request log too, at exit."""
        self._also_logged[title] = calls

    def _server_lines(self, cluster: Cluster) -> list[str]:
        lines = []
        for request in cluster.requests():
            query = "&".join(f"{k}={v}" for k, v in request.params.items())
            line = f"{request.method.value} {request.url.path}" + (f"?{query}" if query else "")
            if str(request.method.value) != "GET" and request.data is not None:
                line += (" (a Secret's body, left out)" if "/secrets" in request.url.path
                         else " " + json.dumps(request.data, sort_keys=True,
                                               separators=(",", ":"), default=str))
            lines.append(line)
        return lines

    def _write_request_log(self) -> None:
        """Every request of every API server (and of the fakes given to `log_also`)."""
        out = ["# every request the kmock API servers of this cluster received, oldest first "
               "per server (tests/existing/kmock_cluster.py)"]
        servers = [(f"{self.name} (host)", getattr(self, "host", None))] + [
            (f"{name} (vCluster / tenant API server)", c) for name, c in self.vclusters.items()]
        sections: list[tuple[str, Callable[[], Iterable[str]]]] = [
            (f"{title} {c.url}", functools.partial(self._server_lines, c))
            for title, c in servers if c is not None]
        sections.append(("helm (FakeHelm, in process: what a helm client would send)",
                         lambda: list(self.helm_log)))
        sections += list(self._also_logged.items())
        for title, lines in sections:
            try:
                got = list(lines())
            except Exception as err:  # the loop is gone: say so, keep the rest
                out.append(f"== {title}: not read ({type(err).__name__}: {err})")
                continue
            out.append(f"== {title}: {len(got)} request(s)")
            out += got
        with self.request_log.open("a") as log:
            log.write("\n".join(out) + "\n")

    def read_request_log(self) -> dict[str, list[str]]:
        """The request log as written: each section's lines by the first word of its title
        (the server's name: the host's, each vCluster's; `helm`; `log_also`'s titles')."""
        sections: dict[str, list[str]] = {}
        current: list[str] = []
        for line in self.request_log.read_text().splitlines():
            if line.startswith("== "):
                current = sections.setdefault(line[3:].split(" ", 1)[0].rstrip(":"), [])
            elif not line.startswith("# "):
                current.append(line)
        return sections

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "microk8s",
            "clusters": [{"name": "microk8s-cluster", "cluster": {"server": self.host.url}}],
            "users": [{"name": "admin", "user": {"token": "t"}}],
            "contexts": [{"name": "microk8s", "context": {"cluster": "microk8s-cluster",
                                                         "user": "admin"}}]}))

    @property
    def kubeconfig(self) -> Path:
        return self.folder / f"{self.name}.kubeconfig"

    # ------------------------------------------------------------------ what it holds

    def state(self) -> dict[str, Any]:
        """Every live object and namespace of the host cluster (to compare before/after)."""
        def read() -> dict[str, Any]:
            objects = {str(k): copy.deepcopy(o.raw) for k, o in self.host.km.objects.items()
                       if not o.deleted}
            return {"objects": objects, "namespaces": copy.deepcopy(self.host.namespaces)}

        return self.host.call(read)  # type: ignore[no-any-return]

    def writes(self) -> list[tuple[str, str]]:
        return self.host.writes()

    # ------------------------------------------------------------------ adapters

    def client(self, path: Path) -> KubeClient:
        team = path.stem
        host = self.vclusters[team].url if team in self.vclusters else None
        made = (KubeClient(host=host, retry=RetryPolicy.disabled(), request_timeout=5)
                if host else KubeClient(path, retry=RetryPolicy.disabled(), request_timeout=5))
        self._clients.append(made)
        return made

    def adapters(self, lab_dir: Path) -> LabAdapters:
        from typing import cast

        return LabAdapters(runtime=cast("Any", None), kind=cast("Any", None), kube=self.client,
                           helm=lambda path: FakeHelm(self), fetch=lambda url: "",
                           lab_dir=lab_dir)


def _keys_text(keys: list[Key]) -> str:
    """`deployments kai-scheduler/binder, customresourcedefinitions queues.scheduling.run.ai`."""
    return ", ".join(f"{getattr(r, 'plural', r)} {ns + '/' if ns else ''}{n}"
                     for r, ns, n in keys) or "nothing"


class FakeHelm:
    """Records installs and plays what each chart would create in the host cluster. Uninstall
    deletes only what that release made (HostCluster.made), never the rest of its namespace:
    helm deletes the resources of the release's stored manifest, with background propagation
    so that what they own goes too (helm v4.1.4 pkg/action/uninstall.go:256-289, :291-301,
    05fa3797). Kept: CRDs (a chart's crds/ are installed apart and are not in the manifest,
    pkg/action/install.go:315-319; cert-manager's templated ones carry helm.sh/resource-policy:
    keep, pkg/action/resource_policy.go:26), and what controllers make with no owner among the
    release's objects: fake-gpu-operator's topology ConfigMaps (its status-updater's), the
    vCluster's `vc-<name>` kubeconfig Secret (vCluster v0.35.3 sets its owner only with
    setOwner, pkg/util/kubeconfig/kubeconfig.go:93-96, pkg/setup/config/config.go:200-202;
    gpulab sets it false). Those go with their namespace. KAI's operator's Deployments are
    owned by the Config kai-config or the SchedulingShard its chart installs
    (pkg/operator/operands/deployable/deployable.go:61-67,269 at v0.16.8, 40da4c87), so they
    go with the release."""

    def __init__(self, cluster: ExistingCluster) -> None:
        self.cluster = cluster

    def _play_fake_gpus(self, release: HelmRelease) -> None:
        """fake-gpu-operator v0.0.74: its Deployments (templates/status-updater/deployment.yaml,
        templates/topology-server), RuntimeClass nvidia (templates/runtime-class.yml), the
        ClusterRole fake-status-updater; the status-updater's topology ConfigMap per pool node
        (a node with the pool label: controllers/node/controller.go:167-170); and on each pool
        node labelled nvidia.com/gpu.deploy.device-plugin=true (device-plugin/daemonset.yml:16-17)
        the kubelet then reports the pool's gpuCount (loop)."""
        host = self.cluster.host
        ns = release.namespace
        for name in ("status-updater", "topology-server"):
            host.put(DEPLOYMENTS, _deployment(name, ns))
        host.put(RUNTIMECLASSES, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                  "metadata": {"name": "nvidia"}, "handler": "runc"})
        host.put(CLUSTERROLES, {"apiVersion": "rbac.authorization.k8s.io/v1",
                                "kind": "ClusterRole", "metadata": {"name": "fake-status-updater"},
                                "rules": []})
        topology = release.values["topology"]
        key = topology["nodePoolLabelKey"]
        for (_r, _ns, name), obj in list(host.live(NODES)):
            labels = (obj.raw.get("metadata") or {}).get("labels") or {}
            pool = topology["nodePools"].get(labels.get(key))
            if pool is None:
                continue
            host.put(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": f"topology-{name}", "namespace": ns}},
                     owned=False)  # the status-updater's, at run time
            if labels.get("nvidia.com/gpu.deploy.device-plugin") == "true":
                live = copy.deepcopy(obj.raw)
                for part in ("capacity", "allocatable"):
                    live.setdefault("status", {}).setdefault(part, {})[kr.GPU_RESOURCE] = \
                        str(pool["gpuCount"])
                host.put(NODES, live)

    def installed(self, release: HelmRelease) -> bool:
        return (release.namespace, release.name) in self.cluster.releases

    def install(self, release: HelmRelease, *, timeout_seconds: int = 600) -> None:
        cluster = self.cluster
        with cluster._helm_lock:
            cluster._helm_running += 1
            cluster.helm_most = max(cluster.helm_most, cluster._helm_running)
        try:
            self._hold()  # the chart's download, render and --wait
            with cluster.host.installing((release.namespace, release.name)):
                self._install(release)
            made = cluster.host.call(lambda: list(cluster.host.made.get(
                (release.namespace, release.name), {})))
            cluster.helm_log.append(f"install {release.namespace}/{release.name} "
                                    f"{release.chart} {release.version}: made "
                                    f"{_keys_text(made)}")
        finally:
            with cluster._helm_lock:
                cluster._helm_running -= 1

    def _hold(self) -> None:
        cluster = self.cluster
        if not cluster.helm_gate:
            time.sleep(cluster.helm_seconds)
            return
        deadline = time.monotonic() + cluster.helm_seconds
        while cluster._helm_running < cluster.helm_gate and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # long enough for a further install to overlap, were it let through

    def _install(self, release: HelmRelease) -> None:
        host = self.cluster.host
        self.cluster.releases[(release.namespace, release.name)] = release

        def play() -> None:
            if release.chart.endswith("/fake-gpu-operator"):
                self._play_fake_gpus(release)
            elif release.chart.endswith("/kai-scheduler"):
                for crd in kai_crds():
                    host.put(CRDS, crd)
                for name in kr.KAI_DEPLOYMENTS:
                    host.put(DEPLOYMENTS, _deployment(name, release.namespace))
            elif release.chart == "vcluster":
                values = release.values
                server = (values.get("exportKubeConfig") or {}).get(
                    "server", f"https://{release.name}.{release.namespace}:443")
                config = {"apiVersion": "v1", "kind": "Config", "current-context": "vc",
                          "clusters": [{"name": "vc", "cluster": {"server": server}}],
                          "users": [{"name": "vc", "user": {"token": "vc"}}],
                          "contexts": [{"name": "vc", "context": {"cluster": "vc",
                                                                  "user": "vc"}}]}
                import base64

                host.put(SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {
                    "name": f"vc-{release.name}", "namespace": release.namespace},
                    "data": {"config": base64.b64encode(
                        yaml.safe_dump(config).encode()).decode()}},
                    owned=False)  # the vCluster's syncer writes it, with no owner
                service = values["controlPlane"]["service"]
                svc: dict[str, Any] = {
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": release.name, "namespace": release.namespace,
                                 "labels": service.get("labels", {})},
                    "spec": service.get("spec", {})}
                if (service.get("spec") or {}).get("type") == "LoadBalancer":
                    svc["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.20"}]}}
                host.put(SERVICES, svc)
                team = self.cluster.vclusters.get(release.name)
                if team is not None:  # syncs the host's nodes as they are now
                    for (_r, _ns, _n), obj in host.live(NODES):
                        team.put(NODES, obj.raw)

        host.call(play)

    def uninstall(self, name: str, namespace: str) -> None:
        release = self.cluster.releases.pop((namespace, name), None)
        host = self.cluster.host

        deleted: list[Key] = []

        def remove() -> None:
            for key in reversed(host.made.pop((namespace, name), {})):  # as helm: its own
                if key[0] != CRDS and key in host.km.objects \
                        and not host.km.objects[key].deleted:
                    host.km.objects[key].delete()
                    deleted.append(key)
            if release is not None and release.chart.endswith("/fake-gpu-operator"):
                # the kubelet keeps a gone device plugin's resource in the node's status, at 0
                # (kubernetes/kubernetes#52510, #92396)
                for _key, obj in host.live(NODES):
                    live = copy.deepcopy(obj.raw)
                    status = live.get("status") or {}
                    if kr.GPU_RESOURCE in (status.get("allocatable") or {}) and (
                            (live["metadata"].get("labels") or {}).get(kr.POOL_LABEL)):
                        for part in ("capacity", "allocatable"):
                            status[part][kr.GPU_RESOURCE] = "0"
                        host.put(NODES, live)

        if release is not None:
            host.call(remove)
        self.cluster.helm_log.append(f"uninstall {namespace}/{name}: " + (
            f"deleted {_keys_text(deleted)}" if release is not None else "no such release"))

    def releases(self) -> list[dict[str, Any]]:
        return [{"name": n, "namespace": ns} for ns, n in self.cluster.releases]

    def template(self, release: HelmRelease, *, kube_version: str | None = None,
                 include_crds: bool = False) -> list[dict[str, Any]]:
        return []
