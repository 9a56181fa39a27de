"""KindCli against a fake `kind` on PATH that records its argv and prints canned output."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from gpulab.adapters.kind import OUTPUT_TAIL_LINES, KindCli
from gpulab.errors import AdapterError, ExitCode, HostError

FAKE_KIND = r"""#!/bin/sh
# Fake kind: one line per argument in $FAKE_DIR/argv (a "--" line ends each call).
for arg in "$@"; do printf '%s\n' "$arg" >> "$FAKE_DIR/argv"; done
echo -- >> "$FAKE_DIR/argv"
printf '%s\n' "${DOCKER_HOST:-}" > "$FAKE_DIR/docker_host"
[ -n "${FAKE_SLEEP:-}" ] && sleep "$FAKE_SLEEP"
if [ -n "${FAKE_FAIL:-}" ]; then
  i=1
  while [ "$i" -le 30 ]; do echo " • progress line $i" >&2; i=$((i + 1)); done
  echo "ERROR: failed to create cluster: $FAKE_FAIL" >&2
  echo "stdout tail"
  exit 1
fi
case "$1 $2" in
  "version ") echo "kind v0.33.0 go1.24.2 linux/amd64" ;;
  "get clusters")
    if [ -n "${FAKE_CLUSTERS:-}" ]; then printf '%s\n' $FAKE_CLUSTERS; else echo "No kind clusters found." >&2; fi ;;
  "get kubeconfig") printf 'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://127.0.0.1:43121\n' ;;
  "create cluster")
    while [ $# -gt 0 ]; do
      if [ "$1" = --config ]; then cp "$2" "$FAKE_DIR/config.yaml"; echo "$2" > "$FAKE_DIR/config_path"; fi
      shift
    done
    echo "Creating cluster ..." >&2 ;;
  "delete cluster") echo "Deleting cluster ..." >&2 ;;
  *) echo "ERROR: unknown command" >&2; exit 1 ;;
esac
"""


@dataclass
class FakeKind:
    folder: Path

    def calls(self) -> list[list[str]]:
        path = self.folder / "argv"
        if not path.exists():
            return []
        calls: list[list[str]] = [[]]
        for line in path.read_text().splitlines():
            if line == "--":
                calls.append([])
            else:
                calls[-1].append(line)
        return calls[:-1]


@pytest.fixture
def fake_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKind:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kind"
    script.write_text(FAKE_KIND)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    record = tmp_path / "record"
    record.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_DIR", str(record))
    for name in ("FAKE_FAIL", "FAKE_SLEEP", "FAKE_CLUSTERS", "DOCKER_HOST"):
        monkeypatch.delenv(name, raising=False)
    return FakeKind(record)


def test_version(fake_kind: FakeKind) -> None:
    assert KindCli().version() == "v0.33.0"
    assert fake_kind.calls() == [["version"]]


def test_clusters(fake_kind: FakeKind, monkeypatch: pytest.MonkeyPatch) -> None:
    assert KindCli().clusters() == []
    monkeypatch.setenv("FAKE_CLUSTERS", "gpulab-a kind")
    assert KindCli().clusters() == ["gpulab-a", "kind"]
    assert fake_kind.calls() == [["get", "clusters"]] * 2


def test_create_writes_the_config_and_waits(fake_kind: FakeKind) -> None:
    config = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": "gpulab-lab1",
        "nodes": [{"role": "control-plane", "image": "kindest/node:v1.35.0@sha256:abc",
                   "labels": {"gpulab.dev/lab": "lab1"}}],
    }
    KindCli().create("gpulab-lab1", config, wait_seconds=90)
    (call,) = fake_kind.calls()
    config_path = (fake_kind.folder / "config_path").read_text().strip()
    assert call == ["create", "cluster", "--name", "gpulab-lab1", "--config", config_path, "--wait", "90s"]
    assert "--retain" not in call  # kind removes a cluster whose creation failed
    assert yaml.safe_load((fake_kind.folder / "config.yaml").read_text()) == config
    assert not Path(config_path).exists()  # the temporary file is gone


def test_create_and_delete_with_own_kubeconfig(fake_kind: FakeKind, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "lab" / "management.kubeconfig"
    kind = KindCli(kubeconfig=kubeconfig)
    kind.create("c1", {"kind": "Cluster"})
    kind.delete("c1")
    create, delete = fake_kind.calls()
    assert create[-4:] == ["--wait", "120s", "--kubeconfig", str(kubeconfig)]
    assert delete == ["delete", "cluster", "--name", "c1", "--kubeconfig", str(kubeconfig)]


def test_delete(fake_kind: FakeKind) -> None:
    KindCli().delete("gpulab-lab1")
    assert fake_kind.calls() == [["delete", "cluster", "--name", "gpulab-lab1"]]


def test_kubeconfig(fake_kind: FakeKind) -> None:
    text = KindCli().kubeconfig("gpulab-lab1")
    assert yaml.safe_load(text)["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:43121"
    assert fake_kind.calls() == [["get", "kubeconfig", "--name", "gpulab-lab1"]]


def test_failure_names_the_command_and_keeps_the_output_tail(
    fake_kind: FakeKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FAIL", "node image not found")
    with pytest.raises(AdapterError) as caught:
        KindCli().create("c1", {"kind": "Cluster"}, wait_seconds=60)
    err = caught.value
    assert err.message.startswith("`kind create cluster --name c1 --config ")
    assert err.message.endswith(" --wait 60s` failed (exit code 1): failed to create cluster: node image not found")
    assert "\n" not in str(err)
    lines = err.output.splitlines()
    assert len(lines) == OUTPUT_TAIL_LINES
    assert lines[-2:] == ["ERROR: failed to create cluster: node image not found", "stdout tail"]
    assert lines[0] == " • progress line 13"
    assert err.exit_code == ExitCode.FAILED


def test_timeout(fake_kind: FakeKind, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "5")
    with pytest.raises(AdapterError, match=r"^`kind get clusters` did not finish within 0.3s"):
        KindCli(timeout=0.3).clusters()


def test_extra_environment(fake_kind: FakeKind) -> None:
    KindCli(env={"DOCKER_HOST": "unix:///run/other.sock"}).version()
    assert (fake_kind.folder / "docker_host").read_text().strip() == "unix:///run/other.sock"


def test_missing_binary_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HostError) as caught:
        KindCli(want_version="v0.33.0").clusters()
    assert caught.value.message == "kind not found: no 'kind' on PATH"
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("run gpulab doctor --install-tools, or install kind v0.33.0 (")
    assert caught.value.exit_code == ExitCode.HOST


def test_binary_by_path(fake_kind: FakeKind, tmp_path: Path) -> None:
    real = tmp_path / "bin" / "kind"
    assert KindCli(binary=real).version() == "v0.33.0"
    with pytest.raises(HostError, match="does not exist"):
        KindCli(binary=tmp_path / "nowhere" / "kind").version()
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    with pytest.raises(HostError, match="is not executable"):
        KindCli(binary=plain).version()
