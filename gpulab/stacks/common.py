"""Pieces every stack shares: the adapters bundle, readiness probes, generic steps, and the
rendering helpers for Helm releases."""

from __future__ import annotations

import copy
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from gpulab import naming, pod_security
from gpulab.adapters.base import HelmRelease, LabAdapters
from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError, HostError
from gpulab.node_options import (
    NO_PROXY_SERVICES,
    PROXY_VARIABLES,
    NodeHostOptions,
    docker_config_proxies,
    mounts_dev_mapper,
    node_host_options,
    proxy_env,
    with_host_options,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.profile.base import HelmComponent
    from gpulab.verify.observe import CrossTenantGateway

# The sandbox image kindest/node ships: kind's containerd config sets
# `sandbox_image = "registry.k8s.io/pause:3.10"` (images/base/files/etc/containerd/config.toml:37,
# unchanged through v0.33) and the node-image build replaces kubeadm's pause image by exactly
# that one (pkg/build/nodeimage/buildcontext.go, "replace pause image with our own"). Verify's
# pods run it, so they need no pull on any kind node (kamaji-hami also lists it in the tenant
# workers' preload, which finds it already there).
KIND_SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"
VERIFY_IMAGE = KIND_SANDBOX_IMAGE

__all__ = [
    "NO_PROXY_SERVICES",
    "PROXY_VARIABLES",
    "VERIFY_IMAGE",
    "HelmAddon",
    "LabAdapters",
    "LabNamespaces",
    "NodeHostOptions",
    "PreloadImages",
    "Reused",
    "adapters_of",
    "crd_established",
    "daemonset_ready",
    "deep_merge",
    "deployment_available",
    "docker_config_proxies",
    "helm_release",
    "lab_clients",
    "management_kube",
    "manifest_objects",
    "mounts_dev_mapper",
    "node_host_options",
    "node_ready",
    "proxy_env",
    "with_host_options",
]


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Merge `override` into a copy of `base`; mappings merge, everything else (lists) replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def helm_release(
    component: HelmComponent, values: dict[str, Any] | None = None, cluster: str = "management"
) -> HelmRelease:
    """A release from a profile component; the profile's values win over gpulab's."""
    merged = deep_merge(values or {}, component.values)
    return HelmRelease(
        name=component.release,
        namespace=component.namespace,
        chart=component.chart.name,
        repo=component.chart.repo,
        version=component.chart.version,
        values=merged,
        kubeconfig_of=cluster,
        git_commit=component.chart.commit,
        git_path=component.chart.path or "",
    )


def adapters_of(ctx: StepContext) -> LabAdapters:
    adapters: LabAdapters = ctx.adapters
    return adapters


def management_kube(ctx: StepContext) -> KubeGateway:
    adapters = adapters_of(ctx)
    return adapters.kube(adapters.management_kubeconfig())


def deployment_available(kube: KubeGateway, name: str, namespace: str) -> tuple[bool, str]:
    dep = kube.get("apps/v1", "Deployment", name, namespace)
    if dep is None:
        return False, f"deployment {namespace}/{name} not found"
    status = dep.get("status") or {}
    want = (dep.get("spec") or {}).get("replicas", 1)
    ready = status.get("availableReplicas") or 0
    return ready >= want, f"deployment {namespace}/{name} {ready}/{want} available"


def daemonset_ready(kube: KubeGateway, name: str, namespace: str) -> tuple[bool, str]:
    ds = kube.get("apps/v1", "DaemonSet", name, namespace)
    if ds is None:
        return False, f"daemonset {namespace}/{name} not found"
    status = ds.get("status") or {}
    want = status.get("desiredNumberScheduled") or 0
    ready = status.get("numberReady") or 0
    return want > 0 and ready >= want, f"daemonset {namespace}/{name} {ready}/{want} ready"


def crd_established(kube: KubeGateway, name: str) -> tuple[bool, str]:
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    if crd is None:
        return False, f"CRD {name} not found"
    for cond in (crd.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Established":
            return cond.get("status") == "True", f"CRD {name} Established={cond.get('status')}"
    return False, f"CRD {name} has no Established condition yet"


def manifest_objects(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict) and doc.get("kind")]


def node_ready(node: dict[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


# --------------------------------------------------------------------------- management


@dataclass
class HelmAddon:
    """A management add-on installed with Helm, then checked to be functionally ready."""

    release: HelmRelease
    name: str
    title: str
    requires: tuple[str, ...]
    ready: Callable[[KubeGateway], tuple[bool, str]]
    ready_what: str
    timeout: float = 300

    def describe(self) -> list[Artifact]:
        return [Artifact("helm-release", self.release.name, self.release.to_dict())]

    def satisfied(self, ctx: StepContext) -> bool:
        adapters = adapters_of(ctx)
        helm = adapters.helm(adapters.management_kubeconfig())
        try:
            if not helm.installed(self.release):
                return False
            ok, seen = self.ready(management_kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, seen)
        return ok

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        helm = adapters.helm(adapters.management_kubeconfig())
        ctx.note(f"helm upgrade --install {self.release.name} {self.release.chart} "
                 f"--version {self.release.version} -n {self.release.namespace}")
        ctx.waiting(f"helm to install {self.release.name} and its pods to be ready", self.timeout)
        helm.install(self.release, timeout_seconds=int(self.timeout))  # helm --wait
        kube = management_kube(ctx)
        wait_until(ctx, self.name, self.ready_what, lambda: self.ready(kube), timeout=self.timeout)


CTR_LIST = ["ctr", "--namespace=k8s.io", "images", "ls", "-q"]
CONTAINERD_CONFIG = ["containerd", "config", "dump"]
LEFT_TO_NODE = "left-to-node"  # marker lines: images the node pulls itself


@dataclass
class LabNamespaces:
    """Provider existing: the namespaces the lab's releases go into, created first with the
    lab's labels (Helm's --create-namespace would leave them unlabelled and behind on
    uninstall). `levels`: (namespace, Pod Security level its pods need) for those whose pods
    would not pass `restricted`; each gets `pod-security.kubernetes.io/enforce: <level>`, so
    Pod Security admission admits them whatever the cluster's default is (gpulab.pod_security).
    A namespace of the lab without that label (an older gpulab made it) gets it on the next
    `up`."""

    lab: str
    names: tuple[str, ...]
    name: str = "management/namespaces"
    title: str = "Creating the lab's namespaces"
    requires: tuple[str, ...] = ("management/cluster",)
    levels: tuple[tuple[str, str], ...] = ()

    def objects(self) -> list[dict[str, Any]]:
        levels = dict(self.levels)
        return [{"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": n, "labels": {
                     naming.LABEL_LAB: self.lab, naming.LABEL_MANAGED: "gpulab",
                     **(pod_security.namespace_labels(levels[n]) if n in levels else {})}}}
                for n in self.names]

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"Namespace/{o['metadata']['name']}", o)
                for o in self.objects()]

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        levels = dict(self.levels)
        try:
            for name in self.names:
                live = kube.get("v1", "Namespace", name)
                if live is None:
                    return False
                level = pod_security.enforced((live.get("metadata") or {}).get("labels"))
                if name in levels and (level is None or not pod_security.allows(
                        level, levels[name])):
                    return False
        except AdapterError:
            return False
        return True

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        for obj in self.objects():
            kube.apply(obj)


@dataclass
class Reused:
    """Something the cluster already has and the lab uses as it is: shown by `plan`, never
    changed, never removed by `down`."""

    name: str
    title: str
    what: str
    body: dict[str, Any]
    requires: tuple[str, ...] = ("management/cluster",)

    def describe(self) -> list[Artifact]:
        return [Artifact("reused", self.what, self.body)]

    def satisfied(self, ctx: StepContext) -> bool:
        ctx.observe(self.name, f"{self.what} found: reused as it is")
        return True

    def apply(self, ctx: StepContext) -> None:  # pragma: no cover - always satisfied
        return None


def ctr_import(platform: str, snapshotter: str) -> list[str]:
    """`kind load`'s import into a node (kind pkg/cluster/nodeutils/util.go:80-91 at v0.33:
    `ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter=<detected> -`),
    for the node's platform instead of all: Docker 29's containerd image store saves a whole
    multi-platform index of which only one platform's blobs exist, so `--all-platforms` fails
    with `content digest ... not found` (kind issues 3795, 4224; kind's docs, PR 4247, advise
    `docker save --platform`)."""
    return ["ctr", "--namespace=k8s.io", "images", "import", f"--platform={platform}",
            "--digests", f"--snapshotter={snapshotter}", "-"]


def snapshotter_of(config_dump: str) -> str:
    """The CRI snapshotter in `containerd config dump` output, read as kind reads it
    (kind fed26882 pkg/cluster/nodeutils/util.go:101-127, `parseSnapshotter`): the dump is TOML;
    config version 2 keeps it at `plugins."io.containerd.grpc.v1.cri".containerd.snapshotter`,
    versions 3 and 4 at `plugins."io.containerd.cri.v1.images".snapshotter`. containerd 2.x
    prints version 3 with go-toml v2's literal keys (`[plugins.'io.containerd.cri.v1.images']`,
    `snapshotter = 'overlayfs'`), so the text is parsed as TOML, not matched line by line.

    Raises ValueError, with the reason, when the dump does not say (kind fails there too)."""
    try:
        config = tomllib.loads(config_dump)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"containerd config dump is not TOML ({err})") from None
    version = config.get("version")
    path: tuple[str, ...]
    if version == 2:
        path = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "snapshotter")
    elif version in (3, 4):
        path = ("plugins", "io.containerd.cri.v1.images", "snapshotter")
    else:
        raise ValueError(f"unknown containerd config version {version!r} (kind knows 2, 3 and 4)")
    value: object = config
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, str) or not value:
        raise ValueError(f"containerd config version {version} names no snapshotter at "
                         f"{'.'.join(path)}")
    return value


# --------------------------------------------------------------------------- kind-like nodes

# systemd reached its target (cgroup v2) or the entrypoint said cgroup v1: `docker exec` is safe
# from then on (kind pkg/cluster/internal/providers/common/cgroups.go, NodeReachedCgroupsReady).
NODE_READY_LOG = r"Reached target .*Multi-User System.*|detected cgroup v1"
NODE_READY_TIMEOUT = 30.0  # kind's, provision.go createContainerWithWaitUntilSystemd...
# The host-dependent node options (NodeHostOptions, node_host_options, with_host_options,
# proxy_env, ...) live in gpulab.node_options, which doctor's privileged probe uses too; this
# module imports them and names them in __all__, where the stacks have always found them.


@dataclass
class PreloadImages:
    """Pull images once on the host and load them into nodes that lack them (`kind load`).

    A second lab on the same host reuses the host's copies instead of pulling again. Pulling is
    best effort: an image the host cannot pull, or that cannot be imported into a node (an image
    store the node's containerd cannot read), is noted and pulled by the node itself instead.
    """

    name: str
    title: str
    requires: tuple[str, ...]
    nodes: list[str]
    sources: Callable[[StepContext], list[str]]
    described: list[str]
    cluster: str = "management"
    _resolved: list[str] | None = None

    def describe(self) -> list[Artifact]:
        return [Artifact("images", f"preload into {', '.join(self.nodes)}",
                         {"nodes": self.nodes, "from": self.described,
                          "how": "docker pull once on the host; docker save --platform | ctr "
                                 "images import --platform into nodes that lack them; an image "
                                 "that cannot be imported is pulled inside the node"},
                         cluster=self.cluster)]

    def images(self, ctx: StepContext) -> list[str]:
        if self._resolved is None:
            self._resolved = self.sources(ctx)
        return self._resolved

    def _missing(self, ctx: StepContext, node: str) -> list[str]:
        from gpulab.images import parse_ctr_listing, present_in

        listing = adapters_of(ctx).runtime.exec(node, CTR_LIST, timeout=60)
        if not listing.ok:
            raise AdapterError(f"cannot list images in node {node}: {listing.stderr.strip()}")
        have = parse_ctr_listing(listing.stdout)
        return [image for image in self.images(ctx) if not present_in(image, have)]

    def _marker(self, ctx: StepContext) -> Path:
        return adapters_of(ctx).lab_dir / "preloaded" / self.name.replace("/", "_")

    def _left_to_nodes(self, ctx: StepContext) -> set[tuple[str, str]]:
        try:
            lines = self._marker(ctx).read_text(encoding="utf-8").splitlines()
        except OSError:
            return set()
        return {(parts[1], parts[2]) for parts in (line.split() for line in lines)
                if len(parts) == 3 and parts[0] == LEFT_TO_NODE}

    def satisfied(self, ctx: StepContext) -> bool:
        """Every image is in every node, or was tried once and left to the node (the host could
        not get it, or the node could not import it); re-running `up` does not try again."""
        try:
            missing = {(node, image) for node in self.nodes for image in self._missing(ctx, node)}
        except AdapterError:
            return False
        if not missing:
            return True
        if not self._marker(ctx).exists():
            return False
        missing -= self._left_to_nodes(ctx)
        runtime = adapters_of(ctx).runtime
        return not any(runtime.image_present(image) for _, image in missing)

    def _snapshotter(self, ctx: StepContext, node: str) -> str | None:
        """The node's CRI snapshotter, or None (noted, with why) when it cannot be read: an
        import into a guessed snapshotter would be invisible to the kubelet, so the caller has
        the node pull instead (its containerd always uses its own snapshotter)."""
        dump = adapters_of(ctx).runtime.exec(node, CONTAINERD_CONFIG, timeout=60)
        if not dump.ok:
            why = (dump.stderr or dump.stdout).strip()[-200:] or f"exit {dump.exit_code}"
            ctx.note(f"containerd snapshotter of {node} unknown (`containerd config dump`: "
                     f"{why}); images are pulled inside the node")
            return None
        try:
            return snapshotter_of(dump.stdout)
        except ValueError as err:
            ctx.note(f"containerd snapshotter of {node} unknown ({err}); images are pulled "
                     f"inside the node")
            return None

    def _load(self, ctx: StepContext, node: str, image: str, platform: str,
              snapshotter: str) -> str:
        """Import `image` into `node`; '' when done, else why not (the caller falls back)."""
        runtime = adapters_of(ctx).runtime
        try:
            archive = runtime.save_image(image, platform=platform)
        except AdapterError as err:
            return str(err)
        result = runtime.exec(node, ctr_import(platform, snapshotter), stdin=archive,
                              timeout=900)
        return "" if result.ok else (result.stderr or result.stdout).strip()[-300:]

    def _pull_in_node(self, ctx: StepContext, node: str, image: str) -> bool:
        """The fallback: the node's containerd pulls the image itself (as the kubelet would)."""
        result = adapters_of(ctx).runtime.exec(node, ["crictl", "pull", image], timeout=900)
        if not result.ok:
            ctx.note(f"{image}: left for the kubelet of {node} to pull "
                     f"({(result.stderr or result.stdout).strip()[-200:]})")
        return result.ok

    def apply(self, ctx: StepContext) -> None:
        runtime = adapters_of(ctx).runtime
        platform = runtime.info().platform
        on_host: dict[str, bool] = {}
        left: list[tuple[str, str]] = []
        for node in self.nodes:
            missing = self._missing(ctx, node)
            snapshotter = self._snapshotter(ctx, node) if missing else None
            for image in missing:
                if snapshotter is None:
                    if not self._pull_in_node(ctx, node, image):
                        left.append((node, image))
                    continue
                if image not in on_host:
                    on_host[image] = runtime.image_present(image)
                    if not on_host[image]:
                        try:
                            ctx.note(f"docker pull {image}")
                            runtime.pull(image)
                            on_host[image] = True
                        except AdapterError as err:
                            ctx.note(f"left for the node to pull: {err}")
                if not on_host[image]:
                    continue
                ctx.note(f"loading {image} into {node} ({platform}, {snapshotter})")
                problem = self._load(ctx, node, image, platform, snapshotter)
                if problem:
                    ctx.note(f"could not load {image} into {node} ({problem}); pulling it "
                             f"inside the node instead")
                    if not self._pull_in_node(ctx, node, image):
                        left.append((node, image))
        marker = self._marker(ctx)
        marker.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        marker.write_text("".join(f"{image}\n" for image in self.images(ctx))
                          + "".join(f"{LEFT_TO_NODE} {node} {image}\n" for node, image in left),
                          encoding="utf-8")


@contextmanager
def lab_clients(
    lab: str, folder: Path, members: list[str]
) -> Iterator[tuple[KubeGateway, Callable[[str], KubeGateway], CrossTenantGateway]]:
    """Clients for `verify` from the lab's saved kubeconfigs: the management cluster's, one per
    member (tenant or team) on demand, and the cross-member credential probe; all closed after.
    """
    from gpulab.adapters.kube import KubeClient
    from gpulab.verify.observe import kubeconfig_cross_gateway

    management = folder / "management.kubeconfig"
    paths = [management, *(folder / f"{member}.kubeconfig" for member in members)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise HostError(f"lab '{lab}' is not up: no {', '.join(missing)} in {folder}",
                        hint=f"run gpulab up --name {lab} first")

    def kubeconfig_of(member: str) -> Path:
        return folder / f"{member}.kubeconfig"

    clients: list[KubeClient] = []

    def client(path: Path) -> KubeGateway:
        made = KubeClient(path)
        clients.append(made)
        return made

    try:
        yield (client(management), lambda member: client(kubeconfig_of(member)),
               kubeconfig_cross_gateway(kubeconfig_of, client, scratch=folder / "verify"))
    finally:
        for made in clients:
            made.close()
