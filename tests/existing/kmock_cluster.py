"""An existing cluster played by kmock over HTTP (gpulab's real KubeClient talks to it), a fake
helm that records installs and plays what the charts would create, and a kmock API server per
vCluster. Every request is in kmock's log; `state()` is what the cluster holds, to compare the
cluster before `up` with the cluster after `down`.

Shapes: the write-up's one-node MicroK8s + GPU Operator host (one node, nvidia.com/gpu 1, the
L40S labels of GPU feature discovery as gpulab already writes them: render.gpu_node_labels), and
the same with KAI Scheduler v0.16.8 installed (the operator Deployment as its chart renders it:
deployments/kai-scheduler/templates/services/operator.yaml:4-24, registry from the pinned
values.yaml:5; Config kai-config: templates/_helpers.tpl:18-24,172,195). The KAI CRDs are the
pinned upstream files in tests/data/pinned.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import re
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kmock
import yaml
from kmock import Response  # type: ignore[attr-defined]

from gpulab.adapters.base import HelmRelease, LabAdapters
from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.stacks.vcluster_kai import render as kr
from tests.kamaji_hami.kmock_lab import Cluster

if TYPE_CHECKING:
    from collections.abc import Iterator

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
KAI_IMAGE = "registry/local/kai-scheduler/operator:v0.16.8"  # values.yaml:5 + operator.yaml:24
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


class ExistingCluster:
    """One kmock API server standing for a cluster gpulab did not build, plus vClusters."""

    def __init__(self, folder: Path, name: str = "microk8s", *, kai: bool = False,
                 gpu_sharing: bool = True, denied: set[tuple[str, str]] | None = None,
                 load_balancer: bool = False, gpu_nodes: int = 1) -> None:
        self.folder, self.name, self.kai, self.gpu_sharing = folder, name, kai, gpu_sharing
        self.gpu_nodes = gpu_nodes  # how many nodes advertise nvidia.com/gpu (the scale bench)
        self.denied = denied or set()  # (verb, resource) the user may not
        self.load_balancer = load_balancer
        self.host: Cluster
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
                    cluster = Cluster(name, km, str(server.url).rstrip("/"), loop,
                                      version=VERSION)
                    cluster.serve()
                    if name == self.name:
                        self.host = cluster
                        km[_SSAR] << self._review
                        km["get", _NAMESPACES] << self._namespace_list
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
            self._box["loop"].call_soon_threadsafe(self._box["stop"].set)
            thread.join(10)

    def _seed(self) -> None:
        put = self.host.put
        nodes = [gpu_node()] + [gpu_node(f"gpu-node-{i}", f"10.0.{i // 250}.{i % 250 + 5}")
                                for i in range(2, self.gpu_nodes + 1)]
        for node in nodes:
            put(NODES, node)
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
            for node in nodes:  # the vCluster syncs the nodes its pods may go to
                self.vclusters[team].put(NODES, node)

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


class FakeHelm:
    """Records installs and plays what each chart would create in the host cluster; uninstall
    removes what the chart made, except CRDs (helm keeps a chart's crds/)."""

    def __init__(self, cluster: ExistingCluster) -> None:
        self.cluster = cluster

    def installed(self, release: HelmRelease) -> bool:
        return (release.namespace, release.name) in self.cluster.releases

    def install(self, release: HelmRelease, *, timeout_seconds: int = 600) -> None:
        cluster = self.cluster
        with cluster._helm_lock:
            cluster._helm_running += 1
            cluster.helm_most = max(cluster.helm_most, cluster._helm_running)
        try:
            self._hold()  # the chart's download, render and --wait
            self._install(release)
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
            if release.chart.endswith("/kai-scheduler"):
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
                        yaml.safe_dump(config).encode()).decode()}})
                service = values["controlPlane"]["service"]
                svc: dict[str, Any] = {
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": release.name, "namespace": release.namespace,
                                 "labels": service.get("labels", {})},
                    "spec": service.get("spec", {})}
                if (service.get("spec") or {}).get("type") == "LoadBalancer":
                    svc["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.20"}]}}
                host.put(SERVICES, svc)

        host.call(play)

    def uninstall(self, name: str, namespace: str) -> None:
        release = self.cluster.releases.pop((namespace, name), None)
        host = self.cluster.host

        def remove() -> None:
            for (resource, ns, _n), obj in list(host.km.objects.items()):
                if ns == namespace and resource in (DEPLOYMENTS, SECRETS, SERVICES) \
                        and not obj.deleted:
                    obj.delete()

        if release is not None:
            host.call(remove)

    def releases(self) -> list[dict[str, Any]]:
        return [{"name": n, "namespace": ns} for ns, n in self.cluster.releases]

    def template(self, release: HelmRelease, *, kube_version: str | None = None,
                 include_crds: bool = False) -> list[dict[str, Any]]:
        return []
