"""In-memory fakes of Docker, kind, helm and the Kubernetes APIs, playing the operators' parts.

`FakeWorld` reacts the way the real components do, just instantly: kind creates a node container,
Helm installs make their Deployments available, a TenantControlPlane becomes Ready and gets its
admin kubeconfig secret, `kubeadm join` registers a Node, Calico makes nodes Ready, and HAMi's mock
plugin advertises what the node annotation describes once `nvidia.com/gpu` capacity is set.
Faults are injected by name (`fail_once`), so every adapter call can be made to fail once.
"""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpulab import naming
from gpulab.adapters import base
from gpulab.adapters.base import ContainerInfo, ExecResult, NetworkInfo, RuntimeInfo
from gpulab.errors import AdapterError
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.steps import JOIN_STATE, RESET_LEFTOVERS
from tests.upstream import containerd_full_config

RENDERED = Path(__file__).parent / "data" / "rendered"


def hami_scheduler_device_configmap() -> dict[str, Any]:
    """The ConfigMap HAMi's chart v2.10.0 creates (a real `helm template` render, kept current by
    tests/contract/test_pins.py), as the fakes' helm install leaves it in the cluster."""
    path = RENDERED / "hami-2.10.0_configmap_hami-scheduler-device.yaml"
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


def tenant_admin_kubeconfig(tenant: str) -> str:
    """What Kamaji's `<tenant>-admin-kubeconfig` Secret holds (abridged)."""
    return (f"# kubeconfig of {tenant}\napiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: {tenant}\n  cluster:\n    server: https://172.18.255.200:6443\n"
            f"contexts:\n- name: kubernetes-admin@{tenant}\n  context:\n    cluster: {tenant}\n"
            f"    user: kubernetes-admin\ncurrent-context: kubernetes-admin@{tenant}\n"
            f"users:\n- name: kubernetes-admin\n  user: {{}}\n")


KIND_IPAM = [
    {"Subnet": "fc00:f853:ccd:e793::/64"},
    {"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"},
]
METALLB_MANIFEST = """
apiVersion: v1
kind: Namespace
metadata: {name: metallb-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: controller, namespace: metallb-system}
spec: {replicas: 1}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: speaker, namespace: metallb-system}
spec: {}
"""
CALICO_MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: calico-node, namespace: kube-system}
spec:
  template:
    spec:
      containers:
        - name: calico-node
          image: quay.io/calico/node:v3.31.2
          env:
            - {name: CALICO_IPV4POOL_CIDR, value: 192.168.0.0/16}
            - {name: OTHER, value: kept}
"""


class Faults:
    """Named one-shot faults: `fail_once.add("helm.install:kamaji")` fails that call once."""

    def __init__(self) -> None:
        self.fail_once: set[str] = set()
        self.fail_times: dict[str, int] = {}  # name → how many calls fail before one succeeds
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def hit(self, name: str) -> None:
        with self._lock:
            self.calls.append(name)
            if name in self.fail_once:
                self.fail_once.discard(name)
                raise AdapterError(f"injected fault: {name}")
            if self.fail_times.get(name, 0) > 0:
                self.fail_times[name] -= 1
                raise AdapterError(f"injected fault: {name}")


@dataclass
class FakeWorld:
    faults: Faults = field(default_factory=Faults)
    containers: dict[str, ContainerInfo] = field(default_factory=dict)
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)
    clusters: set[str] = field(default_factory=set)
    kubes: dict[str, FakeKube] = field(default_factory=dict)  # "management" or tenant name
    images: set[str] = field(default_factory=set)
    network_present: bool = True
    node_images: dict[str, set[str]] = field(default_factory=dict)  # what each node's ctr has
    host_images: set[str] = field(default_factory=set)  # what `docker pull` brought
    saved: list[tuple[str, str | None]] = field(default_factory=list)  # save_image(image, platform)
    imports: list[tuple[str, list[str]]] = field(default_factory=list)  # (node, ctr argv)
    import_fails: set[str] = field(default_factory=set)  # images whose `ctr import` exits 1
    node_pull_fails: set[str] = field(default_factory=set)  # images `crictl pull` cannot get
    # `containerd config dump` in the nodes: containerd v2.3.4's own output (tests/upstream.py);
    # None: the command fails
    containerd_config: str | None = field(default_factory=containerd_full_config)
    architecture: str = "x86_64"  # what `docker info` says
    machine_ids: dict[str, str] = field(default_factory=dict)  # container -> /etc/machine-id
    copied: list[tuple[str, str, int]] = field(default_factory=list)  # copy_in (node, path, mode)
    exec_log: list[tuple[str, list[str]]] = field(default_factory=list)  # (container, argv)
    runs: list[Any] = field(default_factory=list)  # every ContainerSpec run_node started
    join_fails_midway: set[str] = field(default_factory=set)  # nodes whose next join breaks
    never_ready: set[str] = field(default_factory=set)  # containers whose systemd never starts
    privileged_refused: str = ""  # the engine's reason when it refuses --privileged
    probed: list[base.ContainerSpec] = field(default_factory=list)  # privileged probes' specs
    speaker_never_ready: bool = False  # MetalLB's speaker DaemonSet never becomes ready
    lock: threading.RLock = field(default_factory=threading.RLock)

    def kube(self, cluster: str) -> FakeKube:
        with self.lock:
            if cluster not in self.kubes:
                self.kubes[cluster] = FakeKube(self, cluster)
            return self.kubes[cluster]


class FakeRuntime:
    def __init__(self, world: FakeWorld) -> None:
        self.world = world

    def info(self) -> RuntimeInfo:
        return RuntimeInfo("28.2.2", "1.50", 8, 32 * 1024**3, "Debian",
                           architecture=self.world.architecture)

    def architecture(self) -> str:
        return self.world.architecture

    def image_present(self, image: str) -> bool:
        return image in self.world.host_images or image in self.world.images \
            or not self.world.images

    def pull(self, image: str) -> None:
        self.world.faults.hit(f"docker.pull:{image}")
        self.world.host_images.add(image)

    def save_image(self, image: str, platform: str | None = None) -> bytes:
        self.world.saved.append((image, platform))
        return f"image:{image}".encode()

    def run_node(self, spec: base.ContainerSpec) -> ContainerInfo:
        self.world.faults.hit(f"docker.run:{spec.name}")
        info = ContainerInfo(spec.name, spec.name, spec.image, "running", dict(spec.labels),
                             {spec.network: f"172.18.0.{10 + len(self.world.containers)}"})
        with self.world.lock:
            self.world.containers[spec.name] = info
            # kindest/node's entrypoint makes a new machine id per container
            self.world.machine_ids[spec.name] = f"machine-{spec.name}-{len(self.world.runs)}"
            self.world.runs.append(spec)
            for key in [k for k in self.world.files if k[0] == spec.name]:
                del self.world.files[key]  # a new container starts from the image
        return info

    def get(self, name: str) -> ContainerInfo | None:
        return self.world.containers.get(name)

    def containers(self, labels: dict[str, str]) -> list[ContainerInfo]:
        return [c for c in self.world.containers.values()
                if all(c.labels.get(k) == v for k, v in labels.items())]

    def exec(self, name: str, argv: list[str], *, stdin: bytes | None = None,
             timeout: float = 600) -> ExecResult:
        verb = argv[3] if argv[0] == "ctr" else (argv[1] if len(argv) > 1 else "")
        self.world.exec_log.append((name, list(argv)))
        self.world.faults.hit(f"docker.exec:{argv[0]}:{verb}")
        container = self.world.containers.get(name)
        if container is None:
            raise AdapterError(f"No such container: {name}")
        tenant = container.labels.get(naming.LABEL_TENANT, "")
        if argv[:3] == ["kubeadm", "token", "create"]:
            return ExecResult(0, "kubeadm join 172.18.255.200:6443 --token abc.def "
                                 "--discovery-token-ca-cert-hash sha256:00\n", "")
        if argv[:2] == ["kubeadm", "join"]:
            files = self.world.files
            if any(k[0] == name and k[1].startswith("/etc/kubernetes/") for k in files):
                return ExecResult(1, "", "[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: "
                                         "/etc/kubernetes/kubelet.conf already exists")
            files[(name, "/etc/kubernetes/pki/ca.crt")] = b"ca"
            if name in self.world.join_fails_midway:
                self.world.join_fails_midway.discard(name)
                files[(name, "/etc/kubernetes/bootstrap-kubelet.conf")] = b"bootstrap"
                return ExecResult(1, "", "error execution phase kubelet-start: timed out "
                                         "waiting for the condition")
            kube = self.world.kube(tenant)
            existing = kube.objects.get(("v1", "Node", "", name))
            if existing is not None and existing["status"]["conditions"][0]["status"] == "True":
                return ExecResult(1, "", f"a Node with name {name!r} and status \"Ready\" "
                                         "already exists in the cluster")
            files[(name, "/etc/kubernetes/kubelet.conf")] = b"kubelet"
            kube.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                      "status": {"conditions": [{"type": "Ready", "status": "False"}],
                                 "nodeInfo": {"machineID": self.world.machine_ids.get(name, "")},
                                 "capacity": {}, "allocatable": {}}})
            return ExecResult(0, "This node has joined the cluster", "")
        if argv == JOIN_STATE:
            present = sorted(k[1] for k in self.world.files
                             if k[0] == name and k[1].startswith("/etc/kubernetes/"))
            return ExecResult(0, "\n".join([self.world.machine_ids.get(name, ""), *present]), "")
        if argv[:3] == ["kubeadm", "reset", "-f"]:
            for key in [k for k in self.world.files
                        if k[0] == name and k[1].startswith("/etc/kubernetes/")]:
                del self.world.files[key]
            return ExecResult(0, "[reset] Deleted contents of the etc directories", "")
        if argv == RESET_LEFTOVERS:
            return ExecResult(0, "", "")
        if argv[:2] == ["rm", "-f"]:
            for path in argv[2:]:
                self.world.files.pop((name, path), None)
            return ExecResult(0, "", "")
        if argv[:4] == ["ctr", "--namespace=k8s.io", "images", "ls"]:
            return ExecResult(0, "\n".join(sorted(self.world.node_images.get(name, set()))), "")
        if argv[:3] == ["containerd", "config", "dump"]:
            if self.world.containerd_config is None:
                return ExecResult(1, "", "containerd: config dump: permission denied")
            return ExecResult(0, self.world.containerd_config, "")
        if argv[:2] == ["crictl", "pull"]:
            self.world.faults.hit(f"crictl.pull:{name}")
            from gpulab.images import normalize

            if argv[2] in self.world.node_pull_fails:
                return ExecResult(1, "", f"pulling image: rpc error: {argv[2]}: not found")
            self.world.node_images.setdefault(name, set()).add(normalize(argv[2]))
            return ExecResult(0, f"Image is up to date for {argv[2]}", "")
        if argv[:4] == ["ctr", "--namespace=k8s.io", "images", "import"]:
            self.world.imports.append((name, argv))
            self.world.faults.hit(f"ctr.import:{name}")
            wanted = (stdin or b"").decode().removeprefix("image:")
            if wanted in self.world.import_fails:
                return ExecResult(1, "", "ctr: content digest sha256:4f2a...: not found")
            from gpulab.images import normalize

            image = (stdin or b"").decode().removeprefix("image:")
            self.world.node_images.setdefault(name, set()).add(normalize(image))
            return ExecResult(0, f"unpacking {image}", "")
        if argv[0] == "modprobe":
            return ExecResult(1, "", "modprobe: FATAL: Module br_netfilter not found")
        return ExecResult(127, "", f"unknown command {argv}")

    def local_images(self, limit: int = 20) -> list[str]:
        return sorted(self.world.host_images)[:limit]

    def probe_privileged(self, spec: base.ContainerSpec) -> str:
        self.world.faults.hit(f"docker.probe:{spec.image}")
        self.world.probed.append(spec)
        return self.world.privileged_refused

    def wait_for_log(self, name: str, pattern: str, timeout: float) -> bool:
        self.world.faults.hit(f"docker.logs:{name}")
        return name in self.world.containers and name not in self.world.never_ready

    def copy_in(self, name: str, path: str, data: bytes, mode: int = 0o600) -> None:
        self.world.files[(name, path)] = data
        self.world.copied.append((name, path, mode))

    def remove(self, name: str) -> bool:
        return self.world.containers.pop(name, None) is not None

    def network(self, name: str) -> NetworkInfo | None:
        if not self.world.network_present or name != "kind":
            return None
        return NetworkInfo("n1", "kind", copy.deepcopy(KIND_IPAM))

    def networks(self, labels: dict[str, str] | None = None) -> list[NetworkInfo]:
        net = self.network("kind")
        return [net] if net and not labels else []

    def remove_network(self, name: str) -> bool:
        return False

    def volumes(self, labels: dict[str, str]) -> list[str]:
        return []

    def remove_volume(self, name: str) -> bool:
        return False


class FakeKind:
    def __init__(self, world: FakeWorld) -> None:
        self.world = world

    def version(self) -> str:
        return "v0.33.0"

    def clusters(self) -> list[str]:
        return sorted(self.world.clusters)

    def create(self, name: str, config: dict[str, Any], *, wait_seconds: int = 120) -> None:
        self.world.faults.hit("kind.create")
        with self.world.lock:
            self.world.clusters.add(name)
            self.world.containers[f"{name}-control-plane"] = ContainerInfo(
                f"{name}-control-plane", f"{name}-control-plane", config["nodes"][0]["image"],
                "running", {"io.x-k8s.kind.cluster": name}, {"kind": "172.18.0.2"})

    def delete(self, name: str) -> None:
        with self.world.lock:
            self.world.clusters.discard(name)
            self.world.containers.pop(f"{name}-control-plane", None)

    def kubeconfig(self, name: str) -> str:
        return f"# kubeconfig of {name}\ncluster: management\n"


_RELEASE_DEPLOYMENTS = {
    "cert-manager": [("cert-manager-webhook", "cert-manager"), ("cert-manager", "cert-manager")],
    "kamaji": [("kamaji", "kamaji-system")],
    "hami": [("hami-scheduler", "kube-system")],
}


def _cluster_of(path: Path) -> str:
    return "management" if path.name == "management.kubeconfig" else path.stem


class FakeHelm:
    def __init__(self, world: FakeWorld, kubeconfig: Path) -> None:
        self.world = world
        self.cluster = _cluster_of(kubeconfig)

    def installed(self, release: base.HelmRelease) -> bool:
        kube = self.world.kube(self.cluster)
        return kube.releases.get(release.name) == (release.version, json.dumps(
            release.values, sort_keys=True))

    def install(self, release: base.HelmRelease, *, timeout_seconds: int = 600) -> None:
        self.world.faults.hit(f"helm.install:{release.name}:{self.cluster}")
        kube = self.world.kube(self.cluster)
        kube.releases[release.name] = (release.version, json.dumps(release.values, sort_keys=True))
        for name, namespace in _RELEASE_DEPLOYMENTS.get(release.name, []):
            kube.put({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": name, "namespace": namespace},
                      "spec": {"replicas": 1}, "status": {"availableReplicas": 1}})
        if release.name == "kamaji":
            kube.put({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                      "metadata": {"name": "tenantcontrolplanes.kamaji.clastix.io"},
                      "status": {"conditions": [{"type": "Established", "status": "True"}]}})
        if release.name == "hami":
            kube.put(hami_scheduler_device_configmap())

    def uninstall(self, name: str, namespace: str) -> None:
        self.world.kube(self.cluster).releases.pop(name, None)

    def template(self, release: base.HelmRelease, *, kube_version: str | None = None,
                 include_crds: bool = False) -> list[dict[str, Any]]:
        self.world.faults.hit(f"helm.template:{release.name}")
        return [{"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": f"example.com/{release.name}:{release.version}"}]}}}}]

    def releases(self) -> list[dict[str, Any]]:
        return [{"name": name, "version": version, "status": "deployed"}
                for name, (version, _values) in self.world.kube(self.cluster).releases.items()]


Key = tuple[str, str, str, str]


class FakeKube:
    """A tiny API server: objects by (apiVersion, kind, namespace, name) plus operator reactions."""

    def __init__(self, world: FakeWorld, cluster: str) -> None:
        self.world = world
        self.cluster = cluster
        self.objects: dict[Key, dict[str, Any]] = {}
        self.releases: dict[str, tuple[str, str]] = {}
        self.secrets: dict[tuple[str, str], dict[str, bytes]] = {}

    @staticmethod
    def key(obj: dict[str, Any]) -> Key:
        meta = obj["metadata"]
        return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])

    def put(self, obj: dict[str, Any]) -> None:
        with self.world.lock:
            self.objects[self.key(obj)] = copy.deepcopy(obj)

    def server_version(self) -> str:
        return "v1.36.4"

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        verb = "kube.dry_run" if dry_run else "kube.apply"
        self.world.faults.hit(f"{verb}:{self.cluster}:{obj['kind']}")
        if dry_run:
            return copy.deepcopy(obj)
        live = copy.deepcopy(obj)
        kind = obj["kind"]
        if kind == "Deployment":
            live.setdefault("status", {})["availableReplicas"] = 1
        if kind == "DaemonSet" and obj["metadata"]["name"] == "speaker" and \
                not self.world.speaker_never_ready:
            live["status"] = {"desiredNumberScheduled": 1, "numberReady": 1}
        if kind == "DaemonSet" and obj["metadata"]["name"] == "kube-proxy":
            nodes = [k for k in self.objects if k[1] == "Node"]
            live["status"] = {"desiredNumberScheduled": len(nodes), "numberReady": len(nodes)}
        if kind == "DaemonSet" and obj["metadata"]["name"] == "calico-node":
            live["status"] = {"desiredNumberScheduled": 1, "numberReady": 1}
            for key, node in list(self.objects.items()):
                if key[1] == "Node":
                    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
                    self.objects[("v1", "Pod", "kube-system", f"calico-node-{key[3]}")] = {
                        "apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"calico-node-{key[3]}", "namespace": "kube-system"},
                        "spec": {"nodeName": key[3]}, "status": {"phase": "Running"}}
        if kind == "TenantControlPlane":
            tenant = obj["metadata"]["name"]
            live["status"] = {"kubernetesResources": {"version": {"status": "Ready"}},
                              "controlPlaneEndpoint": "172.18.255.200:6443"}
            self.secrets[(obj["metadata"]["namespace"], f"{tenant}-admin-kubeconfig")] = {
                "admin.conf": tenant_admin_kubeconfig(tenant).encode()}
        self.put(live)
        return live

    def get(self, api_version: str, kind: str, name: str,
            namespace: str | None = None) -> dict[str, Any] | None:
        self.world.faults.hit(f"kube.get:{self.cluster}:{kind}")
        obj = self.objects.get((api_version, kind, namespace or "", name))
        return copy.deepcopy(obj) if obj else None

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None,
                     label_selector: str | None = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for k, o in self.objects.items()
                if k[0] == api_version and k[1] == kind and (namespace is None or k[2] == namespace)]

    def delete(self, api_version: str, kind: str, name: str,
               namespace: str | None = None) -> bool:
        self.world.faults.hit(f"kube.delete:{self.cluster}:{kind}")
        return self.objects.pop((api_version, kind, namespace or "", name), None) is not None

    def patch_node_status(self, name: str, patch: list[dict[str, Any]]) -> None:
        self.world.faults.hit(f"kube.patch_node_status:{self.cluster}")
        node = self.objects[("v1", "Node", "", name)]
        for op in patch:
            key = op["path"].split("/")[-1].replace("~1", "/")
            node["status"]["capacity"][key] = op["value"]
        self._mock_plugin(node)

    def annotate(self, api_version: str, kind: str, name: str,
                 annotations: dict[str, str | None], namespace: str | None = None, *,
                 resource_version: str | None = None) -> None:
        self.world.faults.hit(f"kube.annotate:{self.cluster}")
        obj = self.objects[(api_version, kind, namespace or "", name)]
        current = obj["metadata"].setdefault("annotations", {})
        for key, value in annotations.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        if kind == "Node":
            self._mock_plugin(obj)

    def _mock_plugin(self, node: dict[str, Any]) -> None:
        """HAMi's mock device plugin: advertise the annotation once capacity gpu > 0."""
        raw = (node["metadata"].get("annotations") or {}).get(render.GPU_REGISTER_ANNOTATION)
        capacity = node["status"]["capacity"]
        if not raw or int(capacity.get("nvidia.com/gpu", "0")) <= 0:
            return
        cards = json.loads(raw)
        node["status"]["allocatable"].update({
            "nvidia.com/gpu": capacity["nvidia.com/gpu"],
            "nvidia.com/gpumem": str(sum(c["devmem"] for c in cards)),
            "nvidia.com/gpucores": str(sum(c["devcore"] for c in cards)),
            "nvidia.com/gpumem-percentage": str(100 * len(cards)),
        })

    def secret_data(self, name: str, namespace: str, key: str) -> bytes | None:
        return self.secrets.get((namespace, name), {}).get(key)

    def pod_logs(self, name: str, namespace: str, *, tail_lines: int = 20,
                 container: str | None = None) -> str:
        self.world.faults.hit(f"kube.pod_logs:{self.cluster}")
        return f"logs of {namespace}/{name}/{container or 'default'}"

    def events(self, namespace: str, involved_name: str | None = None) -> list[dict[str, Any]]:
        return []


def fake_adapters(world: FakeWorld, lab_dir: Path) -> Any:
    from gpulab.adapters.base import LabAdapters

    manifests = {"metallb": METALLB_MANIFEST, "calico": CALICO_MANIFEST}

    def fetch(url: str) -> str:
        world.faults.hit(f"fetch:{'metallb' if 'metallb' in url else 'calico'}")
        return manifests["metallb" if "metallb" in url else "calico"]

    lab_dir.mkdir(parents=True, exist_ok=True)
    return LabAdapters(
        runtime=FakeRuntime(world),
        kind=FakeKind(world),
        kube=lambda path: world.kube(_cluster_of(path)),
        helm=lambda path: FakeHelm(world, path),
        fetch=fetch,
        lab_dir=lab_dir,
    )
