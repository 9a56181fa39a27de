"""What kube-scheduler, the kubelet and containerd write, for the builders and fakes that stand
for them: the FailedScheduling message of a pod no node takes, and a worker's NotReady message
while no CNI is installed. Each encoder is written from the upstream lines cited beside it, never
from gpulab's readers (a fake that used gpulab's reading would agree with any bug in it).

Sources. kubernetes/kubernetes is read in the search index's stored copies: the repository
(1.9 GB) is over the mirror limit, so the v1.36.4 tag of the pinned kindest/node was not read
itself; the texts below are the same in the copies read from before and after 1.36 (types.go's
stored copy 00fdf757 already has 1.37's workload scheduling). kube-scheduler's staging module is
read at its tag: kubernetes/kube-scheduler v0.36.3 (b38e3566). containerd at v2.3.4 (db880954,
the containerd kindest/node ships) and its go-cni at v1.1.13 (784f94e6, containerd's go.mod).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# --------------------------------------------------------------------------- kube-scheduler


def fit_error(num_nodes: int, reasons: Mapping[str, int], post_filter: str = "") -> str:
    """FitError.Error() (pkg/scheduler/framework/types.go, stored copy 00fdf757): `0/<nodes>
    nodes are available:` (NoNodeAvailableMsg), then `" %v."` of the filter reasons, each
    `"%v %v"` (count, reason), sort.Strings'ed, joined by ", "; then, when a PostFilter plugin
    spoke, `" %v"` of its message (no full stop added). The event FailedScheduling and the
    PodScheduled condition carry this text (schedule_one.go handleSchedulingFailure)."""
    text = f"0/{num_nodes} nodes are available:"
    histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
    if histogram:
        text += f" {', '.join(histogram)}."
    if post_filter:
        text += f" {post_filter}"
    return text


def post_filter_message(*plugin_reasons: str) -> str:
    """The PostFilter plugins' reasons, in plugin order (runtime/framework.go
    RunPostFilterPlugins appends each rejecting plugin's Reasons() into one Unschedulable
    status), read as Status.Message(): joined by ", " (kube-scheduler v0.36.3
    framework/interface.go:138-143)."""
    return ", ".join(plugin_reasons)


# DynamicResources' PostFilter for a pod without ResourceClaims (plugins/dynamicresources/
# dynamicresources.go PostFilter, `state.claims.empty()`); DynamicResources runs before
# DefaultPreemption.
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# DefaultPreemption.SelectVictimsOnNode, a node with no pod of lower priority to evict
# (plugins/defaultpreemption/default_preemption.go).
NO_PREEMPTION_VICTIMS = "No preemption victims found for incoming pod"


def preemption(num_nodes: int, reasons: Mapping[str, int]) -> str:
    """DefaultPreemption.PostFilter's message: `"preemption: "+msg`
    (plugins/defaultpreemption/default_preemption.go), msg being the Evaluator's FitError over
    the nodes it tried, with each node's preemption reason (framework/preemption/preemption.go
    Preempt, no candidate)."""
    return "preemption: " + fit_error(num_nodes, reasons)


def failed_scheduling(num_nodes: int, reasons: Mapping[str, int],
                      post_filter: Iterable[str] | None = None) -> str:
    """The FailedScheduling text of a pod without claims that no node takes and no eviction
    would help, on a cluster of `num_nodes` nodes: the filter (or extender) reasons, then
    DynamicResources' and DefaultPreemption's PostFilter messages, each node having no victim.
    `post_filter` replaces the PostFilter reasons when given."""
    said = (list(post_filter) if post_filter is not None else
            [NO_CLAIMS_TO_DEALLOCATE,
             preemption(num_nodes, {NO_PREEMPTION_VICTIMS: num_nodes})])
    return fit_error(num_nodes, reasons, post_filter_message(*said))


# --------------------------------------------------------------------------- kubelet, containerd


def runtime_condition(kind: str, status: bool, reason: str, message: str) -> str:
    """kubecontainer.RuntimeCondition.String() (pkg/kubelet/container/runtime.go):
    `"%s=%t reason:%s message:%s"` (Go's %t: true/false)."""
    return f"{kind}={'true' if status else 'false'} reason:{reason} message:{message}"


# containerd v2.3.4 internal/cri/server/status.go:33-34: the reason of a NetworkReady=false.
NETWORK_PLUGIN_NOT_READY = "NetworkPluginNotReady"
# go-cni v1.1.13 errors.go:24: what libcni.Status() returns before a CNI config is loaded
# (cni.go:140-145, ready():334-336).
CNI_NOT_INITIALIZED = "cni plugin not initialized"


def containerd_network_message(err: str = CNI_NOT_INITIALIZED) -> str:
    """The NetworkReady condition's message containerd's CRI gives when its CNI plugin's
    Status() fails (containerd v2.3.4 internal/cri/server/status.go:50-56)."""
    return f"Network plugin returns error: {err}"


def network_not_ready(err: str = CNI_NOT_INITIALIZED) -> str:
    """The kubelet's network error from the runtime's NetworkReady=false (pkg/kubelet/kubelet.go
    updateRuntimeUp: `fmt.Errorf("container runtime network not ready: %v", networkReady)`, the
    condition printed by runtime_condition), which is the Ready condition's whole message when
    it is the only error (pkg/kubelet/nodestatus/setters.go ReadyCondition:
    utilerrors.NewAggregate of the runtime, network and storage errors; an aggregate of one
    error reads as that error)."""
    condition = runtime_condition("NetworkReady", False, NETWORK_PLUGIN_NOT_READY,
                                  containerd_network_message(err))
    return f"container runtime network not ready: {condition}"
