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

The API server's answers are read at the staging modules' tags: kubernetes/apiserver v0.36.3
(72f5171b) and kubernetes/apimachinery v0.36.3 (40bf4b2b). The kubelet's image pull and
admission texts are read in the index's stored copies, none tied to a tag: image_manager.go in
stored copy 680658890 (the index names no repository for it; it already has 1.33's
KubeletEnsureSecretPulledImages and PR kubernetes/kubernetes#127918, merged for 1.32, which
appended the last pull error to the back-off message: the copy the index files under
kubernetes/kubernetes itself is older than that PR), kuberuntime_image.go in stored copy
42522261950, images/types.go in kubernetes/kubernetes 0a2f5b12, the admission errors in stored
copy 413311899 (pkg/kubelet/cm/admission/errors.go, the same text in every copy read) and the
device manager's in 41915644. Below the kubelet: kubernetes/cri-client v0.36.3 (60f12215),
containerd v2.3.4 as above, containerd/errdefs at its mirror's newest commit 4817405e (pkg
v0.3.0, errors.go; containerd's go.mod asks errdefs v1.0.0, whose tag the mirror lacks) and
grpc-go's internal/status/status.go (stored copy 0772ed73).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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


# --------------------------------------------------------------------------- kubelet: images


# pkg/kubelet/images/types.go (kubernetes/kubernetes 0a2f5b12): the errors whose text is a
# waiting container's reason (ErrImagePullBackOff, ErrImagePull).
IMAGE_PULL_BACKOFF = "ImagePullBackOff"
ERR_IMAGE_PULL = "ErrImagePull"


def image_pull_backoff(image: str, pull_error: str) -> str:
    """The waiting message of a container whose image pull is backing off (image_manager.go
    pullImage, stored copy 680658890): `Back-off pulling image %q`, then `": %s"` of the last
    pull's error the kubelet stored for it, `fmt.Sprintf("%s: %s", err, msg)` with err
    ErrImagePull and msg the runtime's error text (evalCRIPullErr's fallback, err.Error())."""
    return f"Back-off pulling image {_go_quote(image)}: {ERR_IMAGE_PULL}: {pull_error}"


def image_pulled(image: str, pull: str, total: str, size: int) -> str:
    """The Normal event's message once an image is pulled (image_manager.go pullImage,
    stored copy 680658890: `Successfully pulled image %q in %v (%v including waiting). Image
    size: %v bytes.`), `pull` and `total` as Go prints a time.Duration truncated to
    milliseconds (Duration.String: "1.2s", "850ms")."""
    return (f"Successfully pulled image {_go_quote(image)} in {pull} ({total} including "
            f"waiting). Image size: {size} bytes.")


def image_not_found(ref: str) -> str:
    """The error text the kubelet gets from containerd v2.3.4 when no registry host has `ref`
    (every HEAD answered 404), on a kind node: kind's containerd config sets
    discard_unpacked_layers (kind images/base/files/etc/containerd/config.toml, pinned in
    tests/data/pinned/upstream), so the CRI pulls with client.Pull, not the transfer service
    (internal/cri/config/config.go:559-620 CheckLocalImagePullConfigs). The resolver's
    `"%s: %w", ref, errdefs.ErrNotFound` (core/remotes/docker/resolver.go:337, errdefs'
    "not found", errors.go:120), client/pull.go:198 `failed to resolve reference %q: %w`,
    internal/cri/server/images/image_pull.go:282 `failed to pull and unpack image %q: %w`; the
    CRI service answers it as gRPC NotFound with that message (internal/cri/instrument/
    instrumented_service.go:364-369, errgrpc.ToGRPC: errdefs pkg/errgrpc/grpc.go:63-89), which
    the kubelet's CRI client passes on as is, codes other than Unknown keeping their prefix
    (cri-client pkg/remote_image.go:248-262), read as grpc-go's `rpc error: code = %s desc = %s`
    (internal/status/status.go String); kuberuntime PullImage relays it unchanged
    (kuberuntime_image.go, stored copy 42522261950)."""
    quoted = _go_quote(ref)
    desc = (f"failed to pull and unpack image {quoted}: failed to resolve reference {quoted}: "
            f"{ref}: not found")
    return f"rpc error: code = NotFound desc = {desc}"


def _go_quote(text: str) -> str:
    """Go's %q of a string without quotes, backslashes or control characters."""
    if any(c in text for c in '"\\') or not text.isprintable():
        raise ValueError(f"not written for {text!r}")
    return f'"{text}"'


# --------------------------------------------------------------------------- kubelet: admission

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"  # admission.ErrorReasonUnexpected


def unexpected_admission(err: str) -> str:
    """A pod's status.message when the kubelet refused it at admission because a resource
    manager's Allocate failed: unexpectedAdmissionError.Error(), `Allocate failed due to %v,
    which is unexpected` (pkg/kubelet/cm/admission/errors.go, stored copy 413311899; the same
    text in every copy read), with status.reason UnexpectedAdmissionError."""
    return f"Allocate failed due to {err}, which is unexpected"


def devices_unavailable(resource: str, needed: int, available: int) -> str:
    """The device manager's error when fewer healthy devices of `resource` are free than a
    container asks (pkg/kubelet/cm/devicemanager/manager.go devicesToAllocate, stored copy
    41915644): `requested number of devices unavailable for %s. Requested: %d, Available: %d`."""
    return (f"requested number of devices unavailable for {resource}. Requested: {needed}, "
            f"Available: {available}")


# --------------------------------------------------------------------------- API server


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """A failure metav1.Status as the API server writes it: ErrorToAPIStatus sets kind Status and
    apiVersion v1 (apiserver v0.36.3 pkg/endpoints/handlers/responsewriters/status.go:34-59),
    then the JSON fields in the struct's order, empty ones omitted except `metadata`, an empty
    ListMeta struct (apimachinery v0.36.3 pkg/apis/meta/v1/types.go:813-843, StatusFailure
    :884)."""
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Failure", "message": message, "reason": reason}
    if details:
        status["details"] = details
    status["code"] = code
    return status


def unauthorized() -> dict[str, Any]:
    """What the API server answers a request whose credentials no authenticator accepts: the
    Unauthorized handler writes apierrors.NewUnauthorized("Unauthorized") (apiserver v0.36.3
    pkg/endpoints/filters/authentication.go:127-150), code 401, reason and message
    "Unauthorized" (apimachinery v0.36.3 pkg/api/errors/errors.go:195-206, types.go:904)."""
    return _status(401, "Unauthorized", "Unauthorized")


def forbidden_message(user: str, verb: str, resource: str, *, group: str = "",
                      namespace: str = "", name: str = "") -> str:
    """The message of the authorizer's refusal of a resource request: forbiddenMessage
    (apiserver v0.36.3 responsewriters/errors.go:60-80, `User %q cannot %s resource %q in API
    group %q` then `in the namespace %q` or `at the cluster scope`) inside NewForbidden's
    `%s is forbidden: %v` or, with a name, `%s %q is forbidden: %v` (apimachinery errors.go:
    209-217), the resource qualified by its group (GroupResource.String, runtime/schema/
    group_version.go:69-74)."""
    scope = f"in the namespace {_go_quote(namespace)}" if namespace else "at the cluster scope"
    why = (f"User {_go_quote(user)} cannot {verb} resource {_go_quote(resource)} in API group "
           f"{_go_quote(group)} {scope}")
    qualified = f"{resource}.{group}" if group else resource
    return (f"{qualified} {_go_quote(name)} is forbidden: {why}" if name
            else f"{qualified} is forbidden: {why}")


def forbidden(user: str, verb: str, resource: str, *, group: str = "", namespace: str = "",
              name: str = "") -> dict[str, Any]:
    """The Status of that refusal (ForbiddenStatusError, responsewriters/errors.go:45-58):
    code 403, reason Forbidden (types.go:915), details naming the group, the resource as `kind`
    and the name, each omitted when empty (types.go:851-879)."""
    details = {k: v for k, v in (("name", name), ("group", group), ("kind", resource)) if v}
    return _status(403, "Forbidden", forbidden_message(
        user, verb, resource, group=group, namespace=namespace, name=name), details)


def quota_exceeded_message(resource: str, name: str, quota: str, requested: Mapping[str, str],
                           used: Mapping[str, str], limited: Mapping[str, str]) -> str:
    """The ResourceQuota admission plugin's refusal of a create that would pass a quota's hard
    limits (apiserver v0.36.3 pkg/admission/plugin/resourcequota/controller.go:617-627:
    `exceeded quota: %s, requested: %s, used: %s, limited: %s` of the quota's name and the
    exceeded resources, each list as prettyPrint writes it, :741-754: `name=quantity` in sorted
    name order joined by ","), wrapped by admission.NewForbidden (pkg/admission/errors.go:53-63)
    in apierrors.NewForbidden's `%s %q is forbidden: %v` (apimachinery errors.go:209-217)."""
    def pretty(items: Mapping[str, str]) -> str:
        return ",".join(f"{key}={items[key]}" for key in sorted(items))

    why = (f"exceeded quota: {quota}, requested: {pretty(requested)}, used: {pretty(used)}, "
           f"limited: {pretty(limited)}")
    return f"{resource} {_go_quote(name)} is forbidden: {why}"


def service_account_missing_message(pod: str, namespace: str, account: str) -> str:
    """The ServiceAccount admission plugin's refusal of a pod whose service account does not
    exist yet (kubernetes plugin/pkg/admission/serviceaccount/admission.go, read in the index's
    stored copies 1892013938 and 108689742, none tied to a tag): Admit wraps getServiceAccount's
    error as `error looking up service account %s/%s: %w` in admission.NewForbidden (apiserver
    v0.36.3 pkg/admission/errors.go:53-63, `%s %q is forbidden: %v`); getServiceAccount, after
    its retries, answers errors.NewNotFound(Resource("serviceaccount"), name), whose message
    is `%s %q not found` (apimachinery v0.36.3 pkg/api/errors/errors.go:145-157)."""
    why = (f"error looking up service account {namespace}/{account}: serviceaccount "
           f"{_go_quote(account)} not found")
    return f"pods {_go_quote(pod)} is forbidden: {why}"


def kube_client_says(status: Mapping[str, Any]) -> str:
    """NOT upstream: the end of the line gpulab's KubeClient raises for an error answered with
    this Status (gpulab/adapters/kube.py, `{status} {reason}: {message}` after `<verb> <what>
    at <server>:`), for the fakes that stand in for the client. tests/contract/
    test_kube_adapter.py checks that the real client says exactly this."""
    return f"{status['code']} {status['reason']}: {status['message']}"
