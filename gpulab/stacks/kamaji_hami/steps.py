"""The kamaji-hami lab as a plan of steps.

Order (one place decides it): management cluster → cert-manager → MetalLB → Kamaji, then per
tenant, concurrently: control plane → workers → join → Calico → HAMi → mock GPUs.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError, GpulabError, HostError
from gpulab.paths import write_secret
from gpulab.stacks import common
from gpulab.stacks.common import (
    NODE_READY_LOG,
    NODE_READY_TIMEOUT,
    HelmAddon,
    LabAdapters,
    LabNamespaces,
    NodeHostOptions,
    PreloadImages,
    Reused,
    adapters_of,
    crd_established,
    daemonset_ready,
    deployment_available,
    management_kube,
    manifest_objects,
    node_host_options,
    node_ready,
    with_host_options,
)
from gpulab.stacks.kamaji_hami import existing, render

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from gpulab.adapters import base
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import Step, StepContext
    from gpulab.netcalc import AddressRange
    from gpulab.providers.base import AddressRanges, ClusterFacts, ExistingNeeds
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec

__all__ = [
    "LabAdapters",
    "build_steps",
    "existing_needs",
    "existing_problems",
    "join_commands",
    "verify_previews",
]

# kubeadm preflight checks a kindest/node container cannot pass, and only those:
#  SystemVerification: the kernel config is not readable inside a container;
#  FileContent--proc-sys-net-bridge-bridge-nf-call-iptables: /proc/sys is the host's, read-only,
#    and the file exists only where the host loaded br_netfilter (Calico does not need it).
# Swap is not ignored: the tenant's kubelet config keeps failSwapOn, so kubeadm's message is the
# clearest place to fail (doctor warns about swap before `up`).
IGNORED_PREFLIGHT = (
    "SystemVerification",
    "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
)
WORKER_KUBECONFIG = "/etc/gpulab/admin.conf"


def _cert_manager_ready(kube: KubeGateway) -> tuple[bool, str]:
    """The webhook answers: a dry-run Issuer is admitted (pods Ready is not enough)."""
    ok, seen = deployment_available(kube, "cert-manager-webhook", "cert-manager")
    if not ok:
        return ok, seen
    issuer = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": "gpulab-webhook-probe", "namespace": "cert-manager"},
        "spec": {"selfSigned": {}},
    }
    kube.apply(issuer, dry_run=True)
    return True, "cert-manager webhook admitted a dry-run Issuer"


def _kamaji_ready(kube: KubeGateway) -> tuple[bool, str]:
    ok, seen = crd_established(kube, "tenantcontrolplanes.kamaji.clastix.io")
    if not ok:
        return ok, seen
    for dep in kube.list_objects("apps/v1", "Deployment", "kamaji-system"):
        name = dep["metadata"]["name"]
        ok, seen = deployment_available(kube, name, "kamaji-system")
        if not ok:
            return ok, seen
    return True, "Kamaji CRDs served and controller available"


@dataclass
class MetalLB:
    """MetalLB (native L2 manifest) and an IPv4 pool: the LoadBalancer addresses the cluster's
    provider gives for `cluster_needs`' AddressNeed (kind: from its Docker network)."""

    profile: KamajiHamiProfile
    addresses: AddressRanges
    name: str = "management/metallb"
    title: str = "Installing MetalLB with the kind network's IPv4 pool"
    requires: tuple[str, ...] = ("management/images",)
    timeout: float = 240

    def describe(self) -> list[Artifact]:
        metallb = self.profile.components.metallb
        pool = self.addresses.planned()
        pending = self.addresses.pending
        pool_note = str(pool) if pool else (f"pending ({pending})" if pending else "pending")
        arts = [
            Artifact(
                "manifest",
                f"metallb-{metallb.version}",
                {"url": metallb.url, "apply": "server-side", "pool": pool_note},
            )
        ]
        for obj in render.metallb_objects(self.profile, pool):
            arts.append(Artifact("object", f"{obj['kind']}/{obj['metadata']['name']}", obj))
        return arts

    def _pool(self, ctx: StepContext) -> AddressRange:
        return self.addresses.resolve(adapters_of(ctx))

    @staticmethod
    def _running(kube: KubeGateway) -> tuple[bool, str]:
        """Both halves of MetalLB (v0.16.1 metallb-native.yaml): the `controller` Deployment
        assigns addresses, the `speaker` DaemonSet (hostNetwork) announces them over L2; a
        LoadBalancer IP is unreachable until the speaker runs."""
        ok, seen = deployment_available(kube, "controller", "metallb-system")
        if not ok:
            return ok, seen
        return daemonset_ready(kube, "speaker", "metallb-system")

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        try:
            pool = self._pool(ctx)
            ok, _ = self._running(kube)
            live = kube.get(
                "metallb.io/v1beta1", "IPAddressPool",
                self.profile.components.metallb.pool_name, "metallb-system",
            )
        except AdapterError:
            return False
        return ok and live is not None and (live.get("spec") or {}).get("addresses") == [str(pool)]

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        kube = management_kube(ctx)
        pool = self._pool(ctx)
        ctx.note(f"MetalLB pool {pool} (IPv4 subnet {pool.subnet})")
        for obj in manifest_objects(adapters.fetch(self.profile.components.metallb.url)):
            kube.apply(obj)
        wait_until(ctx, self.name, "MetalLB controller and speaker",
                   lambda: self._running(kube), timeout=self.timeout)
        objects = render.metallb_objects(self.profile, pool)

        def apply_pool() -> tuple[bool, str]:
            # The pool webhook refuses connections for a while after the pod is Ready.
            for obj in objects:
                kube.apply(obj)
            return True, f"pool {pool} accepted"

        wait_until(ctx, self.name, "MetalLB to accept the address pool", apply_pool,
                   timeout=self.timeout, interval=3)
        self.addresses.keep(pool)  # kind: the next lab on this host steps below it


# --------------------------------------------------------------------------- per tenant


@dataclass
class TenantControlPlane:
    profile: KamajiHamiProfile
    tenant: TenantSpec
    timeout: float = 600

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/control-plane"

    @property
    def title(self) -> str:
        return f"Creating control plane of {self.tenant.name} (Kamaji)"

    @property
    def requires(self) -> tuple[str, ...]:
        return ("management/kamaji", "management/metallb")

    @property
    def namespace(self) -> str:
        return self.profile.components.kamaji.tenant_namespace

    def describe(self) -> list[Artifact]:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        tcp = render.tenant_control_plane(self.profile, self.tenant)
        return [
            Artifact("object", f"Namespace/{self.namespace}", ns),
            Artifact("object", f"TenantControlPlane/{self.tenant.name}", tcp),
            Artifact("file", f"{self.tenant.name}.kubeconfig",
                     {"from": f"secret {self.namespace}/{self.tenant.name}-admin-kubeconfig "
                      "key admin.conf", "mode": "0600"}),
        ]

    def _ready(self, kube: KubeGateway) -> tuple[bool, str]:
        tcp = kube.get("kamaji.clastix.io/v1alpha1", "TenantControlPlane",
                       self.tenant.name, self.namespace)
        if tcp is None:
            return False, "TenantControlPlane not found"
        status = tcp.get("status") or {}
        version = ((status.get("kubernetesResources") or {}).get("version") or {})
        state = version.get("status", "Unknown")
        endpoint = status.get("controlPlaneEndpoint", "")
        return state == "Ready", f"status {state}" + (f", endpoint {endpoint}" if endpoint else "")

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        ok, seen = self._ready(kube)
        ctx.observe(self.name, seen)
        if not ok:
            return False
        self._save_kubeconfig(ctx, kube)
        return True

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        objects = [art.body for art in self.describe() if art.kind == "object"]

        def submit() -> tuple[bool, str]:
            # Kamaji's validating webhook may refuse connections for a moment after its pod is
            # Ready (its certificate comes from cert-manager): retried like MetalLB's pool.
            for obj in objects:
                kube.apply(obj)
            return True, "TenantControlPlane accepted"

        wait_until(ctx, self.name, "Kamaji to accept the TenantControlPlane", submit,
                   timeout=120, interval=3)
        wait_until(ctx, self.name, f"TenantControlPlane {self.tenant.name} Ready",
                   lambda: self._ready(kube), timeout=self.timeout, interval=5)
        self._save_kubeconfig(ctx, kube)

    def _save_kubeconfig(self, ctx: StepContext, kube: KubeGateway) -> None:
        secret = f"{self.tenant.name}-admin-kubeconfig"
        data = kube.secret_data(secret, self.namespace, "admin.conf")
        if not data:
            raise AdapterError(f"secret {self.namespace}/{secret} has no admin.conf yet")
        path = write_secret(adapters_of(ctx).tenant_kubeconfig(self.tenant.name), data)
        ctx.note(f"kubeconfig saved to {path} (mode 0600)")


@dataclass
class TenantWorkers:
    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/workers"

    @property
    def title(self) -> str:
        return f"Starting worker containers of {self.tenant.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        return ("management/cluster",)

    def specs(self) -> list[base.ContainerSpec]:
        return [render.worker_container(self.profile, self.lab, self.tenant, i)
                for i in range(self.tenant.workers.count)]

    def describe(self) -> list[Artifact]:
        return [Artifact("container", s.name, s.to_dict()) for s in self.specs()]

    def satisfied(self, ctx: StepContext) -> bool:
        runtime = adapters_of(ctx).runtime
        for spec in self.specs():
            info = runtime.get(spec.name)
            if info is None or not info.running:
                return False
        return True

    def apply(self, ctx: StepContext) -> None:
        runtime = adapters_of(ctx).runtime
        for spec in self.specs():
            info = runtime.get(spec.name)
            if info is not None and info.running:
                continue
            if info is not None:  # stopped or half-created: kind nodes cannot be restarted
                runtime.remove(spec.name)
            if not runtime.image_present(spec.image):
                ctx.note(f"docker pull {spec.image}")
                try:
                    runtime.pull(spec.image)
                except AdapterError as err:
                    raise HostError(f"cannot pull worker image {spec.image}: {err}",
                                    hint="check the internet connection, or docker pull it "
                                         "yourself and re-run gpulab up") from None
            node = with_host_options(spec, self._host_options(ctx))
            ctx.note(f"docker run {node.name} ({node.image})")
            runtime.run_node(node)
            # As kind does before its first exec: wait for systemd (cgroup v2) or the entrypoint's
            # cgroup v1 line; a node that never gets there is removed so a re-run starts afresh.
            if not runtime.wait_for_log(node.name, NODE_READY_LOG, NODE_READY_TIMEOUT):
                runtime.remove(node.name)
                raise AdapterError(
                    f"worker {node.name} did not reach systemd's multi-user target within "
                    f"{NODE_READY_TIMEOUT:.0f}s (removed it)",
                    hint="docker logs of a kindest/node show why; see gpulab doctor (privileged "
                         "containers, cgroups), then re-run gpulab up")

    def _host_options(self, ctx: StepContext) -> NodeHostOptions:
        """kind's host-dependent options: /dev/mapper, --userns=host, /dev/fuse, proxies (with
        NO_PROXY covering the tenant's CIDRs, the kind network and the workers)."""
        import os

        from gpulab.netcalc import ipv4_subnets

        runtime = adapters_of(ctx).runtime
        network = runtime.network(self.profile.management.network)
        subnets = [str(s) for s in ipv4_subnets(network.ipam_config if network else [])]
        no_proxy = [self.tenant.pod_cidr, self.tenant.service_cidr, *subnets,
                    *(s.name for s in self.specs())]
        return node_host_options(runtime.info(), os.environ, no_proxy)


# One exec tells a worker's join state: its machine id (kindest/node makes a new one per
# container, so a recreated container is a new machine), then which of kubeadm's join outputs
# exist: kubelet.conf (joined), bootstrap-kubelet.conf / pki/ca.crt (a join began).
JOIN_STATE = ["sh", "-c", "cat /etc/machine-id 2>/dev/null || echo; for f in "
              "/etc/kubernetes/kubelet.conf /etc/kubernetes/bootstrap-kubelet.conf "
              "/etc/kubernetes/pki/ca.crt; do [ -e \"$f\" ] && echo \"$f\"; done; true"]
KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
# What `kubeadm reset -f` leaves behind that a new join trips over (its own closing message
# names the CNI config; kind's nodes keep CNI state in /var/lib/cni).
RESET_LEFTOVERS = ["sh", "-c", "rm -rf /etc/cni/net.d/* /var/lib/cni"]


@dataclass(frozen=True)
class WorkerJoinState:
    """What a worker container says about its join (JOIN_STATE's output)."""

    machine_id: str
    files: frozenset[str]

    @classmethod
    def parse(cls, stdout: str) -> WorkerJoinState:
        lines = stdout.splitlines()
        return cls(lines[0].strip() if lines else "",
                   frozenset(line.strip() for line in lines[1:] if line.strip()))

    @property
    def joined(self) -> bool:
        return KUBELET_CONF in self.files

    @property
    def begun(self) -> bool:
        return bool(self.files)


@dataclass
class JoinWorkers:
    """`kubeadm join` each worker; converges whatever state a failed earlier run left.

    A worker counts as joined when its Node is registered, the container has the kubelet's
    kubeconfig, and the Node's machine id is this container's (a recreated container is a new
    machine, so an old Node object of the same name is stale: it is deleted before joining,
    because kubeadm refuses to join a name whose Node is Ready). A worker with a half-done join
    is `kubeadm reset -f` first. The tenant's admin kubeconfig, copied in to create the join
    token, is removed from the worker again whatever happens.
    """

    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 300

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/join"

    @property
    def title(self) -> str:
        return f"Joining workers to {self.tenant.name} (kubeadm)"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/control-plane", f"{self.tenant.name}/workers")

    def nodes(self) -> list[str]:
        return [render.worker_name(self.lab, self.tenant.name, i)
                for i in range(self.tenant.workers.count)]

    def describe(self) -> list[Artifact]:
        ignored = ",".join(IGNORED_PREFLIGHT)
        return [
            Artifact("command", f"join {node}", {
                "container": node,
                "steps": [
                    "if a join began and did not finish: kubeadm reset -f, remove CNI leftovers",
                    "if the Node exists for another container of this name: delete the Node",
                    f"copy {self.tenant.name}.kubeconfig to {WORKER_KUBECONFIG} (0600)",
                    "modprobe br_netfilter (best effort)",
                    f"kubeadm token create --print-join-command --kubeconfig {WORKER_KUBECONFIG}",
                    f"<join command> --ignore-preflight-errors={ignored}",
                    f"remove {WORKER_KUBECONFIG}",
                ],
            }, cluster=self.tenant.name)
            for node in self.nodes()
        ]

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _registered(self, kube: KubeGateway) -> dict[str, dict[str, Any]]:
        return {n["metadata"]["name"]: n for n in kube.list_objects("v1", "Node")}

    def _state(self, ctx: StepContext, node: str) -> WorkerJoinState:
        result = adapters_of(ctx).runtime.exec(node, JOIN_STATE, timeout=60)
        if not result.ok:
            raise AdapterError(f"cannot read the join state of {node}: {result.stderr.strip()}")
        return WorkerJoinState.parse(result.stdout)

    @staticmethod
    def _same_machine(node: dict[str, Any] | None, state: WorkerJoinState) -> bool:
        machine = ((node or {}).get("status") or {}).get("nodeInfo", {}).get("machineID", "")
        return not machine or not state.machine_id or machine == state.machine_id

    def _joined(self, node: dict[str, Any] | None, state: WorkerJoinState) -> bool:
        return node is not None and state.joined and self._same_machine(node, state)

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            registered = self._registered(self._tenant(ctx))
            return all(self._joined(registered.get(n), self._state(ctx, n)) for n in self.nodes())
        except AdapterError:
            return False

    def _prepare(self, ctx: StepContext, kube: KubeGateway, node: str,
                 registered: dict[str, dict[str, Any]], state: WorkerJoinState) -> None:
        """Clear what an earlier, failed run left: a half-done join, a stale Node object."""
        runtime = adapters_of(ctx).runtime
        if state.begun:
            ctx.note(f"{node}: an earlier join did not finish; kubeadm reset -f")
            reset = runtime.exec(node, ["kubeadm", "reset", "-f"], timeout=180)
            if not reset.ok:
                raise AdapterError(f"kubeadm reset failed on {node}",
                                   output=(reset.stderr or reset.stdout).strip()[-2000:])
            runtime.exec(node, RESET_LEFTOVERS, timeout=60)
        if node in registered:
            ctx.note(f"{node}: deleting the Node object left by an earlier container")
            kube.delete("v1", "Node", node)

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        kube = self._tenant(ctx)
        registered = self._registered(kube)
        kubeconfig = adapters.tenant_kubeconfig(self.tenant.name).read_bytes()
        for node in self.nodes():
            state = self._state(ctx, node)
            if self._joined(registered.get(node), state):
                continue
            self._prepare(ctx, kube, node, registered, state)
            adapters.runtime.copy_in(node, WORKER_KUBECONFIG, kubeconfig, mode=0o600)
            try:
                self._join(ctx, node)
            finally:
                adapters.runtime.exec(node, ["rm", "-f", WORKER_KUBECONFIG], timeout=60)
        wait_until(ctx, self.name, f"nodes {', '.join(self.nodes())} registered",
                   lambda: self._seen(kube), timeout=self.timeout, interval=3)

    def _join(self, ctx: StepContext, node: str) -> None:
        runtime = adapters_of(ctx).runtime
        # As Kamaji's own worker e2e does; best effort (the module may be built in).
        modprobe = runtime.exec(node, ["modprobe", "br_netfilter"], timeout=30)
        if not modprobe.ok:
            ctx.note(f"modprobe br_netfilter on {node}: {modprobe.stderr.strip()}")
        token = runtime.exec(node, ["kubeadm", "token", "create", "--print-join-command",
                                    "--kubeconfig", WORKER_KUBECONFIG], timeout=120)
        if not token.ok or "kubeadm join" not in token.stdout:
            raise AdapterError(f"could not create a join token on {node}",
                               output=(token.stderr or token.stdout).strip()[-2000:])
        argv = [*shlex.split(token.stdout.strip()),
                f"--ignore-preflight-errors={','.join(IGNORED_PREFLIGHT)}"]
        ctx.note(f"kubeadm join on {node}")
        result = runtime.exec(node, argv, timeout=self.timeout)
        if not result.ok:
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            raise AdapterError(f"kubeadm join failed on {node}: {' | '.join(tail)}",
                               hint="re-run gpulab up (the worker is reset first); gpulab logs "
                                    "collects the worker's kubelet journal",
                               output=result.stderr)

    def _seen(self, kube: KubeGateway) -> tuple[bool, str]:
        registered = self._registered(kube)
        missing = sorted(set(self.nodes()) - set(registered))
        return not missing, f"missing {', '.join(missing)}" if missing else "all registered"


@dataclass
class KubeProxy:
    """kube-proxy in the tenant with kind's settings (render.kube_proxy_objects), in place of
    Kamaji's addon, which cannot take them and would revert an edit."""

    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 240

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/kube-proxy"

    @property
    def title(self) -> str:
        return f"Running kube-proxy in {self.tenant.name} (kind's settings)"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/join", f"{self.tenant.name}/images")

    def describe(self) -> list[Artifact]:
        server = f"<{self.tenant.name}'s API server, from its admin kubeconfig>"
        return [Artifact(obj["kind"], obj["metadata"]["name"], obj, cluster=self.tenant.name)
                for obj in render.kube_proxy_objects(self.tenant, server)]

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _ready(self, kube: KubeGateway) -> tuple[bool, str]:
        ok, seen = daemonset_ready(kube, render.KUBE_PROXY, "kube-system")
        if not ok:
            return ok, seen
        config = kube.get("v1", "ConfigMap", render.KUBE_PROXY, "kube-system") or {}
        text = (config.get("data") or {}).get("config.conf", "")
        settings = yaml.safe_load(text) if text else {}
        if ((settings or {}).get("conntrack") or {}).get("maxPerCore") != 0:
            return False, "kube-proxy's ConfigMap is not gpulab's (conntrack.maxPerCore != 0)"
        return True, seen

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            return self._ready(self._tenant(ctx))[0]
        except AdapterError:
            return False

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        kube = self._tenant(ctx)
        server = tenant_server(adapters.tenant_kubeconfig(self.tenant.name))
        rootless = adapters.runtime.info().rootless
        for obj in render.kube_proxy_objects(self.tenant, server, rootless=rootless):
            kube.apply(obj)
        wait_until(ctx, self.name, "kube-proxy running on every worker",
                   lambda: self._ready(kube), timeout=self.timeout, interval=3)


def tenant_server(kubeconfig: Path) -> str:
    """The API server URL in a tenant's admin kubeconfig (its current context's cluster)."""
    try:
        config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise AdapterError(f"cannot read {kubeconfig}: {err}") from None
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or []}
    cluster = (contexts.get(config.get("current-context")) or {}).get("cluster")
    for entry in config.get("clusters") or []:
        if entry.get("name") == cluster or cluster is None:
            server = (entry.get("cluster") or {}).get("server")
            if server:
                return str(server)
    raise AdapterError(f"{kubeconfig} names no API server")


@dataclass
class Calico:
    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 420

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/calico"

    @property
    def title(self) -> str:
        return f"Installing Calico in {self.tenant.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/kube-proxy", f"{self.tenant.name}/images")

    def describe(self) -> list[Artifact]:
        calico = self.profile.components.calico
        return [Artifact("manifest", f"calico-{calico.version}", {
            "url": calico.url,
            "apply": "server-side",
            "set_env": {"daemonset/calico-node": render.calico_pool_env(self.tenant)},
        }, cluster=self.tenant.name)]

    def objects(self, text: str) -> list[dict[str, Any]]:
        """The upstream manifest with calico-node's IPv4 pool set to the tenant's pod CIDR."""
        objects = manifest_objects(text)
        env = render.calico_pool_env(self.tenant)
        for obj in objects:
            if obj.get("kind") == "DaemonSet" and obj["metadata"]["name"] == "calico-node":
                for container in obj["spec"]["template"]["spec"]["containers"]:
                    if container.get("name") == "calico-node":
                        entries = [e for e in container.get("env", []) if e.get("name") not in env]
                        entries += [{"name": k, "value": v} for k, v in env.items()]
                        container["env"] = entries
        return objects

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _nodes_ready(self, kube: KubeGateway) -> tuple[bool, str]:
        nodes = kube.list_objects("v1", "Node")
        not_ready = [n["metadata"]["name"] for n in nodes if not node_ready(n)]
        ok, seen = daemonset_ready(kube, "calico-node", "kube-system")
        if not ok:
            return ok, seen
        if not nodes or not_ready:
            return False, f"not Ready: {', '.join(not_ready)}" if not_ready else "no nodes yet"
        return self._tunnel(kube, [n["metadata"]["name"] for n in nodes])

    @staticmethod
    def _tunnel(kube: KubeGateway, nodes: list[str]) -> tuple[bool, str]:
        """Konnectivity works: the tenant API reads a pod's logs on every worker (a kubelet call
        the hosted API server can only make through the tunnel)."""
        pods = kube.list_objects("v1", "Pod", "kube-system")
        for node in nodes:
            on_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node
                       and p["metadata"]["name"].startswith("calico-node")]
            if not on_node:
                return False, f"no calico-node pod on {node} yet"
            pod = on_node[0]["metadata"]["name"]
            try:
                kube.pod_logs(pod, "kube-system", tail_lines=1)
            except AdapterError as err:
                return False, f"logs of kube-system/{pod} on {node} not readable: {err}"
        return True, f"{len(nodes)} node(s) Ready; logs readable through Konnectivity"

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            ok, _ = self._nodes_ready(self._tenant(ctx))
        except AdapterError:
            return False
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = self._tenant(ctx)
        text = adapters_of(ctx).fetch(self.profile.components.calico.url)
        for obj in self.objects(text):
            kube.apply(obj)
        wait_until(ctx, self.name, "calico-node ready, nodes Ready and the tunnel up",
                   lambda: self._nodes_ready(kube), timeout=self.timeout, interval=5)


@dataclass
class Hami:
    profile: KamajiHamiProfile
    tenant: TenantSpec
    timeout: float = 420

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/hami"

    @property
    def title(self) -> str:
        return f"Installing HAMi with the mock device plugin in {self.tenant.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/calico",)

    @property
    def release(self) -> base.HelmRelease:
        return render.hami_release(self.profile, self.tenant)

    def describe(self) -> list[Artifact]:
        rbac = [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.tenant.name)
                for o in render.hami_mock_rbac(self.release)]
        copied = (f"<the {', '.join(render.MOCK_READS)} sections of ConfigMap "
                  f"{self.release.namespace}/{render.SCHEDULER_DEVICE_CONFIG}, copied after the "
                  f"chart installs>")
        mock = [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.tenant.name)
                for o in render.hami_mock_plugin(self.profile, self.release, copied)]
        return [*rbac, Artifact("helm-release", self.release.name, self.release.to_dict(),
                                cluster=self.tenant.name), *mock]

    def _ready(self, kube: KubeGateway) -> tuple[bool, str]:
        ok, seen = deployment_available(kube, "hami-scheduler", self.release.namespace)
        if not ok:
            return ok, seen
        if kube.get("v1", "ConfigMap", render.SCHEDULER_DEVICE_CONFIG,
                    self.release.namespace) is None:
            return False, f"ConfigMap {render.SCHEDULER_DEVICE_CONFIG} not created yet"
        return True, "hami-scheduler available"

    def _mock_present(self, kube: KubeGateway) -> bool:
        namespace = self.release.namespace
        return (kube.get("v1", "ConfigMap", render.MOCK_DEVICE_CONFIG, namespace) is not None
                and kube.get("apps/v1", "DaemonSet", render.MOCK_PLUGIN, namespace) is not None)

    def satisfied(self, ctx: StepContext) -> bool:
        adapters = adapters_of(ctx)
        path = adapters.tenant_kubeconfig(self.tenant.name)
        try:
            if not adapters.helm(path).installed(self.release):
                return False
            kube = adapters.kube(path)
            ok, _ = self._ready(kube)
            return ok and self._mock_present(kube)
        except AdapterError:
            return False

    def _mock_objects(self, kube: KubeGateway) -> list[dict[str, Any]]:
        """The mock's objects, its config copied from the scheduler's (mock_device_config)."""
        source = kube.get("v1", "ConfigMap", render.SCHEDULER_DEVICE_CONFIG,
                          self.release.namespace) or {}
        text = str((source.get("data") or {}).get("device-config.yaml") or "")
        try:
            config = render.mock_device_config(text)
        except (ValueError, yaml.YAMLError) as err:
            raise AdapterError(
                f"{self.tenant.name}: ConfigMap {self.release.namespace}/"
                f"{render.SCHEDULER_DEVICE_CONFIG} cannot feed the mock device plugin ({err})",
                hint=f"look at it: kubectl --kubeconfig <tenant kubeconfig> -n "
                     f"{self.release.namespace} get configmap "
                     f"{render.SCHEDULER_DEVICE_CONFIG} -o yaml") from None
        return render.hami_mock_plugin(self.profile, self.release, config)

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        path = adapters.tenant_kubeconfig(self.tenant.name)
        kube = adapters.kube(path)
        for obj in render.hami_mock_rbac(self.release):
            kube.apply(obj)
        adapters.helm(path).install(self.release, timeout_seconds=int(self.timeout))
        wait_until(ctx, self.name, "hami-scheduler ready", lambda: self._ready(kube),
                   timeout=self.timeout, interval=5)
        for obj in self._mock_objects(kube):
            kube.apply(obj)


@dataclass
class MockGpus:
    profile: KamajiHamiProfile
    lab: str
    tenant: TenantSpec
    timeout: float = 180

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/gpus"

    @property
    def title(self) -> str:
        return f"Describing mock GPUs on {self.tenant.name}'s workers"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/hami",)

    def nodes(self) -> list[tuple[str, int]]:
        return [(render.worker_name(self.lab, self.tenant.name, i), i)
                for i in range(self.tenant.workers.count)]

    def describe(self) -> list[Artifact]:
        return [
            Artifact("node-patch", node, {
                "annotations": {
                    render.GPU_REGISTER_ANNOTATION: render.gpu_register_annotation(self.tenant, i)
                },
                "statusPatch": render.gpu_capacity_patch(self.tenant),
                "expectAllocatable": {k: str(v) for k, v in
                                      render.gpu_capacity(self.tenant).items()},
            }, cluster=self.tenant.name)
            for node, i in self.nodes()
        ]

    def _tenant(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.tenant.name))

    def _advertised(self, kube: KubeGateway) -> tuple[bool, str]:
        want = {k: str(v) for k, v in render.gpu_capacity(self.tenant).items()}
        for node, _ in self.nodes():
            live = kube.get("v1", "Node", node)
            if live is None:
                return False, f"node {node} not found"
            alloc = (live.get("status") or {}).get("allocatable") or {}
            got = {k: str(alloc.get(k, "0")) for k in want}
            if got != want:
                return False, f"{node} allocatable {json.dumps(got, sort_keys=True)}"
        return True, "allocatable matches the profile on every worker"

    def satisfied(self, ctx: StepContext) -> bool:
        if not self.tenant.gpus:
            return True
        try:
            kube = self._tenant(ctx)
            for node, i in self.nodes():
                live = kube.get("v1", "Node", node) or {}
                annotations = (live.get("metadata") or {}).get("annotations") or {}
                wanted = render.gpu_register_annotation(self.tenant, i)
                if annotations.get(render.GPU_REGISTER_ANNOTATION) != wanted:
                    return False
            ok, _ = self._advertised(kube)
        except AdapterError:
            return False
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = self._tenant(ctx)
        for node, i in self.nodes():
            # Capacity first: the mock plugin reports zero until nvidia.com/gpu capacity > 0.
            kube.patch_node_status(node, render.gpu_capacity_patch(self.tenant))
            kube.annotate("v1", "Node", node, {
                render.GPU_REGISTER_ANNOTATION: render.gpu_register_annotation(self.tenant, i)
            })
        wait_until(ctx, self.name, "mock GPUs advertised", lambda: self._advertised(kube),
                   timeout=self.timeout, interval=5)


CONTROL_PLANE_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _images_from(ctx: StepContext, what: str, produce: Callable[[], list[dict[str, Any]]]
                 ) -> list[str]:
    """Images a chart or manifest runs; a source that cannot be read is noted and skipped."""
    from gpulab.images import images_in_objects

    try:
        return images_in_objects(produce())
    except GpulabError as err:
        ctx.note(f"cannot list the images of {what}: {err}")
        return []


def _dedupe(images: list[str]) -> list[str]:
    return list(dict.fromkeys(images))


def management_images(profile: KamajiHamiProfile, nodes: Sequence[str]) -> PreloadImages:
    """cert-manager, MetalLB, Kamaji (with etcd) and the tenants' control-plane images, into
    the management cluster's `nodes` (ClusterFacts.management_nodes)."""
    comps = profile.components
    releases = [common.helm_release(comps.cert_manager), render.kamaji_release(profile)]

    def sources(ctx: StepContext) -> list[str]:
        adapters = adapters_of(ctx)
        helm = adapters.helm(adapters.management_kubeconfig())
        images: list[str] = []
        for release in releases:
            def rendered(r: base.HelmRelease = release) -> list[dict[str, Any]]:
                return helm.template(r)

            images += _images_from(ctx, f"chart {release.chart} {release.version}", rendered)
        images += _images_from(ctx, comps.metallb.url,
                               lambda: manifest_objects(adapters.fetch(comps.metallb.url)))
        for tenant in profile.tenants:
            images += [f"registry.k8s.io/{c}:{tenant.kubernetes_version}"
                       for c in CONTROL_PLANE_IMAGES]
            images.append(render.konnectivity_images(tenant)[0])
        return _dedupe(images)

    return PreloadImages(
        name="management/images",
        title="Preloading add-on images into the management node",
        requires=("management/cluster",),
        nodes=list(nodes),
        sources=sources,
        described=[f"chart {r.chart} {r.version}" for r in releases]
        + [comps.metallb.url, "registry.k8s.io/kube-{apiserver,controller-manager,scheduler} "
                              "at each tenant's version",
           f"{render.KONNECTIVITY_IMAGES}server:v0.<tenant minor>.0 (Kamaji's default)"],
    )


def tenant_images(profile: KamajiHamiProfile, lab: str, tenant: TenantSpec) -> PreloadImages:
    """Calico, HAMi (with its kube-scheduler) and kube-proxy for a tenant's workers."""
    calico = profile.components.calico
    release = render.hami_release(profile, tenant)
    mock_image = f"{render.MOCK_PLUGIN_IMAGE}:{profile.components.hami.mock_device_plugin_tag}"

    def sources(ctx: StepContext) -> list[str]:
        adapters = adapters_of(ctx)
        helm = adapters.helm(adapters.management_kubeconfig())
        images = _images_from(ctx, calico.url,
                              lambda: manifest_objects(adapters.fetch(calico.url)))
        images += _images_from(ctx, f"chart {release.chart} {release.version}",
                               lambda: helm.template(release,
                                                     kube_version=tenant.kubernetes_version))
        images.append(f"registry.k8s.io/kube-proxy:{tenant.kubernetes_version}")
        images.append(render.konnectivity_images(tenant)[1])
        images.append(mock_image)  # the mock plugin is gpulab's DaemonSet, not the chart's
        images.append(common.VERIFY_IMAGE)  # verify's pods (kindest/node ships it already)
        return _dedupe(images)

    return PreloadImages(
        name=f"{tenant.name}/images",
        title=f"Preloading images into {tenant.name}'s workers",
        requires=(f"{tenant.name}/workers",),
        nodes=[render.worker_name(lab, tenant.name, i) for i in range(tenant.workers.count)],
        sources=sources,
        described=[calico.url, f"chart {release.chart} {release.version}",
                   f"registry.k8s.io/kube-proxy:{tenant.kubernetes_version}",
                   render.konnectivity_images(tenant)[1], mock_image, common.VERIFY_IMAGE],
        cluster=tenant.name,
    )


@dataclass
class VerifyPreview:
    """What `gpulab verify` creates in a tenant; listed by `plan`, never run by `up`."""

    tenant: TenantSpec

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/verify"

    @property
    def title(self) -> str:
        return f"(gpulab verify) test objects in {self.tenant.name}, removed afterwards"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/gpus",)

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.tenant.name)
                for o in render.verify_objects(self.tenant)]

    def satisfied(self, ctx: StepContext) -> bool:  # pragma: no cover - never run by up
        return True

    def apply(self, ctx: StepContext) -> None:  # pragma: no cover - never run by up
        return None


def verify_previews(profile: KamajiHamiProfile) -> list[Step]:
    return [VerifyPreview(tenant) for tenant in profile.tenants]


def build_steps(profile: KamajiHamiProfile, lab: str, facts: ClusterFacts) -> list[Step]:
    """Every step of `up` for this profile, in the one order that matters, on what the
    cluster's provider answered for `cluster_needs` (providers.base.ClusterFacts): on a shared
    cluster the lab's namespaces first and cert-manager, a LoadBalancer and Kamaji reused when
    found there; images loaded into the nodes this host can load them into; MetalLB on the
    addresses the lab hands out itself (`lb_range`); per tenant its control plane, then its
    workers: containers on this host joined with kubeadm, or machines that join with what
    `gpulab join` prints (the tenant then gets Calico alone)."""
    found: existing.ClusterFound | None = facts.found if facts.shared else None
    steps: list[Step] = []
    if found is not None:  # the lab's namespaces are its own objects there
        levels = tuple((n, level) for n, level, _what
                       in existing.lab_pod_security(profile, found))
        steps.append(LabNamespaces(lab, existing.lab_namespaces(profile, found),
                                   levels=levels))
    if facts.management_nodes:
        steps.append(management_images(profile, facts.management_nodes))
    first = "management/images" if facts.management_nodes else \
        "management/namespaces" if found is not None else "management/cluster"
    steps += [_cert_manager(profile, found, requires=(first,)),
              _load_balancer(profile, lab, facts, found), _kamaji(profile, found)]
    for tenant in profile.tenants:
        steps += _tenant_steps(profile, lab, tenant, facts, shared=found is not None)
    return steps


def _cert_manager(profile: KamajiHamiProfile, found: existing.ClusterFound | None, *,
                  requires: tuple[str, ...]) -> Step:
    """cert-manager found in the cluster, reused; else installed."""
    if found is not None and found.cert_manager is not None:
        cert = found.cert_manager
        return Reused("management/cert-manager", "Using the cluster's cert-manager",
                      f"cert-manager {cert.version} in {cert.namespace}",
                      {"namespace": cert.namespace, "version": cert.version})
    return cert_manager_addon(profile, requires=requires)


def _load_balancer(profile: KamajiHamiProfile, lab: str, facts: ClusterFacts,
                   found: existing.ClusterFound | None) -> Step:
    """The control planes' LoadBalancer: MetalLB on the addresses the lab hands out (`lb_range`:
    a cluster it made), MetalLB on the profile's range where it may install it on a shared
    cluster, else the cluster's own LoadBalancer, reused."""
    if found is None:
        if facts.lb_range is None:  # pragma: no cover - cluster_needs asks for the range
            raise HostError("the cluster's provider gave MetalLB no address range")
        return MetalLB(profile, facts.lb_range)
    spec = profile.cluster
    if existing.installs_metallb(profile, found) and spec is not None:
        return existing.ExistingMetalLB(profile, lab, spec.metallb_range or "")
    seen = found.load_balancer or (
        f"MetalLB in {found.metallb.namespace or '?'}" if found.metallb else
        "cluster.expose: LoadBalancer (the profile says the cluster has one)")
    return Reused("management/metallb", "Using the cluster's LoadBalancer",
                  "the cluster's LoadBalancer", {"seen": seen})


def _kamaji(profile: KamajiHamiProfile, found: existing.ClusterFound | None) -> Step:
    """Kamaji found in the cluster, reused; else installed (on a shared cluster its chart's
    objects recorded for `down`: ExistingKamaji)."""
    if found is not None and found.kamaji is not None:
        kamaji = found.kamaji
        return Reused("management/kamaji", "Using the cluster's Kamaji",
                      f"Kamaji {kamaji.version} in {kamaji.namespace}",
                      {"namespace": kamaji.namespace, "version": kamaji.version})
    return kamaji_addon(profile, ExistingKamaji if found is not None else HelmAddon)


def _tenant_steps(profile: KamajiHamiProfile, lab: str, tenant: TenantSpec,
                  facts: ClusterFacts, *, shared: bool) -> list[Step]:
    """A tenant's control plane and workers, as `facts.workers` says they come."""
    containers = facts.workers == "containers"
    if not shared:
        return [TenantControlPlane(profile, tenant),
                *worker_steps(profile, lab, tenant, TenantWorkers(profile, lab, tenant),
                              tenant_images(profile, lab, tenant))]
    steps: list[Step] = [ExistingControlPlane(profile, tenant, lab=lab, containers=containers)]
    if not containers:  # machines join with what `gpulab join` prints
        return [*steps, TenantCalico(profile, lab, tenant)]
    return [*steps, ReachControlPlane(profile, tenant),  # the kind lab's steps, on this host
            *worker_steps(profile, lab, tenant, ContainerWorkers(profile, lab, tenant),
                          tenant_images(profile, lab, tenant))]


def cert_manager_addon(profile: KamajiHamiProfile, *, requires: tuple[str, ...]) -> HelmAddon:
    """cert-manager's release, ready once its webhook admits objects (kind and existing)."""
    return HelmAddon(common.helm_release(profile.components.cert_manager),
                     name="management/cert-manager", title="Installing cert-manager",
                     requires=requires, ready=_cert_manager_ready,
                     ready_what="cert-manager webhook to admit objects")


def kamaji_addon(profile: KamajiHamiProfile, kind: type[HelmAddon] = HelmAddon) -> HelmAddon:
    """Kamaji's release after cert-manager, ready with its CRDs and controller."""
    return kind(render.kamaji_release(profile), name="management/kamaji",
                title="Installing Kamaji", requires=("management/cert-manager",),
                ready=_kamaji_ready, ready_what="Kamaji CRDs and controller")


def worker_steps(profile: KamajiHamiProfile, lab: str, tenant: TenantSpec, workers: Step,
                 *before_join: Step) -> list[Step]:
    """A tenant's kindest/node workers, from their containers (`workers`) to mock GPUs: the
    kind lab's order, which `cluster.workers: containers` on an existing cluster reuses."""
    return [workers, *before_join, JoinWorkers(profile, lab, tenant),
            KubeProxy(profile, lab, tenant), Calico(profile, lab, tenant), Hami(profile, tenant),
            MockGpus(profile, lab, tenant)]


# --------------------------------------------------------------------------- existing cluster
# kamaji-hami in a cluster gpulab did not make: what it reads and refuses is existing.py's;
# the steps are here, with the kind lab's they reuse.


@dataclass
class ExistingControlPlane(TenantControlPlane):
    """A tenant's control plane on an existing cluster (existing.existing_control_plane): its
    namespace is the lab's (management/namespaces), and `down` waits for it to be gone before
    anything older goes (`removal_wait`, read by providers.existing.owned_entries)."""

    lab: str = ""
    containers: bool = False  # cluster.workers: containers (kindest/node workers here)
    removal_wait: float = existing.TCP_GONE_SECONDS

    @property
    def requires(self) -> tuple[str, ...]:
        return ("management/kamaji", "management/metallb", "management/namespaces")

    def describe(self) -> list[Artifact]:
        tcp = existing.existing_control_plane(self.profile, self.tenant, self.lab,
                                              containers=self.containers)
        return [
            Artifact("object", f"TenantControlPlane/{self.tenant.name}", tcp),
            Artifact("file", f"{self.tenant.name}.kubeconfig",
                     {"from": f"secret {self.namespace}/{self.tenant.name}-admin-kubeconfig "
                              "key admin.conf", "mode": "0600"}),
        ]


@dataclass
class TenantCalico(Calico):
    """Calico in the tenant, applied without waiting: its pods start on each worker that joins
    (`gpulab join`). It goes with the tenant: Kamaji removes the tenant's data when its
    TenantControlPlane is deleted."""

    @property
    def title(self) -> str:
        return f"Applying Calico in {self.tenant.name} (it runs once workers join)"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/control-plane",)

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            return self._tenant(ctx).get("apps/v1", "DaemonSet", "calico-node",
                                         "kube-system") is not None
        except AdapterError:
            return False

    def apply(self, ctx: StepContext) -> None:
        kube = self._tenant(ctx)
        for obj in self.objects(adapters_of(ctx).fetch(self.profile.components.calico.url)):
            kube.apply(obj)


@dataclass
class ReachControlPlane:
    """`cluster.workers: containers`: this host reaches the tenant's control plane at the
    address its kubeconfig names, and Konnectivity's port beside it; the kindest/node workers
    reach what the host reaches (Docker's bridge NATs them out). Checks only."""

    profile: KamajiHamiProfile
    tenant: TenantSpec

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/reach"

    @property
    def title(self) -> str:
        return f"Checking this host reaches {self.tenant.name}'s control plane"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/control-plane",)

    def describe(self) -> list[Artifact]:
        return [Artifact("check", f"{self.tenant.name} API and Konnectivity", {
            "from": "this host", "ports": [self.tenant.control_plane.port,
                                           self.tenant.control_plane.konnectivity_port]})]

    def _unreached(self, ctx: StepContext) -> list[str]:
        from urllib.parse import urlsplit

        server = tenant_server(adapters_of(ctx).tenant_kubeconfig(self.tenant.name))
        host = urlsplit(server).hostname or ""
        port = urlsplit(server).port or self.tenant.control_plane.port
        return [f"{host}:{p}" for p in (port, self.tenant.control_plane.konnectivity_port)
                if not existing.reaches(host, p)]

    def satisfied(self, ctx: StepContext) -> bool:
        return False  # asked each time: cheap, and what changes is the network

    def apply(self, ctx: StepContext) -> None:
        missing = self._unreached(ctx)
        if missing:
            raise HostError(f"this host does not reach {self.tenant.name}'s control plane at "
                            f"{', '.join(missing)}: its kindest/node workers could not join",
                            hint="use cluster.workers: machines and gpulab join, or open the "
                                 "route from this host to the LoadBalancer's addresses")
        ctx.note(f"{self.tenant.name}'s control plane answers from this host")


@dataclass
class ContainerWorkers(TenantWorkers):
    """The kind lab's worker containers, on Docker's default bridge (an existing cluster has
    no kind network here), each recorded in lab.json (its `container` artifact) so `down`
    removes it first."""

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/reach",)

    def specs(self) -> list[base.ContainerSpec]:
        from dataclasses import replace

        return [replace(s, network="bridge") for s in super().specs()]


@dataclass
class ExistingKamaji(HelmAddon):
    """Kamaji's release on an existing cluster, with the DataStore it brings described after
    it (existing.kamaji_datastore): `down` deletes that first, while Kamaji still runs."""

    def describe(self) -> list[Artifact]:
        store = existing.kamaji_datastore(self.release)
        return [*super().describe(), *([store] if store else [])]


def existing_needs(profile: KamajiHamiProfile, lab: str, owned_before: Any
                   ) -> ExistingNeeds:
    """What the plan creates on an existing cluster, for the provider's preflight."""
    return existing.existing_needs(profile, lab, owned_before)


def existing_problems(profile: KamajiHamiProfile, facts: Any) -> list[str]:
    """Why the lab cannot go into this cluster, one line each ([]: it can)."""
    return existing.existing_problems(profile, facts)


def join_commands(profile: KamajiHamiProfile, lab: str, member: str, *, node: str | None,
                  ttl_seconds: int, kube: Any) -> str:
    """`gpulab join`: what makes a real machine a worker of a tenant (existing.join_commands)."""
    return existing.join_commands(profile, lab, member, node=node, ttl_seconds=ttl_seconds,
                                  kube=kube)
