"""What the equivalents of tests/mutation_equivalent.toml for the vcluster-kai stack rely on
(their `pinned_by`): facts kept by other code than the mutated line."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile


def _with_teams(profile: VclusterKaiProfile, teams: int) -> dict[str, Any]:
    data = profile.model_dump(mode="json")
    template = data["teams"][0]
    data["teams"] = [{**template, "name": f"t{i}", "api_node_port": 30000 + i,
                      "host_port": 40000 + i if template.get("host_port") else None,
                      "queue": {**template["queue"], "name": None}} for i in range(teams)]
    if not template.get("host_port"):
        for team in data["teams"]:
            team.pop("host_port")
    return data


def test_a_profile_has_one_to_a_hundred_teams_and_a_one_gpu_probe_of_half_or_six_tenths(
        kai_profile: VclusterKaiProfile) -> None:
    """ProbeSizes: floor(100 / teams) and floor(101 / teams), max(teams, 1) and max(teams, 2)
    cap alike at 50 for 1..100 teams; what is free beside the share pods is at most 0.5, so the
    one-GPU capacity probe is 0.5, or 0.6 for one team (the 0.99 cap never binds)."""
    assert kai_profile.gpu_pool.total == 1
    for bad in (0, 101):
        with pytest.raises(ValidationError,
                           match=r"teams\n  List should have at (least 1|most 100) item"):
            VclusterKaiProfile.model_validate(_with_teams(kai_profile, bad))
    for teams in (1, 2, 3, 7, 33, 50, 51, 67, 99, 100):
        profile = VclusterKaiProfile.model_validate(_with_teams(kai_profile, teams))
        sizes = kr.probe_sizes(profile, profile.teams[0])
        assert sizes.share == min(50, 100 // teams) / 100
        assert 1 - teams * sizes.share <= 0.5
        assert sizes.capacity_fraction == (0.6 if teams == 1 else 0.5), teams


def test_on_a_one_gpu_pool_the_capacity_probe_is_the_fraction(
        kai_profile: VclusterKaiProfile) -> None:
    """capacity_gpus is read only when capacity_fraction is None: on a one-GPU pool the probe
    asks the fraction and no whole GPU."""
    team = kai_profile.teams[0]
    sizes = kr.probe_sizes(kai_profile, team)
    assert sizes.capacity_fraction is not None
    assert sizes.capacity_amount == sizes.capacity_fraction
    [probe] = [p for p in kr.verify_objects(kai_profile, team)
               if p["metadata"]["name"] == "gpu-over-capacity"]
    assert probe["metadata"]["annotations"] == {
        kr.FRACTION_ANNOTATION: f"{sizes.capacity_fraction:g}"}
    limits = probe["spec"]["containers"][0].get("resources", {}).get("limits", {})
    assert kr.GPU_RESOURCE not in limits
