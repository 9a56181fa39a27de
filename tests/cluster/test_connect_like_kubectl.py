"""`verify --kubeconfig` connects as kubectl does (issue #35): the same kubeconfig and the same
server answers, run through the real kubectl (v1.35.2, unpacked by .ci/setup-host.sh) and through
gpulab, end the same way.

- An exec credential plugin that is not installed: kubectl fails before any request, naming the
  executable and the kubeconfig's `installHint` (client-go plugin/pkg/client/auth/exec/
  exec.go:57-62, 548-561 at kubernetes-1.35.2); the Python client would have logged it and sent
  the requests unauthenticated (kubernetes 37.0.2 config/kube_config.py:473-474). The kubeconfig
  is the Kubernetes docs' own example (kubernetes/website content/en/docs/reference/
  access-authn-authz/authentication.md, "client-go credential plugins", its `exec` entry).
- 429 with `Retry-After`: client-go asks again after that many seconds, up to 10 times, all
  within the request timeout (rest/with_retry.go:148-193, 309-318; request.go:166, 1058-1120).

The API server is a small HTTP server on 127.0.0.1 answering `/version` from a script and
counting requests. Against main, gpulab sent 1 unauthenticated request (and failed on 401, where
kubectl sent none), and failed on the first 429 where kubectl succeeded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import ssl
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from typer.testing import CliRunner

from gpulab.adapters.kube import KubeClient, RetryPolicy
from gpulab.cli import app
from gpulab.errors import AdapterError
from tests.host import require_kubectl

if TYPE_CHECKING:
    from collections.abc import Iterator

VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.4", "platform": "linux/amd64"}

# kubernetes/website authentication.md, the `exec` of its client.authentication.k8s.io/v1
# example kubeconfig (comments left out).
DOCS_EXEC = yaml.safe_load("""\
command: "example-client-go-exec-plugin"
apiVersion: "client.authentication.k8s.io/v1"
env:
- name: "FOO"
  value: "bar"
args:
- "arg1"
- "arg2"
installHint: |
  example-client-go-exec-plugin is required to authenticate
  to the current cluster.  It can be installed:

  On macOS: brew install example-client-go-exec-plugin

  On Ubuntu: apt-get install example-client-go-exec-plugin

  On Fedora: dnf install example-client-go-exec-plugin

  ...
provideClusterInfo: true
interactiveMode: Never
""")


@functools.cache
def _tls() -> ssl.SSLContext:
    """A self-signed certificate for 127.0.0.1 (kubectl sends credentials, and runs the exec
    plugin, only over TLS: over http it sent the request bare)."""
    certs = Path(tempfile.mkdtemp(prefix="gpulab-tls-"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(certs / "key.pem"), "-out", str(certs / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs / "cert.pem", certs / "key.pem")
    return tls


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@functools.cache
def _kubeadm_pki() -> Path:
    """A CA, the API server's certificate and an admin client certificate signed by it, as
    kubeadm makes them (cmd/kubeadm/app/phases/certs: `kubernetes` CA, apiserver serving cert;
    kubeconfig phase: admin.conf's client certificate, CN kubernetes-admin, O
    kubeadm:cluster-admins), and a client certificate from another CA."""
    pki = Path(tempfile.mkdtemp(prefix="gpulab-pki-"))
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                 "-keyout", str(pki / f"{ca}.key"), "-out", str(pki / f"{ca}.crt"),
                 "-subj", "/CN=kubernetes")
    for name, subject, ca, ext in (
            ("apiserver", "/CN=kube-apiserver", "ca", "subjectAltName=IP:127.0.0.1"),
            ("admin", "/O=kubeadm:cluster-admins/CN=kubernetes-admin", "ca",
             "extendedKeyUsage=clientAuth"),
            ("stranger", "/O=kubeadm:cluster-admins/CN=kubernetes-admin", "other-ca",
             "extendedKeyUsage=clientAuth")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(pki / f"{name}.key"),
                 "-out", str(pki / f"{name}.csr"), "-subj", subject)
        (pki / f"{name}.ext").write_text(ext + "\n")
        _openssl("x509", "-req", "-in", str(pki / f"{name}.csr"), "-CA", str(pki / f"{ca}.crt"),
                 "-CAkey", str(pki / f"{ca}.key"), "-CAcreateserial", "-days", "1",
                 "-extfile", str(pki / f"{name}.ext"), "-out", str(pki / f"{name}.crt"))
    return pki


def _mutual_tls() -> ssl.SSLContext:
    pki = _kubeadm_pki()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    tls.load_verify_locations(pki / "ca.crt")
    tls.verify_mode = ssl.CERT_REQUIRED  # the API server's --client-ca-file
    return tls


@contextlib.contextmanager
def api_server(script: list[tuple[int, dict[str, str]]], prefix: str = "",
               tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, list[str]]]:
    """Answers each request with the next (status, headers) of `script` (the last one once the
    script is used up), a `/version` body on 200, 404 for any other path than
    `<prefix>/version`; yields its URL (with `prefix`) and the requests' paths."""
    seen: list[str] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with lock:
                seen.append(self.path)
                status, headers = script[min(len(seen), len(script)) - 1]
                if self.path.split("?")[0] != f"{prefix}/version":
                    status, headers = 404, {}
            body = (json.dumps(VERSION) if status == 200 else json.dumps(
                {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status,
                 "reason": "TooManyRequests" if status == 429 else "NotFound",
                 "message": "too many requests" if status == 429 else "not found"})).encode()
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = (tls or _tls()).wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}{prefix}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _kubeconfig(path: Path, server: str, user: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server,
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    path.chmod(0o600)
    return path


def _kubectl(config: Path, *args: str, kubectl: str = "") -> subprocess.CompletedProcess[str]:
    """kubectl `version -o json` (discovery's ServerVersion: GET /version through client-go's
    Request.Do, whose retries the request timeout bounds; `get --raw` streams, and its
    Retry-After waits are bounded by nothing) with `args`."""
    return subprocess.run([kubectl or require_kubectl(), "--kubeconfig", str(config),
                           "version", "-o", "json", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(config.parent)})


def test_an_exec_plugin_not_installed_sends_nothing_and_names_it(tmp_path: Path,
                                                                  monkeypatch: Any) -> None:
    kubectl_path = require_kubectl()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with api_server([(200, {})]) as (url, seen):
        config = _kubeconfig(tmp_path / "exec.kubeconfig", url, {"exec": dict(DOCS_EXEC)})
        kubectl = _kubectl(config, "--request-timeout", "5s", kubectl=kubectl_path)
        assert kubectl.returncode != 0 and seen == [], "kubectl sends no request"
        assert "exec: executable example-client-go-exec-plugin not found" in kubectl.stderr
        assert "example-client-go-exec-plugin is required to authenticate" in kubectl.stderr
        result = CliRunner().invoke(app, ["verify", "cluster", "--kubeconfig", str(config),
                                          "--inspect"])
        assert seen == [], "nor does gpulab: no unauthenticated request"
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert "exec: executable example-client-go-exec-plugin not found" in line
    assert "example-client-go-exec-plugin is required to authenticate to the current " \
           "cluster. It can be installed:" in line
    assert "Traceback" not in result.output


def _gpulab_version(config: Path, timeout: float) -> str:
    raw = yaml.safe_load(config.read_text())
    with KubeClient(config=raw, context="c", request_timeout=timeout,
                    retry=RetryPolicy.disabled(), retry_after=10) as kube:
        return kube.server_version()


@pytest.mark.slow
def test_429_with_retry_after_is_asked_again_within_the_deadline(tmp_path: Path) -> None:
    script = [(429, {"Retry-After": "1"}), (429, {"Retry-After": "1"}), (200, {})]
    with api_server(script) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        kubectl = _kubectl(config, "--request-timeout", "10s")
        assert kubectl.returncode == 0, kubectl.stderr
        assert json.loads(kubectl.stdout)["serverVersion"]["gitVersion"] == "v1.31.4"
        assert len(seen) == 3
    with api_server(script) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        assert _gpulab_version(config, 10) == "v1.31.4" and len(seen) == 3


@pytest.mark.slow
def test_a_retry_after_beyond_the_deadline_fails_as_kubectl_does(tmp_path: Path) -> None:
    script = [(429, {"Retry-After": "30"}), (200, {})]
    with api_server(script) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        kubectl = _kubectl(config, "--request-timeout", "2s")
        assert kubectl.returncode != 0 and len(seen) == 1
    with api_server(script) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        try:
            _gpulab_version(config, 2)
        except AdapterError as err:
            assert "429" in err.message and "\n" not in err.message
        else:
            raise AssertionError("a wait past the deadline is not waited for")
        assert len(seen) == 1


def test_429_without_retry_after_is_not_retried(tmp_path: Path) -> None:
    with api_server([(429, {}), (200, {})]) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        kubectl = _kubectl(config, "--request-timeout", "5s")
        assert kubectl.returncode != 0 and len(seen) == 1
    with api_server([(429, {}), (200, {})]) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        try:
            _gpulab_version(config, 5)
        except AdapterError:
            pass
        else:
            raise AssertionError("no Retry-After: the answer stands")
        assert len(seen) == 1


# --------------------------------------------------------------------------- proxy-url socks5


@contextlib.contextmanager
def socks5_proxy() -> Iterator[tuple[str, list[str]]]:
    """A SOCKS5 proxy on 127.0.0.1 (RFC 1928: no authentication, CONNECT to an IPv4 address or
    a domain name), relaying bytes both ways; yields its URL and each CONNECT's `host:port`."""
    import socket

    asked: list[str] = []

    def relay(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                b.shutdown(socket.SHUT_WR)

    def handle(client: socket.socket) -> None:
        client.settimeout(10)
        try:
            _ver, methods = client.recv(2)
            client.recv(methods)
            client.sendall(b"\x05\x00")
            _ver, _cmd, _rsv, kind = client.recv(4)
            if kind == 1:
                host = socket.inet_ntoa(client.recv(4))
            else:
                host = client.recv(client.recv(1)[0]).decode()
            port = int.from_bytes(client.recv(2), "big")
            asked.append(f"{host}:{port}")
            upstream = socket.create_connection((host, port), timeout=10)
            client.sendall(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
            client.settimeout(None)
            threading.Thread(target=relay, args=(upstream, client), daemon=True).start()
            relay(client, upstream)
        except (OSError, ValueError):
            client.close()

    from tests.local_server import tcp_server

    with tcp_server(handle) as port:
        yield f"socks5://127.0.0.1:{port}", asked


def test_proxy_url_socks5_reaches_the_server_through_the_proxy(tmp_path: Path) -> None:
    """kubectl's documented bastion route (a kubeconfig cluster's `proxy-url`, client-go
    tools/clientcmd/api/v1/types.go:81-87): kubectl and gpulab both go through the proxy, which
    is asked for the server's own name (Go's socks5 resolves remotely: urllib3's socks5h)."""
    with api_server([(200, {})]) as (url, seen), socks5_proxy() as (proxy, asked):
        port = url.rsplit(":", 1)[1]
        config = _kubeconfig(tmp_path / "k", f"https://localhost:{port}",
                             {"token": "not-a-secret"})
        raw = yaml.safe_load(config.read_text())
        raw["clusters"][0]["cluster"]["proxy-url"] = proxy
        config.write_text(yaml.safe_dump(raw))
        kubectl = _kubectl(config, "--request-timeout", "10s")
        assert kubectl.returncode == 0, kubectl.stderr
        assert asked == [f"localhost:{port}"] and len(seen) == 1
        assert _gpulab_version(config, 10) == "v1.31.4"
        assert asked == [f"localhost:{port}"] * 2 and len(seen) == 2


def test_a_proxy_scheme_kubectl_refuses_is_refused_in_one_line(tmp_path: Path) -> None:
    with api_server([(200, {})]) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        raw = yaml.safe_load(config.read_text())
        raw["clusters"][0]["cluster"]["proxy-url"] = "socks4://127.0.0.1:1080"
        config.write_text(yaml.safe_dump(raw))
        kubectl = _kubectl(config, "--request-timeout", "5s")
        assert kubectl.returncode != 0 and 'unsupported scheme "socks4"' in kubectl.stderr
        result = CliRunner().invoke(app, ["verify", "cluster", "--kubeconfig", str(config),
                                          "--inspect"])
        assert seen == []
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert "proxy-url scheme 'socks4' is not supported" in line


def test_a_server_url_with_a_path_prefix_keeps_it(tmp_path: Path) -> None:
    """Rancher proxies each downstream cluster under `/k8s/clusters/<id>` (its kubeconfigs name
    `https://rancher.example.com/k8s/clusters/c-m-...`): client-go keeps the server URL's path
    as the prefix of every request (rest/request.go:143-148), and so does gpulab."""
    prefix = "/k8s/clusters/c-m-4x7t2bq9"
    with api_server([(200, {})], prefix) as (url, seen):
        config = _kubeconfig(tmp_path / "k", url, {"token": "not-a-secret"})
        kubectl = _kubectl(config, "--request-timeout", "10s")
        assert kubectl.returncode == 0, kubectl.stderr
        assert _gpulab_version(config, 10) == "v1.31.4"
    assert [p.split("?")[0] for p in seen] == [f"{prefix}/version"] * 2


def _data(path: Path) -> str:
    import base64

    return base64.b64encode(path.read_bytes()).decode()


@pytest.mark.slow
def test_kubeadm_client_certificates_authenticate_as_for_kubectl(tmp_path: Path) -> None:
    """kubeadm's admin.conf: the CA, the client certificate and key embedded (`*-data`). The
    server requires a client certificate from its CA: the admin's passes, one from another CA is
    refused in the handshake, for kubectl and gpulab alike."""
    pki = _kubeadm_pki()
    for who, works in (("admin", True), ("stranger", False)):
        with api_server([(200, {})], tls=_mutual_tls()) as (url, seen):
            config = tmp_path / f"{who}.conf"
            config.write_text(yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{"name": "kubernetes", "cluster": {
                    "server": url, "certificate-authority-data": _data(pki / "ca.crt")}}],
                "users": [{"name": "kubernetes-admin", "user": {
                    "client-certificate-data": _data(pki / f"{who}.crt"),
                    "client-key-data": _data(pki / f"{who}.key")}}],
                "contexts": [{"name": "c", "context": {"cluster": "kubernetes",
                                                       "user": "kubernetes-admin"}}]}))
            config.chmod(0o600)
            kubectl = _kubectl(config, "--request-timeout", "10s")
            assert (kubectl.returncode == 0) is works, kubectl.stderr
            try:
                ok = _gpulab_version(config, 10) == "v1.31.4"
            except AdapterError as err:
                ok = False
                assert "\n" not in err.message and "connection failed" in err.message
            assert ok is works, who
            assert len(seen) == (2 if works else 0)


def _inspect_with_plugin(tmp_path: Path, monkeypatch: Any, name: str, script: str) -> str:
    """`verify --inspect` with a kubeconfig whose exec plugin `name` is `script`: asserts no
    request reached the server, a non-zero exit and no traceback; returns the error line."""
    plugin = tmp_path / "bin" / name
    plugin.parent.mkdir()
    plugin.write_text(f"#!/bin/sh\n{script}")
    plugin.chmod(0o755)
    monkeypatch.setenv("PATH", f"{plugin.parent}:/usr/bin:/bin")
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": name,
                     "interactiveMode": "Never"}}
    with api_server([(200, {})]) as (url, seen):
        config = _kubeconfig(tmp_path / "exec.kubeconfig", url, user)
        result = CliRunner().invoke(app, ["verify", "cluster", "--kubeconfig", str(config),
                                          "--inspect"])
        assert seen == [], "no unauthenticated request"
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
    return line


def test_an_exec_plugin_that_never_answers_is_killed_at_its_deadline(
        tmp_path: Path, monkeypatch: Any) -> None:
    """The kubernetes client waits on a credential plugin with no timeout (kubernetes 37.0.2
    config/exec_provider.py:91-101); gpulab kills it at EXEC_DEADLINE and says so in one line,
    sending no request."""
    from gpulab.adapters.kube import exec_plugin

    monkeypatch.setattr(exec_plugin, "EXEC_DEADLINE", 1.0)
    pid_file = tmp_path / "plugin.pid"
    line = _inspect_with_plugin(tmp_path, monkeypatch, "stuck-login",
                                f"echo $$ > {pid_file}\nexec sleep 60\n")
    assert "credential plugin stuck-login did not answer within 1s (killed)" in line, line
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not left running


def test_an_exec_plugin_that_fails_sends_nothing_and_says_why(tmp_path: Path,
                                                               monkeypatch: Any) -> None:
    """The kubernetes client logs a plugin's failure and goes on unauthenticated
    (kube_config.py:473-474); gpulab refuses in one line with the plugin's own words."""
    line = _inspect_with_plugin(tmp_path, monkeypatch, "expired-login",
                                "echo 'session expired: run expired-login --renew' >&2\nexit 3\n")
    assert "exec: process returned 3. session expired: run expired-login --renew" in line, line
