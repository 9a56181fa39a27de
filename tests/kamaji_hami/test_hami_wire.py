"""gpulab's HAMi parsers and the fakes' own decoder (tests/kamaji_hami/hami_wire.py) agree on
upstream's own examples: HAMi v2.10.0's pkg/device/devices_test.go, copied verbatim into
tests/data/pinned/upstream/hami_v2.10.0_pkg_device_devices_test.go (SOURCES.md).

The fakes that play HAMi decode with their own code, so a bug in gpulab's parser cannot hide
behind a fake that shares it; this test keeps the two readings of the same bytes together, and
both on what upstream's tests say HAMi reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpulab.stacks.kamaji_hami import objects
from gpulab.verify import hami
from tests.kamaji_hami import hami_wire as wire

GO_TEST = (Path(__file__).resolve().parents[1] / "data" / "pinned" / "upstream"
           / "hami_v2.10.0_pkg_device_devices_test.go").read_text(encoding="utf-8")
_LITERAL = r'"(?:[^"\\\n]|\\.)*"'


def _function(name: str) -> str:
    """The body of one Go test function (up to the next top-level func)."""
    found = re.search(rf"^func {name}\(t \*testing\.T\) \{{\n(.*?)^\}}\n", GO_TEST, re.S | re.M)
    assert found, f"{name} is not in devices_test.go"
    return found.group(1)


def _go_string(literals: str) -> str:
    """One Go string expression: interpreted literals joined by `+` (their escapes are JSON's)."""
    return "".join(json.loads(lit) for lit in re.findall(_LITERAL, literals))


def _pod_annotations() -> list[str]:
    """Every pod device annotation upstream's tests write or decode (`uuid,type,mem,cores:` …;)."""
    out = []
    for name in ("TestPodDevicesCoding", "Test_DecodePodDevices", "TestDecodePodDevices_BadAnnotation"):
        for literal in re.findall(_LITERAL, _function(name)):
            value = json.loads(literal)
            if "," in value and value.endswith(":;") and value not in out:
                out.append(value)
    return out


POD_ANNOTATIONS = _pod_annotations()


def test_the_upstream_examples_are_found() -> None:
    """devices_test.go:144-220 (the encoded forms in the comments), :257-258, :299."""
    assert POD_ANNOTATIONS == [
        "UUID1,Type1,1000,30:;",
        "UUID1,Type1,1000,30:;UUID1,Type1,1000,30:;",
        "UUID1,Type1,1000,30:UUID2,Type1,1000,30:;",
        "GPU-8dcd427f-483b-b48f-d7e5-75fb19a52b76,NVIDIA,500,3:;"
        "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,NVIDIA,500,3:;",
        "uuid,type,100:;",
    ]


def _grants(decoded: list[list[hami.DeviceGrant]] | None) -> list[list[tuple[str, str, int, int]]] | None:
    if decoded is None:
        return None
    return [[(g.device_id, g.vendor, g.memory_mib, g.cores) for g in c] for c in decoded]


@pytest.mark.parametrize("annotation", POD_ANNOTATIONS)
def test_gpulab_and_the_fakes_decode_each_pod_annotation_alike(annotation: str) -> None:
    fake = wire.decode_pod_devices(annotation)
    assert _grants(hami.decode_allocation(annotation)) == fake
    # the lenient reader verify's checks use: the same devices, empty containers left out
    lenient = _grants(objects.allocations({"metadata": {"annotations": {hami.ALLOCATED_ANNOTATION: annotation}}}))
    if fake is not None:
        assert lenient == [c for c in fake if c]


def test_the_decoded_annotations_are_what_upstreams_tests_expect() -> None:
    """Test_DecodePodDevices (devices_test.go:225-295): two containers of one device each and
    the trailing `;`'s empty container; TestDecodePodDevices_BadAnnotation (:297-302): an entry
    of three fields is an error, so HAMi reads no devices from the pod."""
    want = re.findall(r'UUID:\s+"([^"]+)",\s+Type:\s+"([^"]+)",\s+Usedmem:\s+(\d+),\s+'
                      r'Usedcores:\s+(\d+),', _function("Test_DecodePodDevices"))
    expected = [[(uuid, kind, int(mem), int(cores))] for uuid, kind, mem, cores in want] + [[]]
    annotation = POD_ANNOTATIONS[3]
    assert wire.decode_pod_devices(annotation) == expected
    assert _grants(hami.decode_allocation(annotation)) == expected
    assert wire.decode_pod_devices("uuid,type,100:;") is None
    assert hami.decode_allocation("uuid,type,100:;") is None


def test_encoding_gives_back_upstreams_encoded_forms() -> None:
    """TestPodDevicesCoding (devices_test.go:129-223): what EncodePodDevices writes for each
    pod, as its comments give it; the fakes write allocations with this encoder."""
    device = ("UUID1", "Type1", 1000, 30)
    assert wire.encode_pod_devices([[device]]) == POD_ANNOTATIONS[0]
    assert wire.encode_pod_devices([[device], [device]]) == POD_ANNOTATIONS[1]
    assert wire.encode_pod_devices([[device, ("UUID2", "Type1", 1000, 30)]]) == POD_ANNOTATIONS[2]
    assert wire.encode_pod_devices([]) == ""
    for annotation in POD_ANNOTATIONS[:4]:  # decode then encode: the same bytes
        decoded = wire.decode_pod_devices(annotation)
        assert decoded is not None
        assert wire.encode_pod_devices(decoded[:-1]) == annotation


def _register_examples() -> list[str]:
    """The register annotations (JSON) of TestMarshalNodeDevices' `want` and
    TestUnMarshalNodeDevices' `str` (devices_test.go:304-382, :399-470)."""
    out = []
    for name, field in (("TestMarshalNodeDevices", "want"), ("TestUnMarshalNodeDevices", "str")):
        for expr in re.findall(rf"\b{field}:\s+((?:{_LITERAL}\s*\+?\s*)+),", _function(name)):
            out.append(_go_string(expr))
    return out


REGISTERS = _register_examples()
_CARD = re.compile(r'\{\s+Index:\s+(\d+),\s+ID:\s+"([^"]*)",\s+Count:\s+(\d+),\s+Devmem:\s+(\d+),'
                   r'\s+Devcore:\s+(\d+),\s+Type:\s+"([^"]*)",\s+Numa:\s+(\d+),\s+'
                   r'Health:\s+(true|false),\s+\}')
_SHOWN = ("id", "index", "count", "devmem", "devcore", "type", "numa", "health")


def test_the_register_examples_are_found() -> None:
    assert len(REGISTERS) == 5
    assert REGISTERS[2] == "[]"
    assert REGISTERS[3].endswith("]\n")  # upstream decodes it with the trailing newline


@pytest.mark.parametrize("raw", REGISTERS)
def test_gpulab_and_the_fakes_decode_each_register_annotation_alike(raw: str) -> None:
    fake = wire.decode_node_devices(raw)
    assert fake is not None
    mine = hami.decode_register(raw)
    if not fake:  # `[]`: no cards; gpulab reads it as HAMi's "no devices registered"
        assert mine is None
        assert objects.registered_devices(raw) == []
        return
    assert mine is not None
    assert [{k: c[k] for k in _SHOWN} for c in mine] == [{k: c[k] for k in _SHOWN} for c in fake]
    assert [{k: c.get(k) for k in ("id", "devmem", "devcore", "count")}
            for c in objects.registered_devices(raw) or []] == [
        {k: c[k] for k in ("id", "devmem", "devcore", "count")} for c in fake]


def test_the_decoded_registers_are_what_upstreams_tests_expect() -> None:
    """TestUnMarshalNodeDevices' `want` (devices_test.go:399-470): the cards with every field."""
    want = [{"index": int(i), "id": d, "count": int(c), "devmem": int(m), "devcore": int(k),
             "type": t, "numa": int(n), "health": h == "true"}
            for i, d, c, m, k, t, n, h in _CARD.findall(_function("TestUnMarshalNodeDevices"))]
    assert len(want) == 3
    decoded = [card for raw in REGISTERS[3:] for card in wire.decode_node_devices(raw) or []]
    assert [{k: c[k] for k in _SHOWN} for c in decoded] == want
    mine = [card for raw in REGISTERS[3:] for card in hami.decode_register(raw) or []]
    assert [{k: c[k] for k in _SHOWN} for c in mine] == want
