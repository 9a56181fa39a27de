"""The vcluster-kai lab as a plan of steps.

Order (one place decides it): kind cluster (a GPU-pool worker) → fake-gpu-operator, until the pool
advertises its GPUs → KAI Scheduler → the reservation RBAC fake GPUs need, and the queue tree; per
team, once the GPUs are advertised and concurrently with KAI: its vCluster (kubeconfig saved 0600)
→ the GPU node seen from inside it. This is KAI's own CI order (hack/setup-e2e-cluster.sh): fake
GPUs first, KAI with GPU sharing, then the RBAC. The vClusters wait for fake-gpu-operator because
everything runs on the pool's worker: on a slow link their images would be pulled while fake-gpu-
operator's still are (FAKE_GPUS_TIMEOUT).

Besides the four functions every stack provides, this module offers the optional hooks core uses
when a stack has them: `lab_status`, `parse_checks`, `replay`, `write_recording`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab import pod_security
from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError, GpulabError
from gpulab.paths import write_secret
from gpulab.stacks.common import (
    HelmAddon,
    LabNamespaces,
    Reused,
    adapters_of,
    crd_established,
    deployment_available,
    management_kube,
)
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.existing import KaiFound, read_installed

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.adapters import base
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import Step, StepContext
    from gpulab.providers.base import ClusterFacts, ExistingNeeds, FakeNode
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile

__all__ = [
    "build_steps",
    "existing_needs",
    "existing_problems",
    "join_commands",
    "verify_previews",
]

KAI_CRDS = ("queues.scheduling.run.ai", "podgroups.scheduling.run.ai")
FAKE_GPUS_STEP = "management/fake-gpus"


# --------------------------------------------------------------------------- readiness probes


# fake-gpu-operator v0.0.74 on a slow link (issue #20 6a). Its chart pulls every image with
# `pullPolicy: Always` (deploy/fake-gpu-operator/values.yaml:12,27,42,57), all on the pool's
# worker(s); its device plugin (DaemonSet on `nvidia.com/gpu.deploy.device-plugin=true` nodes,
# templates/device-plugin/daemonset.yml:16-17) exits at start while ConfigMap
# `topology-<node>` is missing (cmd/device-plugin/main.go:36-40; the name:
# internal/common/topology/kubernetes.go:144-146 with TOPOLOGY_CM_NAME=topology,
# templates/device-plugin/_helpers.tpl:38-41), and only the status-updater writes that ConfigMap,
# when it sees a pool node (internal/status-updater/controllers/node/controller.go:52-75,167-170;
# handlers/node/handler.go:35-41; handlers/node/topology_cm.go:11-41). So the device plugin
# crash-loops until the status-updater's image is pulled and it runs, and the kubelet then
# restarts it only after its back-off: helm's --wait (the DaemonSet is one of its resources) can
# run out on a lab that is merely slow. The timeout is long, the vClusters wait for this step
# (their images would otherwise queue on the same worker), and a timeout says what each pod waits
# for and that `gpulab up` resumes here.
FAKE_GPUS_TIMEOUT = 900.0
TOPOLOGY_CONFIGMAP = "topology"  # TOPOLOGY_CM_NAME in the chart; per node: topology-<node>


def _pod_waits(pod: dict[str, Any]) -> str:
    """Why a pod is not ready yet ('' when it is): its containers' waiting reasons, else its
    phase (`ContainerCreating`, `ErrImagePull`, `ImagePullBackOff`, `CrashLoopBackOff`, …)."""
    status = pod.get("status") or {}
    containers = [*(status.get("initContainerStatuses") or []),
                  *(status.get("containerStatuses") or [])]
    reasons: list[str] = []
    for container in containers:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting is not None:
            reasons.append(str(waiting.get("reason") or "waiting"))
        elif not container.get("ready") and "running" not in (container.get("state") or {}):
            reasons.append("not running")
    if not containers and status.get("phase") != "Running":
        reasons.append(str(status.get("phase") or "Pending"))
    return ", ".join(dict.fromkeys(reasons))


def _fake_gpu_pods(kube: KubeGateway, *, namespace: str, nodes: list[str]) -> str:
    """What fake-gpu-operator's pods wait for, and each pool node's missing topology ConfigMap;
    '' when nothing waits, or when it has no pod at all (nothing is on its way)."""
    pods = kube.list_objects("v1", "Pod", namespace)
    waits = [f"pod {pod['metadata']['name']} {why}" for pod in pods if (why := _pod_waits(pod))]
    for node in nodes if pods else []:
        name = f"{TOPOLOGY_CONFIGMAP}-{node}"
        if kube.get("v1", "ConfigMap", name, namespace) is None:
            waits.append(f"ConfigMap {name} not written by the status-updater yet (the device "
                         f"plugin exits until it exists)")
    return "; ".join(waits)


def _fake_gpus_ready(
    kube: KubeGateway, *, namespace: str, nodes: list[str], count: int
) -> tuple[bool, str]:
    """fake-gpu-operator's deployments available, RuntimeClass `nvidia` present (KAI injects it
    into fraction pods) and every pool node advertising its GPUs as allocatable; when not, what
    its pods wait for."""
    ok, seen = _fake_gpus_advertised(kube, namespace=namespace, nodes=nodes, count=count)
    if not ok:
        waits = _fake_gpu_pods(kube, namespace=namespace, nodes=nodes)
        return False, f"{seen} ({waits})" if waits else seen
    return ok, seen


def _fake_gpus_advertised(
    kube: KubeGateway, *, namespace: str, nodes: list[str], count: int
) -> tuple[bool, str]:
    for dep in kube.list_objects("apps/v1", "Deployment", namespace):
        ok, seen = deployment_available(kube, dep["metadata"]["name"], namespace)
        if not ok:
            return ok, seen
    if kube.get("node.k8s.io/v1", "RuntimeClass", "nvidia") is None:
        return False, "RuntimeClass nvidia not created yet"
    for node in nodes:
        live = kube.get("v1", "Node", node)
        if live is None:
            return False, f"node {node} not found"
        have = str(((live.get("status") or {}).get("allocatable") or {}).get(kr.GPU_RESOURCE, "0"))
        if have != str(count):
            return False, f"{node} advertises {kr.GPU_RESOURCE} {have}, the pool has {count}"
    return True, f"{len(nodes)} node(s) advertise {count} x {kr.GPU_RESOURCE}"


def _kai_ready(kube: KubeGateway, *, namespace: str) -> tuple[bool, str]:
    """KAI's CRDs served and the operator plus every deployment it creates available: the chart
    only ships the operator, so helm's wait is over before the scheduler exists."""
    for crd in KAI_CRDS:
        ok, seen = crd_established(kube, crd)
        if not ok:
            return ok, seen
    for name in kr.KAI_DEPLOYMENTS:
        ok, seen = deployment_available(kube, name, namespace)
        if not ok:
            return ok, seen
    return True, f"{len(kr.KAI_DEPLOYMENTS)} KAI deployments available"


# --------------------------------------------------------------------------- management steps


@dataclass
class FakeGpus(HelmAddon):
    """fake-gpu-operator until every pool node advertises its GPUs (see FAKE_GPUS_TIMEOUT): a
    wait that runs out is reported with what the pods wait for, as resumable."""

    nodes: tuple[str, ...] = ()
    timeout: float = FAKE_GPUS_TIMEOUT

    def apply(self, ctx: StepContext) -> None:
        try:
            super().apply(ctx)
        except GpulabError as err:
            try:
                waits = _fake_gpu_pods(management_kube(ctx), namespace=self.release.namespace,
                                       nodes=list(self.nodes))
            except GpulabError:
                waits = ""
            if not waits:  # nothing is on its way: not a slow link, the error as it is
                raise
            seconds = self.timeout * ctx.timeout_scale
            raise AdapterError(
                f"fake-gpu-operator does not advertise the GPUs yet ({waits}): {err}",
                hint=f"helm and gpulab wait up to {seconds:.0f}s each; on a slow link its images "
                     f"may still be pulling: run `gpulab up` again, it resumes at this step "
                     f"(the vClusters and KAI wait for it)",
            ) from err


def _same(want: Any, live: Any) -> bool:
    """`want` is contained in `live` (numbers compared by value: 1 == 1.0)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(_same(v, live.get(k)) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(live, list) and len(want) == len(live) and all(
            _same(w, v) for w, v in zip(want, live, strict=True))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return isinstance(live, (int, float)) and not isinstance(live, bool) and float(
            want) == float(live)
    return bool(want == live)


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}


def _get(kube: KubeGateway, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


@dataclass
class ReservationRbac:
    """The ClusterRole and RoleBinding that let fake GPUs annotate KAI's reservation pods."""

    profile: VclusterKaiProfile
    name: str = "management/reservation-rbac"
    title: str = "Letting fake-gpu-operator annotate KAI's GPU reservation pods"
    requires: tuple[str, ...] = ("management/kai-scheduler",)

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o)
                for o in kr.reservation_rbac(self.profile)]

    def satisfied(self, ctx: StepContext) -> bool:
        kube = management_kube(ctx)
        try:
            return all(_same(_body(o), _body(_get(kube, o) or {}))
                       for o in kr.reservation_rbac(self.profile))
        except AdapterError:
            return False

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        for obj in kr.reservation_rbac(self.profile):
            kube.apply(obj)


@dataclass
class Queues:
    """The queue tree; applied in a bounded retry while KAI's queue webhook warms up. On an
    existing cluster (`lab` given) each queue also carries the lab's label."""

    profile: VclusterKaiProfile
    lab: str | None = None
    name: str = "management/queues"
    title: str = "Creating the KAI queue tree"
    requires: tuple[str, ...] = ("management/kai-scheduler",)
    timeout: float = 180

    def _objects(self) -> list[dict[str, Any]]:
        return kr.queue_objects(self.profile, self.lab)

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"Queue/{o['metadata']['name']}", o) for o in self._objects()]

    def _matching(self, kube: KubeGateway) -> tuple[bool, str]:
        for obj in self._objects():
            live = _get(kube, obj)
            if live is None:
                return False, f"Queue {obj['metadata']['name']} not found"
            if not _same(obj["spec"], live.get("spec") or {}):
                return False, f"Queue {obj['metadata']['name']} differs from the profile"
        return True, "every queue as in the profile"

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            ok, seen = self._matching(management_kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, seen)
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        objects = self._objects()

        def apply_all() -> tuple[bool, str]:
            for obj in objects:
                kube.apply(obj)
            return True, f"{len(objects)} queues accepted"

        wait_until(ctx, self.name, "KAI to accept the queues", apply_all,
                   timeout=self.timeout, interval=3)


# --------------------------------------------------------------------------- per team


@dataclass
class TeamVCluster:
    """A team's vCluster (Helm) reachable from the host; its kubeconfig saved 0600."""

    profile: VclusterKaiProfile
    lab: str
    team: TeamSpec
    facts: Any
    timeout: float = 600
    existing: kr.ExistingExpose | None = None  # provider existing: how the vCluster is reached
    after: tuple[str, ...] | None = None  # provider existing: what it waits for instead

    @property
    def name(self) -> str:
        return f"{self.team.name}/vcluster"

    @property
    def title(self) -> str:
        return f"Creating the vCluster of {self.team.name}"

    @property
    def requires(self) -> tuple[str, ...]:
        """After the GPU node is advertised: the pool's one worker runs the vCluster too, so its
        images would otherwise be pulled while fake-gpu-operator's still are (FAKE_GPUS_TIMEOUT);
        a vCluster does not need KAI, and is installed concurrently with it."""
        return self.after if self.after is not None else ("management/cluster", FAKE_GPUS_STEP)

    @property
    def secret(self) -> str:
        return f"vc-{self.team.name}"

    def release(self) -> base.HelmRelease:
        if self.existing is None:  # the URL the cluster's provider gives the team's port
            return kr.vcluster_release(self.profile, self.team,
                                       server=self.facts.url_for(kr.team_port(self.team)))
        return kr.vcluster_release(self.profile, self.team, self.existing)

    def _shown_server(self) -> str:
        if self.existing is None:
            return str(self.facts.url_for(kr.team_port(self.team)))
        return self.existing.server(self.team) or (
            f"https://<the LoadBalancer address of Service {self.team.namespace}/"
            f"{self.team.name}>:443")

    def describe(self) -> list[Artifact]:
        return [
            Artifact("helm-release", self.team.name, self.release().to_dict()),
            Artifact("file", f"{self.team.name}.kubeconfig", {
                "from": f"secret {self.team.namespace}/{self.secret} key config",
                "server": self._shown_server(),
                "mode": "0600",
            }),
        ]

    def _balancer(self, kube: KubeGateway) -> tuple[bool, str]:
        """The team's Service has a LoadBalancer address (provider existing, LoadBalancer)."""
        svc = kube.get("v1", "Service", self.team.name, self.team.namespace) or {}
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        address = next((str(i.get("ip") or i.get("hostname")) for i in ingress
                        if i.get("ip") or i.get("hostname")), "")
        return bool(address), address or f"service {self.team.namespace}/{self.team.name} " \
                                         "has no LoadBalancer address yet"

    def _with_server(self, data: bytes, kube: KubeGateway) -> bytes:
        """The exported kubeconfig, its server set to the LoadBalancer's address."""
        if self.existing is None or self.existing.how != "LoadBalancer":
            return data
        import yaml

        ok, address = self._balancer(kube)
        if not ok:
            raise AdapterError(address)
        host = f"[{address}]" if ":" in address else address
        config = yaml.safe_load(data)
        for cluster in config.get("clusters") or []:
            cluster["cluster"]["server"] = f"https://{host}:443"
        return yaml.safe_dump(config, sort_keys=False).encode()

    def _kubeconfig(self, ctx: StepContext) -> Path:
        return adapters_of(ctx).tenant_kubeconfig(self.team.name)

    def _save_kubeconfig(self, ctx: StepContext, kube: KubeGateway) -> Path:
        data = kube.secret_data(self.secret, self.team.namespace, "config")
        if not data:
            raise AdapterError(f"secret {self.team.namespace}/{self.secret} has no config yet")
        return write_secret(self._kubeconfig(ctx), self._with_server(data, kube))

    def _secret_ready(self, kube: KubeGateway) -> tuple[bool, str]:
        data = kube.secret_data(self.secret, self.team.namespace, "config")
        return bool(data), (f"secret {self.team.namespace}/{self.secret} written" if data
                            else f"secret {self.team.namespace}/{self.secret} not written yet")

    def satisfied(self, ctx: StepContext) -> bool:
        adapters = adapters_of(ctx)
        release = self.release()
        try:
            if not adapters.helm(adapters.management_kubeconfig()).installed(release):
                return False
            path = self._save_kubeconfig(ctx, management_kube(ctx))
            version = adapters.kube(path).server_version()
        except AdapterError:
            return False
        ctx.observe(self.name, f"vCluster API answers {version}")
        return True

    def apply(self, ctx: StepContext) -> None:
        adapters = adapters_of(ctx)
        release = self.release()
        ctx.note(f"helm upgrade --install {release.name} {release.chart} --repo {release.repo} "
                 f"--version {release.version} -n {release.namespace}")
        adapters.helm(adapters.management_kubeconfig()).install(
            release, timeout_seconds=int(self.timeout))
        kube = management_kube(ctx)
        wait_until(ctx, self.name, f"secret {self.secret} with the vCluster's kubeconfig",
                   lambda: self._secret_ready(kube), timeout=self.timeout, interval=3)
        if self.existing is not None and self.existing.how == "LoadBalancer":
            wait_until(ctx, self.name, "the vCluster Service's LoadBalancer address",
                       lambda: self._balancer(kube), timeout=self.timeout, interval=3)
        path = self._save_kubeconfig(ctx, kube)
        ctx.note(f"kubeconfig saved to {path} (mode 0600)")
        team = adapters.kube(path)
        server = self._shown_server() if self.existing is not None else \
            release.values["exportKubeConfig"]["server"]
        wait_until(ctx, self.name, f"the vCluster API at {server}",
                   lambda: (True, f"answers {team.server_version()}"),
                   timeout=self.timeout, interval=3)


@dataclass
class TeamGpuNode:
    """The team's vCluster lists the pool's GPU nodes with their GPUs (host nodes synced in)."""

    profile: VclusterKaiProfile
    lab: str
    team: TeamSpec
    timeout: float = 180
    # the lab's GPU nodes, each with the GPUs it advertises on the host (kind: the pool's nodes
    # with gpu_pool.count each; existing: nodes differ, one with 8 GPUs is listed with 8, not
    # with the least count of them all)
    counts: dict[str, int] | None = None
    after: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.team.name}/gpu-node"

    def _counts(self) -> dict[str, int]:
        return dict(self.counts or {})

    @property
    def title(self) -> str:
        return f"Waiting for {self.team.name} to see the GPU node"

    @property
    def requires(self) -> tuple[str, ...]:
        return self.after if self.after is not None else (f"{self.team.name}/vcluster",
                                                          FAKE_GPUS_STEP)

    def describe(self) -> list[Artifact]:
        counts = self._counts()
        if len(set(counts.values())) <= 1:  # one count for all (the kind pool)
            return [Artifact("wait", f"GPU nodes in {self.team.name}", {
                "nodes": list(counts),
                "allocatable": {kr.GPU_RESOURCE: str(next(iter(counts.values()), 0))},
            }, cluster=self.team.name)]
        return [Artifact("wait", f"GPU nodes in {self.team.name}", {
            "nodes": list(counts),
            "allocatable": {n: {kr.GPU_RESOURCE: str(c)} for n, c in counts.items()},
        }, cluster=self.team.name)]

    def _seen(self, kube: KubeGateway) -> tuple[bool, str]:
        nodes = {n["metadata"]["name"]: n for n in kube.list_objects("v1", "Node")}
        counts = self._counts()
        for wanted, count in counts.items():
            node = nodes.get(wanted)
            if node is None:
                return False, f"{wanted} not among {len(nodes)} node(s) listed"
            alloc = ((node.get("status") or {}).get("allocatable") or {}).get(kr.GPU_RESOURCE)
            if str(alloc) != str(count):
                return False, (f"{wanted} listed with {kr.GPU_RESOURCE} {alloc or 0}, the host "
                               f"advertises {count}")
        if len(set(counts.values())) <= 1:
            return True, (f"GPU node(s) listed with {next(iter(counts.values()), 0)} GPU(s) "
                          "each")
        return True, "GPU nodes listed with their GPUs (" + ", ".join(
            f"{n}: {c}" for n, c in counts.items()) + ")"

    def _kube(self, ctx: StepContext) -> KubeGateway:
        adapters = adapters_of(ctx)
        return adapters.kube(adapters.tenant_kubeconfig(self.team.name))

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            ok, seen = self._seen(self._kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, seen)
        return ok

    def apply(self, ctx: StepContext) -> None:
        kube = self._kube(ctx)
        wait_until(ctx, self.name, "the vCluster to list the GPU node",
                   lambda: self._seen(kube), timeout=self.timeout, interval=3)


@dataclass
class VerifyPreview:
    """What `gpulab verify` creates in a team's vCluster; listed by `plan`, never run by `up`."""

    profile: VclusterKaiProfile
    team: TeamSpec

    @property
    def name(self) -> str:
        return f"{self.team.name}/verify"

    @property
    def title(self) -> str:
        return f"(gpulab verify) test objects in {self.team.name}, removed afterwards"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.team.name}/gpu-node", "management/queues")

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.team.name)
                for o in kr.verify_objects(self.profile, self.team)]

    def satisfied(self, ctx: StepContext) -> bool:  # pragma: no cover - never run by up
        return True

    def apply(self, ctx: StepContext) -> None:  # pragma: no cover - never run by up
        return None


def verify_previews(profile: VclusterKaiProfile) -> list[Step]:
    return [VerifyPreview(profile, team) for team in profile.teams]


def build_steps(profile: VclusterKaiProfile, lab: str, facts: ClusterFacts) -> list[Step]:
    """Every step of `up` for this profile, in the one order that matters, on what the
    cluster's provider answered for `cluster_needs` (providers.base.ClusterFacts): on a shared
    cluster the lab's namespaces first and a KAI found there reused; the GPUs of the lab's own
    pool (fake-gpu-operator on its nodes), or those found (reused, plus fake ones on nodes named
    for them); the queue tree; a vCluster per team, reached as the facts say."""
    kai_found: KaiFound | None = facts.found if facts.shared else None
    steps: list[Step] = []
    if facts.shared:  # the lab's namespaces are its own objects there
        levels = tuple((n, level) for n, level, _what
                       in existing_pod_security(profile, kai_found is not None))
        steps.append(LabNamespaces(lab, existing_namespaces(profile, kai_found is not None),
                                   levels=levels))
    gpus_step = "management/gpu-nodes"
    if facts.gpus == "pool":
        steps.append(_pool_gpus(profile, facts))
        gpus_step = FAKE_GPUS_STEP
    elif facts.fake_nodes:
        steps += _fake_gpu_steps(profile, facts, kai_found)
        gpus_step = FAKE_GPUS_STEP
    steps.append(_kai_step(profile, kai_found, requires=(
        "management/namespaces",) if facts.shared else (gpus_step,)))
    steps += _found_gpus(facts)
    if facts.gpus == "pool":  # the pool's fake GPUs annotate KAI's reservation pods
        steps.append(ReservationRbac(profile))
    steps.append(Queues(profile, lab if facts.shared else None))
    steps += _team_steps(profile, lab, facts, gpus_step)
    return steps


def _pool_gpus(profile: VclusterKaiProfile, facts: ClusterFacts) -> Step:
    """fake-gpu-operator on the nodes of the lab's own GPU pool."""
    return _fake_gpus(profile, kr.fake_gpu_operator_release(profile),
                      list(facts.nodes(profile.gpu_pool.name)), "per pool node",
                      "the pool's nodes", requires=("management/cluster",))


def _fake_gpus(profile: VclusterKaiProfile, release: base.HelmRelease, nodes: list[str],
               where: str, whose: str, *, requires: tuple[str, ...]) -> FakeGpus:
    """fake-gpu-operator's `release`, ready once `nodes` advertise the pool's GPUs."""
    return FakeGpus(
        release,
        name=FAKE_GPUS_STEP,
        title=f"Installing fake-gpu-operator ({profile.gpu_pool.model} x"
              f"{profile.gpu_pool.count} {where})",
        requires=requires,
        ready=partial(_fake_gpus_ready, namespace=profile.components.fake_gpu_operator.namespace,
                      nodes=nodes, count=profile.gpu_pool.count),
        ready_what=f"fake GPUs advertised on {whose}",
        nodes=tuple(nodes),
    )


def _kai_step(profile: VclusterKaiProfile, found: KaiFound | None, *,
              requires: tuple[str, ...]) -> Step:
    """KAI Scheduler: the one found in the cluster, reused; else installed with GPU sharing."""
    if found is not None:
        return Reused("management/kai-scheduler", "Using the cluster's KAI Scheduler",
                      f"KAI Scheduler {found.version} in {found.namespace}",
                      {"namespace": found.namespace, "version": found.version,
                       "gpuSharing": found.gpu_sharing})
    return HelmAddon(
        kr.kai_scheduler_release(profile),
        name="management/kai-scheduler",
        title="Installing KAI Scheduler with GPU sharing",
        requires=requires,
        ready=partial(_kai_ready, namespace=profile.components.kai_scheduler.namespace),
        ready_what="the KAI operator's deployments",
        timeout=420,
    )


def _found_gpus(facts: ClusterFacts) -> list[Step]:
    """The GPU nodes found (not those named for fake GPUs), reused as they are: a step when
    there are any, or when no node is named for fake GPUs either (preflight refused that)."""
    if facts.gpus != "found":
        return []
    fake = {n.name for n in facts.fake_nodes}
    real = [n for n in facts.gpu_nodes if n.name not in fake]
    if not real and fake:
        return []
    return [Reused("management/gpu-nodes", "Using the cluster's GPU nodes",
                   f"{len(real)} GPU node(s)",
                   {n.name: {kr.GPU_RESOURCE: n.gpus, "product": n.product, "from": n.source}
                    for n in real})]


def _team_steps(profile: VclusterKaiProfile, lab: str, facts: ClusterFacts, gpus_step: str
                ) -> list[Step]:
    """Each team's vCluster, reached as `facts.expose` says (published: the host port the
    provider maps), and the GPU node its vCluster lists, with the pool's GPUs per node."""
    pool = facts.nodes(profile.gpu_pool.name)
    fake = {n.name for n in facts.fake_nodes}
    found = {n.name: n.gpus for n in facts.gpu_nodes}
    counts = {name: profile.gpu_pool.count if facts.gpus == "pool" or name in fake
              else found[name] for name in pool}
    expose = None if facts.expose == "published" else \
        kr.ExistingExpose(facts.expose, facts.node_address, lab, facts.urls)
    first = "management/namespaces" if facts.shared else "management/cluster"
    steps: list[Step] = []
    for team in profile.teams:
        node_after = (f"{team.name}/vcluster",) if facts.shared else \
            (f"{team.name}/vcluster", gpus_step)
        steps += [TeamVCluster(profile, lab, team, facts, existing=expose,
                               after=(first, gpus_step)),
                  TeamGpuNode(profile, lab, team, counts=counts, after=node_after)]
    return steps


# --------------------------------------------------------------------------- existing cluster


def existing_namespaces(profile: VclusterKaiProfile, kai_found: bool) -> tuple[str, ...]:
    """The namespaces the lab creates on an existing cluster (fake-gpu-operator's first when
    the profile names nodes for fake GPUs)."""
    kai = profile.components.kai_scheduler
    fake = (profile.components.fake_gpu_operator.namespace,) if fake_gpu_nodes(profile) else ()
    own = () if kai_found else (kai.namespace, kai.reservation_namespace)
    return (*fake, *own, *(team.namespace for team in profile.teams))


def existing_pod_security(profile: VclusterKaiProfile, kai_found: bool
                          ) -> tuple[tuple[str, str, str], ...]:
    """(namespace, Pod Security level, what needs it) for each namespace the lab creates on an
    existing cluster whose pods would not pass `restricted` (gpulab.pod_security.needed over
    the pinned charts rendered with gpulab's values: tests/contract/test_pod_security.py):
    fake-gpu-operator 0.0.74's device plugin and status exporter are privileged with hostPath
    volumes (templates/device-plugin/_helpers.tpl:43-44,64-76; templates/status-exporter/
    daemonset.yaml:28, _helpers.tpl:65); KAI v0.16.8's pods (the chart's operator and jobs, the
    operator's services with `global.securityContext`, pkg/operator/operands/common/common.go
    :179,230, the binder's reservation pods, pkg/binder/binding/resourcereservation/
    resource_reservation.go:527-560) and vCluster 0.35.3's StatefulSet need `baseline`. The
    teams' own pods, synced into `vcluster-<team>`, are held to baseline there too."""
    kai = profile.components.kai_scheduler
    fgo = profile.components.fake_gpu_operator.namespace
    out = [(fgo, pod_security.PRIVILEGED, "fake-gpu-operator's device plugin (privileged, "
            "hostPath volumes)")] if fake_gpu_nodes(profile) else []
    if not kai_found:
        out += [(kai.namespace, pod_security.BASELINE, "KAI Scheduler"),
                (kai.reservation_namespace, pod_security.BASELINE,
                 "KAI's GPU reservation pods")]
    out += [(t.namespace, pod_security.BASELINE, f"vCluster {t.name}") for t in profile.teams]
    return tuple(out)


def fake_gpu_nodes(profile: VclusterKaiProfile) -> tuple[str, ...]:
    """`cluster.fake_gpu_nodes` (provider existing): the nodes that get fake GPUs."""
    spec = profile.cluster
    return tuple(spec.fake_gpu_nodes or ()) if spec is not None else ()


# What fake-gpu-operator v0.0.74 creates outside its namespace and a cluster may already have
# (chart templates/runtime-class.yml:1-6, templates/status-updater/clusterrole.yaml:4-5): Helm
# refuses to install over them, and `helm uninstall` would remove them with the release.
FAKE_GPU_CLUSTER_OBJECTS = (("node.k8s.io/v1", "RuntimeClass", "nvidia"),
                            ("rbac.authorization.k8s.io/v1", "ClusterRole",
                             "fake-status-updater"))


@dataclass
class FakeGpuLabels:
    """Provider existing: the GPU pool's labels on each node named in `cluster.fake_gpu_nodes`,
    as KAI's own e2e puts them on its kind workers (hack/e2e-kind-config.yaml:9-13; render.
    gpu_node_labels). Only labels a node lacks are set (`adds`, from the preflight), each
    recorded in lab.json before it is set; `down` removes exactly those, while they still
    have gpulab's value. Nothing else of the node changes."""

    nodes: tuple[FakeNode, ...]
    name: str = "management/fake-gpu-labels"
    title: str = "Labelling the named nodes for fake GPUs"
    requires: tuple[str, ...] = ("management/namespaces",)

    def describe(self) -> list[Artifact]:
        return [Artifact("node-label", f"{node.name} {key}={value}",
                         {"node": node.name, "key": key, "value": value})
                for node in self.nodes for key, value in node.adds]

    def _missing(self, kube: KubeGateway) -> list[str]:
        missing = []
        for node in self.nodes:
            live = kube.get("v1", "Node", node.name) or {}
            labels = (live.get("metadata") or {}).get("labels") or {}
            missing += [f"{node.name} {k}" for k, v in node.adds if labels.get(k) != v]
        return missing

    def satisfied(self, ctx: StepContext) -> bool:
        try:
            missing = self._missing(management_kube(ctx))
        except AdapterError:
            return False
        ctx.observe(self.name, f"labels missing: {', '.join(missing)}" if missing
                    else "every named node carries the pool's labels")
        return not missing

    def apply(self, ctx: StepContext) -> None:
        kube = management_kube(ctx)
        for node in self.nodes:
            if node.adds:
                kube.label("v1", "Node", node.name, dict(node.adds))


def _fake_gpu_steps(profile: VclusterKaiProfile, facts: ClusterFacts,
                    kai_found: KaiFound | None) -> list[Step]:
    """Provider existing with `cluster.fake_gpu_nodes`: the nodes labelled, then fake-gpu-
    operator (the kind lab's release: KAI's hack/fake-gpu-operator-values.yaml with the
    profile's pool), until every named node advertises the pool's GPUs. Its status-updater
    must patch KAI's reservation pods: the chart grants that itself when the reservation
    namespace exists at install (templates/status-updater/pod-patch-role.yaml:1 and
    pod-patch-rolebinding.yaml:1 `lookup` it), and it does: gpulab creates it first, or the
    reused KAI has it."""
    names = [n.name for n in facts.fake_nodes]
    reservation = (kai_found.reservation_namespace if kai_found is not None else None) \
        or profile.components.kai_scheduler.reservation_namespace
    release = kr.fake_gpu_operator_release(profile, reservation_namespace=reservation)
    return [FakeGpuLabels(tuple(facts.fake_nodes)),
            _fake_gpus(profile, release, names, f"on {', '.join(names)}", "the named nodes",
                       requires=("management/fake-gpu-labels",))]


def queue_names(profile: VclusterKaiProfile) -> tuple[str, ...]:
    return tuple(q["metadata"]["name"] for q in kr.queue_objects(profile))


# ---------------------------------------------------------------- existing cluster: preflight


def existing_needs(profile: VclusterKaiProfile, lab: str, owned_before: Any
                   ) -> ExistingNeeds:
    """What the plan creates on an existing cluster, for the provider's read-only preflight:
    namespaces and queues that must not exist yet, and each verb and resource the user must be
    allowed (KAI's own needs only matter when it is installed: namespaces are asked for both)."""
    from gpulab.providers.base import Access, ExistingNeeds, chart_cluster_access, release_access

    kai = profile.components.kai_scheduler
    namespaces = existing_namespaces(profile, False)
    access = [Access(verb, "", "namespaces") for verb in ("create", "delete")]
    access += [Access(verb, "scheduling.run.ai", "queues") for verb in ("create", "delete")]
    access += chart_cluster_access()
    for namespace in (kai.namespace, *(t.namespace for t in profile.teams)):
        access += release_access(namespace)
    owned = tuple(owned_before or ())
    fake = fake_gpu_nodes(profile)
    absent: tuple[tuple[str, str, str], ...] = ()
    if fake:
        fgo = profile.components.fake_gpu_operator
        access += [Access(verb, "", "nodes") for verb in ("get", "patch")]
        access += [Access("create", "node.k8s.io", "runtimeclasses")]
        access += release_access(fgo.namespace, (
            ("", "services"), ("", "serviceaccounts"), ("", "configmaps"),
            ("apps", "deployments"), ("apps", "daemonsets")))
        installed = any(o.get("type") == "helm-release" and o.get("namespace") == fgo.namespace
                        for o in owned)  # this lab's own, from an earlier `up`
        absent = () if installed else FAKE_GPU_CLUSTER_OBJECTS
    return ExistingNeeds(namespaces=namespaces, queues=queue_names(profile),
                         access=tuple(access), owned_before=owned, fake_nodes=fake,
                         read=partial(read_installed, owned_before=owned),
                         fake_labels=tuple(kr.gpu_node_labels(profile).items()), absent=absent,
                         pod_security=existing_pod_security(profile, False))


def _fake_node_problems(facts: Any) -> list[str]:
    """Why fake GPUs cannot go on the named nodes (cluster.fake_gpu_nodes), one line each."""
    problems: list[str] = []
    for node in facts.fake_nodes:
        if not node.found:
            problems.append(f"node {node.name} (cluster.fake_gpu_nodes) is not in the cluster: "
                            "name nodes `kubectl get nodes` lists")
        elif node.gpus:
            problems.append(f"node {node.name} (cluster.fake_gpu_nodes) already advertises "
                            f"{kr.GPU_RESOURCE} {node.gpus}: fake GPUs go only on nodes "
                            "without GPUs (leave it out; its GPUs are used as they are)")
        elif node.conflicts:
            problems.append(f"node {node.name} (cluster.fake_gpu_nodes) has label(s) "
                            f"{', '.join(node.conflicts)} that gpulab would overwrite: remove "
                            "them, or name another node")
    for found in facts.objects_found:
        problems.append(f"{found} already exists (fake-gpu-operator's chart creates it; is "
                        "fake-gpu-operator or the GPU Operator installed?): gpulab does not "
                        "adopt it")
    return problems


def existing_problems(profile: VclusterKaiProfile, facts: Any) -> list[str]:
    """Why the lab cannot go into this cluster, one line each ([]: it can)."""
    problems: list[str] = []
    if facts.minor is None:
        problems.append(f"Kubernetes version {facts.version} is not one gpulab can read")
    else:
        problems += profile.host_minor_problems(facts.minor)
    if facts.default_storage_class is None:
        problems.append("no default StorageClass (each vCluster keeps its data on a "
                        "PersistentVolumeClaim): mark one with the annotation "
                        "storageclass.kubernetes.io/is-default-class=true")
    if not facts.gpu_nodes and not facts.fake_nodes:
        problems.append(f"no node advertises {kr.GPU_RESOURCE}: install the NVIDIA GPU "
                        "Operator or device plugin, or name nodes for fake GPUs in "
                        "cluster.fake_gpu_nodes")
    problems += _fake_node_problems(facts)
    kai: KaiFound | None = facts.stack  # the stack's own read (read_installed)
    pinned = profile.components.kai_scheduler.chart.version
    if kai is not None:
        line = ".".join(pinned.lstrip("v").split(".")[:2])
        if ".".join(kai.version.lstrip("v").split(".")[:2]) != line:
            problems.append(f"KAI Scheduler {kai.version or '(version unreadable)'} is installed "
                            f"in {kai.namespace}; this profile pins {pinned} (v{line}.x is "
                            "reused; gpulab never upgrades or removes it)")
        elif kai.gpu_sharing is not True:
            problems.append(f"KAI Scheduler {kai.version} in {kai.namespace} runs without GPU "
                            "sharing (Config kai-config spec.admission.gpuSharing is "
                            f"{kai.gpu_sharing}); the lab needs it: helm upgrade it with "
                            "--set global.gpuSharing=true yourself (gpulab never changes it)")
    needed = set(existing_namespaces(profile, kai is not None))
    fgo = profile.components.fake_gpu_operator.namespace if fake_gpu_nodes(profile) else None
    for namespace in facts.namespaces_found:
        if namespace == fgo:
            problems.append(f"namespace {namespace} already exists; gpulab does not adopt it "
                            "(fake-gpu-operator goes there: set components.fake_gpu_operator."
                            "namespace to another)")
        elif namespace in needed:
            problems.append(f"namespace {namespace} already exists; gpulab does not adopt it "
                            "(delete it, or rename the team)")
    for queue in facts.queues_found:
        problems.append(f"queue {queue} already exists; gpulab does not adopt it (rename "
                        "org_queue or the team's queue)")
    if facts.expose == "NodePort" and not facts.node_address:
        problems.append("no node address to reach the vClusters' NodePorts: set "
                        "cluster.node_address")
    if facts.denied:
        more = f" (+{len(facts.denied) - 1} more)" if len(facts.denied) > 1 else ""
        problems.append(f"not allowed to {facts.denied[0]}{more}: see docs/own-cluster.md for "
                        "the RBAC to grant")
    return problems


def join_commands(profile: VclusterKaiProfile, lab: str, member: str, *, node: str | None,
                  ttl_seconds: int, kube: Any) -> str:
    """vcluster-kai has no workers to join: a vCluster schedules onto its host's nodes."""
    from gpulab.errors import UsageError

    raise UsageError("gpulab join is for kamaji-hami tenants; a vCluster runs its pods on the "
                     "host cluster's nodes, which have nothing to join")
