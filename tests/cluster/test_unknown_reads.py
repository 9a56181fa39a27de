"""Unknown is not absent (issue #22 item 2): every read of `verify --kubeconfig` in turn answers
403 (refused), 404 (not served: the API group is not there, i.e. not installed), 500 and not at
all (a timeout), over HTTP (kmock), and the outcome stays what it is from observation to report:

- 404: what the read would hold is absent ("not found", "none", `[]`), and a refusal may rest
  on it;
- 403, 500, timeout: unknown and why, in `--inspect` text, in `-o json` (`state: unknown`,
  `null`, `unknown: {fact: why}`), in the plan ("cannot plan, because <Kind> could not be read
  (...)" when the plan needs it, else the plan of the healthy cluster) and in JUnit (an `error`,
  never a `failure`); RBAC is named (the grant) for a 403 only.

Two shapes: HAMi (one L4 per node, with a Kamaji TenantControlPlane and a vCluster) and KAI (an
idle 4-GPU node, queues, GPU sharing on). The read-back of verify's own pods and their events is
run against the fake cluster where the test plays HAMi.
"""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.cluster.execute import Timeouts
from gpulab.cluster.inventory import GRANTS
from gpulab.cluster.observe import UNANSWERED
from gpulab.cluster.run import run_verify
from gpulab.errors import GpulabError
from gpulab.verify.observe import Clock
from tests import kube_wire as kw
from tests.cluster import builders as b
from tests.cluster.fake_hami import FakeHami
from tests.cluster.test_kmock import served
from tests.kamaji_hami.fakes import FakeClock

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

runner = CliRunner()
MODES = ("403", "404", "500", "timeout")
STATUS = {  # what an API server answers, as Kubernetes' Status
    "403": (403, "Forbidden", kw.forbidden_message("system:serviceaccount:ci:verify", "list",
                                                   "pods")),
    "404": (404, "NotFound", "the server could not find the requested resource"),
    "500": (500, "InternalError", "etcdserver: request timed out"),
}


def _hami_objects() -> list[dict[str, Any]]:
    tcp = {"apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "TenantControlPlane",
           "metadata": {"name": "tenant-a", "namespace": "tenants"}}
    vcluster = b.workload("StatefulSet", "team-a", "vcluster-team-a", {"app": "vcluster"},
                          ["ghcr.io/loft-sh/vcluster-pro:0.35.3"])
    return [*b.shape_one_card_per_node().objects.values(), tcp, vcluster]


def _kai_objects() -> list[dict[str, Any]]:
    return list(b.shape_kai_idle_node().objects.values())


SHAPES: dict[str, Callable[[], list[dict[str, Any]]]] = {"hami": _hami_objects,
                                                         "kai": _kai_objects}
HEALTHY = {"hami": "card node-3/GPU-l4-3", "kai": "KAI, queue research, fractions on node "
                                                  "gpu-small"}


@dataclass(frozen=True)
class Read:
    """One read of discovery: the request answering for it, the request an API server without
    its group answers 404 (discovery, for custom resources), the fact it establishes
    (Inventory.unknown's key) and the inspection line showing it ('' when none does)."""

    kind: str
    path: str
    not_served: str
    fact: str
    line: str = ""


def _reads(shape: str) -> list[Read]:
    scheduler = "HAMi scheduler" if shape == "hami" else "KAI scheduler"
    reads = [
        Read("Node", "/api/v1/nodes", "/api/v1/nodes", "GPU nodes", "GPU nodes:"),
        Read("Pod", "/api/v1/pods", "/api/v1/pods", "GPU users", "GPU users:"),
        Read("Deployment", "/apis/apps/v1/deployments", "/apis/apps/v1/deployments", scheduler,
             f"{scheduler}:"),
        Read("DaemonSet", "/apis/apps/v1/daemonsets", "/apis/apps/v1/daemonsets",
             "HAMi device plugin", "HAMi device plugin:"),
        Read("StatefulSet", "/apis/apps/v1/statefulsets", "/apis/apps/v1/statefulsets",
             "vCluster", "tenancy:"),
        Read("MutatingWebhookConfiguration",
             "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
             "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
             "HAMi webhook", "HAMi webhook:"),
        Read("Queue", "/apis/scheduling.run.ai/v2/queues", "/apis/scheduling.run.ai/v2",
             "queues", "KAI GPU sharing:" if shape == "kai" else ""),
        Read("Config", "/apis/kai.scheduler/v1/configs/kai-config", "/apis/kai.scheduler/v1",
             "KAI GPU sharing", "KAI GPU sharing:" if shape == "kai" else ""),
        Read("TenantControlPlane", "/apis/kamaji.clastix.io/v1alpha1/tenantcontrolplanes",
             "/apis/kamaji.clastix.io/v1alpha1/tenantcontrolplanes", "Kamaji", "tenancy:"),
    ]
    if shape == "hami":  # KAI's shape has no HAMi scheduler to mount it: it is never read
        reads.append(Read("ConfigMap",
                          "/api/v1/namespaces/kube-system/configmaps/hami-scheduler-device",
                          "/api/v1/namespaces/kube-system/configmaps/hami-scheduler-device",
                          "HAMi device config", "HAMi settings:"))
    return reads


# What the plan needs on each shape: a read of these that fails is "cannot plan".
NEEDED = {"hami": {"Node", "Pod", "Deployment"},
          "kai": {"Node", "Pod", "Deployment", "Queue", "Config"}}
# With the kind absent (404), the plan of the healthy cluster, or the refusal the absence makes.
ABSENT = {
    ("hami", "Node"): "refused: no node has cards registered by HAMi",
    ("hami", "Pod"): "card node-1/GPU-l4-1",  # its user is not there either: the card is idle
    ("hami", "Deployment"): "refused: HAMi's scheduler is not serving (not found)",
    ("kai", "Node"): "refused: no node advertises nvidia.com/gpu",
    ("kai", "Deployment"): "refused: KAI's scheduler is not serving (no Deployment",
    ("kai", "Queue"): "refused: no leaf queue can hold",
    ("kai", "Config"): "refused: KAI's GPU sharing is off (no Config kai-config",
}
# GPU-01 (HAMi) or GPU-11 (KAI) fails on an absence these make (a part known to be missing).
ABSENT_FAILS = {("hami", "Deployment"), ("hami", "DaemonSet"),
                ("hami", "MutatingWebhookConfiguration"), ("kai", "Deployment"),
                ("kai", "Config")}


def _react(km: Any, read: Read, mode: str) -> None:
    if mode == "timeout":
        km[f"get {read.path}"] << (lambda: asyncio.sleep(4)) << b"{}"
        return
    status, reason, message = STATUS[mode]
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": status}
    km[f"get {read.not_served if mode == '404' else read.path}"] << status << body


def _state(cluster: dict[str, Any], fact: str) -> str:
    """found | absent | unknown, as -o json says it."""
    unknown = cluster["unknown"]
    components = {"HAMi scheduler": "hami_scheduler", "HAMi webhook": "hami_webhook",
                  "HAMi device plugin": "hami_device_plugin", "KAI scheduler": "kai_scheduler"}
    if fact in components:
        state: str = cluster[components[fact]]["state"]
        assert (state == "unknown") == (fact in unknown)
        return state
    collections = {"GPU nodes": "gpu_nodes", "GPU users": "gpu_users", "queues": "queues"}
    if fact in collections:
        value = cluster[collections[fact]]
        assert (value is None) == (fact in unknown)
        return "unknown" if value is None else "found" if value else "absent"
    if fact in unknown:
        return "unknown"
    if fact == "KAI GPU sharing":
        return "found" if cluster["kai_config_found"] else "absent"
    if fact == "HAMi device config":
        return "found" if cluster["hami_resources_from"].startswith("ConfigMap") else "absent"
    return "found" if any(t.startswith(f"{fact}:") for t in cluster["tenancy"]) else "absent"


def _planned(plan: dict[str, Any]) -> str:
    if plan["refusals"]:
        return "refused: " + "; ".join(plan["refusals"])
    if plan["card"]:
        return f"card {plan['card']['node']}/{plan['card']['device_id']}"
    return f"KAI, queue {plan['queue']}, fractions on node {plan['node']}"


def _verify(tmp_path: Path, shape: str, read: Read | None, mode: str
            ) -> tuple[dict[str, Any], str, ET.Element]:
    """-o json (live), the inspection and plan as text, and JUnit (both from the recording)."""
    with served(SHAPES[shape]()) as (url, km):
        if read is not None:
            _react(km, read, mode)
        config = b.kubeconfig_file(tmp_path / "prod.kubeconfig", url)
        limit = ["--request-timeout", "1s"] if mode == "timeout" else []
        live = runner.invoke(app, ["verify", "--kubeconfig", str(config), "--dry-run", "-o",
                                   "json", "--record", str(tmp_path / "rec"), *limit])
    assert live.exit_code in (0, 3), live.output
    text = runner.invoke(app, ["verify", "--replay", str(tmp_path / "rec"), "--dry-run"])
    assert text.exit_code == live.exit_code, text.output
    junit = runner.invoke(app, ["verify", "--replay", str(tmp_path / "rec"), "--junit",
                                str(tmp_path / "verify.xml")])
    assert junit.exit_code == 3, junit.output  # a replay without a run: GPU-02.. are errors
    return json.loads(live.stdout), text.stdout, ET.parse(tmp_path / "verify.xml").getroot()


def _cases() -> list[Any]:
    return [pytest.param(shape, read, mode, id=f"{shape}-{read.kind}-{mode}")
            for shape in SHAPES for read in _reads(shape) for mode in MODES]


def test_the_healthy_shapes_plan(tmp_path: Path) -> None:
    for shape in SHAPES:
        (tmp_path / shape).mkdir()
        data, text, junit = _verify(tmp_path / shape, shape, None, "")
        (cluster,), (plan,) = data["clusters"], data["plans"]
        assert cluster["unknown"] == {} and cluster["unseen"] == []
        assert _planned(plan) == HEALTHY[shape]
        assert "unknown" not in text and "grant" not in text
        assert junit.find(".//failure") is None


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "read", "mode"), _cases())
def test_each_read_is_found_absent_or_unknown_and_why(tmp_path: Path, shape: str, read: Read,
                                                      mode: str) -> None:
    data, text, junit = _verify(tmp_path, shape, read, mode)
    (cluster,), (plan,) = data["clusters"], data["plans"]
    lines = text.splitlines()
    shown = [line for line in lines if read.line and line.startswith(f"  {read.line}")]
    serving = "GPU-01 HAMi serving" if shape == "hami" else "GPU-11 KAI serving"
    check = junit.find(f".//testcase[@name='{serving}']")
    assert check is not None

    if mode == "404":  # not served: read, and absent
        assert cluster["unseen"] == [] and cluster["unknown"] == {}, cluster["unknown"]
        assert _state(cluster, read.fact) == "absent"
        assert _planned(plan).startswith(ABSENT.get((shape, read.kind), HEALTHY[shape]))
        assert "unknown" not in text and "grant" not in text
        assert (check.find("failure") is not None) == ((shape, read.kind) in ABSENT_FAILS)
        return

    why = cluster["unknown"][read.fact]
    assert _state(cluster, read.fact) == "unknown"
    assert [u.split(":")[0] for u in cluster["unseen"]] == [read.kind]
    if mode == "403":
        assert why.startswith(f"unknown: {read.kind} could not be read (403 Forbidden: grant "
                              f"{GRANTS[read.kind]}, docs/verify-any-cluster.md \"RBAC\")"), why
    elif mode == "500":
        assert why.startswith(f"unknown: {read.kind} could not be read (500 InternalError: "
                              f"etcdserver: request timed out"), why
    else:
        assert why == UNANSWERED
    if mode != "403":  # RBAC is named for a refusal only
        assert "grant" not in text and "RBAC" not in text and "grant" not in json.dumps(data)

    # the inspection: the line of the fact says it is unknown, never "not found" or "none"
    if read.line:
        assert shown and all(why in line for line in shown), (why, shown)
        assert not [line for line in shown if "not found" in line or "none" in line]
    if read.kind == "Pod":  # who uses a card or a node, and how much, is unknown too
        assert not [line for line in lines if "in use 0 MiB" in line]
        assert {(c["used_memory"], c["used_cores"], c["users"]) for c in cluster["cards"]} <= {
            (None, None, None)}
        assert {n["users"] for n in cluster["gpu_nodes"]} == {None}
        assert [line for line in lines if line.startswith("  card:")] == [
            line for line in lines if line.endswith(f"; in use: {why}")]

    # the plan: refused only for what is known; what it needs and could not read: cannot plan
    planned = _planned(plan)
    if mode == "timeout":
        assert planned.startswith(f"refused: discovery did not finish: {read.kind}: {why}")
    elif read.kind in NEEDED[shape]:
        assert planned.startswith(f"refused: cannot plan, because "
                                  f"{why.removeprefix('unknown: ')}"), planned
    else:
        assert planned == HEALTHY[shape]

    # JUnit: errors, never a failure resting on what was not read
    assert junit.find(".//failure") is None, ET.tostring(junit, encoding="unicode")
    component = read.fact in ("HAMi scheduler", "HAMi webhook", "HAMi device plugin") \
        if shape == "hami" else read.fact in ("KAI scheduler", "KAI GPU sharing")
    error = check.find("error")
    assert (error is not None) == component
    if error is not None:
        assert why in error.get("message", "")
    if planned.startswith("refused"):
        messages = [e.get("message", "") for e in junit.iter("error")]
        assert any(plan["refusals"][0] in m for m in messages)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["403", "500", "timeout"])
def test_a_server_version_that_cannot_be_read_is_not_silence(tmp_path: Path, mode: str) -> None:
    """/version answered with an error is "could not be read", unanswered "did not answer"; the
    plan refuses, every check is an error, and the exit code is 4."""
    with served(_hami_objects()) as (url, km):
        _react(km, Read("version", "/version", "/version", ""), mode)
        config = b.kubeconfig_file(tmp_path / "prod.kubeconfig", url)
        limit = ["--request-timeout", "1s"] if mode == "timeout" else []
        text = runner.invoke(app, ["verify", "--kubeconfig", str(config), "--dry-run", *limit])
        runner.invoke(app, ["verify", "--kubeconfig", str(config), "--junit",
                            str(tmp_path / "verify.xml"), *limit])
    assert text.exit_code == 4, text.output
    said = "did not answer" if mode == "timeout" else "could not be read"
    # the inspection's line, an error on stderr; the plan's refusal is the dry run's output
    assert f"({url}): {said}: get server version at {url}" in text.stderr
    assert f"({url}): {said}" not in text.stdout
    assert f"- the API server {said}: get server version" in text.stdout
    junit = ET.parse(tmp_path / "verify.xml").getroot()
    assert junit.find(".//failure") is None
    messages = [e.get("message", "") for e in junit.iter("error")]
    assert len(messages) == 6  # GPU-01..06
    assert all(m.startswith(f"the API server at {url} {said}: get server version at {url}")
               for m in messages), messages


# --------------------------------------------------------------------------- the run's reads

TIMEOUTS = Timeouts(running=60, refused=30, cleanup=10, interval=1)


def _kube_error(mode: str, what: str) -> GpulabError:
    from gpulab.adapters.kube import KubeApiError

    if mode == "timeout":
        return KubeApiError(f"list {what} at https://gpu.example:6443: no answer within 30s",
                            status=0, reason="Timeout")
    status, reason, message = STATUS[mode]
    return KubeApiError(f"list {what} at https://gpu.example:6443: {status} {reason} "
                        f"({message})", status=status, reason=reason)


@pytest.mark.parametrize("mode", MODES)
def test_events_that_cannot_be_read_leave_the_refusal_checks_unknown(mode: str) -> None:
    """GPU-04 and GPU-05 need the pod's own event naming HAMi's reason: events refused (403),
    failing (500) or unanswered make them errors (with the grant for a 403 only); events not
    served (404) are none, and the checks fail for the missing event."""
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    api.fail["events"] = _kube_error(mode, "Event list in gpulab-verify")
    report = run_verify([("prod", "https://gpu.example:6443", api)], timeouts=TIMEOUTS,
                        clock=Clock(clock.now, clock.sleep))
    verdicts = {r.id: r for r in report.results}
    assert [verdicts[c].status for c in ("GPU-01", "GPU-02", "GPU-03")] == ["pass"] * 3
    for check, pod, reason in (("GPU-04", "gpu-share-4", "CardInsufficientCore"),
                               ("GPU-05", "gpu-mem-big", "CardInsufficientMemory")):
        result = verdicts[check]
        if mode == "404":
            assert result.status == "fail"
            assert f"no event of its own names {reason}" in result.reason
            continue
        assert result.status == "error", result
        assert result.reason.startswith(f"{pod} is Pending, but whether HAMi said {reason} is "
                                        f"unknown: {pod}: Event could not be read (")
        assert ("grant list on events" in result.reason) == (mode == "403")


@pytest.mark.parametrize("mode", ["403", "500", "timeout"])
def test_a_pod_that_cannot_be_read_back_is_not_gone(mode: str) -> None:
    """The last read of verify's own pods failing is not "not found when read back": the checks
    that need the pod are errors."""
    api, clock = b.shape_one_card_per_node(), FakeClock()
    FakeHami(api, clock).attach()
    original = api.get

    def get(api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        if kind == "Pod" and sum(1 for c in api.calls if c[:2] == ("apply", "Pod")) == 5:
            raise _kube_error(mode, f"Pod {name}")  # once the last pod is created
        return original(api_version, kind, name, namespace)

    api.get = get  # type: ignore[method-assign]
    report = run_verify([("prod", "https://gpu.example:6443", api)], timeouts=TIMEOUTS,
                        clock=Clock(clock.now, clock.sleep))
    verdicts = {r.id: r for r in report.results}
    assert verdicts["GPU-01"].status == "pass"
    for check in ("GPU-02", "GPU-03", "GPU-04", "GPU-05"):
        assert verdicts[check].status == "error", verdicts[check]
        assert "could not be read" in verdicts[check].reason
        assert "not found when read back" not in verdicts[check].reason
