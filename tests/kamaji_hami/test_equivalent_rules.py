"""What the equivalents of tests/mutation_equivalent.toml for the kamaji-hami checks rely on
(their `pinned_by`): facts kept by other code than the mutated line."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from gpulab.stacks.kamaji_hami import render
from gpulab.stacks.kamaji_hami.checks import tc04_gpu_inventory
from gpulab.stacks.kamaji_hami.checks.common import worker_names
from gpulab.verify import objects as vo
from tests.existing.kamaji_machines import joined
from tests.kamaji_hami import builders as b
from tests.kamaji_hami.builders import judge, node_replace, tenant_replace, with_gpus

if TYPE_CHECKING:
    from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile
    from gpulab.stacks.kamaji_hami.state import LabState


def test_a_handshake_mark_holds_one_underscore_at_most_when_valid() -> None:
    """_handshake_problems splits the mark at "_": partition or rpartition give the same verdict
    because no state name and no Go time.DateTime stamp holds a "_"."""
    assert all("_" not in state for state in tc04_gpu_inventory._HANDSHAKE_STATES)
    assert datetime.strptime("2026-11-20 10:12:47", "%Y-%m-%d %H:%M:%S")
    for stamp in ("2026-11-20 10:12:47_", "_2026-11-20 10:12:47", "2026-11-20_10:12:47"):
        with pytest.raises(ValueError):
            datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize("value", [None, "Requesting_yesterday", "Reported_2026-11-20 10:12:47_x"])
def test_a_worker_with_a_handshake_problem_shows_no_evidence(
        healthy: LabState, profile: KamajiHamiProfile, value: str | None) -> None:
    """The texts _handshake_problems and _registered_problems return beside a problem are never
    shown: only a worker without problems is evidence."""
    node = b.node(profile.tenant("tenant-a"))
    annotations = node["metadata"]["annotations"]
    annotations.pop("hami.io/node-handshake")
    if value is not None:
        annotations["hami.io/node-handshake"] = value
    result = judge(node_replace(healthy, "tenant-a", node), profile, "TC-04")
    assert (result.status, result.evidence) == ("fail", "")
    assert "handshake" not in result.evidence


def test_a_tenant_without_gpus_registers_an_empty_list(profile: KamajiHamiProfile) -> None:
    """_registered_problems reads render.gpu_register_annotation only for a tenant with GPUs;
    for one without it would be the same empty list."""
    spec = with_gpus(profile, "tenant-a").tenant("tenant-a")
    assert not spec.gpus
    assert json.loads(render.gpu_register_annotation(spec, 0)) == []


def test_joined_machines_are_the_nodes_the_tenant_listed(healthy: LabState,
                                                         profile: KamajiHamiProfile) -> None:
    """On joined machines TC-04 looks each worker up among the nodes; the workers are those
    nodes' names (common.worker_names), so each is found."""
    st = healthy.tenants["tenant-a"]
    nodes = (*(st.nodes or ()), joined("gpu-7"))
    lab = tenant_replace(healthy, "tenant-a", workers=render.MACHINES, nodes=nodes)
    machines = lab.tenants["tenant-a"]
    names = worker_names(lab, profile.tenant("tenant-a"), machines)
    assert names == [n["metadata"]["name"] for n in nodes] and "gpu-7" in names


def test_a_pod_runs_own_events_keep_it_equal(healthy: LabState) -> None:
    """Ctx.pod_run returns the run itself when every event is about the pod: events_about keeps
    a tuple, as PodRun.events is, so a copy with the same events equals the run."""
    run = healthy.tenants["tenant-a"].pod_run("gpu-share-1")
    assert run is not None and run.events
    uid = str(vo.metadata(run.created or run.pod).get("uid") or "")
    own = vo.events_about(run.events, {uid})
    assert isinstance(own, tuple) and isinstance(run.events, tuple)
    assert own == run.events and replace(run, events=own) == run
