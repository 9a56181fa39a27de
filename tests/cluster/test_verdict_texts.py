"""What each verdict of `verify --kubeconfig` tells the user, word for word (#24).

test_run.py proves the right checks pass, fail or err on the shapes of tests/cluster/builders.py;
here the whole verdict a user reads (id, title, cluster, status, reason, evidence) is held to the
letter, for one observation per branch of gpulab/cluster/checks.py: pass, fail, unknown because a
read was refused (403), failed (500) or not answered, skip. Each observation is what a run against
the fake cluster gives (tests/cluster/fake_hami.py and fake_kai.py play HAMi and KAI, the clock is
a FakeClock), then one fact of it changed the way the cluster would change it: the pod read back
of another run, a crash-looping container, a read refused. HAMi's and KAI's own words come from
their cited encoders (tests/kamaji_hami/hami_wire.py, tests/vcluster_kai/kai_wire.py); API errors
are worded as gpulab's Kubernetes adapter words them (gpulab/adapters/kube.py, KubeClient._call).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from gpulab.adapters.kube import KubeApiError
from gpulab.cluster.execute import EVENTS_UNREAD, POD_UNREAD, Timeouts, run_plan
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.run import evaluate, run_verify
from gpulab.cluster.state import ClusterRun, ClusterVerifyState
from gpulab.verify.observe import Clock
from tests import kube_wire as kube
from tests.cluster import builders as b
from tests.cluster.fake_hami import FakeHami
from tests.cluster.fake_kai import FakeKai
from tests.kamaji_hami import hami_wire as hw
from tests.kamaji_hami.fakes import FakeClock
from tests.vcluster_kai import kai_wire as kw

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpulab.verify.state import PodRun

    Build = Callable[[], ClusterVerifyState]
    # (name, how the observation is built, check [and cluster], status, reason, evidence)
    Row = tuple[str, Build, str, str, str, str]

SERVER = "https://gpu.example:6443"
RUN_ID = "0123456789ab"
NS = f"gpulab-verify-{RUN_ID}"
TIMEOUTS = Timeouts(running=60, refused=30, cleanup=10, interval=1)


# --------------------------------------------------------------------------- observations


def _api_error(what: str, status: int, reason: str, message: str, server: str = SERVER
               ) -> KubeApiError:
    """A call the API server answered with an error, as the adapter words it (kube/client.py:219-223:
    `<verb> <what> at <server>: <status> <reason>: <message>`)."""
    return KubeApiError(f"{what} at {server}: {status} {reason}: {message}", status=status,
                        reason=reason)


def _forbidden(verb: str, resource: str, what: str, group: str = "") -> KubeApiError:
    """403, with the message Kubernetes' authorizer gives a service account without the grant."""
    scope = f'in API group "{group}" at the cluster scope'
    return _api_error(f"{verb} {what}", 403, "Forbidden",
                      f'{resource}{"." + group if group else ""} is forbidden: User '
                      f'"system:serviceaccount:ci:verify" cannot {verb} resource "{resource}" '
                      f'{scope}')


def _unanswered(what: str) -> KubeApiError:
    """A request with no answer within its deadline (kube/client.py:224-226, _DeadlineExceeded)."""
    return KubeApiError(f"{what} at {SERVER}: no answer within 10s", status=0, reason="Timeout")


def _observe(api: b.ClusterApi, player: Callable[[b.ClusterApi, FakeClock], object], *,
             run: bool = True, member: str = "prod") -> ClusterVerifyState:
    """Discovery, the plan and (when `run` and the plan is runnable) the run, as `verify
    --kubeconfig` does them (gpulab.cluster.run.run_verify, with a fixed run id)."""
    clock = FakeClock()
    player(api, clock)
    snapshot = read_cluster(api, member, SERVER)
    planned = plan(inventory(snapshot), RUN_ID)
    runs: tuple[ClusterRun, ...] = ()
    if run and planned.runnable:
        runs = (run_plan(api, planned, timeouts=TIMEOUTS, clock=Clock(clock.now, clock.sleep)),)
    return ClusterVerifyState(f"cluster {member}", (snapshot,), runs)


def _hami(api: b.ClusterApi, clock: FakeClock, **options: Any) -> None:
    FakeHami(api, clock, **options).attach()


def _kai(api: b.ClusterApi, _clock: FakeClock, **options: Any) -> None:
    FakeKai(api, **options).attach()


@functools.cache
def _healthy_hami() -> ClusterVerifyState:
    """Three nodes with one L4 each (the mock device plugin): verify runs on node-3's card."""
    return _observe(b.shape_one_card_per_node(), _hami)


@functools.cache
def _healthy_kai() -> ClusterVerifyState:
    """KAI with an idle 4-GPU node (gpu-small) and a research queue without limit."""
    return _observe(b.shape_kai_idle_node(), _kai)


def _shape(make: Callable[[], b.ClusterApi], player: Callable[..., None] = _hami, *,
           fail: dict[str, Exception] | None = None, run: bool = True, **options: Any) -> Build:
    """The cluster `make` builds, its reads in `fail` answering errors."""
    @functools.cache
    def build() -> ClusterVerifyState:
        api = make()
        api.fail.update(fail or {})
        return _observe(api, functools.partial(player, **options), run=run)
    return build


def _cluster(*objs: dict[str, Any]) -> Callable[[], b.ClusterApi]:
    return lambda: b.cluster(*objs)


L4 = [b.card("GPU-l4-1", b.L4, 24576)]


def _run(state: ClusterVerifyState) -> ClusterRun:
    (run,) = state.runs
    return run


def _pod_run(state: ClusterVerifyState, name: str) -> PodRun:
    return next(p for p in _run(state).pods or () if p.name == name)


def _with_run(base: Callable[[], ClusterVerifyState], **changes: Any) -> Build:
    """The observation `base` with its run's fields replaced."""
    def build() -> ClusterVerifyState:
        state = base()
        return replace(state, runs=(replace(_run(state), **changes),))
    return build


def _with_pod(base: Callable[[], ClusterVerifyState], name: str,
              edit: Callable[[dict[str, Any]], object] | None = None, *,
              edit_created: Callable[[dict[str, Any]], object] | None = None,
              **changes: Any) -> Build:
    """The observation `base` with the run of pod `name` changed: `edit` gets the pod as read
    back (a copy) to change in place, `edit_created` the pod as its create call returned it,
    `changes` replace the PodRun's fields."""
    def build() -> ClusterVerifyState:
        state = base()
        runs = []
        for pod in _run(state).pods or ():
            if pod.name != name:
                runs.append(pod)
                continue
            read, created = copy.deepcopy(pod.pod), copy.deepcopy(pod.created)
            if edit is not None and read is not None:
                edit(read)
            if edit_created is not None and created is not None:
                edit_created(created)
            runs.append(replace(pod, **{"pod": read, "created": created, **changes}))
        return replace(state, runs=(replace(_run(state), pods=tuple(runs)),))
    return build


def _without_pod(base: Callable[[], ClusterVerifyState], name: str) -> Build:
    """A run (a recording) without pod `name`."""
    def build() -> ClusterVerifyState:
        state = base()
        pods = tuple(p for p in _run(state).pods or () if p.name != name)
        return replace(state, runs=(replace(_run(state), pods=pods),))
    return build


def _both(base: Callable[[], ClusterVerifyState],
          *edits: Callable[[Callable[[], ClusterVerifyState]], Build]) -> Build:
    for edit in edits:
        base = edit(base)
    return base


def _pod_unread(error: KubeApiError) -> dict[str, Any]:
    """The PodRun of a pod whose final read failed, as execute._final makes it."""
    return {"pod": None, "events": (), "last_seen": f"final read failed: {error.message}",
            "notes": (POD_UNREAD + error.message,)}


def _events_unread(error: KubeApiError) -> dict[str, Any]:
    """The PodRun of a pod read back whose events could not be read (execute._final)."""
    return {"events": (), "notes": (EVENTS_UNREAD + error.message,)}


def _get_pod_refused(name: str) -> KubeApiError:
    return _api_error(f"get Pod {NS}/{name}", 403, "Forbidden",
                      f'pods "{name}" is forbidden: User "system:serviceaccount:ci:verify" '
                      f'cannot get resource "pods" in API group "" in the namespace "{NS}"')


def _get_pod_failed(name: str) -> KubeApiError:
    return _api_error(f"get Pod {NS}/{name}", 500, "InternalError",
                      "etcdserver: request timed out")


def _events_refused() -> KubeApiError:
    return _api_error(f"list Event list in {NS}", 403, "Forbidden",
                      'events is forbidden: User "system:serviceaccount:ci:verify" cannot list '
                      f'resource "events" in API group "" in the namespace "{NS}"')


def _all(*edits: Callable[[Any], object]) -> Callable[[Any], None]:
    """Every edit, in order, on one object."""
    def edit(obj: Any) -> None:
        for one in edits:
            one(obj)
    return edit


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set a dotted path of an object (a value None removes the key)."""
    def edit(obj: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        for part in parents:
            obj = obj.setdefault(part, {})
        if value is None:
            obj.pop(key, None)
        else:
            obj[key] = value
    return edit


def _annotate(key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    return _set_in("annotations", key, value)


def _label(key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    return _set_in("labels", key, value)


def _set_in(section: str, key: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    def edit(obj: dict[str, Any]) -> None:
        entries = obj["metadata"].setdefault(section, {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
    return edit


def _crash_loop(pod: dict[str, Any]) -> None:
    pod["status"]["containerStatuses"] = [
        {"name": "app", "ready": False, "restartCount": 3,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]


def _sidecar_not_ready(pod: dict[str, Any]) -> None:
    """A mesh's injector added a sidecar (as on clusters gpulab did not build): it runs, not
    ready, next to a crash-looping app."""
    pod["spec"]["containers"].append({"name": "istio-proxy", "image": "istio/proxyv2:1.24.2"})
    pod["status"]["containerStatuses"] = [
        {"name": "app", "ready": False, "restartCount": 3,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        {"name": "istio-proxy", "ready": False, "restartCount": 0, "state": {"running": {}}}]


def _pending(pod: dict[str, Any]) -> None:
    """Not placed: no node, no container started."""
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending"}


def _kai_refused(message: str) -> Callable[[dict[str, Any]], None]:
    """KAI's PodScheduled=False condition on a pod it could not place."""
    def edit(pod: dict[str, Any]) -> None:
        _pending(pod)
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": message}]
    return edit


def _event(run: PodRun, reason: str, message: str, kind: str = "Warning",
           source: str = "hami-scheduler") -> dict[str, Any]:
    """An event about `run`'s pod, shaped as the fake API server records them."""
    pod = run.created or {}
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{reason.lower()}", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": meta["name"], "namespace": NS,
                               "uid": meta["uid"]},
            "reason": reason, "message": message, "type": kind, "count": 1,
            "source": {"component": source}, "lastTimestamp": "2026-11-20T10:15:00Z"}


def _events(base: Callable[[], ClusterVerifyState], name: str, *said: tuple[str, str],
            source: str = "hami-scheduler") -> Build:
    """Pod `name`'s events replaced by `said` ((reason, message) each, Warnings from
    `source`)."""
    def build() -> ClusterVerifyState:
        run = _pod_run(base(), name)
        return _with_pod(base, name, events=tuple(_event(run, r, m, source=source)
                                                  for r, m in said))()
    return build


def _refusing_pods(api: b.ClusterApi) -> b.ClusterApi:
    """Pods refused on create by a ResourceQuota named `pods` (hard pods=0; the namespace's own
    is created): the API server's words (kube_wire.quota_exceeded_message), as the adapter
    words them."""
    apply = api.apply

    def refuse(obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        if obj["kind"] != "Pod":
            return apply(obj, dry_run=dry_run)
        name = obj["metadata"]["name"]
        raise _api_error(f"apply Pod {NS}/{name}", 403, "Forbidden",
                         kube.quota_exceeded_message("pods", name, "pods", {"pods": "1"},
                                                     {"pods": "0"}, {"pods": "0"}))

    api.apply = refuse  # type: ignore[method-assign]
    return api


def _kai_edited(edit: Callable[[b.ClusterApi], object]) -> Callable[[], b.ClusterApi]:
    """shape_kai_idle_node changed by `edit`."""
    def make() -> b.ClusterApi:
        api = b.shape_kai_idle_node()
        edit(api)
        return api
    return make


def _scheduler_ready(ready: int) -> Callable[[b.ClusterApi], None]:
    def edit(api: b.ClusterApi) -> None:
        deploy = api.objects[("Deployment", "kai-scheduler", "kai-scheduler-default")]
        deploy["status"]["readyReplicas"] = ready
    return edit


def _no_scheduler(api: b.ClusterApi) -> None:
    del api.objects[("Deployment", "kai-scheduler", "kai-scheduler-default")]


def _sharing(on: bool | None) -> Callable[[b.ClusterApi], None]:
    """KAI's Config kai-config with GPU sharing `on` (None: no Config)."""
    def edit(api: b.ClusterApi) -> None:
        if on is None:
            del api.objects[("Config", "", "kai-config")]
        else:
            api.objects[("Config", "", "kai-config")]["spec"]["admission"]["gpuSharing"] = on
    return edit


def _with_namespace(api: b.ClusterApi) -> b.ClusterApi:
    """Verify's namespace exists already (left by nobody gpulab knows)."""
    api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return api


# --------------------------------------------------------------------------- several clusters

OTHER = "https://staging.example:6443"
LAB_C = "https://lab-c.example:6443"


def _tenants(*others: tuple[str, str, KubeApiError | None, KubeApiError | None],
             presented: bool = True) -> Build:
    """prod (one L4 per node, HAMi played) verified with other clusters, each (name, server:
    SERVER for the same API server, what its API server answers prod's credentials: None
    accepts them, what it answers listing verify's namespace: None lists it). The other
    clusters have no card verify can use (their plans refuse), so only prod runs; `presented`
    False: no credential was presented (no cross gateway)."""
    @functools.cache
    def build() -> ClusterVerifyState:
        clock = FakeClock()
        prod = b.shape_one_card_per_node()
        FakeHami(prod, clock).attach()
        clients: list[tuple[str, str, Any]] = [("prod", SERVER, prod)]
        answers: dict[str, KubeApiError | None] = {}
        for name, server, answer, listing in others:
            api = prod if server == SERVER else b.shape_busy_and_small_split()
            if listing is not None:
                api = _refusing_listing(api, listing)
            clients.append((name, server, api))
            answers[name] = answer

        def cross(credentials_of: str, server_of: str) -> Any:
            answer = answers[server_of]
            if answer is None:
                return {n: a for n, _s, a in clients}[server_of]
            probe = b.ClusterApi("probe")
            probe.fail["list_objects"] = answer
            return probe

        report = run_verify(clients, namespace=NS, timeouts=TIMEOUTS,
                            clock=Clock(clock.now, clock.sleep),
                            cross=cross if presented else None)
        assert isinstance(report.state, ClusterVerifyState)
        return report.state
    return build


def _refusing_listing(api: b.ClusterApi, error: KubeApiError) -> b.ClusterApi:
    """`api` answering `error` to a list of the pods in verify's namespace (its own lists, for
    discovery, still answer): a copy when it is prod's own API server reached again."""
    listing = api.list_objects

    class Refusing:
        def __getattr__(self, name: str) -> Any:
            return getattr(api, name)

        def list_objects(self, api_version: str, kind: str, namespace: str | None = None,
                         label_selector: str | None = None) -> list[dict[str, Any]]:
            if kind == "Pod" and namespace == NS:
                raise error
            return listing(api_version, kind, namespace, label_selector)
    return Refusing()  # type: ignore[return-value]


def _rejected(server: str) -> KubeApiError:
    """What an API server answers credentials it does not know (401)."""
    return _api_error("list Namespace list", 401, "Unauthorized", "Unauthorized", server)


H, K = _healthy_hami, _healthy_kai
# gpu-frac-1 came back for the default scheduler, which placed it: KAI's binder put no GPU group
# on it
GPU12_DEFAULT_SCHEDULER = _with_pod(
    K, "gpu-frac-1", _all(_set("spec.schedulerName", "default-scheduler"),
                          _label(kw.GPU_GROUP, None)),
    edit_created=_set("spec.schedulerName", "default-scheduler"))
QUOTA = _shape(lambda: _refusing_pods(b.shape_one_card_per_node()))
KAI_QUOTA = _shape(lambda: _refusing_pods(b.shape_kai_idle_node()), _kai)
WEBHOOK_DOWN = _shape(b.shape_one_card_per_node, webhook_reachable=False)
NO_PINNING = _shape(b.shape_eight_cards_one_node, honour_pinning=False)
RUN = "gpulab.dev/run"
PENDING_KAI = "Pending, schedulerName kai-scheduler, node -"
# KAI's words on a pod no GPU can hold (pod_errors.go:21, 101, 219-245 via kai_wire), and on one
# its queue's limit refuses (JobFitErrorsToMessage of OverLimit, kai_wire).
NO_GPU_LEFT = kw.fit_errors({kw.NOT_ENOUGH_GPUS: 2})
OVER_LIMIT_RESEARCH = kw.job_fit_errors_message([("OverLimit", [kw.over_limit("research", 8, 1,
                                                                                9)])])
# KAI's words on gpu-over-capacity (9 GPUs, gpu-big's 8 the most a node has): its
# MaxNodePoolResources pre-filter turns it away before any node is tried (kai_wire.
# pre_predicate_failed, max_node_resources), on the pod's condition and event, one line here
TOO_BIG = (f"Scheduling conditions were not met for pod {NS}/gpu-over-capacity: "
           f"MaxNodePoolResources: The pod {NS}/gpu-over-capacity requires GPU: 9, CPU: 0 "
           f"(cores), memory: 0 (GB), pods: 1. Max GPU resources available in a single node in "
           f"the default node-pool is topped at 8.")
PENDING_HAMI = "Pending, schedulerName hami-scheduler, node -"
# gpu-share-1 not placed: node-3's card reported unhealthy, after the node lock held it once
# (HAMi's events, oldest first).
NOT_PLACED = _with_pod(
    _events(H, "gpu-share-1", ("BindingFailed", hw.node_locked("node-3")),
            ("FilteringFailed", hw.filter_failed("CardUuidMismatch", ["node-1", "node-2"])),
            ("FilteringFailed", hw.filter_failed("CardNotHealth", ["node-3"])),
            ("FilteringFailed", hw.no_available_node(3))),
    "gpu-share-1", _all(_pending, _annotate(hw.ASSIGNED_NODE, None)),
    outcome="timeout", waited=60.0, last_seen=PENDING_HAMI)
# GPU-01's kubectl line for each part it could not find serving: how discovery finds it
# (gpulab/cluster/inventory.py)
FIND_SCHEDULER = "kubectl get deploy -A -l app.kubernetes.io/component=hami-scheduler -o wide"
FIND_WEBHOOK = ("kubectl get mutatingwebhookconfigurations -o "
                "'custom-columns=NAME:.metadata.name,WEBHOOKS:.webhooks[*].name' (HAMi's webhook "
                "is vgpu.hami.io)")
FIND_PLUGIN = ("kubectl get ds -A -o wide (HAMi's selects "
               "app.kubernetes.io/component=hami-device-plugin, or runs a mock-device-plugin "
               "image)")
DEPLOYMENTS_REFUSED = _forbidden("list", "deployments", "Deployment list", "apps")


def _verdict(build: Build, check: str, member: str = "prod") -> dict[str, Any]:
    report = evaluate(build())
    return next(r.to_dict() for r in report.results if r.id == check and r.tenant == member)


ROWS: list[Row] = [
    # ---------------------------------------------------------------- the cluster as a whole
    ("API server refused", _shape(b.shape_one_card_per_node, fail={"server_version": _api_error(
        "get server version", 401, "Unauthorized", "Unauthorized")}), "GPU-01", "error",
     f"the API server at {SERVER} could not be read: get server version at "
     f"{SERVER}: 401 Unauthorized: Unauthorized",
     ""),
    ("API server refused, isolation", _shape(b.shape_one_card_per_node, fail={
        "server_version": _api_error("get server version", 401, "Unauthorized",
                                     "Unauthorized")}), "GPU-06", "error",
     f"the API server at {SERVER} could not be read: get server version at "
     f"{SERVER}: 401 Unauthorized: Unauthorized",
     ""),
    ("API server not answering", _shape(b.shape_one_card_per_node, fail={
        "server_version": KubeApiError(f"get server version at {SERVER}: connection failed "
                                       f"(connection refused)", status=0)}),
     "GPU-03", "error",
     f"the API server at {SERVER} did not answer: get server version at "
     f"{SERVER}: connection failed (connection refused)",
     ""),
    ("plan refused", _shape(b.shape_busy_and_small_split), "GPU-02", "error",
     "not run: no card can be used (gpu-1/GPU-t4-1 (NVIDIA-Tesla T4, 15360 MiB): split 2, "
     "under 4: a fourth pod would be refused for time slicing, not cores; gpu-1/GPU-t4-2 "
     "(NVIDIA-Tesla T4, 15360 MiB): in use by prod/serve): free a card, or wait for one, and "
     "run verify again",
     ""),
    ("KAI plan refused", _shape(_kai_edited(_sharing(False)), _kai), "GPU-12", "error",
     "not run: KAI's GPU sharing is off (Config kai-config spec.admission.gpuSharing, the "
     "chart's global.gpuSharing): KAI refuses fractional pods without it",
     ""),
    ("namespace exists", _shape(lambda: _with_namespace(b.shape_one_card_per_node())),
     "GPU-04", "error",
     f"not run: namespace {NS} already exists; verify only uses a "
     "namespace it creates: pass another --namespace",
     ""),
    ("no pod attempted", _with_run(H, pods=None), "GPU-05", "error",
     "not run: no pod attempted",
     ""),
    ("not run", _shape(b.shape_one_card_per_node, run=False), "GPU-03", "error",
     "not run in this observation or recording",
     ""),
    ("not run, one cluster", _shape(b.shape_one_card_per_node, run=False), "GPU-06", "skip",
     "one cluster: isolation needs a --kubeconfig per tenant",
     ""),
    ("KAI not run", _shape(b.shape_kai_idle_node, _kai, run=False), "GPU-13", "error",
     "not run in this observation or recording",
     ""),
    # ---------------------------------------------------------------- GPU-01
    ("GPU-01 mock plugin", H, "GPU-01", "pass",
     "",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1; HAMi webhook: "
     "hami-webhook (service kube-system/hami-scheduler); HAMi device plugin: "
     "kube-system/hami-mock-device-plugin (DaemonSet) 3/3"),
    ("GPU-01 chart plugin", _shape(b.shape_eight_cards_one_node, run=False), "GPU-01", "pass",
     "",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1; HAMi webhook: "
     "hami-webhook (service kube-system/hami-scheduler); HAMi device plugin: "
     "kube-system/hami-device-plugin (DaemonSet) 1/1"),
    ("GPU-01 scheduler not ready", _shape(_cluster(*b.hami("real", scheduler_ready=0),
                                                   b.node("gpu-1", L4))), "GPU-01", "fail",
     f"HAMi scheduler not ready (0/1): {FIND_SCHEDULER}",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 0/1; HAMi webhook: "
     "hami-webhook (service kube-system/hami-scheduler); HAMi device plugin: "
     "kube-system/hami-device-plugin (DaemonSet) 1/1"),
    ("GPU-01 no webhook", _shape(_cluster(*b.hami("real", webhook=False), b.node("gpu-1", L4)),
                                 run=False), "GPU-01", "fail",
     f"HAMi webhook not found: {FIND_WEBHOOK}",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1; HAMi device plugin: "
     "kube-system/hami-device-plugin (DaemonSet) 1/1"),
    ("GPU-01 no device plugin", _shape(_cluster(*b.hami("none"), b.node("gpu-1", L4)),
                                       run=False), "GPU-01", "fail",
     f"HAMi device plugin not found: {FIND_PLUGIN}",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1; HAMi webhook: "
     "hami-webhook (service kube-system/hami-scheduler)"),
    # the mock's DaemonSet carries no label of HAMi's: GPU-01 found it by its image, and so
    # does the hint
    ("GPU-01 mock plugin not ready", _shape(_cluster(
        *(b.workload("DaemonSet", "hami-mock-device-plugin", "kube-system",
                     {"app": "mock-device-plugin"}, ["projecthami/mock-device-plugin:v1.0.1"],
                     ready=2, desired=3) if o["kind"] == "DaemonSet" else o
          for o in b.hami("mock", nodes=3)), b.node("node-1", L4)), run=False),
     "GPU-01", "fail",
     f"HAMi device plugin not ready (2/3): {FIND_PLUGIN}",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1; HAMi webhook: "
     "hami-webhook (service kube-system/hami-scheduler); HAMi device plugin: "
     "kube-system/hami-mock-device-plugin (DaemonSet) 2/3"),
    ("GPU-01 no HAMi", _shape(b.shape_no_hami), "GPU-01", "fail",
     f"HAMi scheduler not found: {FIND_SCHEDULER}; HAMi webhook not found: {FIND_WEBHOOK}; "
     f"HAMi device plugin not found: {FIND_PLUGIN}",
     ""),
    ("GPU-01 Deployments refused", _shape(b.shape_one_card_per_node, fail={
        "list_objects:Deployment": DEPLOYMENTS_REFUSED}), "GPU-01", "error",
     "HAMi scheduler is unknown: Deployment could not be read (403 Forbidden: grant list on "
     'deployments.apps, docs/verify-any-cluster.md "RBAC")',
     "HAMi webhook: hami-webhook (service kube-system/hami-scheduler); HAMi device plugin: "
     "kube-system/hami-mock-device-plugin (DaemonSet) 3/3"),
    ("GPU-01 nothing readable", _shape(b.shape_one_card_per_node, fail={
        "list_objects:Deployment": DEPLOYMENTS_REFUSED,
        "list_objects:DaemonSet": _api_error("list DaemonSet list", 500, "InternalError",
                                             "etcdserver: request timed out"),
        "list_objects:MutatingWebhookConfiguration": _unanswered(
            "list MutatingWebhookConfiguration list")}), "GPU-01", "error",
     "whether HAMi is installed is unknown: HAMi scheduler is unknown: Deployment could not "
     "be read (403 Forbidden: grant list on deployments.apps, docs/verify-any-cluster.md "
     '"RBAC"); HAMi webhook is unknown, because the API server did not answer; HAMi device '
     "plugin is unknown: DaemonSet could not be read (500 InternalError: etcdserver: request "
     "timed out)",
     ""),
    ("GPU-01 no webhook, plugin unread", _shape(
        _cluster(*b.hami("real", webhook=False), b.node("gpu-1", L4)), run=False, fail={
            "list_objects:DaemonSet": _forbidden("list", "daemonsets", "DaemonSet list",
                                                 "apps")}), "GPU-01", "fail",
     f"HAMi webhook not found: {FIND_WEBHOOK}; HAMi device plugin is unknown: DaemonSet "
     "could not be read (403 Forbidden: grant list on daemonsets.apps, "
     'docs/verify-any-cluster.md "RBAC")',
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1"),
    ("GPU-01 webhook unread", _shape(b.shape_one_card_per_node, run=False, fail={
        "list_objects:MutatingWebhookConfiguration": _api_error(
            "list MutatingWebhookConfiguration list", 500, "InternalError",
            "etcdserver: request timed out")}), "GPU-01", "error",
     "HAMi webhook is unknown: MutatingWebhookConfiguration could not be read (500 "
     "InternalError: etcdserver: request timed out)",
     "HAMi scheduler: kube-system/hami-scheduler (Deployment) 1/1; HAMi device plugin: "
     "kube-system/hami-mock-device-plugin (DaemonSet) 3/3"),
    # ---------------------------------------------------------------- GPU-11
    ("GPU-11 serving", K, "GPU-11", "pass",
     "",
     "kai-scheduler/kai-scheduler-default (Deployment) 1/1; GPU sharing on"),
    ("GPU-11 not ready", _shape(_kai_edited(_scheduler_ready(0)), _kai), "GPU-11", "fail",
     "KAI's scheduler is not ready (0/1); kubectl -n kai-scheduler get deploy,pods",
     "kai-scheduler/kai-scheduler-default (Deployment) 0/1; GPU sharing on"),
    ("GPU-11 no scheduler", _shape(_kai_edited(_no_scheduler), _kai), "GPU-11", "fail",
     "KAI's scheduler is not found; kubectl -n kai-scheduler get deploy,pods",
     "GPU sharing on"),
    ("GPU-11 sharing off", _shape(_kai_edited(_sharing(False)), _kai), "GPU-11", "fail",
     "GPU sharing is off (Config kai-config spec.admission.gpuSharing); kubectl -n "
     "kai-scheduler get deploy,pods",
     "kai-scheduler/kai-scheduler-default (Deployment) 1/1; GPU sharing off"),
    ("GPU-11 no Config", _shape(_kai_edited(_sharing(None)), _kai), "GPU-11", "fail",
     "GPU sharing is off (no Config kai-config, whose spec.admission.gpuSharing turns it "
     "on); kubectl -n kai-scheduler get deploy,pods",
     "kai-scheduler/kai-scheduler-default (Deployment) 1/1; GPU sharing off"),
    ("GPU-11 Config refused", _shape(b.shape_kai_idle_node, _kai, fail={
        "get:Config": _forbidden("get", "configs", "Config kai-config", "kai.scheduler")}),
     "GPU-11", "error",
     "GPU sharing is unknown: Config could not be read (403 Forbidden: grant get on "
     'configs.kai.scheduler, docs/verify-any-cluster.md "RBAC")',
     "kai-scheduler/kai-scheduler-default (Deployment) 1/1; GPU sharing unknown"),
    ("GPU-11 Deployments refused", _shape(b.shape_kai_idle_node, _kai, fail={
        "list_objects:Deployment": DEPLOYMENTS_REFUSED}), "GPU-11", "error",
     "KAI's scheduler is unknown: Deployment could not be read (403 Forbidden: grant list on "
     'deployments.apps, docs/verify-any-cluster.md "RBAC")',
     "GPU sharing on"),
    ("GPU-11 not ready, Config unanswered", _shape(_kai_edited(_scheduler_ready(0)), _kai, fail={
        "get:Config": _unanswered("get Config kai-config")}), "GPU-11", "fail",
     "KAI's scheduler is not ready (0/1); GPU sharing is unknown, because the API server did "
     "not answer; kubectl -n kai-scheduler get deploy,pods",
     "kai-scheduler/kai-scheduler-default (Deployment) 0/1; GPU sharing unknown"),
    ("GPU-11 nothing", _shape(_kai_edited(_all(_no_scheduler, _sharing(False))), _kai),
     "GPU-11", "fail",
     "KAI's scheduler is not found; GPU sharing is off (Config kai-config "
     "spec.admission.gpuSharing); kubectl -n kai-scheduler get deploy,pods",
     "GPU sharing off"),
    # ---------------------------------------------------------------- GPU-02
    ("GPU-02 admitted", H, "GPU-02", "pass",
     "",
     "gpu-share-1 admitted with schedulerName hami-scheduler, placed by HAMi on node-3"),
    ("GPU-02 not attempted", _without_pod(H, "gpu-share-1"), "GPU-02", "fail",
     "gpu-share-1 was not attempted",
     ""),
    ("GPU-02 create refused", QUOTA, "GPU-02", "fail",
     f"the API refused gpu-share-1: apply Pod {NS}/gpu-share-1 at "
     f'{SERVER}: 403 Forbidden: pods "gpu-share-1" is forbidden: exceeded '
     "quota: pods, requested: pods=1, used: pods=0, limited: pods=0",
     ""),
    ("GPU-02 webhook not called", WEBHOOK_DOWN, "GPU-02", "fail",
     "gpu-share-1 kept schedulerName default-scheduler: HAMi's webhook (vgpu.hami.io) did "
     "not handle it (failurePolicy Ignore hides an unreachable webhook); kubectl -n "
     f"{NS} describe pod gpu-share-1 (run verify with --keep)",
     ""),
    ("GPU-02 read back refused", _with_pod(H, "gpu-share-1", **_pod_unread(
        _get_pod_refused("gpu-share-1"))), "GPU-02", "error",
     "where HAMi placed it is unknown: gpu-share-1: Pod could not be read (403 Forbidden: "
     'grant get on pods, docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-02 read back unanswered", _with_pod(H, "gpu-share-1", **_pod_unread(
        _unanswered(f"get Pod {NS}/gpu-share-1"))), "GPU-02", "error",
     "where HAMi placed it is unknown: gpu-share-1: Pod could not be read (get Pod "
     f"{NS}/gpu-share-1 at {SERVER}: no answer within "
     "10s)",
     ""),
    ("GPU-02 webhook not called, read back failed", _with_pod(
        WEBHOOK_DOWN, "gpu-share-1", **_pod_unread(_get_pod_failed("gpu-share-1"))),
     "GPU-02", "fail",
     "gpu-share-1 kept schedulerName default-scheduler: HAMi's webhook (vgpu.hami.io) did "
     "not handle it (failurePolicy Ignore hides an unreachable webhook); kubectl -n "
     f"{NS} describe pod gpu-share-1 (run verify with --keep)",
     ""),
    ("GPU-02 deleted before read back", _with_pod(H, "gpu-share-1", pod=None),
     "GPU-02", "fail",
     "gpu-share-1 was not found when read back (running after 1s: Running, schedulerName "
     "hami-scheduler, node node-3): it was deleted while verify ran",
     ""),
    ("GPU-02 another run's pod", _with_pod(H, "gpu-share-1", _label(RUN, "fedcba987654")),
     "GPU-02", "fail",
     f"{NS}/gpu-share-1 carries gpulab.dev/run='fedcba987654', not this "
     "run's '0123456789ab'",
     ""),
    ("GPU-02 pod without the run label", _with_pod(H, "gpu-share-1", _label(RUN, None)),
     "GPU-02", "fail",
     f"{NS}/gpu-share-1 carries no gpulab.dev/run label, not this run's "
     "'0123456789ab'",
     ""),
    ("GPU-02 pod of another namespace", _with_pod(H, "gpu-share-1",
                                                  _set("metadata.namespace", "default")),
     "GPU-02", "fail",
     f"gpu-share-1 was read from namespace default, not {NS}",
     ""),
    ("GPU-02 pod replaced", _with_pod(H, "gpu-share-1", _set("metadata.uid", "cluster-uid-99")),
     "GPU-02", "fail",
     f"{NS}/gpu-share-1 has uid cluster-uid-99, not cluster-uid-2 that "
     "verify created: it was replaced while verify waited",
     ""),
    ("GPU-02 HAMi chose another node", _with_pod(H, "gpu-share-1",
                                                 _annotate(hw.ASSIGNED_NODE, "node-1")),
     "GPU-02", "fail",
     "gpu-share-1 is pinned to GPU-l4-3 on node-3, but HAMi chose node-1 and it is bound to "
     "node-3; gpu-share-1: running after 1s (Running, schedulerName hami-scheduler, node "
     "node-3); find fit node(node-3), 2 nodes not fit, 1 nodes fit(node-3:0.00) | "
     f"Successfully binding node [node-3] to {NS}/gpu-share-1; kubectl "
     f"-n {NS} describe pod gpu-share-1 (run verify with --keep)",
     ""),
    ("GPU-02 bound elsewhere", _with_pod(
        H, "gpu-share-1", _set("spec.nodeName", "node-1"),
        last_seen="Running, schedulerName hami-scheduler, node node-1"), "GPU-02", "fail",
     "gpu-share-1 is pinned to GPU-l4-3 on node-3, but HAMi chose node-3 and it is bound to "
     "node-1; gpu-share-1: running after 1s (Running, schedulerName hami-scheduler, node "
     "node-1); find fit node(node-3), 2 nodes not fit, 1 nodes fit(node-3:0.00) | "
     f"Successfully binding node [node-3] to {NS}/gpu-share-1; kubectl "
     f"-n {NS} describe pod gpu-share-1 (run verify with --keep)",
     ""),
    # node-1's busy card scores highest (HAMi's binpack): every node's score in its event
    ("GPU-02 pinning not honoured, three nodes fit", _shape(b.shape_one_card_per_node,
                                                            honour_pinning=False),
     "GPU-02", "fail",
     "gpu-share-1 is pinned to GPU-l4-3 on node-3, but HAMi chose node-1 and it is bound to "
     "node-1; gpu-share-1: running after 1s (Running, schedulerName hami-scheduler, node "
     "node-1); find fit node(node-1), 0 nodes not fit, 3 nodes "
     "fit(node-2:0.00,node-3:0.00,node-1:6.26) | Successfully binding node [node-1] to "
     f"{NS}/gpu-share-1; kubectl -n {NS} describe pod gpu-share-1 (run verify with --keep)",
     ""),
    ("GPU-02 not placed", NOT_PLACED, "GPU-02", "fail",
     "gpu-share-1 is pinned to GPU-l4-3 on node-3, but HAMi chose no node and it is bound to "
     "no node; gpu-share-1: timeout after 60s (Pending, schedulerName hami-scheduler, node "
     "-); 2 nodes CardUuidMismatch(node-1,node-2) | 1 nodes CardNotHealth(node-3) | no "
     f"available node, 3 nodes do not meet; kubectl -n {NS} describe "
     "pod gpu-share-1 (run verify with --keep)",
     ""),
    # ---------------------------------------------------------------- GPU-03
    ("GPU-03 shared", H, "GPU-03", "pass",
     "",
     "gpu-share-1..3 run together on node-3/GPU-l4-3 (NVIDIA-NVIDIA L4), each granted 6000 "
     "MiB and 30 cores: 18000/24576 MiB, 90/100 cores in use"),
    # a CPU node listed first, two one-A100 nodes, a Failed pod still holding a grant on gpu-b
    ("GPU-03 shared, a finished pod's grant", _shape(b.shape_hami_eligibility), "GPU-03",
     "pass",
     "",
     "gpu-share-1..3 run together on gpu-a/GPU-0 (NVIDIA-A100), each granted 2000 MiB and 30 "
     "cores: 6000/8192 MiB, 90/100 cores in use"),
    ("GPU-03 shared, eight cards", _shape(b.shape_eight_cards_one_node), "GPU-03", "pass",
     "",
     "gpu-share-1..3 run together on dgx-1/GPU-a100-1 (NVIDIA-NVIDIA A100-SXM4-80GB), each "
     "granted 20000 MiB and 30 cores: 60000/81920 MiB, 90/100 cores in use"),
    ("GPU-03 webhook not called", WEBHOOK_DOWN, "GPU-03", "fail",
     "gpu-share-1 kept schedulerName default-scheduler: HAMi's webhook (vgpu.hami.io) did "
     "not handle it (failurePolicy Ignore hides an unreachable webhook); kubectl -n "
     f"{NS} describe pod gpu-share-1 (run verify with --keep); "
     "gpu-share-2 was not created because gpu-share-1 did not run; gpu-share-3 was not "
     "created because gpu-share-1, gpu-share-2 did not run",
     ""),
    ("GPU-03 create refused", QUOTA, "GPU-03", "fail",
     f"the API refused gpu-share-1: apply Pod {NS}/gpu-share-1 at "
     f'{SERVER}: 403 Forbidden: pods "gpu-share-1" is forbidden: exceeded '
     "quota: pods, requested: pods=1, used: pods=0, limited: pods=0; gpu-share-2 was not "
     "created because gpu-share-1 did not run; gpu-share-3 was not created because "
     "gpu-share-1, gpu-share-2 did not run",
     ""),
    ("GPU-03 pinning not honoured", NO_PINNING, "GPU-03", "fail",
     "gpu-share-1 was granted [('GPU-a100-7', 20000, 30)] (hami.io/vgpu-devices-allocated), "
     "it asked for ('GPU-a100-1', 20000, 30); gpu-share-2 was granted [('GPU-a100-6', 20000, "
     "30)] (hami.io/vgpu-devices-allocated), it asked for ('GPU-a100-1', 20000, 30); "
     "gpu-share-3 was granted [('GPU-a100-5', 20000, 30)] (hami.io/vgpu-devices-allocated), "
     "it asked for ('GPU-a100-1', 20000, 30)",
     ""),
    ("GPU-03 not placed", NOT_PLACED, "GPU-03", "fail",
     "gpu-share-1: timeout after 60s (Pending, schedulerName hami-scheduler, node -); 2 "
     "nodes CardUuidMismatch(node-1,node-2) | 1 nodes CardNotHealth(node-3) | no available "
     f"node, 3 nodes do not meet; kubectl -n {NS} describe pod "
     "gpu-share-1 (run verify with --keep)",
     ""),
    ("GPU-03 crash-looping", _with_pod(H, "gpu-share-2", _crash_loop), "GPU-03", "fail",
     "gpu-share-2 is Running, but not every container is ready (app: waiting CrashLoopBackOff (3 "
     f"restarts)): kubectl -n {NS} logs gpu-share-2",
     ""),
    ("GPU-03 node lost", _with_pod(H, "gpu-share-2", _set("status.phase", "Unknown")),
     "GPU-03", "fail",
     "gpu-share-2 is Unknown: its node node-3 stopped reporting it (kubectl describe node node-3)",
     ""),
    # read while its phase lags its containers (running and ready): the phase is what is wrong
    ("GPU-03 phase not Running", _with_pod(H, "gpu-share-2", _set("status.phase", "Pending")),
     "GPU-03", "fail",
     f"gpu-share-2 is Pending, not Running: kubectl -n {NS} logs gpu-share-2",
     ""),
    ("GPU-03 another node", _with_pod(H, "gpu-share-2", _set("spec.nodeName", "node-1")),
     "GPU-03", "fail",
     "gpu-share-2 runs on node-1, not node-3",
     ""),
    ("GPU-03 nothing granted", _with_pod(H, "gpu-share-2", _annotate(hw.ALLOCATED, None)),
     "GPU-03", "fail",
     "gpu-share-2 was granted nothing (hami.io/vgpu-devices-allocated), it asked for "
     "('GPU-l4-3', 6000, 30)",
     ""),
    ("GPU-03 two slices granted", _with_pod(H, "gpu-share-2", _annotate(
        hw.ALLOCATED, hw.encode_pod_devices([[("GPU-l4-3", "NVIDIA", 6000, 30),
                                              ("GPU-l4-3", "NVIDIA", 6000, 30)]]))),
     "GPU-03", "fail",
     "gpu-share-2 was granted [('GPU-l4-3', 6000, 30), ('GPU-l4-3', 6000, 30)] "
     "(hami.io/vgpu-devices-allocated), it asked for ('GPU-l4-3', 6000, 30)",
     ""),
    ("GPU-03 another size", _with_pod(H, "gpu-share-3", _annotate(
        hw.ALLOCATED, hw.encode_pod_devices([[("GPU-l4-3", "NVIDIA", 9000, 30)]]))),
     "GPU-03", "fail",
     "gpu-share-3 was granted [('GPU-l4-3', 9000, 30)] (hami.io/vgpu-devices-allocated), it "
     "asked for ('GPU-l4-3', 6000, 30)",
     ""),
    ("GPU-03 read back failed", _with_pod(H, "gpu-share-3", **_pod_unread(
        _get_pod_failed("gpu-share-3"))), "GPU-03", "error",
     "gpu-share-3: Pod could not be read (500 InternalError: etcdserver: request timed out)",
     ""),
    ("GPU-03 none read back", _both(H, *(
        lambda base, n=n: _with_pod(base, n, **_pod_unread(_get_pod_refused(n)))
        for n in ("gpu-share-1", "gpu-share-2", "gpu-share-3"))), "GPU-03", "error",
     "gpu-share-1: Pod could not be read (403 Forbidden: grant get on pods, "
     'docs/verify-any-cluster.md "RBAC"); gpu-share-2: Pod could not be read (403 Forbidden: '
     'grant get on pods, docs/verify-any-cluster.md "RBAC"); gpu-share-3: Pod could not be '
     'read (403 Forbidden: grant get on pods, docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-03 read back failed, another crash-looping", _both(
        H, lambda base: _with_pod(base, "gpu-share-1", **_pod_unread(
            _get_pod_failed("gpu-share-1"))),
        lambda base: _with_pod(base, "gpu-share-3", _crash_loop)), "GPU-03", "fail",
     "gpu-share-3 is Running, but not every container is ready (app: waiting CrashLoopBackOff (3 "
     f"restarts)): kubectl -n {NS} logs gpu-share-3; gpu-share-1: Pod could not be read (500 "
     "InternalError: etcdserver: request timed out)",
     ""),
    ("GPU-03 sidecar", _with_pod(H, "gpu-share-2", _sidecar_not_ready), "GPU-03", "fail",
     "gpu-share-2 is Running, but not every container is ready (app: waiting CrashLoopBackOff (3 "
     f"restarts), istio-proxy: running but not ready): kubectl -n {NS} logs gpu-share-2",
     ""),
    ("GPU-03 another run's, crash-looping, another node", _both(
        H, lambda base: _with_pod(base, "gpu-share-1", _label(RUN, "fedcba987654")),
        lambda base: _with_pod(base, "gpu-share-2", _crash_loop),
        lambda base: _with_pod(base, "gpu-share-3", _set("spec.nodeName", "node-1"))),
     "GPU-03", "fail",
     f"{NS}/gpu-share-1 carries gpulab.dev/run='fedcba987654', not this run's '0123456789ab'; "
     "gpu-share-2 is Running, but not every container is ready (app: waiting CrashLoopBackOff (3 "
     f"restarts)): kubectl -n {NS} logs gpu-share-2; gpu-share-3 runs on node-1, not node-3",
     ""),
    ("GPU-03 another node, nothing granted", _both(
        H, lambda base: _with_pod(base, "gpu-share-1", _set("spec.nodeName", "node-1")),
        lambda base: _with_pod(base, "gpu-share-2", _annotate(hw.ALLOCATED, None))),
     "GPU-03", "fail",
     "gpu-share-1 runs on node-1, not node-3; gpu-share-2 was granted nothing "
     "(hami.io/vgpu-devices-allocated), it asked for ('GPU-l4-3', 6000, 30)",
     ""),
    ("GPU-03 not attempted, crash-looping", _both(
        H, lambda base: _without_pod(base, "gpu-share-1"),
        lambda base: _with_pod(base, "gpu-share-2", _crash_loop)), "GPU-03", "fail",
     "gpu-share-1 was not attempted; gpu-share-2 is Running, but not every container is ready "
     f"(app: waiting CrashLoopBackOff (3 restarts)): kubectl -n {NS} logs gpu-share-2",
     ""),
    ("GPU-03 not placed, crash-looping", _both(
        NOT_PLACED, lambda base: _with_pod(base, "gpu-share-3", _crash_loop)),
     "GPU-03", "fail",
     "gpu-share-1: timeout after 60s (Pending, schedulerName hami-scheduler, node -); 2 nodes "
     "CardUuidMismatch(node-1,node-2) | 1 nodes CardNotHealth(node-3) | no available node, 3 "
     f"nodes do not meet; kubectl -n {NS} describe pod gpu-share-1 (run verify with --keep); "
     "gpu-share-3 is Running, but not every container is ready (app: waiting CrashLoopBackOff (3 "
     f"restarts)): kubectl -n {NS} logs gpu-share-3",
     ""),
    ("GPU-03 not attempted", _without_pod(H, "gpu-share-2"), "GPU-03", "fail",
     "gpu-share-2 was not attempted",
     ""),
    ("GPU-03 another run's pod", _with_pod(H, "gpu-share-3", _label(RUN, "fedcba987654")),
     "GPU-03", "fail",
     f"{NS}/gpu-share-3 carries gpulab.dev/run='fedcba987654', not this "
     "run's '0123456789ab'",
     ""),
    ("GPU-03 deleted before read back", _with_pod(H, "gpu-share-2", pod=None),
     "GPU-03", "fail",
     "gpu-share-2 was not found when read back (running after 5s: Running, schedulerName "
     "hami-scheduler, node node-3): it was deleted while verify ran",
     ""),
    # ---------------------------------------------------------------- GPU-04, GPU-05
    ("GPU-04 refused", H, "GPU-04", "pass",
     "",
     "gpu-share-4 stays Pending; HAMi: 1 nodes CardInsufficientCore(node-3)"),
    ("GPU-05 refused", H, "GPU-05", "pass",
     "",
     "gpu-mem-big stays Pending; HAMi: 1 nodes CardInsufficientMemory(node-3)"),
    ("GPU-04 refused, said second", _events(
        H, "gpu-share-4", ("FilteringFailed", hw.filter_failed("CardUuidMismatch",
                                                               ["node-1", "node-2"])),
        ("FilteringFailed", hw.filter_failed("CardInsufficientCore", ["node-3"])),
        ("FilteringFailed", hw.no_available_node(3))), "GPU-04", "pass",
     "",
     "gpu-share-4 stays Pending; HAMi: 1 nodes CardInsufficientCore(node-3)"),
    ("GPU-04 held back", WEBHOOK_DOWN, "GPU-04", "fail",
     "gpu-share-4 was not created because gpu-share-1, gpu-share-2, gpu-share-3 did not run "
     "(see GPU-03)",
     ""),
    ("GPU-05 webhook not called", WEBHOOK_DOWN, "GPU-05", "fail",
     "gpu-mem-big is Pending but no event of its own names CardInsufficientMemory: "
     "gpu-mem-big kept schedulerName default-scheduler: HAMi's webhook (vgpu.hami.io) did "
     "not handle it (failurePolicy Ignore hides an unreachable webhook); kubectl -n "
     f"{NS} describe pod gpu-mem-big (run verify with --keep)",
     ""),
    ("GPU-05 create refused", QUOTA, "GPU-05", "fail",
     f"the API refused gpu-mem-big: apply Pod {NS}/gpu-mem-big at "
     f'{SERVER}: 403 Forbidden: pods "gpu-mem-big" is forbidden: exceeded '
     "quota: pods, requested: pods=1, used: pods=0, limited: pods=0",
     ""),
    ("GPU-04 not attempted", _without_pod(H, "gpu-share-4"), "GPU-04", "fail",
     "gpu-share-4 was not attempted",
     ""),
    ("GPU-05 read back refused", _with_pod(H, "gpu-mem-big", **_pod_unread(
        _get_pod_refused("gpu-mem-big"))), "GPU-05", "error",
     "whether HAMi placed it is unknown: gpu-mem-big: Pod could not be read (403 Forbidden: "
     'grant get on pods, docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-04 pod replaced", _with_pod(H, "gpu-share-4", _set("metadata.uid", "cluster-uid-99")),
     "GPU-04", "fail",
     f"{NS}/gpu-share-4 has uid cluster-uid-99, not cluster-uid-5 that "
     "verify created: it was replaced while verify waited",
     ""),
    ("GPU-05 deleted before read back", _with_pod(H, "gpu-mem-big", pod=None),
     "GPU-05", "fail",
     "gpu-mem-big was not found when read back",
     ""),
    ("GPU-04 placed", NO_PINNING, "GPU-04", "fail",
     "HAMi placed gpu-share-4 on dgx-1, over-committing the card's cores; kubectl -n "
     "kube-system logs deploy/hami-scheduler -c vgpu-scheduler-extender",
     ""),
    ("GPU-05 placed", _with_pod(H, "gpu-mem-big", _set("spec.nodeName", "node-3")),
     "GPU-05", "fail",
     "HAMi placed gpu-mem-big on node-3, over-committing the card's memory; kubectl -n "
     "kube-system logs deploy/hami-scheduler -c vgpu-scheduler-extender",
     ""),
    ("GPU-04 events refused", _with_pod(H, "gpu-share-4", **_events_unread(_events_refused())),
     "GPU-04", "error",
     "gpu-share-4 is Pending, but whether HAMi said CardInsufficientCore is unknown: "
     "gpu-share-4: Event could not be read (403 Forbidden: grant list on events, "
     'docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-05 refused for something else", _with_pod(
        _events(H, "gpu-mem-big",
                ("FilteringFailed", hw.filter_failed("CardInsufficientCore", ["node-3"])),
                ("FilteringFailed", hw.filter_failed("CardUuidMismatch", ["node-1", "node-2"])),
                ("FilteringFailed", hw.no_available_node(3))),
        "gpu-mem-big", outcome="timeout", waited=30.0, last_seen=PENDING_HAMI),
     "GPU-05", "fail",
     "gpu-mem-big is Pending but no event of its own names CardInsufficientMemory: "
     "gpu-mem-big: timeout after 30s (Pending, schedulerName hami-scheduler, node -); 1 "
     "nodes CardInsufficientCore(node-3) | 2 nodes CardUuidMismatch(node-1,node-2) | no "
     f"available node, 3 nodes do not meet; kubectl -n {NS} describe "
     "pod gpu-mem-big (run verify with --keep)",
     ""),
    ("GPU-05 nothing said", _with_pod(H, "gpu-mem-big", events=(), outcome="timeout",
                                      waited=30.0, last_seen=PENDING_HAMI),
     "GPU-05", "fail",
     "gpu-mem-big is Pending but no event of its own names CardInsufficientMemory: "
     "gpu-mem-big: timeout after 30s (Pending, schedulerName hami-scheduler, node -); no "
     f"events; kubectl -n {NS} describe pod gpu-mem-big (run verify "
     "with --keep)",
     ""),
    ("GPU-04 an event without words", _with_pod(
        _events(H, "gpu-share-4", ("BindingFailed", hw.node_locked("node-3")),
                ("FilteringFailed", hw.filter_failed("CardUuidMismatch", ["node-1", "node-2"])),
                ("FilteringFailed", hw.no_available_node(3)), ("FailedScheduling", "")),
        "gpu-share-4", outcome="timeout", waited=30.0, last_seen=PENDING_HAMI),
     "GPU-04", "fail",
     "gpu-share-4 is Pending but no event of its own names CardInsufficientCore: "
     "gpu-share-4: timeout after 30s (Pending, schedulerName hami-scheduler, node -); 2 "
     "nodes CardUuidMismatch(node-1,node-2) | no available node, 3 nodes do not meet | ; "
     f"kubectl -n {NS} describe pod gpu-share-4 (run verify with --keep)",
     ""),
    # ---------------------------------------------------------------- GPU-06
    ("GPU-06 one cluster", H, "GPU-06", "skip",
     "one cluster: isolation needs a --kubeconfig per tenant",
     ""),
    ("GPU-06 isolated", _tenants(("staging", OTHER, _rejected(OTHER), None)),
     "GPU-06", "pass",
     "",
     "staging sees none of them; staging rejects prod's credentials"),
    ("GPU-06 the other cluster not run", _tenants(("staging", OTHER, _rejected(OTHER), None)),
     "GPU-06 staging", "error",
     "not run: no card can be used (gpu-1/GPU-t4-1 (NVIDIA-Tesla T4, 15360 MiB): split 2, "
     "under 4: a fourth pod would be refused for time slicing, not cores; gpu-1/GPU-t4-2 "
     "(NVIDIA-Tesla T4, 15360 MiB): in use by prod/serve): free a card, or wait for one, and "
     "run verify again",
     ""),
    ("GPU-06 listing refused", _tenants(("staging", OTHER, _rejected(OTHER), _api_error(
        f"list Pod list in {NS}", 403, "Forbidden", 'pods is forbidden: User "staging-admin" '
        f'cannot list resource "pods" in API group "" in the namespace "{NS}"', OTHER))),
     "GPU-06", "pass",
     "",
     f"staging sees none of them (refused: list Pod list in {NS} at "
     f'{OTHER}: 403 Forbidden: pods is forbidden: User "staging-admin" '
     'cannot list resource "pods" in API group "" in the namespace '
     f"\"{NS}\"); staging rejects prod's credentials"),
    ("GPU-06 listing failed", _tenants(("staging", OTHER, _rejected(OTHER), _api_error(
        f"list Pod list in {NS}", 500, "InternalError", "etcdserver: request timed out",
        OTHER))), "GPU-06", "error",
     f"staging's listing failed: list Pod list in {NS} at "
     f"{OTHER}: 500 InternalError: etcdserver: request timed out",
     "staging rejects prod's credentials"),
    ("GPU-06 one API server", _tenants(("team-b", SERVER, None, None)), "GPU-06", "fail",
     "team-b's credentials list this run's pods gpu-mem-big, gpu-share-1, gpu-share-2, "
     f"gpu-share-3, gpu-share-4 in {NS} (same uid): the clusters are "
     f"not isolated; kubectl -n {NS} get pods (with the other "
     "kubeconfig)",
     "team-b is the same API server: credentials not compared"),
    ("GPU-06 credentials accepted", _tenants(("staging", OTHER, None, None)),
     "GPU-06", "fail",
     "staging's API server accepted prod's credentials (it listed 0 namespaces): they share "
     "a certificate authority or token issuer",
     "staging sees none of them"),
    ("GPU-06 credentials forbidden", _tenants(("staging", OTHER, _api_error(
        "list Namespace list", 403, "Forbidden", 'namespaces is forbidden: User "prod-admin" '
        'cannot list resource "namespaces" in API group "" at the cluster scope', OTHER),
        None)), "GPU-06", "fail",
     "staging's API server authenticated prod's credentials and only RBAC refused them (list "
     f"Namespace list at {OTHER}: 403 Forbidden: namespaces is "
     'forbidden: User "prod-admin" cannot list resource "namespaces" in API group "" at the '
     "cluster scope)",
     "staging sees none of them"),
    ("GPU-06 credentials without verdict", _tenants(("staging", OTHER, KubeApiError(
        f"list Namespace list at {OTHER}: connection failed (connection refused)", status=0),
        None)), "GPU-06", "error",
     "prod's credentials at staging: no verdict (list Namespace list at "
     f"{OTHER}: connection failed (connection refused))",
     "staging sees none of them"),
    ("GPU-06 credentials not presented", _tenants(("staging", OTHER, _rejected(OTHER), None),
                                                  presented=False), "GPU-06", "error",
     "prod's credentials were not presented to staging",
     "staging sees none of them"),
    ("GPU-06 one accepts, one without verdict", _tenants(
        ("staging", OTHER, None, None),
        ("lab-c", LAB_C, KubeApiError(f"list Namespace list at {LAB_C}: connection failed "
                                      f"(connection refused)", status=0), None)),
     "GPU-06", "fail",
     "staging's API server accepted prod's credentials (it listed 0 namespaces): they share "
     "a certificate authority or token issuer; prod's credentials at lab-c: no verdict (list "
     f"Namespace list at {LAB_C}: connection failed (connection refused))",
     "staging sees none of them; lab-c sees none of them"),
    ("GPU-06 no verdict from two", _tenants(
        ("staging", OTHER, _rejected(OTHER), _api_error(
            f"list Pod list in {NS}", 500, "InternalError", "etcdserver: request timed out",
            OTHER)),
        ("lab-c", LAB_C, KubeApiError(f"list Namespace list at {LAB_C}: connection failed "
                                      f"(connection refused)", status=0), None)),
     "GPU-06", "error",
     f"staging's listing failed: list Pod list in {NS} at "
     f"{OTHER}: 500 InternalError: etcdserver: request timed out; prod's "
     f"credentials at lab-c: no verdict (list Namespace list at {LAB_C}: "
     "connection failed (connection refused))",
     "staging rejects prod's credentials; lab-c sees none of them"),
    ("GPU-06 not probed", _with_run(_tenants(("staging", OTHER, _rejected(OTHER), None)),
                                    isolation=None), "GPU-06", "error",
     "not observed in this run or recording: no other cluster looked for this run's pods",
     ""),
    # ---------------------------------------------------------------- GPU-12
    ("GPU-12 one GPU", K, "GPU-12", "pass",
     "",
     "gpu-frac-1 and gpu-frac-2 (0.5 each) run together on gpu-small, one GPU "
     "(runai-gpu-group=gpu-small-gpu0), queue research"),
    ("GPU-12 spread", _shape(b.shape_kai_idle_node, _kai, spread=True), "GPU-12", "fail",
     "the half-GPU pods are on different GPUs (runai-gpu-group: gpu-frac-1 -> gpu-small-gpu0, "
     "gpu-frac-2 -> gpu-small-gpu1): KAI spread them (placementStrategy gpu: spread?)",
     ""),
    ("GPU-12 no GPU group", _with_pod(K, "gpu-frac-2", _label(kw.GPU_GROUP, None)),
     "GPU-12", "fail",
     "gpu-frac-2 carries no runai-gpu-group label (gpu-frac-1 -> gpu-small-gpu0): KAI's binder "
     "labels each GPU-fraction pod it binds with the GPU it shares; without it, one GPU is not "
     "shown",
     ""),
    ("GPU-12 no GPU group on either", _both(
        K, lambda base: _with_pod(base, "gpu-frac-1", _label(kw.GPU_GROUP, None)),
        lambda base: _with_pod(base, "gpu-frac-2", _label(kw.GPU_GROUP, None))),
     "GPU-12", "fail",
     "gpu-frac-1 and gpu-frac-2 carry no runai-gpu-group label: KAI's binder labels each "
     "GPU-fraction pod it binds with the GPU it shares; without it, one GPU is not shown",
     ""),
    ("GPU-12 refused by KAI", _with_pod(K, "gpu-frac-2", _kai_refused(NO_GPU_LEFT),
                                        outcome="timeout", waited=60.0, last_seen=PENDING_KAI),
     "GPU-12", "fail",
     "gpu-frac-2 (gpu-fraction 0.5) is Pending; KAI: no nodes with enough resources were found: 2 "
     f"node(s) didn't have enough resources: GPUs.; kubectl -n {NS} describe pod gpu-frac-2",
     ""),
    ("GPU-12 crash-looping", _with_pod(K, "gpu-frac-1", _crash_loop), "GPU-12", "fail",
     "gpu-frac-1 (gpu-fraction 0.5) is Running, but not every container is ready (app: waiting "
     f"CrashLoopBackOff (3 restarts)): kubectl -n {NS} describe pod gpu-frac-1",
     ""),
    ("GPU-12 node lost", _with_pod(K, "gpu-frac-1", _set("status.phase", "Unknown")),
     "GPU-12", "fail",
     "gpu-frac-1 (gpu-fraction 0.5) is Unknown: its node gpu-small stopped reporting it (kubectl "
     "describe node gpu-small)",
     ""),
    ("GPU-12 another node", _with_pod(K, "gpu-frac-2", _set("spec.nodeName", "gpu-big")),
     "GPU-12", "fail",
     "gpu-frac-2 runs on gpu-big, not gpu-small",
     ""),
    ("GPU-12 read back refused", _with_pod(K, "gpu-frac-1", **_pod_unread(
        _get_pod_refused("gpu-frac-1"))), "GPU-12", "error",
     "gpu-frac-1: Pod could not be read (403 Forbidden: grant get on pods, "
     'docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-12 none read back", _both(K, *(
        lambda base, n=n: _with_pod(base, n, **_pod_unread(_get_pod_failed(n)))
        for n in ("gpu-frac-1", "gpu-frac-2"))), "GPU-12", "error",
     "gpu-frac-1: Pod could not be read (500 InternalError: etcdserver: request timed out); "
     "gpu-frac-2: Pod could not be read (500 InternalError: etcdserver: request timed out)",
     ""),
    ("GPU-12 read back refused, another crash-looping", _both(
        K, lambda base: _with_pod(base, "gpu-frac-1", **_pod_unread(
            _get_pod_refused("gpu-frac-1"))),
        lambda base: _with_pod(base, "gpu-frac-2", _crash_loop)), "GPU-12", "fail",
     "gpu-frac-2 (gpu-fraction 0.5) is Running, but not every container is ready (app: waiting "
     f"CrashLoopBackOff (3 restarts)): kubectl -n {NS} describe pod gpu-frac-2; gpu-frac-1: Pod "
     'could not be read (403 Forbidden: grant get on pods, docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-12 sidecar", _with_pod(K, "gpu-frac-2", _sidecar_not_ready), "GPU-12", "fail",
     "gpu-frac-2 (gpu-fraction 0.5) is Running, but not every container is ready (app: waiting "
     f"CrashLoopBackOff (3 restarts), istio-proxy: running but not ready): kubectl -n {NS} "
     "describe pod gpu-frac-2",
     ""),
    ("GPU-12 another namespace, another node", _both(
        K, lambda base: _with_pod(base, "gpu-frac-1", _set("metadata.namespace", "default")),
        lambda base: _with_pod(base, "gpu-frac-2", _set("spec.nodeName", "gpu-big"))),
     "GPU-12", "fail",
     f"gpu-frac-1 was read from namespace default, not {NS}; gpu-frac-2 "
     "runs on gpu-big, not gpu-small",
     ""),
    ("GPU-12 another scheduler, crash-looping", _both(
        GPU12_DEFAULT_SCHEDULER, lambda base: _with_pod(base, "gpu-frac-2", _crash_loop)),
     "GPU-12", "fail",
     "gpu-frac-1 came back with schedulerName default-scheduler, not kai-scheduler; gpu-frac-2 "
     "(gpu-fraction 0.5) is Running, but not every container is ready (app: waiting "
     f"CrashLoopBackOff (3 restarts)): kubectl -n {NS} describe pod gpu-frac-2",
     ""),
    ("GPU-12 crash-looping, another node", _both(
        K, lambda base: _with_pod(base, "gpu-frac-1", _crash_loop),
        lambda base: _with_pod(base, "gpu-frac-2", _set("spec.nodeName", "gpu-big"))),
     "GPU-12", "fail",
     "gpu-frac-1 (gpu-fraction 0.5) is Running, but not every container is ready (app: waiting "
     f"CrashLoopBackOff (3 restarts)): kubectl -n {NS} describe pod gpu-frac-1; gpu-frac-2 runs "
     "on gpu-big, not gpu-small",
     ""),
    ("GPU-12 another node, crash-looping", _both(
        K, lambda base: _with_pod(base, "gpu-frac-1", _set("spec.nodeName", "gpu-big")),
        lambda base: _with_pod(base, "gpu-frac-2", _crash_loop)), "GPU-12", "fail",
     "gpu-frac-1 runs on gpu-big, not gpu-small; gpu-frac-2 (gpu-fraction 0.5) is Running, but "
     f"not every container is ready (app: waiting CrashLoopBackOff (3 restarts)): kubectl -n {NS} "
     "describe pod gpu-frac-2",
     ""),
    ("GPU-12 not attempted, another node", _both(
        K, lambda base: _without_pod(base, "gpu-frac-1"),
        lambda base: _with_pod(base, "gpu-frac-2", _set("spec.nodeName", "gpu-big"))),
     "GPU-12", "fail",
     "gpu-frac-1 was not attempted; gpu-frac-2 runs on gpu-big, not gpu-small",
     ""),
    ("GPU-12 not attempted", _without_pod(K, "gpu-frac-2"), "GPU-12", "fail",
     "gpu-frac-2 was not attempted",
     ""),
    ("GPU-12 create refused", KAI_QUOTA, "GPU-12", "fail",
     f"the API refused gpu-frac-1: apply Pod {NS}/gpu-frac-1 at "
     f'{SERVER}: 403 Forbidden: pods "gpu-frac-1" is forbidden: exceeded '
     "quota: pods, requested: pods=1, used: pods=0, limited: pods=0; the API refused "
     f"gpu-frac-2: apply Pod {NS}/gpu-frac-2 at "
     f'{SERVER}: 403 Forbidden: pods "gpu-frac-2" is forbidden: exceeded '
     "quota: pods, requested: pods=1, used: pods=0, limited: pods=0",
     ""),
    ("GPU-12 another scheduler", GPU12_DEFAULT_SCHEDULER,
     "GPU-12", "fail",
     "gpu-frac-1 came back with schedulerName default-scheduler, not kai-scheduler",
     ""),
    ("GPU-12 pod of another namespace", _with_pod(K, "gpu-frac-1",
                                                  _set("metadata.namespace", "default")),
     "GPU-12", "fail",
     f"gpu-frac-1 was read from namespace default, not {NS}",
     ""),
    ("GPU-12 deleted before read back", _with_pod(K, "gpu-frac-2", pod=None),
     "GPU-12", "fail",
     "gpu-frac-2 was not found when read back (running after 1s: Running, schedulerName "
     "kai-scheduler, node gpu-small): it was deleted while verify ran",
     ""),
    # ---------------------------------------------------------------- GPU-13
    ("GPU-13 refused for capacity", K, "GPU-13", "pass",
     "",
     f"gpu-over-capacity (9 x nvidia.com/gpu) stays Pending; KAI (pod condition): {TOO_BIG}"),
    ("GPU-13 said in its event only", _with_pod(K, "gpu-over-capacity",
                                                _set("status.conditions", None)),
     "GPU-13", "pass",
     "",
     "gpu-over-capacity (9 x nvidia.com/gpu) stays Pending; KAI (event Unschedulable): "
     f"{TOO_BIG}"),
    ("GPU-13 queue and capacity", _with_pod(K, "gpu-over-capacity",
                                            _kai_refused(OVER_LIMIT_RESEARCH)),
     "GPU-13", "pass",
     "",
     "gpu-over-capacity (9 x nvidia.com/gpu) stays Pending; KAI (event Unschedulable): "
     f"{TOO_BIG}"),
    ("GPU-13 refused for its queue", _with_pod(
        _events(K, "gpu-over-capacity", ("Unschedulable", OVER_LIMIT_RESEARCH),
                source="kai-scheduler"), "gpu-over-capacity", _kai_refused(OVER_LIMIT_RESEARCH)),
     "GPU-13", "fail",
     "KAI refused gpu-over-capacity for its queue (research), not for capacity: OverLimit: "
     "research quota has reached the allowable limit of GPUs. Limit is 8 GPUs, currently 1 "
     "GPUs allocated and workload requested 9 GPUs.; kubectl get queues.scheduling.run.ai "
     "research -o yaml",
     ""),
    ("GPU-13 read back refused", _with_pod(K, "gpu-over-capacity", **_pod_unread(
        _get_pod_refused("gpu-over-capacity"))), "GPU-13", "error",
     "whether KAI placed it is unknown: gpu-over-capacity: Pod could not be read (403 "
     'Forbidden: grant get on pods, docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-13 events refused", _with_pod(K, "gpu-over-capacity", _set("status.conditions", None),
                                        **_events_unread(_events_refused())),
     "GPU-13", "error",
     "gpu-over-capacity (9 x nvidia.com/gpu) is Pending, but KAI's reason is unknown: "
     "gpu-over-capacity: Event could not be read (403 Forbidden: grant list on events, "
     'docs/verify-any-cluster.md "RBAC")',
     ""),
    ("GPU-13 events refused, said on the pod", _with_pod(
        K, "gpu-over-capacity", **_events_unread(_events_refused())), "GPU-13", "pass",
     "",
     f"gpu-over-capacity (9 x nvidia.com/gpu) stays Pending; KAI (pod condition): {TOO_BIG}"),
    ("GPU-13 nothing said", _with_pod(K, "gpu-over-capacity", _set("status.conditions", None),
                                      events=(), outcome="timeout", waited=30.0,
                                      last_seen=PENDING_KAI), "GPU-13", "fail",
     "gpu-over-capacity: timeout after 30s (Pending, schedulerName kai-scheduler, node -); "
     f"no events; kubectl -n {NS} describe pod gpu-over-capacity (run "
     "verify with --keep)",
     ""),
    ("GPU-13 placed", _shape(b.shape_kai_idle_node, _kai, place_anyway=True),
     "GPU-13", "fail",
     "KAI placed gpu-over-capacity (9 x nvidia.com/gpu) on gpu-big, more GPUs than any node "
     "has: kubectl get node gpu-big -o yaml (allocatable)",
     ""),
    ("GPU-13 not attempted", _without_pod(K, "gpu-over-capacity"), "GPU-13", "fail",
     "gpu-over-capacity was not attempted",
     ""),
    ("GPU-13 create refused", KAI_QUOTA, "GPU-13", "fail",
     "the API refused gpu-over-capacity: apply Pod "
     f"{NS}/gpu-over-capacity at {SERVER}: 403 "
     'Forbidden: pods "gpu-over-capacity" is forbidden: exceeded quota: pods, requested: '
     "pods=1, used: pods=0, limited: pods=0",
     ""),
    ("GPU-13 another run's pod", _with_pod(K, "gpu-over-capacity", _label(RUN, "fedcba987654")),
     "GPU-13", "fail",
     f"{NS}/gpu-over-capacity carries gpulab.dev/run='fedcba987654', "
     "not this run's '0123456789ab'",
     ""),
    ("GPU-13 deleted before read back", _with_pod(K, "gpu-over-capacity", pod=None),
     "GPU-13", "fail",
     "gpu-over-capacity was not found when read back (refused after 0s: Pending, "
     f"schedulerName kai-scheduler, node -; events: {TOO_BIG}): it was deleted while verify "
     "ran",
     ""),
    # KAI never saw it: no condition, no event of KAI's
    ("GPU-13 another scheduler", _with_pod(
        K, "gpu-over-capacity", _all(_set("spec.schedulerName", "default-scheduler"),
                                     _set("status.conditions", None)), events=(),
        edit_created=_set("spec.schedulerName", "default-scheduler")),
     "GPU-13", "fail",
     "gpu-over-capacity came back with schedulerName default-scheduler, not kai-scheduler",
     ""),
]

TITLES = {"GPU-01": "HAMi serving", "GPU-02": "admission through HAMi",
          "GPU-03": "sharing one card", "GPU-04": "core over-commit refused",
          "GPU-05": "memory over-commit refused", "GPU-06": "isolation between clusters",
          "GPU-11": "KAI serving", "GPU-12": "fractions share one GPU",
          "GPU-13": "over-capacity refused"}


@pytest.mark.parametrize(("name", "build", "check", "status", "reason", "evidence"), ROWS,
                         ids=[r[0].replace(" ", "_") for r in ROWS])
def test_the_verdict_reads_as_written(name: str, build: Build, check: str, status: str,
                                      reason: str, evidence: str) -> None:
    check, *member = check.split(" ")
    assert _verdict(build, check, *member) == {
        "id": check, "title": TITLES[check], "tenant": (member or ["prod"])[0],
        "status": status, "evidence": evidence, "reason": reason, "seconds": 0.0}


@pytest.mark.parametrize(("build", "ids"), [
    (_healthy_hami, ["GPU-01", "GPU-02", "GPU-03", "GPU-04", "GPU-05", "GPU-06"]),
    (_healthy_kai, ["GPU-11", "GPU-12", "GPU-13", "GPU-06"]),
    (_shape(b.shape_one_card_per_node, fail={"server_version": KubeApiError(
        f"get server version at {SERVER}: connection failed (connection refused)", status=0)}),
     ["GPU-01", "GPU-02", "GPU-03", "GPU-04", "GPU-05", "GPU-06"]),
    (_shape(b.shape_kai_idle_node, _kai, fail={"server_version": KubeApiError(
        f"get server version at {SERVER}: connection failed (connection refused)", status=0)}),
     ["GPU-01", "GPU-02", "GPU-03", "GPU-04", "GPU-05", "GPU-06"]),
    (_tenants(("staging", OTHER, _rejected(OTHER), None)),
     ["GPU-01", "GPU-02", "GPU-03", "GPU-04", "GPU-05", "GPU-06"] * 2),
], ids=["hami", "kai", "hami-unanswered", "kai-unanswered", "two-clusters"])
def test_each_cluster_gets_its_checks_in_order(build: Build, ids: list[str]) -> None:
    """HAMi's six checks, or KAI's three and GPU-06, once per cluster, in the order the table
    lists them (an API server that does not answer shows no scheduler: HAMi's list)."""
    assert [r.id for r in evaluate(build()).results] == ids
