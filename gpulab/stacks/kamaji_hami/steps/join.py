"""Joining the worker containers to their tenant with kubeadm.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulab.engine.step import Artifact
from gpulab.engine.wait import wait_until
from gpulab.errors import AdapterError
from gpulab.stacks.common import adapters_of
from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.steps.control_plane import node_kubeconfig

if TYPE_CHECKING:
    from gpulab.adapters.base import KubeGateway
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile, TenantSpec


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
                    f"copy nodes/{self.tenant.name}.kubeconfig to {WORKER_KUBECONFIG} (0600)",
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
        kubeconfig = node_kubeconfig(adapters, self.tenant.name).read_bytes()
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
