"""`verify --kubeconfig` reads kubeconfigs as kubectl does (issue #21 item 6): $KUBECONFIG merged
(first file to name an entry, and first to set current-context, win), else ~/.kube/config;
`--context` alone is enough; `--request-timeout` bounds each request; a file that is not a
kubeconfig is one line naming it; no hint about `gpulab up`; urllib3's warnings become one note
and its retry lines show only with -v."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpulab import core
from gpulab.cli import app
from gpulab.cluster.kubeconfig import default_source, load, parse_duration, resolve
from gpulab.errors import UsageError
from gpulab.usecases import anycluster

runner = CliRunner()
DEAD = "https://127.0.0.1:1"  # nothing listens there: every request is refused at once


def _config(path: Path, *, current: str | None, contexts: dict[str, str],
            servers: dict[str, str], extra: dict[str, Any] | None = None) -> Path:
    """A kubeconfig: contexts name → cluster name; every context's user is `u`."""
    data: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in servers.items()],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": n, "context": {"cluster": c, "user": "u"}}
                     for n, c in contexts.items()],
        **(extra or {})}
    if current is not None:
        data["current-context"] = current
    path.write_text(json.dumps(data))
    return path


def _one_error_line(result: Any) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output and "gpulab up" not in result.output
    return lines[0]


def test_kubeconfig_list_is_merged_as_kubectl_merges_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    first = _config(tmp_path / "a" / "first.yaml", current=None,
                    contexts={"dev": "shared"}, servers={"shared": "https://first:6443"},
                    extra={"clusters": [{"name": "shared", "cluster": {
                        "server": "https://first:6443", "certificate-authority": "ca.crt"}}]})
    second = _config(tmp_path / "second.yaml", current="prod",
                     contexts={"prod": "shared", "dev": "other"},
                     servers={"shared": "https://second:6443", "other": "https://o:6443"})
    third = _config(tmp_path / "third.yaml", current="dev", contexts={}, servers={})
    env = {"KUBECONFIG": f"{first}:{tmp_path / 'missing.yaml'}:{second}:{third}"}
    source = default_source(env)
    assert source.files == (first, second, third) and source.origin == "$KUBECONFIG"
    merged = load(source)
    assert merged["current-context"] == "prod", "the first file that sets it"
    clusters = {c["name"]: c["cluster"] for c in merged["clusters"]}
    assert clusters["shared"]["server"] == "https://first:6443", "the first file to name it"
    assert clusters["shared"]["certificate-authority"] == str(tmp_path / "a" / "ca.crt")
    contexts = {c["name"]: c["context"]["cluster"] for c in merged["contexts"]}
    assert contexts == {"dev": "shared", "prod": "shared"}
    [access] = resolve([], [], env)
    assert (access.name, access.context) == ("prod", "prod")
    both = resolve([], ["dev", "prod"], env)
    assert [(a.name, a.context) for a in both] == [("dev", "dev"), ("prod", "prod")]


def test_without_kubeconfig_it_is_home_kube_config(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    home = _config(tmp_path / ".kube" / "config", current="mine", contexts={"mine": "c"},
                   servers={"c": DEAD})
    assert default_source({"HOME": str(tmp_path)}).files == (home,)
    with pytest.raises(UsageError, match=r"\$KUBECONFIG is not set and .* does not exist"):
        default_source({"HOME": str(tmp_path / "nobody")})
    with pytest.raises(UsageError, match="none of them is a file"):
        default_source({"KUBECONFIG": str(tmp_path / "nope"), "HOME": str(tmp_path)})


def test_context_alone_is_enough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tmp_path / "config", current="a", contexts={"a": "c", "gpu-prod": "c"},
                     servers={"c": DEAD})
    monkeypatch.setenv("KUBECONFIG", str(config))
    result = runner.invoke(app, ["verify", "--context", "gpu-prod", "--inspect"])
    assert result.exit_code == 4, result.output  # it answered nothing: exit 4, naming it
    assert f"error: cluster gpu-prod ({DEAD}): did not answer" in result.stderr
    current = runner.invoke(app, ["verify", "--inspect"])
    assert f"error: cluster a ({DEAD}): did not answer" in current.stderr
    assert "not-a-secret" not in result.output + current.output


@pytest.mark.parametrize(("content", "words"), [
    ("hello\n", "is not a kubeconfig: a YAML str, not a mapping"),
    ("- a\n- b\n", "is not a kubeconfig: a YAML list, not a mapping"),
    ("clusters: [\n", "is not a kubeconfig: not valid YAML at line 2"),
    ("a: 1\n", "is not a kubeconfig: it defines no contexts"),
    ("contexts: {a: b}\n", "is not a kubeconfig: contexts is not a list"),
    ("contexts: [{context: {}}]\n", "is not a kubeconfig: contexts[0] has no name"),
    ("current-context: [x]\ncontexts: []\n", "is not a kubeconfig: current-context is not"),
])
def test_a_file_that_is_not_a_kubeconfig_is_one_line_naming_it(tmp_path: Path, content: str,
                                                                words: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(content)
    result = runner.invoke(app, ["verify", "--kubeconfig", str(path), "--inspect"])
    assert result.exit_code == 2, result.output
    line = _one_error_line(result)
    assert f"{path} {words}" in line
    assert "object does not support item assignment" not in result.output


@pytest.mark.parametrize(("contexts", "servers", "argv", "words"), [
    ({"a": "c"}, {"c": DEAD}, ["--context", "b"], "context b is not in {path} (its contexts: a)"),
    ({"a": "gone"}, {"c": DEAD}, [], "context a in {path} names cluster gone, which is not"),
    ({"a": "c"}, {"c": ""}, [], "cluster c in {path} has no server (context a)"),
])
def test_a_context_that_cannot_be_used_is_one_line(tmp_path: Path, contexts: dict[str, str],
                                                    servers: dict[str, str], argv: list[str],
                                                    words: str) -> None:
    path = _config(tmp_path / "k.yaml", current="a", contexts=contexts, servers=servers)
    result = runner.invoke(app, ["verify", "--kubeconfig", str(path), *argv, "--inspect"])
    assert result.exit_code == 2, result.output
    assert words.format(path=path) in _one_error_line(result)


def test_no_current_context_asks_for_one(tmp_path: Path) -> None:
    path = _config(tmp_path / "k.yaml", current=None, contexts={"a": "c", "b": "c"},
                   servers={"c": DEAD})
    result = runner.invoke(app, ["verify", "--kubeconfig", str(path), "--inspect"])
    assert result.exit_code == 2
    assert f"{path} sets no current-context (pass --context NAME; its contexts: a, b)" in (
        _one_error_line(result))


def test_request_timeout_reads_like_kubectls() -> None:
    assert parse_duration("30s") == 30 and parse_duration("1m30s") == 90
    assert parse_duration("500ms") == 0.5 and parse_duration("2") == 2
    assert parse_duration("0") is None and parse_duration("0s") is None  # kubectl: no limit
    for bad in ("", "soon", "-1s", "1d", "s"):
        with pytest.raises(ValueError, match="is not a duration"):
            parse_duration(bad)


class _HungServer:
    """An API server that accepts connections and never answers."""

    def __enter__(self) -> str:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)  # the accept loop sees `stop`: a thread left blocked in
        # accept() on a closed socket would take the next test's connections on that fd
        self.stop = threading.Event()
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()
        for held in self.held:
            held.close()


def test_a_hung_api_server_is_bounded_by_request_timeout_and_retries_show_with_v(
        tmp_path: Path) -> None:
    server = _HungServer()
    with server as url:
        path = _config(tmp_path / "k.yaml", current="hung", contexts={"hung": "c"},
                       servers={"c": url})
        started = time.monotonic()
        quiet = runner.invoke(app, ["verify", "--kubeconfig", str(path), "--inspect",
                                    "--request-timeout", "300ms"])
        took = time.monotonic() - started
        loud = runner.invoke(app, ["verify", "--kubeconfig", str(path), "--inspect",
                                   "--request-timeout", "300ms", "-v"])
    assert quiet.exit_code == loud.exit_code == 4, quiet.output
    assert "no answer within 0.3s" in quiet.stderr
    assert took < 15, "each request waited --request-timeout, not the default"
    # one request, one deadline: urllib3 no longer retries by itself (adapters/kube.py)
    assert "Retrying" not in quiet.stderr + loud.stderr, loud.stderr
    assert len(server.held) == 2, "one connection per run"


def test_http_warnings_become_one_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib3

    path = _config(tmp_path / "k.yaml", current="a", contexts={"a": "c"}, servers={"c": DEAD})

    def inspect(*_args: Any, **_kwargs: Any) -> list[Any]:
        for _ in range(3):  # what urllib3 does on each request with insecure-skip-tls-verify
            warnings.warn("Unverified HTTPS request is being made to host 'gpu.example'.",
                          urllib3.exceptions.InsecureRequestWarning, stacklevel=1)
        logging.getLogger("urllib3.connectionpool").warning("Retrying (Retry(total=2)) ...")
        return []

    monkeypatch.setattr(core, "inspect_clusters", inspect)
    result = runner.invoke(app, ["verify", "cluster", "--kubeconfig", str(path), "--inspect"])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line]
    assert notes == ["note: 3 request(s) went to an API server without checking its TLS "
                     "certificate (insecure-skip-tls-verify in the kubeconfig): anyone on the "
                     "network path could have answered"], result.stderr
    loud = runner.invoke(app, ["verify", "--kubeconfig", str(path), "--inspect", "-v"])
    assert "  retry: Retrying (Retry(total=2)) ..." in loud.stderr.splitlines()


def test_the_credential_probe_uses_the_merged_kubeconfig_at_each_context(
        tmp_path: Path) -> None:
    path = _config(tmp_path / "k.yaml", current="a", contexts={"a": "ca", "b": "cb"},
                   servers={"ca": "https://a.example:6443", "cb": "https://b.example:6443"})
    members = {m.name: (m.config, m.context) for m in resolve([], ["a", "b"],
                                                              {"KUBECONFIG": str(path)})}
    cross = anycluster._cross_gateway(members, tmp_path / "scratch")
    assert cross("a", "b").server == "https://b.example:6443"  # type: ignore[attr-defined]
