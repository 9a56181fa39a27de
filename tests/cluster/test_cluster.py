"""`verify --kubeconfig --inspect / --dry-run` on clusters shaped unlike the labs.

Each shape (tests/cluster/builders.py) is read through `read_cluster` as a real API server would
be, recorded, read back strictly, and judged: what discovery finds, which card the plan picks and
the pods it would create, or why it refuses. Discovery must never write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpulab.cli import app
from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import READS, read_cluster
from gpulab.cluster.plan import plan
from gpulab.cluster.record import read_snapshots, write_snapshots
from gpulab.errors import AdapterError, UsageError
from tests.cluster import builders as b
from tests.schemas import validate_object

runner = CliRunner()
RUN = "0a1b2c3d4e5f"
SERVER = "https://gpu.example:6443"


def _inspect(shape: str) -> Any:
    api = b.SHAPES[shape]()
    snapshot = read_cluster(api, shape, SERVER)
    assert api.writes() == [], "discovery is read-only"
    return snapshot


@pytest.mark.parametrize("shape", sorted(b.SHAPES))
def test_discovery_reads_everything_and_writes_nothing(shape: str) -> None:
    api = b.SHAPES[shape]()
    read_cluster(api, shape, SERVER)
    assert api.writes() == []
    listed = {call[1] for call in api.calls if call[0] in ("list_objects", "get")}
    hami = any(o["kind"] == "Deployment" and o["metadata"]["name"] == "hami-scheduler"
               for o in api.objects.values())
    # HAMi's device ConfigMap is only got when HAMi's scheduler is there to mount it
    assert listed == {kind for _v, kind, _n in READS} - (set() if hami else {"ConfigMap"})
    assert [c for c in api.calls if c[:2] == ("list_objects", "ConfigMap")] == []


# shape -> (HAMi scheduler, device plugin detail, KAI, tenancy, chosen card, refusal words)
EXPECTED: dict[str, tuple[bool, str, bool, str, str | None, str]] = {
    "eight-cards-one-node": (True, "real", False, "", "dgx-1/GPU-a100-1", ""),
    "one-card-per-node": (True, "mock", False, "", "node-3/GPU-l4-3", ""),
    "no-hami": (False, "", False, "", None, "gpulab's GPU checks need one of them"),
    "kai-with-queues": (False, "", True, "vCluster: 1 control plane(s)", None,
                        "no GPU node can take the fractions (gpu-1: in use by "
                        "vcluster-team-a/notebook-x)"),
    "kai-idle-node": (False, "", True, "", "KAI", ""),
    "busy-and-small-split": (True, "real", False, "", None,
                             "split 2, under 4: a fourth pod would be refused for time slicing"),
    "kamaji-management": (True, "real", False, "Kamaji: 2 TenantControlPlane(s)",
                          "h100-1/GPU-h100-0", ""),
    "hami-eligibility": (True, "real", False, "", "gpu-a/GPU-0", ""),
    "kai-eligibility": (False, "", True, "", "KAI", ""),
}


@pytest.mark.parametrize("shape", sorted(b.SHAPES))
def test_each_shape_is_found_and_planned_as_it_is(shape: str) -> None:
    has_hami, plugin, has_kai, tenancy, card, refusal = EXPECTED[shape]
    found = inventory(_inspect(shape))
    assert found.hami_scheduler.found is has_hami
    assert found.hami_webhook.found is has_hami
    assert plugin in found.hami_device_plugin.detail
    assert found.has_kai is has_kai
    assert any(tenancy in t for t in found.tenancy) if tenancy else found.tenancy == ()
    planned = plan(found, RUN)
    if card is None:
        assert not planned.runnable and planned.objects() == []
        assert refusal in " ".join(planned.refusals)
        return
    if card == "KAI":
        return  # test_a_kai_plan_asks_fractions_and_more_than_any_node
    assert planned.runnable and planned.card is not None
    assert f"{planned.card.node}/{planned.card.device_id}" == card
    objects = planned.objects()
    assert [o["metadata"]["name"] for o in objects] == [
        f"gpulab-verify-{RUN}", "gpu-share-1", "gpu-share-2", "gpu-share-3", "gpu-share-4",
        "gpu-mem-big"]
    for obj in objects:
        validate_object(obj)
        assert obj["metadata"]["labels"]["gpulab.dev/run"] == RUN
    for pod in objects[1:]:
        assert pod["metadata"]["namespace"] == f"gpulab-verify-{RUN}"
        assert pod["metadata"]["annotations"] == {"nvidia.com/use-gpuuuid": card.split("/")[1]}


def test_sizes_follow_the_card_found() -> None:
    """The same rule as the labs, on the card picked: an L4 gets the L4's sizes."""
    planned = plan(inventory(_inspect("one-card-per-node")), RUN)
    sizes = [(p.name, p.memory_mib, p.cores) for p in planned.pods]
    assert sizes == [("gpu-share-1", 6000, 30), ("gpu-share-2", 6000, 30),
                     ("gpu-share-3", 6000, 30), ("gpu-share-4", 6000, 30),
                     ("gpu-mem-big", 30000, 10)]
    assert any("node lock" in note for note in planned.notes), "the mock plugin's caveat"


def test_the_busiest_card_is_never_picked_and_the_users_are_named() -> None:
    found = inventory(_inspect("eight-cards-one-node"))
    busy = next(c for c in found.cards if c.device_id == "GPU-a100-0")
    assert busy.users == ("research/train-llm",) and busy.used_memory == 40000
    assert not next(c for c in found.cards if c.device_id == "GPU-a100-3").healthy
    assert found.gpu_users == ("research/train-llm",)


def test_kai_gpu_sharing_queues_and_fraction_users_are_found() -> None:
    found = inventory(_inspect("kai-with-queues"))
    assert found.kai_gpu_sharing == "on"
    assert [q.text() for q in found.queues] == ["org", "team-a (under org)",
                                                "team-b (under org)"]
    assert found.gpu_users == ("vcluster-team-a/notebook-x",), "finished pods hold no GPU"


def test_a_kai_plan_asks_fractions_and_more_than_any_node() -> None:
    planned = plan(inventory(_inspect("kai-idle-node")), RUN)
    assert planned.runnable and planned.scheduler == "kai"
    assert (planned.node, planned.queue) == ("gpu-small", "research"), (
        "the idle node, the leaf queue without a limit (prod's limit 4 cannot hold 9)")
    namespace, first, second, big = planned.objects()
    for obj in (namespace, first, second, big):
        validate_object(obj)
    for frac in (first, second):
        assert frac["metadata"]["annotations"] == {"gpu-fraction": "0.5"}
        assert frac["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-small"}
        assert frac["spec"]["schedulerName"] == "kai-scheduler"
        assert frac["metadata"]["labels"]["kai.scheduler/queue"] == "research"
    assert big["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "9"}}
    assert "nodeSelector" not in big["spec"], "no node at all may hold it"


@pytest.mark.parametrize(("edit", "words"), [
    (lambda objs: objs.__setitem__(("Config", "", "kai-config"), {
        "apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"},
        "spec": {"admission": {"gpuSharing": False}}}), "KAI's GPU sharing is off"),
    (lambda objs: objs.pop(("Queue", "", "research")), "no leaf queue can hold 10 GPUs"),
    (lambda objs: objs[("Deployment", "kai-scheduler", "kai-scheduler-default")]["status"].update(
        readyReplicas=0), "KAI's scheduler is not serving"),
])
def test_a_kai_cluster_verify_cannot_use_is_refused(edit: Any, words: str) -> None:
    api = b.shape_kai_idle_node()
    edit(api.objects)
    planned = plan(inventory(read_cluster(api, "kai", SERVER)), RUN)
    assert not planned.runnable and words in planned.refusals[0], planned.refusals


def test_without_read_access_verify_refuses_instead_of_guessing() -> None:
    api = b.shape_one_card_per_node()
    api.fail["list_objects:Pod"] = AdapterError("list Pod at https://x: 403 Forbidden")
    found = inventory(read_cluster(api, "limited", SERVER))
    assert found.unseen == ("Pod: list Pod at https://x: 403 Forbidden",)
    planned = plan(found, RUN)
    assert not planned.runnable
    assert planned.refusals[0] == (
        'cannot plan, because Pod could not be read (403 Forbidden: grant list on pods, '
        'docs/verify-any-cluster.md "RBAC"): which GPUs are free would be a guess')


def test_an_api_server_that_does_not_answer_is_reported_not_raised() -> None:
    api = b.shape_no_hami()
    api.fail["server_version"] = AdapterError("get /version at https://x: connection refused")
    snapshot = read_cluster(api, "down", SERVER)
    assert snapshot.error == "get /version at https://x: connection refused"
    assert snapshot.nodes is None and api.calls == [("server_version",)]
    assert "the API server did not answer" in plan(inventory(snapshot), RUN).refusals[0]


def test_recordings_round_trip_and_are_read_strictly(tmp_path: Path) -> None:
    snapshots = [_inspect(shape) for shape in sorted(b.SHAPES)]
    write_snapshots(tmp_path / "rec", snapshots)
    assert read_snapshots(tmp_path / "rec") == snapshots
    member = next((tmp_path / "rec").glob("snapshot-no-hami.json"))
    data = json.loads(member.read_text())
    data["snapshot"]["nodes"] = "gpu-1"
    member.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"snapshot.nodes: Input should be a valid"):
        read_snapshots(tmp_path / "rec")


def _recorded(tmp_path: Path, *shapes: str) -> Path:
    write_snapshots(tmp_path / "rec", [_inspect(s) for s in shapes])
    return tmp_path / "rec"


def test_cli_inspect_of_a_recording_prints_what_was_found(tmp_path: Path) -> None:
    rec = _recorded(tmp_path, "eight-cards-one-node", "kai-with-queues")
    result = runner.invoke(app, ["verify", "--replay", str(rec), "--inspect"])
    assert result.exit_code == 0, result.output
    assert "HAMi device plugin:  kube-system/hami-device-plugin (DaemonSet), 1/1 ready; real" in (
        result.stdout)
    assert "KAI GPU sharing:     on; queues: org, team-a (under org)" in result.stdout
    data = json.loads(runner.invoke(app, ["verify", "--replay", str(rec), "--inspect", "-o",
                                          "json"]).stdout)
    assert [c["member"] for c in data["clusters"]] == ["eight-cards-one-node", "kai-with-queues"]
    assert "plans" not in data


def test_cli_dry_run_exits_3_when_verify_would_refuse_anywhere(tmp_path: Path) -> None:
    runnable = _recorded(tmp_path / "a", "one-card-per-node")
    ok = runner.invoke(app, ["verify", "--replay", str(runnable), "--dry-run", "--namespace",
                             "gpu-check"])
    assert ok.exit_code == 0, ok.output
    assert "namespace gpu-check" in ok.stdout and "gpu-mem-big" in ok.stdout
    refused = _recorded(tmp_path / "b", "one-card-per-node", "no-hami")
    result = runner.invoke(app, ["verify", "--replay", str(refused), "--dry-run", "-o", "json"])
    assert result.exit_code == 3
    plans = json.loads(result.stdout)["plans"]
    assert [bool(p["refusals"]) for p in plans] == [False, True]
    assert plans[1]["objects"] == []


def test_cli_a_cluster_that_does_not_answer_exits_4_naming_it(tmp_path: Path) -> None:
    config = b.kubeconfig_file(tmp_path / "prod.yaml")
    result = runner.invoke(app, ["verify", "--kubeconfig", str(config), "--context", "ctx-b",
                                 "--inspect"])
    assert result.exit_code == 4, result.output
    # an error: on stderr, once; nothing found to show on stdout
    assert result.stderr.count("did not answer") == 1
    assert "\nerror: cluster ctx-b (https://127.0.0.1:1): did not answer: " in result.stderr
    assert result.stdout == ""
    assert "not-a-secret" not in result.output


def test_cli_a_run_on_a_cluster_that_does_not_answer_gives_its_reason_once(
        tmp_path: Path) -> None:
    """No cluster answered: one `error:` line on stderr with the server and the deadlines, no
    table of six checks erring for that same reason on stdout."""
    config = b.kubeconfig_file(tmp_path / "prod.yaml")
    result = runner.invoke(app, ["verify", "--kubeconfig", str(config), "--context", "ctx-b"])
    assert result.exit_code == 4, result.output
    assert result.stdout == ""
    assert result.stderr.count("did not answer") == 1
    (line,) = [s for s in result.stderr.splitlines() if s.startswith("error:")]
    assert "the API server at https://127.0.0.1:1 did not answer (deadline: " in line, line
    assert "GPU-0" not in result.stderr


@pytest.mark.parametrize(("args", "words"), [
    (["--kubeconfig", "{cfg}", "--inspect", "--keep"], "--keep and --junit go with a run"),
    (["--kubeconfig", "{cfg}", "--inspect", "-p", "kamaji-hami"], "-p/--name are for labs"),
    (["--kubeconfig", "{cfg}", "--tc", "5"], "--tc does not apply to --kubeconfig"),
    (["--kubeconfig", "{cfg}", "--kubeconfig", "{cfg}", "--context", "a", "--context", "b",
      "--context", "c", "--inspect"], "3 --context for 2 --kubeconfig"),
    (["--kubeconfig", "{missing}", "--inspect"], "is not a readable file"),
    (["--kubeconfig", "{cfg}", "--context", "nope", "--inspect"], "context nope"),
    (["--kubeconfig", "{cfg}", "--inspect", "--namespace", "Bad_NS"], "--namespace 'Bad_NS'"),
    (["--inspect"], "no kubeconfig: $KUBECONFIG names"),
    (["-p", "kamaji-hami", "--context", "a"], "-p/--name are for labs"),
    (["--namespace", "gpu-check"], "--namespace goes with a cluster gpulab did not build"),
    (["--kubeconfig", "{cfg}", "--request-timeout", "soon"], "'soon' is not a duration"),
])
def test_cli_usage_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                                  words: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none.yaml"))
    config = b.kubeconfig_file(tmp_path / "c.yaml")
    argv = [a.format(cfg=config, missing=tmp_path / "missing.yaml") for a in args]
    result = runner.invoke(app, ["verify", *argv])
    assert result.exit_code == 2, result.output
    assert words in result.stderr
    assert "Traceback" not in result.output


def test_the_credential_probe_takes_each_kubeconfig_at_its_context(tmp_path: Path) -> None:
    from gpulab import core
    from gpulab.usecases import anycluster

    first = b.kubeconfig_file(tmp_path / "a.yaml", "https://a.example:6443")
    second = b.kubeconfig_file(tmp_path / "b.yaml", "https://b.example:6443")
    scratch = tmp_path / "scratch"
    members = {m.name: (m.config, m.context)
               for m in core.cluster_members([first, second], ["ctx-b", "ctx-a"])}
    cross = anycluster._cross_gateway({"a": members["ctx-b"], "b": members["ctx-a"]}, scratch)
    gateway = cross("a", "b")
    assert gateway.server == "https://b.example:6443"  # type: ignore[attr-defined]
    assert sorted(p.name for p in scratch.iterdir()) == ["a.kubeconfig", "b.kubeconfig"], (
        "the merged probe file is removed at once")
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in scratch.iterdir())
    assert "current-context: ctx-b" in (scratch / "a.kubeconfig").read_text()


def test_cli_dry_run_of_a_kai_cluster_shows_the_queue_node_and_asks(tmp_path: Path) -> None:
    rec = _recorded(tmp_path, "kai-idle-node")
    result = runner.invoke(app, ["verify", "--replay", str(rec), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "KAI, queue research, fractions on node gpu-small" in result.stdout
    assert "gpu-frac-1         GPU-12  gpu-fraction 0.5" in result.stdout
    assert "gpu-over-capacity  GPU-13  9 x nvidia.com/gpu" in result.stdout


def test_a_cluster_recording_of_another_version_is_refused(tmp_path: Path) -> None:
    rec = _recorded(tmp_path, "no-hami")
    manifest = json.loads((rec / "manifest.json").read_text())
    manifest["version"] = 2
    (rec / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match="is recording version 2; this gpulab reads version 1"):
        read_snapshots(rec)
