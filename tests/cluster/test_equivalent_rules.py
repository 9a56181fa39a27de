"""Inventory behaviour that the equivalents of tests/mutation_equivalent.toml for
gpulab/cluster rely on (their `pinned_by`), and the cases that showed some listed equivalents to
be false: a replayed recording is read as written, so a snapshot need not be what
observe.read_cluster makes, and cluster text (card ids, image names, object names) is any text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpulab.cluster.inventory import inventory
from gpulab.cluster.observe import read_cluster
from gpulab.cluster.state import ClusterSnapshot
from tests.cluster import builders as b

SERVER = "https://gpu.example:6443"


def _found(*objs: dict[str, Any]) -> Any:
    return inventory(read_cluster(b.cluster(*objs), "c", SERVER))


def test_a_found_component_always_has_its_detail_and_a_missing_one_none() -> None:
    """_component's `detail` default is never used (every caller passes one); the device
    plugin's detail and a missing component's `unknown` are read only when a workload is found
    or not read at all."""
    found = _found(*b.hami("real"), b.node("n1", [b.card("GPU-1", "NVIDIA-L4", 24576)]))
    for component in (found.hami_scheduler, found.hami_device_plugin):
        assert component.found and component.detail and not component.unknown
    assert found.hami_device_plugin.detail == "real (NVIDIA driver)"
    mock = _found(*b.hami("mock"))
    assert mock.hami_device_plugin.detail == "mock (simulated cards)"
    none = _found(b.node("n1"))
    for component in (none.hami_scheduler, none.hami_device_plugin):
        assert (component.found, component.detail, component.unknown) == (False, "", "")


def test_a_card_named_like_the_cordon_default_is_not_cordoned() -> None:
    """Without hami.io/device-cordon no card is cordoned, whatever its id."""
    found = _found(*b.hami("real"), b.node("n1", [b.card("XXXX", "NVIDIA-L4", 24576),
                                                  b.card("", "NVIDIA-L4", 24576)]))
    assert [(c.device_id, c.cordoned) for c in found.cards] == [("", False), ("XXXX", False)]


def test_an_image_path_with_a_colon_gives_the_tag_of_its_last_part() -> None:
    """The tag is what follows ':' in the image's last path part, even when an earlier part
    (not valid in a reference, but cluster text all the same) holds a ':'."""
    objs = b.hami("real")
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        if "hami" in container["image"]:
            container["image"] = "registry.local/team:a/projecthami/hami:v2.4.1"
    assert _found(*objs).hami_scheduler.detail.startswith("HAMi v2.4.1, ")


def test_a_replayed_device_config_without_namespace_or_name_leaves_them_blank() -> None:
    """A replayed snapshot is read as written: a device config without namespace or name is
    named with them blank (not with a stand-in)."""
    base = read_cluster(b.cluster(*b.hami("real")), "c", SERVER)
    assert base.hami_device_config is not None
    config = {k: v for k, v in base.hami_device_config.items() if k not in ("namespace", "name")}
    assert inventory(replace(base, hami_device_config=config)).hami_resources_from == "ConfigMap /"


def test_a_vcluster_found_with_a_colon_in_its_name_is_not_unknown() -> None:
    """`vCluster` found in the tenancy lines is known even when one of the kinds it is looked
    for in was not read, and a name with ':' (a replay holds any text) does not hide it."""
    vc = {"kind": "StatefulSet", "name": "vc:1", "namespace": "team:a", "labels": {"app":
          "vcluster"}, "images": [], "args": [], "configMaps": {}, "desired": 1, "ready": 1}
    snapshot = ClusterSnapshot(name="c", server=SERVER, workloads=(vc,),
                               read_errors={"Deployment": "forbidden: no list on deployments"})
    found = inventory(snapshot)
    assert found.tenancy == ("vCluster: 1 control plane(s) (team:a/vc:1)",)
    assert "vCluster" not in found.unknown


def test_a_card_nobody_uses_is_idle_with_nothing_in_use() -> None:
    """A card without HAMi usage takes the (slices, memory, cores, pods) default; only the
    memory, cores and pods of it are read."""
    found = _found(*b.hami("real"), b.node("n1", [b.card("GPU-1", "NVIDIA-L4", 24576)]))
    [card] = found.cards
    assert (card.used_memory, card.used_cores, card.users, card.idle) == (0, 0, (), True)


def test_a_runnable_kai_plan_always_plans_the_over_capacity_pod() -> None:
    """GPU-13 (checks._over_capacity) looks up the planned gpu-over-capacity pod with a default
    it never takes: it is judged only for a KAI plan without refusals, which plans that pod."""
    from gpulab.cluster.plan import plan
    planned = plan(inventory(read_cluster(b.shape_kai_idle_node(), "c", SERVER)), "r1")
    assert planned.scheduler == "kai" and not planned.refusals
    assert [p.check for p in planned.pods if p.name == "gpu-over-capacity"] == ["GPU-13"]


def test_a_plan_refuses_for_one_reason_at_a_time() -> None:
    """checks.judge joins plan.refusals with "; ", which decides nothing while every refusal
    is one reason: each plan._refuse call in gpulab/cluster/plan.py passes one."""
    import ast
    from pathlib import Path

    import gpulab.cluster.plan as plan_module
    tree = ast.parse(Path(plan_module.__file__).read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "_refuse"]
    assert len(calls) > 10
    assert all(len(c.args) == 2 and not any(isinstance(a, ast.Starred) for a in c.args)
               for c in calls), [ast.unparse(c) for c in calls if len(c.args) != 2]
