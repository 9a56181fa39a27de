"""Cluster text is data, not markup (issue #22 item 4), through the real command line with its
output piped: names, annotations, labels, taints, the context and the server URL of a cluster
are printed literally (Rich markup such as `[/bold]` or `[red]x[/red]`, emoji codes such as
`:100:`), with control characters shown as escapes (ESC and BEL: an OSC title sequence, the
kubectl CVE-2021-25743 class), in the inspection, the plan and its notes, the verdict table,
`-o json` (exact, as data) and JUnit XML (which must parse: XML 1.0 forbids most C0 controls).
An IPv6 server URL keeps its host. A HAMi register annotation that does not decode (a string
where a number belongs, the pre-v2.5 comma format) or a share annotation that is not a number
gives that node no cards, that pod no share, as in HAMi: never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

import kmock
import pytest

from gpulab.terminal import neutral
from gpulab.verify.report import Finding, VerifyReport, junit_xml
from gpulab.verify.result import CheckResult
from tests.cluster import builders as b
from tests.cluster import test_kmock

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

HOSTILE = "[/bold] [red]x[/red] :100: \x1b]0;pwned\x07 \x07"  # markup, emoji, OSC, BEL
SHOWN = "[/bold] [red]x[/red] :100: \\x1b]0;pwned\\x07 \\x07"  # how gpulab prints it


def _raw_controls(text: str) -> set[str]:
    return {c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0}


def _ipv6() -> bool:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        return True
    return False


def _objects() -> list[dict[str, Any]]:
    """HAMi (mock plugin) and a KAI queue; a GPU node whose name, handshake, card model and pool
    label are hostile, its only card used by a hostile pod (so the plan refuses and says why,
    naming them); a MIG node with a hostile name and taint (a plan note); nodes whose register
    annotation HAMi cannot decode; a pod whose gpu-fraction is not a number; a Kamaji tenant."""
    gpu = b.node(f"gpu{HOSTILE}", [b.card("GPU-0", f"NVIDIA{HOSTILE}", 24576)])
    gpu["metadata"]["annotations"]["hami.io/node-handshake"] = f"Reported_{HOSTILE}"
    gpu["metadata"]["labels"]["kai.scheduler/node-pool"] = HOSTILE
    # a lone surrogate (JSON `\ud800`, which a server can send) cannot even be encoded
    mig = b.raw_node(f"mig{HOSTILE}", allocatable={"nvidia.com/mig-1g.10gb": "7"},
                     taints=[{"key": f"team{HOSTILE}", "value": "v\ud800",
                              "effect": "NoSchedule"}])
    wrong_type = b.raw_node("wrong-type")  # a string where HAMi's DeviceInfo has an int
    wrong_type["metadata"]["annotations"]["hami.io/node-nvidia-register"] = (
        '[{"id":"GPU-9","count":"10","devmem":"[red]24576[/red]","devcore":100,'
        '"type":"NVIDIA","health":true}]')
    wrong_type["status"]["allocatable"]["nvidia.com/gpu"] = "10"
    old_format = b.raw_node("pre-v2.5")  # HAMi before v2.5: `id,count,mem,cores,type,numa,health:`
    old_format["metadata"]["annotations"]["hami.io/node-nvidia-register"] = (
        "GPU-8,10,24576,100,NVIDIA-NVIDIA L4,0,true:")
    old_format["status"]["allocatable"]["nvidia.com/gpu"] = "10"
    user = b.pod(f"p{HOSTILE}", f"ns{HOSTILE}", f"gpu{HOSTILE}", grant="GPU-0,NVIDIA,8000,20:;",
                 limits={"nvidia.com/gpu": "1"}, labels={"team": HOSTILE})
    odd = b.pod("odd-fraction", "ml", "wrong-type", annotations={"gpu-fraction": "NaN"})
    queue = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
             "metadata": {"name": "q-x", "labels": {"kai.scheduler/node-pool": HOSTILE}},
             "spec": {"resources": {"gpu": {"limit": -1}}}}
    tcp = {"apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "TenantControlPlane",
           "metadata": {"name": f"t{HOSTILE}", "namespace": "tenants"}}
    return [*b.hami("mock", nodes=4), gpu, mig, wrong_type, old_format, user, odd, queue, tcp]


@contextlib.contextmanager
def _served_on_ipv6(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    class Server(kmock.Server):
        def __init__(self, handler: Any, **kwargs: Any) -> None:
            super().__init__(handler, host="::1", **kwargs)

    monkeypatch.setattr(test_kmock.kmock, "Server", Server)
    with test_kmock.served(_objects()) as (url, _km):
        yield url


def _kubeconfig(path: Path, server: str) -> Path:
    config = json.loads(b.kubeconfig_file(path, server).read_text())
    config["contexts"][0]["name"] = config["current-context"] = f"ctx{HOSTILE}"
    path.write_text(json.dumps(config))
    return path


def _gpulab(*args: str) -> subprocess.CompletedProcess[str]:
    """gpulab as a user runs it, its output piped (no terminal)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "gpulab", *args], capture_output=True,
                          text=True, timeout=120, check=False, env=env)


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    both = done.stdout + done.stderr
    assert "Traceback" not in both and "bug in gpulab" not in both, both
    assert not _raw_controls(both), _raw_controls(both)
    assert "💯" not in both


@pytest.mark.slow
@pytest.mark.skipif(not _ipv6(), reason="no IPv6 loopback")
def test_cluster_strings_are_printed_literally_everywhere(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    with _served_on_ipv6(monkeypatch) as url:
        assert url.startswith("http://[::1]:")
        config = ["--kubeconfig", str(_kubeconfig(tmp_path / "k.yaml", url)),
                  "--context", f"ctx{HOSTILE}"]
        inspect = _gpulab("verify", *config, "--inspect")
        dry = _gpulab("verify", *config, "--dry-run")
        data = _gpulab("verify", *config, "--dry-run", "-o", "json")
        run = _gpulab("verify", *config, "--junit", str(tmp_path / "v.xml"))
    for done in (inspect, dry, data, run):
        _clean(done)

    # the inspection: every cluster string as it is, the IPv6 host whole
    assert inspect.returncode == 0, inspect.stderr
    lines = inspect.stdout.splitlines()
    assert lines[0].startswith(f"cluster ctx{SHOWN} ({url}, Kubernetes ")
    for expected in (
        f"  GPU node:            gpu{SHOWN} (Ready, nvidia.com/gpu 10, 1 card(s) registered by "
        f"HAMi, handshake Reported_{SHOWN})",
        f"  card:                gpu{SHOWN}/GPU-0 NVIDIA{SHOWN}, 24576 MiB, 100 cores, split "
        f"10; in use 8000 MiB, 20 cores by ns{SHOWN}/p{SHOWN}",
        f"                         KAI node pool {SHOWN}",
        f"                         taint team{SHOWN}=v\\ud800:NoSchedule not tolerated",
        f"  tenancy:             Kamaji: 1 TenantControlPlane(s) (tenants/t{SHOWN})",
    ):
        assert expected in lines, (expected, lines)
    assert f"GPU users:           ns{SHOWN}/p{SHOWN}" in inspect.stdout
    # HAMi's own reading of the register annotation: no cards there, no traceback
    for node in ("wrong-type", "pre-v2.5"):
        assert f"  GPU node:            {node} (Ready, nvidia.com/gpu 10, 0 card(s) registered " \
               f"by HAMi)" in lines
    assert "HAMi cannot decode its hami.io/node-nvidia-register" in inspect.stdout
    assert "ml/odd-fraction" not in inspect.stdout  # `NaN` is no share of a GPU

    # the plan: its refusal and its notes name them as they are
    assert dry.returncode == 3, dry.stderr
    refusal = (f"  - no card can be used (gpu{SHOWN}/GPU-0 (NVIDIA{SHOWN}, 24576 MiB): in use "
               f"by ns{SHOWN}/p{SHOWN}): free a card, or wait for one, and run verify again")
    assert refusal in dry.stdout.splitlines()
    assert f"  note: mig{SHOWN} advertises MIG devices (nvidia.com/mig-1g.10gb=7)" in dry.stdout

    # -o json: data, exactly what the cluster holds
    document = json.loads(data.stdout)
    (cluster,) = document["clusters"]
    assert cluster["member"] == f"ctx{HOSTILE}" and cluster["server"] == url
    assert f"gpu{HOSTILE}" in [n["name"] for n in cluster["gpu_nodes"]]
    assert f"ns{HOSTILE}/p{HOSTILE}" in cluster["gpu_users"]
    assert HOSTILE in document["plans"][0]["refusals"][0]

    # the run: nothing created (the plan refused); the table, the reasons and JUnit
    assert run.returncode == 3, run.stderr
    assert f"ERROR GPU-02, GPU-03, GPU-04, GPU-05 (ctx{SHOWN}): not run: no card can be used " \
           f"(gpu{SHOWN}/GPU-0" in run.stdout
    assert refusal in run.stderr.splitlines()  # the plan, shown before anything is created
    junit = (tmp_path / "v.xml").read_text(encoding="utf-8")
    assert not _raw_controls(junit)
    root = ET.fromstring(junit)
    cases = root.findall(".//testcase")
    assert {c.get("classname") for c in cases} == {f"ctx{SHOWN}"}
    error = root.find(".//testcase[@name='GPU-02 admission through HAMi']/error")
    assert error is not None
    assert f"in use by ns{SHOWN}/p{SHOWN}" in error.get("message", "")
    assert f"in use by ns{SHOWN}/p{SHOWN}" in (error.text or "")


def test_an_unreachable_ipv6_server_keeps_its_host(tmp_path: Path) -> None:
    server = "https://[fd00::1]:6443"
    config = str(_kubeconfig(tmp_path / "k.yaml", server))
    done = _gpulab("verify", "--kubeconfig", config, "--context", f"ctx{HOSTILE}", "--inspect",
                   "--request-timeout", "1s")
    _clean(done)
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""  # an error: on stderr, once
    (head,) = [line for line in done.stderr.splitlines() if "did not answer" in line]
    assert head.startswith(f"error: cluster ctx{SHOWN} ({server}): did not answer: get server "
                           f"version at {server}: "), head


def test_junit_holds_lab_and_cluster_text_as_escapes_and_parses() -> None:
    """Every attribute and text of the JUnit document (suite, tenant, check names, reasons,
    evidence, findings, properties) goes through gpulab.terminal.neutral; what XML 1.0 cannot
    hold at all (U+FFFE, lone surrogates) is escaped too."""
    odd = f"{HOSTILE}\r\x00\x1f\x7f\x85\u202e\ufffe\ud800"
    results = (CheckResult("TC-01", odd, "pass", evidence=odd, title=odd),
               CheckResult("TC-02", odd, "fail", evidence=odd, reason=odd, title="t"),
               CheckResult("TC-03", odd, "error", reason=odd, title="t"),
               CheckResult("TC-04", odd, "skip", reason=odd, title="t"))
    report = VerifyReport(lab=odd, results=results, state=_State(),
                          findings=(Finding("F-1", odd, odd, odd, odd),))
    document = junit_xml(report, properties={odd: odd})
    root = ET.fromstring(document)  # parses
    texts = [v for e in root.iter() for v in (*e.attrib.values(), e.text or "")]
    assert not [t for t in texts if _raw_controls(t) or "\ufffe" in t or "\ud800" in t]
    assert sum(neutral(HOSTILE) in t for t in texts) >= 10
    assert "\\x0d\\x00\\x1f\\x7f\\x85\\u202e\\ufffe\\ud800" in document


class _State:
    lab = "lab"
    observed_at = "2026-12-01T10:00:00+00:00"
