"""The vcluster-kai profile: the write-up's values, and every problem as `file:line: path: msg`."""

from __future__ import annotations

import re

import pytest

from gpulab.errors import ExitCode, ProfileError
from gpulab.profile.load import builtin_profiles
from gpulab.stacks import parse_profile
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile

BUILTIN = builtin_profiles()["vcluster-kai"]
TEXT = BUILTIN.read_text()
SRC = "bad.yaml"


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    return text.count("\n", 0, index) + 1


def _mutate(old: str, new: str, occurrence: int = 1) -> tuple[str, int]:
    line = _line_of(TEXT, old, occurrence)
    parts = TEXT.split(old)
    return old.join(parts[:occurrence]) + new + old.join(parts[occurrence:]), line


def _problems(text: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        parse_profile(text, SRC)
    assert info.value.exit_code == ExitCode.USAGE
    return info.value.problems


def test_builtin_profile_reproduces_the_write_up(kai_profile: VclusterKaiProfile) -> None:
    assert isinstance(kai_profile, VclusterKaiProfile)
    assert kai_profile.member_names() == ["team-nlp", "team-vision", "team-recommender"]
    assert [t.queue_name for t in kai_profile.teams] == kai_profile.member_names()
    assert kai_profile.org_queue.name == "ml-org"
    assert kai_profile.org_queue.resources.gpu.to_kai() == {
        "quota": 1, "limit": -1, "overQuotaWeight": 1}
    for team in kai_profile.teams:
        assert team.queue.priority == 100
        assert team.queue.resources.gpu.to_kai() == {
            "quota": 0.33, "limit": 1, "overQuotaWeight": 1}
        assert team.namespace == f"vcluster-{team.name}"
    pool = kai_profile.gpu_pool
    assert (pool.name, pool.model, pool.count, pool.memory_mib, pool.nodes) == (
        "default", "NVIDIA-L40S", 1, 46068, 1)
    comps = kai_profile.components
    assert comps.kai_scheduler.chart.version == "v0.16.8"
    assert comps.kai_scheduler.reservation_namespace == "kai-resource-reservation"
    assert comps.fake_gpu_operator.chart.version == "0.0.74"
    assert (comps.vcluster.chart.repo, comps.vcluster.chart.name,
            comps.vcluster.chart.version) == ("https://charts.loft.sh", "vcluster", "0.35.3")
    assert "@sha256:" in kai_profile.management.node_image
    assert kai_profile.management.node_image.startswith("kindest/node:v1.36.")


def test_cpu_and_memory_default_to_unlimited_with_explicit_limits() -> None:
    text = TEXT.replace("        cpu: {quota: 0, limit: -1, overQuotaWeight: 1}\n"
                        "        memory: {quota: 0, limit: -1, overQuotaWeight: 1}\n", "", 1)
    profile = parse_profile(text, SRC)
    assert isinstance(profile, VclusterKaiProfile)
    assert profile.teams[0].queue.resources.to_kai()["cpu"] == {
        "quota": 0, "limit": -1, "overQuotaWeight": 1}


BROKEN = [
    # (id, old, new, occurrence, expected problem after "bad.yaml:<line>: ")
    ("omitted-limit", "gpu: {quota: 0.33, limit: 1, overQuotaWeight: 1}",
     "gpu: {quota: 0.33, overQuotaWeight: 1}", 2,
     "teams[1].queue.resources.gpu.limit: required field is missing"),
    ("limit-below-quota", "gpu: {quota: 0.33, limit: 1, overQuotaWeight: 1}",
     "gpu: {quota: 0.33, limit: 0.2, overQuotaWeight: 1}", 1,
     "teams[0].queue.resources.gpu: limit 0.2 is below quota 0.33"),
    ("negative-quota", "gpu: {quota: 1, limit: -1, overQuotaWeight: 1}",
     "gpu: {quota: -0.5, limit: -1, overQuotaWeight: 1}", 1,
     "org_queue.resources.gpu.quota: must be >= 0, or -1 for unlimited"),
    ("weight-type", "gpu: {quota: 0.33, limit: 1, overQuotaWeight: 1}",
     "gpu: {quota: 0.33, limit: 1, overQuotaWeight: lots}", 3,
     "teams[2].queue.resources.gpu.overQuotaWeight: must be a number"),
    ("unknown-resource-key", "gpu: {quota: 0.33, limit: 1, overQuotaWeight: 1}",
     "gpu: {quota: 0.33, limit: 1, over_quota_weight: 1}", 1,
     "teams[0].queue.resources.gpu.over_quota_weight: unknown field"),
    ("no-gpu", "    gpu: {quota: 1, limit: -1, overQuotaWeight: 1}\n", "", 1,
     "org_queue.resources.gpu: required field is missing"),
    ("duplicate-team", "- name: team-vision", "- name: team-nlp", 1,
     "teams[1].name: duplicate team name 'team-nlp'"),
    ("team-name-management", "- name: team-vision", "- name: management", 1,
     "teams[1].name: 'management' is the host cluster's kubeconfig name"),
    ("bad-team-name", "- name: team-vision", "- name: Team_Vision", 1,
     "teams[1].name: 'Team_Vision' is not a DNS-1123 label"),
    ("duplicate-port", "api_node_port: 31444", "api_node_port: 31443", 1,
     "teams[1].api_node_port: port 31443 is already used by teams[0]"),
    ("port-range", "api_node_port: 31445", "api_node_port: 8443", 1,
     "teams[2].api_node_port: must be a NodePort in 30000-32767"),
    # The kubelet NodePort of each vCluster Service is api_node_port - 1000 (issue #20 6c).
    ("kubelet-port-below-range", "api_node_port: 31445", "api_node_port: 30445", 1,
     "teams[2].api_node_port: 30445 leaves no NodePort for the vCluster's kubelet port "
     "(api_node_port - 1000 = 29445 is below 30000); choose 31000-32767"),
    ("kubelet-port-is-another-teams-api-port", "api_node_port: 31445", "api_node_port: 32443",
     1, "teams[2].api_node_port: the vCluster's kubelet NodePort 31443 (api_node_port - 1000) "
        "is already used by teams[0]"),
    ("queue-is-org", "    queue:\n      priority: 100", "    queue:\n      name: ml-org\n"
     "      priority: 100", 1, "teams[0].queue.name: queue 'ml-org' is already used by org_queue"),
    ("kai-default-queue", "  name: ml-org", "  name: default-queue", 1,
     "org_queue.name: 'default-queue' is created by KAI itself"),
    ("host-too-old",
     "node_image: kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
     "node_image: kindest/node:v1.33.1@sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f",
     1, "management.node_image: Kubernetes v1.33 is outside vCluster 0.35.3's tested hosts "
        "(v1.34-v1.36)"),
    ("unpinned-host", "node_image: kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
     "node_image: kindest/node:v1.36.4", 1,
     "management.node_image: image 'kindest/node:v1.36.4' must be pinned by digest"),
    ("pool-model", "model: NVIDIA-L40S", "model: NVIDIA L40S", 1,
     "gpu_pool.model: 'NVIDIA L40S' must be a valid label value"),
    ("pool-count", "  count: 1\n", "  count: 0\n", 1, "gpu_pool.count: must be >= 1"),
    ("chart-range", "version: 0.35.3}", "version: ~0.35}", 1,
     "components.vcluster.chart.version: chart version '~0.35' must be exact"),
    ("unknown-top-level", "gpu_pool:", "gpu_pools:", 1, "gpu_pools: unknown field"),
]


@pytest.mark.parametrize(("old", "new", "occurrence", "expected"),
                         [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_broken_profile_names_file_line_and_path(old: str, new: str, occurrence: int,
                                                 expected: str) -> None:
    text, line = _mutate(old, new, occurrence)
    problems = _problems(text)
    if expected.startswith(("teams[1].name: duplicate", "teams[1].api_node_port",
                            "teams[0].queue.name")):
        line = next(int(p.split(":")[1]) for p in problems if expected in p)
    if new == "":  # a removed field is reported where its parent is
        line -= 1
    prefix = f"{SRC}:{line}: "
    assert any(p.startswith(prefix + expected) for p in problems), (prefix + expected, problems)


def test_every_problem_at_once_and_one_line_each() -> None:
    text = TEXT.replace("api_node_port: 31444", "api_node_port: 1").replace(
        "limit: 1, overQuotaWeight: 1}", "overQuotaWeight: 1}")
    problems = _problems(text)
    assert len(problems) == 4  # a port, three omitted limits
    assert all(re.match(rf"{SRC}:\d+: \S", p) and "\n" not in p for p in problems)


def test_unknown_stack_lists_both() -> None:
    problems = _problems(TEXT.replace("stack: vcluster-kai", "stack: vcluster"))
    assert any("stack: must be one of kamaji-hami, vcluster-kai" in p for p in problems)


def test_a_kamaji_field_in_a_kai_profile_is_refused() -> None:
    problems = _problems(TEXT + "tenants: []\n")
    assert any(p.endswith("tenants: unknown field (check the spelling; see "
                          "docs/profile-reference.md)") for p in problems)


def test_each_team_gets_a_kubelet_node_port_apart_from_every_api_port(
        kai_profile: VclusterKaiProfile) -> None:
    api = [t.api_node_port for t in kai_profile.teams]
    kubelet = [t.kubelet_node_port for t in kai_profile.teams]
    assert (api, kubelet) == ([31443, 31444, 31445], [30443, 30444, 30445])
    assert len(set(api + kubelet)) == 6


def test_an_api_port_equal_to_an_earlier_teams_kubelet_port_is_refused() -> None:
    """The check does not depend on the order of the teams: team-vision's API NodePort 30443 is
    team-nlp's kubelet NodePort (reported at team-nlp), and leaves team-vision none of its own."""
    text, line = _mutate("api_node_port: 31444", "api_node_port: 30443")
    problems = _problems(text)
    nlp = _line_of(TEXT, "api_node_port: 31443")
    assert (f"{SRC}:{nlp}: teams[0].api_node_port: the vCluster's kubelet NodePort 30443 "
            "(api_node_port - 1000) is already used by teams[1]") in problems, problems
    assert any(p.startswith(f"{SRC}:{line}: teams[1].api_node_port: 30443 leaves no NodePort")
               for p in problems), problems


def test_team_lookup(kai_profile: VclusterKaiProfile) -> None:
    assert kai_profile.team("team-vision").api_node_port == 31444
    with pytest.raises(KeyError, match="no team 'x'"):
        kai_profile.team("x")


def test_more_than_a_hundred_teams_are_refused_in_one_line(
        kai_profile: VclusterKaiProfile) -> None:
    """KAI-05 gives every team floor(100 / teams) hundredths of one GPU: a 101st team would get
    a share of 0, so such a profile is refused where `teams:` is."""
    import yaml

    data = kai_profile.model_dump(mode="json")
    data["teams"] = [data["teams"][0]] * 101
    text = yaml.safe_dump(data)
    assert _problems(text) == [
        f"{SRC}:{_line_of(text, 'teams:')}: teams: List should have at most 100 items "
        "after validation, not 101"]
