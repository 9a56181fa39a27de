"""What gpulab reads of HAMi v2.10.0 (gpulab/verify/hami.py), value by value: the register
annotation as encoding/json decodes it into DeviceInfo, the allocation as DecodePodDevices reads
it, what HAMi counts as used, the pod sizes verify derives from a card, and the pods it asks for.

The Go rules are cited in the module's docstring; upstream's own examples are held against the
fakes' decoder in tests/kamaji_hami/test_hami_wire.py. These pin the edges (mutation testing,
docs/dev/mutation-testing.md, found them unpinned)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from gpulab.verify.hami import (
    ALLOCATED_ANNOTATION,
    CORDON_ANNOTATION,
    DEFAULT_RESOURCES,
    DeviceGrant,
    HamiResources,
    card_usage,
    decode_allocation,
    decode_register,
    hami_usage,
    parse_allocation,
    parse_register,
    share_pod,
    sharing_sizes,
    usage_bar,
)

ZERO_CARD = {"id": "", "index": 0, "count": 0, "devmem": 0, "devcore": 0, "type": "", "numa": 0,
             "mode": "", "migprofiles": [], "health": False}


def test_hamis_names() -> None:
    assert (ALLOCATED_ANNOTATION, CORDON_ANNOTATION) == (
        "hami.io/vgpu-devices-allocated", "hami.io/device-cordon")
    assert DEFAULT_RESOURCES.names() == ("nvidia.com/gpu", "nvidia.com/gpumem",
                                         "nvidia.com/gpucores", "nvidia.com/gpumem-percentage")
    assert HamiResources(memory_percentage="", cores="").names() == (
        "nvidia.com/gpu", "nvidia.com/gpumem")


# ------------------------------------------------------------------ the register annotation


def test_a_card_comes_back_with_every_field_zero_when_absent() -> None:
    assert decode_register('[{"id": "GPU-0"}]') == [{**ZERO_CARD, "id": "GPU-0"}]


def test_keys_match_case_insensitively_and_unknown_ones_are_ignored() -> None:
    [card] = decode_register('[{"ID": "GPU-0", "DevMem": 8192, "Health": true, "Extra": "x", '
                             '"migProfiles": [{"name": "1g.5gb"}]}]') or [{}]
    assert (card["id"], card["devmem"], card["health"], card["migprofiles"]) == (
        "GPU-0", 8192, True, [{"name": "1g.5gb"}])
    assert "extra" not in card


def test_null_leaves_the_zero_value() -> None:
    assert decode_register('[{"id": null, "devmem": null, "health": null}]') == [ZERO_CARD]


@pytest.mark.parametrize("value", [
    None, "", "not json", "{}", "[]", '"GPU-0"', "[1]", '[{"id": 1}]', '[{"devmem": "8192"}]',
    '[{"devmem": 1.5}]', '[{"devmem": true}]', '[{"devmem": 2147483648}]',
    '[{"devmem": -2147483649}]', '[{"index": -1}]', '[{"health": "true"}]',
    '[{"migprofiles": {}}]', '[{"custominfo": []}]', '[{"numa": 1.0}]', '[{"devmem": NaN}]',
    '[{"id": "GPU-0", "unknown": NaN}]', '[{"id": "GPU-0", "unknown": Infinity}]',
    '[{"id": "GPU-0"}, "junk"]',
])
def test_anything_encoding_json_refuses_gives_no_cards(value: str | None) -> None:
    assert decode_register(value) is None


@pytest.mark.parametrize(("field", "value"), [
    ("devmem", 2147483647), ("devmem", -2147483648), ("count", 0), ("index", 0),
    ("numa", 99999999999), ("custominfo", {"a": 1}), ("migtemplate", []), ("mode", "mig"),
    ("devicevendor", "NVIDIA"),
])
def test_values_at_the_edges_of_their_go_types_decode(field: str, value: object) -> None:
    cards = decode_register(json.dumps([{"id": "GPU-0", field: value}]))
    assert cards is not None
    if field in cards[0]:
        assert cards[0][field] == value


def test_the_lenient_register_reader_keeps_the_objects() -> None:
    assert parse_register('[{"id": "a"}, 3, {"id": "b"}]') == [{"id": "a"}, {"id": "b"}]
    assert parse_register(None) == []
    assert parse_register("{") == []
    assert parse_register('{"id": "a"}') == []
    assert parse_register("3") == []
    assert parse_register('"GPU-0"') == []


# ------------------------------------------------------------------ the allocation annotation


def test_each_container_keeps_its_place_even_when_empty() -> None:
    assert decode_allocation("A,NVIDIA,1,2:B,NVIDIA,3,4:;;C,NVIDIA,5,6:;") == [
        [DeviceGrant("A", "NVIDIA", 1, 2), DeviceGrant("B", "NVIDIA", 3, 4)], [],
        [DeviceGrant("C", "NVIDIA", 5, 6)], []]
    assert decode_allocation(None) == [[]]
    assert decode_allocation("") == [[]]


def test_entries_without_a_comma_are_skipped_and_extra_fields_ignored() -> None:
    assert decode_allocation("junk:A,NVIDIA,1,2,extra:;") == [
        [DeviceGrant("A", "NVIDIA", 1, 2)], []]


@pytest.mark.parametrize("value", [
    "A,NVIDIA,1:;", "A,NVIDIA,lots,1:;", "A,NVIDIA,1,2.5:;", "A,NVIDIA,2147483648,1:;",
    "A,NVIDIA,1,-2147483649:;", "A,NVIDIA,1,2147483648:;", "A,NVIDIA,-2147483649,1:;",
    "A,NVIDIA, 1,2:;", "A,NVIDIA,1,2:;B,NVIDIA,x,1:;", "A,NVIDIA,1,x:;",
])
def test_one_bad_entry_and_hami_reads_nothing_from_the_pod(value: str) -> None:
    assert decode_allocation(value) is None


def test_signed_and_int32_edge_numbers_decode_as_strconv_does() -> None:
    assert decode_allocation("A,NVIDIA,+2147483647,-2147483648:;") == [
        [DeviceGrant("A", "NVIDIA", 2147483647, -2147483648)], []]
    assert decode_allocation("A,NVIDIA,-2147483648,2147483647:;") == [
        [DeviceGrant("A", "NVIDIA", -2147483648, 2147483647)], []]


def test_the_lenient_allocation_reader_skips_what_it_cannot_read() -> None:
    assert parse_allocation("A,NVIDIA,1:B,NVIDIA,3,4:,x,1,2:C,NVIDIA,n,1:E,NVIDIA,7,8:;;"
                            "D,T,5,6:;") == [
        [DeviceGrant("B", "NVIDIA", 3, 4), DeviceGrant("E", "NVIDIA", 7, 8)],
        [DeviceGrant("D", "T", 5, 6)]]


# ------------------------------------------------------------------ usage


def _pod(name: str, allocated: str | None, node: str | None = "w1",
         phase: str = "Running", namespace: str = "ns") -> dict[str, object]:
    notes = {} if allocated is None else {ALLOCATED_ANNOTATION: allocated}
    if node is not None:
        notes["hami.io/vgpu-node"] = node
    return {"metadata": {"name": name, "namespace": namespace, "annotations": notes},
            "status": {"phase": phase}}


def test_usage_counts_slices_memory_cores_and_pods_per_card() -> None:
    pods = [
        _pod("a", "GPU-0,NVIDIA,1000,10:GPU-1,NVIDIA,500,5:;"),
        _pod("b", "GPU-0,NVIDIA,2000,20:;GPU-0,NVIDIA,100,1:;"),  # two containers, one card
        _pod("c", "GPU-0,NVIDIA,1,1:;", phase="Pending"),  # assigned, not bound yet: counts
        _pod("done", "GPU-0,NVIDIA,9,9:;", phase="Succeeded"),
        _pod("failed", "GPU-0,NVIDIA,9,9:;", phase="Failed"),
        _pod("unassigned", "GPU-0,NVIDIA,9,9:;", node=None),
        _pod("bad", "GPU-0,NVIDIA,9:;"),
        _pod("other-node", "GPU-0,NVIDIA,7,7:;", node="w2"),
    ]
    assert hami_usage(pods) == {
        ("w1", "GPU-0"): (4, 3101, 32, ["ns/a", "ns/b", "ns/c"]),
        ("w1", "GPU-1"): (1, 500, 5, ["ns/a"]),
        ("w2", "GPU-0"): (1, 7, 7, ["ns/other-node"]),
    }


def test_a_pod_without_metadata_is_labelled_with_blanks() -> None:
    pod = {"metadata": {"annotations": {"hami.io/vgpu-node": "w1",
                                        ALLOCATED_ANNOTATION: "G,NVIDIA,1,1:;"}}}
    assert hami_usage([pod]) == {("w1", "G"): (1, 1, 1, ["/"])}


REGISTER = ('[{"id":"GPU-1","count":4,"devmem":24576,"devcore":100,"type":"NVIDIA-L4"},'
            '{"id":"GPU-0","count":10,"devmem":81920,"devcore":100,"type":"NVIDIA-A100"}]')


def test_card_usage_per_node_and_card_sorted() -> None:
    nodes = [{"metadata": {"name": "w2", "annotations": {"hami.io/node-nvidia-register": REGISTER}}},
             {"metadata": {"name": "w1", "annotations": {"hami.io/node-nvidia-register":
                                                         '[{"id":"GPU-9"}]'}}},
             {"metadata": {"name": "w3"}}]
    pods = [_pod("a", "GPU-0,NVIDIA,20000,30:;", node="w2"),
            _pod("b", "GPU-0,NVIDIA,20000,30:;", node="w2"),
            _pod("ghost", "GPU-7,NVIDIA,1,1:;", node="w2")]  # no such card: ignored
    cards = card_usage(nodes, pods)
    assert [(c.node, c.device_id, c.model, c.memory_mib, c.cores, c.slots, c.used_memory,
             c.used_cores, c.pods) for c in cards] == [
        ("w1", "GPU-9", "", 0, 0, 0, 0, 0, []),
        ("w2", "GPU-0", "NVIDIA-A100", 81920, 100, 10, 40000, 60, ["ns/a", "ns/b"]),
        ("w2", "GPU-1", "NVIDIA-L4", 24576, 100, 4, 0, 0, []),
    ]


@pytest.mark.parametrize(("used", "total", "width", "bar"), [
    (0, 100, 10, "[----------]"), (50, 100, 10, "[#####-----]"), (100, 100, 10, "[##########]"),
    (150, 100, 10, "[##########]"), (1, 3, 3, "[#--]"), (15, 100, 10, "[##--------]"),
    (5, 100, 10, "[----------]"), (4, 100, 10, "[----------]"), (1, 0, 4, "[????]"), (1, -1, 2, "[??]"),
    (1, 1, 4, "[####]"),
])
def test_usage_bar(used: int, total: int, width: int, bar: str) -> None:
    assert usage_bar(used, total, width) == bar


def test_usage_bar_is_twenty_wide_by_default() -> None:
    assert usage_bar(30, 100) == "[######--------------]"


# ------------------------------------------------------------------ sizes and pods


@dataclass(frozen=True)
class Card:
    memory_mib: int
    cores: int = 100
    split: int = 10


@pytest.mark.parametrize(("card", "sizes"), [
    (Card(81920), (20000, 30, 90000, 10)),
    (Card(24576), (6000, 30, 30000, 10)),
    (Card(80000), (20000, 30, 90000, 10)),  # memory already a multiple of 10000: still above it
    (Card(3999), (999, 30, 10000, 10)),  # a quarter under 1000 MiB is kept as it is
    (Card(8004), (2000, 30, 10000, 10)),  # a quarter of 2001 MiB: rounded down to 2000
    (Card(40000, cores=12), (10000, 4, 50000, 1)),  # 30% is 3: a fourth would fit exactly
    (Card(40000, cores=10), (10000, 3, 50000, 1)),
    (Card(40000, cores=7), (10000, 2, 50000, 1)),  # 30% is 2: a fourth would fit, a third does
    (Card(40000, cores=9), (10000, 3, 50000, 1)),  # 30% is 2, a third 3: three fill the card
    (Card(40000, cores=3), (10000, 1, 50000, 1)),
    (Card(40000, cores=6), (10000, 2, 50000, 1)),
    (Card(40000, cores=4), (10000, 0, 50000, 4)),  # no core size: 1 lets a fourth fit
    (Card(40000, split=3), (10000, 0, 50000, 100)),  # fewer than four slots
    (Card(40000, split=4), (10000, 30, 50000, 10)),
])
def test_sharing_sizes(card: Card, sizes: tuple[int, int, int, int]) -> None:
    got = sharing_sizes(card, "GPU-0")
    assert (got.card_id, got.share_memory, got.share_cores, got.big_memory, got.big_cores) == (
        "GPU-0", *sizes)
    assert got.applicable == (sizes[1] > 0)


def test_sizes_need_memory_too() -> None:
    assert not sharing_sizes(Card(3), "GPU-0").applicable  # a quarter of 3 MiB is 0


def test_a_share_pod_asks_hami_for_one_slice_of_the_pinned_card() -> None:
    pod = share_pod("gpu-share-1", "verify", {"gpulab.dev/run": "r1"}, "pause:3.10",
                    memory=20000, cores=30, card_id="GPU-0")
    assert pod == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "gpu-share-1", "namespace": "verify",
                     "labels": {"gpulab.dev/run": "r1"},
                     "annotations": {"nvidia.com/use-gpuuuid": "GPU-0"}},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "app", "image": "pause:3.10",
                                 "imagePullPolicy": "IfNotPresent",
                                 "resources": {"limits": {"nvidia.com/gpu": "1",
                                                          "nvidia.com/gpumem": "20000",
                                                          "nvidia.com/gpucores": "30"}}}]}}
    renamed = share_pod("p", "n", {}, "i", memory=1, cores=2, card_id="G",
                        resources=HamiResources("x/gpu", "x/mem", "x/cores", ""))
    assert renamed["spec"]["containers"][0]["resources"]["limits"] == {
        "x/gpu": "1", "x/mem": "1", "x/cores": "2"}


def test_fields_gpulab_does_not_keep_are_type_checked_then_dropped() -> None:
    """devicevendor, custominfo and migtemplate must decode (or HAMi drops the node) but are
    not part of the card gpulab reads."""
    raw = ('[{"id": "GPU-0", "devicevendor": "NVIDIA", "custominfo": {"a": 1}, '
           '"migtemplate": []}]')
    assert decode_register(raw) == [{**ZERO_CARD, "id": "GPU-0"}]
