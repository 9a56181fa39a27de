"""What the vcluster-kai stack renders, checked against the write-up and tests/data/pinned."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml

from gpulab import naming, stacks
from gpulab.engine.plan import plan_documents
from gpulab.errors import ProfileError
from gpulab.providers.kind import cluster_facts, kind_steps
from gpulab.providers.kind.config import kind_config
from gpulab.stacks import parse_profile
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile
from gpulab.stacks.vcluster_kai.steps import verify_previews
from tests.rendered import render as helm_template
from tests.schemas import pinned_data, validate_object

# Verbatim from the vCluster + KAI write-up, step 5 (create-queues.yaml).
WRITE_UP_QUEUES = list(yaml.safe_load_all("""
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: ml-org
spec:
  resources:
    gpu: { quota: 1, limit: -1, overQuotaWeight: 1 }
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-nlp
spec:
  parentQueue: ml-org
  priority: 100
  resources:
    gpu: { quota: 0.33, limit: 1, overQuotaWeight: 1 }
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-vision
spec:
  parentQueue: ml-org
  priority: 100
  resources:
    gpu: { quota: 0.33, limit: 1, overQuotaWeight: 1 }
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-recommender
spec:
  parentQueue: ml-org
  priority: 100
  resources:
    gpu: { quota: 0.33, limit: 1, overQuotaWeight: 1 }
"""))
# Verbatim from the write-up, step 6 (vcluster.yaml).
WRITE_UP_VCLUSTER = yaml.safe_load("""
experimental:
  syncSettings:
    setOwner: false
sync:
  fromHost:
    nodes:
      enabled: true
      selector:
        all: true
""")
UNLIMITED = {"quota": 0, "limit": -1, "overQuotaWeight": 1}


@cache
def vcluster_schema() -> dict[str, Any]:
    return json.loads((pinned_data() / "vcluster_v0.35.3_chart_values.schema.json").read_text())


def validate_vcluster_values(values: dict[str, Any]) -> None:
    schema = vcluster_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(values)


def contains(big: Any, small: Any) -> bool:
    if isinstance(small, dict):
        return isinstance(big, dict) and all(contains(big.get(k), v) for k, v in small.items())
    return bool(big == small)


# --------------------------------------------------------------------------- queues


def test_queues_are_the_write_up_plus_explicit_cpu_and_memory_limits(
        kai_profile: VclusterKaiProfile) -> None:
    rendered = kr.queue_objects(kai_profile)
    want = WRITE_UP_QUEUES
    assert [q["metadata"]["name"] for q in rendered] == [q["metadata"]["name"] for q in want]
    for ours, theirs in zip(rendered, want, strict=True):
        assert contains(ours, theirs), (ours, theirs)
        resources = ours["spec"]["resources"]
        assert resources["cpu"] == resources["memory"] == UNLIMITED
        for resource in resources.values():  # every limit explicit: omitted means 0 in KAI
            assert set(resource) == {"quota", "limit", "overQuotaWeight"}


def test_queues_validate_against_kais_crd(kai_profile: VclusterKaiProfile) -> None:
    for queue in kr.queue_objects(kai_profile):
        validate_object(queue)


def test_the_crd_check_catches_a_misspelt_queue_key(kai_profile: VclusterKaiProfile) -> None:
    queue = copy.deepcopy(kr.queue_objects(kai_profile)[1])
    queue["spec"]["resources"]["gpu"]["overquotaWeight"] = 1
    with pytest.raises(jsonschema.ValidationError, match="overquotaWeight"):
        validate_object(queue)
    queue = copy.deepcopy(kr.queue_objects(kai_profile)[1])
    queue["spec"]["parent"] = "ml-org"
    with pytest.raises(jsonschema.ValidationError):
        validate_object(queue)


def test_display_name_and_unset_priority(kai_profile: VclusterKaiProfile) -> None:
    text = yaml.safe_dump(kai_profile.model_dump(mode="json"), sort_keys=False)
    data = yaml.safe_load(text)
    data["org_queue"]["display_name"] = "ML organisation"
    data["teams"][0]["queue"]["priority"] = None
    profile = parse_profile(yaml.safe_dump(data))
    assert isinstance(profile, VclusterKaiProfile)
    org, nlp = kr.queue_objects(profile)[:2]
    assert org["spec"]["displayName"] == "ML organisation"
    assert "priority" not in nlp["spec"]
    validate_object(org)


# --------------------------------------------------------------------------- vCluster


def test_vcluster_values_follow_the_write_up_and_validate(kai_profile: VclusterKaiProfile
                                                          ) -> None:
    for team in kai_profile.teams:
        release = _release(kai_profile, team)
        assert (release.name, release.namespace, release.chart, release.repo,
                release.version) == (team.name, f"vcluster-{team.name}", "vcluster",
                                     "https://charts.loft.sh", "0.35.3")
        values = release.values
        assert contains(values, WRITE_UP_VCLUSTER)
        assert values["controlPlane"]["service"] == {
            "spec": {"type": "NodePort"}, "httpsNodePort": team.api_node_port,
            "kubeletNodePort": team.api_node_port - 1000}
        # reached on the host's loopback, on every host (kind publishes the NodePort there)
        assert values["exportKubeConfig"] == {"server": f"https://127.0.0.1:{team.host_port}"}
        assert values["controlPlane"]["proxy"] == {"extraSANs": ["127.0.0.1", "localhost"]}
        assert values["controlPlane"]["statefulSet"]["image"]["repository"] == (
            "loft-sh/vcluster-oss")  # the profile's values merge over gpulab's
        validate_vcluster_values(values)


@pytest.mark.helm
def test_every_vcluster_service_port_has_its_own_fixed_node_port(
        kai_profile: VclusterKaiProfile) -> None:
    """The chart's Service, rendered by the real `helm template` (vCluster 0.35.3
    templates/service.yaml:26-45): besides the API (`httpsNodePort`) it exposes the kubelet port
    10250 (proxyKubelets.byHostname, on by default) at `kubeletNodePort`, 0 by default, which
    the API server fills with any free NodePort, perhaps another team's fixed API port. Every
    NodePort of every team is set, and all differ (issue #20 6c)."""
    seen: dict[int, str] = {}
    for team in kai_profile.teams:
        release = _release(kai_profile, team)
        validate_vcluster_values(release.values)
        objects = helm_template("vcluster", release.name, release.namespace, release.values)
        exposed = [o for o in objects if o["kind"] == "Service"
                   and o["spec"].get("type") in ("NodePort", "LoadBalancer")]
        assert [o["metadata"]["name"] for o in exposed] == [team.name]
        ports = {p["name"]: p.get("nodePort") for p in exposed[0]["spec"]["ports"]}
        assert ports == {"https": team.api_node_port, "kubelet": team.kubelet_node_port}
        for name, node_port in ports.items():
            assert isinstance(node_port, int) and node_port > 0, (team.name, name, node_port)
            assert node_port not in seen, (f"{team.name} {name}", seen[node_port])
            seen[node_port] = f"{team.name} {name}"
    assert len(seen) == 2 * len(kai_profile.teams)


def test_the_vcluster_schema_rejects_unknown_keys(kai_profile: VclusterKaiProfile) -> None:
    values = _release(kai_profile, kai_profile.teams[0]).values
    for path in (("experimental", "syncSettings", "setOwners"), ("sync", "fromHost", "node"),
                 ("exportKubeconfig",)):
        bad = copy.deepcopy(values)
        target = bad
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = False
        with pytest.raises(jsonschema.ValidationError, match="Additional properties"):
            validate_vcluster_values(bad)


def _kind_config(profile: VclusterKaiProfile, lab: str) -> dict[str, Any]:
    """The kind cluster the kind provider creates for what the stack needs."""
    return kind_config(profile, lab, kr.cluster_needs(profile))


def _kind_facts(profile: VclusterKaiProfile, lab: str) -> Any:
    """What the kind provider answers for what the stack needs (no Docker look needed)."""
    return cluster_facts(profile, lab, kr.cluster_needs(profile), None)


def _release(profile: VclusterKaiProfile, team: Any) -> Any:
    """A team's vCluster release on kind, at the URL the kind provider gives its port."""
    server = _kind_facts(profile, "vcluster-kai").url_for(kr.team_port(team))
    return kr.vcluster_release(profile, team, server=server)


def test_each_vcluster_nodeport_is_published_on_the_hosts_loopback(
        kai_profile: VclusterKaiProfile) -> None:
    """As kind publishes its API server (--publish 127.0.0.1:<host>:<node>/tcp): a node's
    container IP is not routable from rootless Docker, Podman or Docker Desktop hosts."""
    config = _kind_config(kai_profile, "vcluster-kai")
    control_plane, *workers = config["nodes"]
    assert control_plane["extraPortMappings"] == [
        {"containerPort": team.api_node_port, "hostPort": team.host_port,
         "listenAddress": "127.0.0.1", "protocol": "TCP"} for team in kai_profile.teams]
    assert all("extraPortMappings" not in w for w in workers)
    server = _release(kai_profile, kai_profile.teams[0]).values["exportKubeConfig"]
    assert server["server"] == f"https://127.0.0.1:{control_plane['extraPortMappings'][0]['hostPort']}"


def test_a_host_port_other_than_the_nodeport(kai_profile: VclusterKaiProfile) -> None:
    data = kai_profile.model_dump(mode="json")
    data["teams"][0]["api_host_port"] = 41443
    data["teams"][1]["api_host_port"] = 41443
    with pytest.raises(ProfileError) as caught:
        parse_profile(yaml.safe_dump(data))
    assert any("teams[1].api_host_port: host port 41443 is already used by teams[0]" in p
               for p in caught.value.problems)
    data["teams"][1]["api_host_port"] = None
    profile = parse_profile(yaml.safe_dump(data))
    assert isinstance(profile, VclusterKaiProfile)
    mapping = _kind_config(profile, "x")["nodes"][0]["extraPortMappings"][0]
    assert (mapping["containerPort"], mapping["hostPort"]) == (profile.teams[0].api_node_port,
                                                               41443)


@pytest.mark.parametrize(("name", "namespace", "vcluster", "expected"), [
    ("nlp-sentiment-model", "default", "team-nlp", "nlp-sentiment-model-x-default-x-team-nlp"),
    ("gpu-over-capacity", "gpulab-verify", "team-recommender",
     "gpu-over-capacity-x-gpulab-verify-x-team-recommender"),
    ("a-rather-long-pod-name-for-testing", "gpulab-verify", "team-recommender",
     None),  # 69 characters: the first 52, '-', 10 hex of the full name's sha256
])
def test_host_pod_names(name: str, namespace: str, vcluster: str, expected: str | None) -> None:
    import hashlib

    got = kr.host_pod_name(name, namespace, vcluster)
    full = f"{name}-x-{namespace}-x-{vcluster}"
    if expected is not None:
        assert got == expected
    else:
        assert got == f"{full[:52]}-{hashlib.sha256(full.encode()).hexdigest()[:10]}"
    assert len(got) <= 63


# --------------------------------------------------------------------------- kind, RBAC, pods


def test_kind_config_labels_the_gpu_worker_like_kais_ci(kai_profile: VclusterKaiProfile) -> None:
    config = _kind_config(kai_profile, "vcluster-kai")
    theirs = yaml.safe_load((pinned_data() / "kai_v0.16.8_hack_e2e-kind-config.yaml").read_text())
    assert config["apiVersion"] == theirs["apiVersion"] and config["kind"] == theirs["kind"]
    control, worker = config["nodes"]
    assert control["role"] == "control-plane" and worker["role"] == "worker"
    upstream = theirs["nodes"][1]["labels"]
    for key in ("run.ai/simulated-gpu-node-pool", "nvidia.com/gpu.deploy.device-plugin",
                "nvidia.com/gpu.memory"):
        assert key in worker["labels"] and key in upstream
    assert worker["labels"]["nvidia.com/gpu.memory"] == "46068"
    assert worker["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L40S"
    assert all(isinstance(v, str) for n in config["nodes"] for v in n["labels"].values())
    assert {n["image"] for n in config["nodes"]} == {kai_profile.management.node_image}
    assert kr.gpu_node_names(kai_profile, "vcluster-kai") == ["gpulab-vcluster-kai-worker"]


def test_more_pool_nodes_get_kinds_names(kai_profile: VclusterKaiProfile) -> None:
    data = kai_profile.model_dump(mode="json")
    data["gpu_pool"]["nodes"] = 3
    profile = VclusterKaiProfile.model_validate(data)
    assert kr.gpu_node_names(profile, "lab") == [
        "gpulab-lab-worker", "gpulab-lab-worker2", "gpulab-lab-worker3"]
    assert len(_kind_config(profile, "lab")["nodes"]) == 4


def test_reservation_rbac_is_kais_ci_commands(kai_profile: VclusterKaiProfile) -> None:
    role, binding = kr.reservation_rbac(kai_profile)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}]
    assert binding["metadata"]["namespace"] == "kai-resource-reservation"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "status-updater",
                                    "namespace": "gpu-operator"}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "pods-patcher"
    for obj in (role, binding):
        validate_object(obj)


def test_verify_pods_validate_and_follow_the_write_up(kai_profile: VclusterKaiProfile) -> None:
    for team in kai_profile.teams:
        namespace, *pods = kr.verify_objects(kai_profile, team)
        validate_object(namespace)
        for pod in pods:
            validate_object(pod)
            assert pod["spec"]["schedulerName"] == "kai-scheduler"
            assert pod["metadata"]["labels"][naming.LABEL_TENANT] == team.name
        share = pods[0]
        assert share["metadata"]["labels"][kr.QUEUE_LABEL] == team.queue_name
        assert share["metadata"]["annotations"] == {"gpu-fraction": "0.33"}
        assert "resources" not in share["spec"]["containers"][0]  # fractions: no GPU request
        names = [p["metadata"]["name"] for p in pods]
        first = team.name == kai_profile.teams[0].name
        assert names == ["gpu-share", "gpu-over-limit", "gpu-over-capacity",
                         *(["queue-foreign"] if first else [])]
        over = pods[1]["spec"]["containers"][0]["resources"]["limits"]
        assert over == {"nvidia.com/gpu": "2"}  # one above the limit of 1
        assert pods[2]["metadata"]["annotations"] == {"gpu-fraction": "0.5"}
    foreign = kr.verify_objects(kai_profile, kai_profile.teams[0])[-1]
    assert foreign["metadata"]["labels"][kr.QUEUE_LABEL] == "team-vision"


@pytest.mark.parametrize(("teams", "share", "capacity"), [
    (1, 0.5, 0.6), (2, 0.5, 0.5), (3, 0.33, 0.5), (4, 0.25, 0.5), (7, 0.14, 0.5)])
def test_probe_sizes(kai_profile: VclusterKaiProfile, teams: int, share: float,
                     capacity: float) -> None:
    data = kai_profile.model_dump(mode="json")
    template = data["teams"][0]
    data["teams"] = [{**template, "name": f"t{i}", "api_node_port": 31000 + i,
                      "queue": {**template["queue"], "name": None}} for i in range(teams)]
    profile = VclusterKaiProfile.model_validate(data)
    sizes = kr.probe_sizes(profile, profile.teams[0])
    assert sizes.share == share
    assert sizes.capacity_fraction == capacity
    assert teams * sizes.share <= 1 < teams * sizes.share + sizes.capacity_amount


def _teams(profile: VclusterKaiProfile, teams: int, limit: float | None = None
           ) -> VclusterKaiProfile:
    """`profile` with `teams` teams like its first one (their GPU limit set when given)."""
    data = profile.model_dump(mode="json")
    template = data["teams"][0]
    gpu = template["queue"]["resources"]["gpu"]
    if limit is not None:
        gpu = {**gpu, "limit": limit}
    resources = {**template["queue"]["resources"], "gpu": gpu}
    data["teams"] = [{**template, "name": f"t{i}", "api_node_port": 31000 + i,
                      "queue": {**template["queue"], "name": None, "resources": resources}}
                     for i in range(teams)]
    return VclusterKaiProfile.model_validate(data)


@pytest.mark.parametrize(("teams", "limit", "probe"), [
    # the built-in profile cut to two teams: share 0.5 + capacity probe 0.5 = its limit of 1,
    # exactly: KAI admits up to the limit, so the probe is made (KAI-07 checks capacity)
    (2, None, True),
    # three teams: 0.33 + 0.5 is 0.8300000000000001 in floating point, within a limit of 0.83
    (3, 0.83, True),
    (3, 0.82, False),  # 0.83 asked over a limit of 0.82: KAI would refuse it for the limit
    (2, 0.99, False),
])
def test_the_capacity_probe_is_made_up_to_the_limit_inclusive(
        kai_profile: VclusterKaiProfile, teams: int, limit: float | None, probe: bool) -> None:
    profile = _teams(kai_profile, teams, limit)
    sizes = kr.probe_sizes(profile, profile.teams[0])
    assert sizes.capacity_within_limit is probe
    names = {p["metadata"]["name"] for p in kr.verify_objects(profile, profile.teams[0])}
    assert ("gpu-over-capacity" in names) is probe


def _pool(profile: VclusterKaiProfile, nodes: int, count: int, limit: float = -1
          ) -> VclusterKaiProfile:
    data = profile.model_dump(mode="json")
    data["gpu_pool"].update(nodes=nodes, count=count)
    for team in data["teams"]:
        team["queue"]["resources"]["gpu"]["limit"] = limit
    return VclusterKaiProfile.model_validate(data)


@pytest.mark.parametrize(("nodes", "count", "probe", "beyond"), [
    (1, 2, 2, False),  # the node's every GPU: the share pods hold part of one of them
    (1, 4, 4, False),
    (2, 1, 2, True),   # one GPU more than a node has: KAI's MaxNodePoolResources must refuse
    (3, 2, 3, True),   # not 3 x 2: six GPUs would fit on a node of eight (sized_for_host)
    (4, 4, 5, True)])
def test_capacity_probe_of_a_pool_of_whole_gpus(kai_profile: VclusterKaiProfile, nodes: int,
                                                count: int, probe: int, beyond: bool) -> None:
    profile = _pool(kai_profile, nodes, count)
    sizes = kr.probe_sizes(profile, profile.teams[0])
    assert (sizes.capacity_fraction, sizes.capacity_gpus, sizes.capacity_amount) == (
        None, probe, probe)
    assert sizes.beyond_any_node is beyond and sizes.largest_node == count
    assert sizes.capacity_within_limit  # unlimited
    pods = {p["metadata"]["name"]: p for p in kr.verify_objects(profile, profile.teams[0])}
    assert pods["gpu-over-capacity"]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": str(probe)}
    # the write-up's limit of 1 cannot hold it on top of the share pod: no probe
    tight = _pool(kai_profile, nodes, count, limit=1)
    assert not kr.probe_sizes(tight, tight.teams[0]).capacity_within_limit
    assert "gpu-over-capacity" not in {
        p["metadata"]["name"] for p in kr.verify_objects(tight, tight.teams[0])}


def _gpu_node(name: str, gpus: str, product: str = "NVIDIA-H100-80GB-HBM3") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.product": product}},
            "status": {"allocatable": {"nvidia.com/gpu": gpus}}}


def test_an_existing_pool_is_sized_by_its_largest_node(kai_profile: VclusterKaiProfile) -> None:
    found = (_gpu_node("gpu-1", "8"), _gpu_node("gpu-2", "4", "other"), _gpu_node("gpu-3", "2"))
    sized = kr.sized_for_host(kai_profile, "found", found)
    assert (sized.gpu_pool.nodes, sized.gpu_pool.count, sized.gpu_pool.model) == (
        3, 8, "NVIDIA-H100-80GB-HBM3")
    assert kr.probe_sizes(sized, sized.teams[0]).capacity_gpus == 9
    # a node whose count cannot be read counts as none; one GPU at least
    assert kr.sized_for_host(kai_profile, "existing", (_gpu_node("g", "x"),)).gpu_pool.count == 1
    # kind labs, and an existing cluster whose GPU nodes were not read, keep the profile's pool
    assert kr.sized_for_host(kai_profile, "kind", found) is kai_profile
    assert kr.sized_for_host(kai_profile, "existing", ()) is kai_profile
    assert kr.sized_for_host(kai_profile, "existing", None) is kai_profile


def test_unlimited_or_tight_limits_drop_probes(kai_profile: VclusterKaiProfile) -> None:
    data = kai_profile.model_dump(mode="json")
    data["teams"][0]["queue"]["resources"]["gpu"]["limit"] = -1
    data["teams"][1]["queue"]["resources"]["gpu"]["limit"] = 0.5
    profile = VclusterKaiProfile.model_validate(data)
    unlimited = [p["metadata"]["name"] for p in kr.verify_objects(profile, profile.teams[0])[1:]]
    tight = [p["metadata"]["name"] for p in kr.verify_objects(profile, profile.teams[1])[1:]]
    assert unlimited == ["gpu-share", "gpu-over-capacity", "queue-foreign"]
    assert tight == ["gpu-share", "gpu-over-limit"]  # 0.33 + 0.5 > 0.5: the limit would refuse
    assert kr.probe_sizes(profile, profile.teams[1]).over_limit == 1


# --------------------------------------------------------------------------- the plan


def test_plan_lists_every_object_in_up_order(kai_profile: VclusterKaiProfile) -> None:
    steps = kind_steps(kai_profile, "vcluster-kai", stacks.for_name("vcluster-kai"),
                       _kind_facts(kai_profile, "vcluster-kai"))
    assert [s.name for s in steps] == [
        "management/cluster", "management/fake-gpus", "management/kai-scheduler",
        "management/reservation-rbac", "management/queues",
        *[f"{t}/{s}" for t in kai_profile.member_names() for s in ("vcluster", "gpu-node")]]
    docs = [d for _, d in plan_documents([*steps, *verify_previews(kai_profile)])]
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Queue") == 4 and kinds.count("HelmRelease") == 2 + 3
    team = next(d for d in docs if d["kind"] == "HelmRelease" and d["metadata"]["name"] ==
                "team-nlp")
    assert team["spec"]["values"]["exportKubeConfig"]["server"] == "https://127.0.0.1:31443"
    assert kinds.count("Pod") == 3 * 3 + 1
