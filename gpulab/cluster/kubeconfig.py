"""Kubeconfigs as kubectl reads them, for `verify --kubeconfig` and `--context`.

Without `--kubeconfig`, the files in `$KUBECONFIG` (a list split on `os.pathsep`; files that do
not exist are skipped) merged as kubectl merges them (client-go `clientcmd`'s loading rules:
for clusters, users and contexts the first file to define a name wins, and the first file that
sets `current-context` sets it), else `~/.kube/config`. `--kubeconfig FILE` is that file alone.
Paths inside a file (certificate-authority, client-certificate, client-key, tokenFile, an exec
command given as a relative path) are relative to that file, as for kubectl.

A file that is not a kubeconfig, a context that is not there, a context that names a cluster or
user the files do not define: one line naming the file, before any cluster is contacted.
Credentials are never printed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gpulab.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["ClusterAccess", "KubeconfigSource", "default_source", "given_source",
           "parse_duration", "resolve"]

SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}
# Fields holding a path, per section entry, resolved against the file's folder (clientcmd's
# ResolvePaths: Cluster.CertificateAuthority, AuthInfo.ClientCertificate/ClientKey/TokenFile).
_PATH_FIELDS = {"cluster": ("certificate-authority",),
                "user": ("client-certificate", "client-key", "tokenFile")}


@dataclass(frozen=True)
class KubeconfigSource:
    """Where a cluster's kubeconfig comes from: `--kubeconfig FILE`, `$KUBECONFIG` (one or more
    files, merged) or `~/.kube/config`."""

    files: tuple[Path, ...]
    origin: str  # "--kubeconfig", "$KUBECONFIG" or "~/.kube/config"

    def describe(self) -> str:
        if self.origin == "--kubeconfig" or len(self.files) == 1:
            return str(self.files[0])
        return f"$KUBECONFIG ({os.pathsep.join(str(f) for f in self.files)})"

    @property
    def stem(self) -> str:
        return self.files[0].stem if self.origin == "--kubeconfig" else ""


@dataclass(frozen=True)
class ClusterAccess:
    """One cluster of `verify --kubeconfig`: its name in the output, where its kubeconfig came
    from, the context used and the kubeconfig (merged, paths absolute) to build a client from."""

    name: str
    source: KubeconfigSource
    context: str
    config: dict[str, Any]


def given_source(path: Path) -> KubeconfigSource:
    """`--kubeconfig FILE`: that file only (kubectl reads no other)."""
    if not path.is_file():
        raise UsageError(f"kubeconfig {path} is not a readable file",
                         hint="pass the path of a kubeconfig (as for kubectl --kubeconfig)")
    return KubeconfigSource((path,), "--kubeconfig")


def default_source(environ: Mapping[str, str] | None = None) -> KubeconfigSource:
    """kubectl's default: the files of `$KUBECONFIG` that exist, else `~/.kube/config`."""
    env = os.environ if environ is None else environ
    listed = [Path(p).expanduser() for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        present = tuple(p for p in listed if p.is_file())
        if not present:
            raise UsageError(f"no kubeconfig: $KUBECONFIG names {', '.join(map(str, listed))} "
                             f"and none of them is a file",
                             hint="pass --kubeconfig FILE, or set KUBECONFIG to a kubeconfig")
        return KubeconfigSource(present, "$KUBECONFIG")
    home = Path(env.get("HOME") or Path.home()).expanduser() / ".kube" / "config"
    if not home.is_file():
        raise UsageError(f"no kubeconfig: $KUBECONFIG is not set and {home} does not exist",
                         hint="pass --kubeconfig FILE, or set KUBECONFIG (as for kubectl)")
    return KubeconfigSource((home,), "~/.kube/config")


def _not_a_kubeconfig(path: Path, why: str) -> UsageError:
    return UsageError(f"{path} is not a kubeconfig: {why}",
                      hint="pass a kubeconfig: YAML with clusters, users and contexts, as "
                           "kubectl takes")


def _absolute(value: Any, folder: Path) -> Any:
    if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
        return str(folder / value)
    return value


def _read(path: Path) -> dict[str, Any]:
    """One file, checked for the shape kubectl needs; paths made absolute."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read kubeconfig {path}: {getattr(err, 'strerror', None) or err}",
                         hint="pass a readable kubeconfig") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise _not_a_kubeconfig(path, f"not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _not_a_kubeconfig(path, f"a YAML {type(data).__name__}, not a mapping")
    out: dict[str, Any] = dict(data)
    current = out.get("current-context")
    if current is not None and not isinstance(current, str):
        raise _not_a_kubeconfig(path, "current-context is not a string")
    folder = path.resolve().parent
    for section, key in SECTIONS.items():
        entries = out.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise _not_a_kubeconfig(path, f"{section} is not a list")
        checked = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise _not_a_kubeconfig(path, f"{section}[{index}] has no name")
            body = entry.get(key) or {}
            if not isinstance(body, dict):
                raise _not_a_kubeconfig(path, f"{section}[{index}].{key} is not a mapping")
            body = dict(body)
            for field in _PATH_FIELDS.get(key, ()):
                if field in body:
                    body[field] = _absolute(body[field], folder)
            command = (body.get("exec") or {}).get("command") if key == "user" else None
            if isinstance(command, str) and "/" in command:
                body["exec"] = {**body["exec"], "command": _absolute(command, folder)}
            checked.append({**entry, key: body})
        out[section] = checked
    return out


def load(source: KubeconfigSource) -> dict[str, Any]:
    """The source's files merged as kubectl merges them: first definition of a name wins, the
    first `current-context` set wins."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config",
                              **{section: [] for section in SECTIONS}}
    names: dict[str, set[str]] = {section: set() for section in SECTIONS}
    for path in source.files:
        data = _read(path)
        if data.get("current-context") and not merged.get("current-context"):
            merged["current-context"] = data["current-context"]
        for section in SECTIONS:
            for entry in data.get(section) or []:
                if entry["name"] not in names[section]:
                    names[section].add(entry["name"])
                    merged[section].append(entry)
    if not merged["contexts"]:
        if len(source.files) == 1:
            raise _not_a_kubeconfig(source.files[0], "it defines no contexts")
        raise UsageError(f"{source.describe()}: none of these files defines a context",
                         hint="pass --kubeconfig FILE, or fix KUBECONFIG")
    return merged


def _context(config: dict[str, Any], wanted: str | None, source: KubeconfigSource) -> str:
    """The context to use: `wanted`, else the current context; checked against what the files
    define."""
    contexts = {c["name"]: c["context"] for c in config["contexts"]}
    where = source.describe()
    listed = ", ".join(sorted(contexts)) or "none"
    if wanted is None:
        wanted = config.get("current-context") or ""
        if not wanted:
            raise UsageError(f"{where} sets no current-context",
                             hint=f"pass --context NAME; its contexts: {listed}")
    if wanted not in contexts:
        raise UsageError(f"context {wanted} is not in {where}",
                         hint=f"its contexts: {listed}")
    context = contexts[wanted]
    for section, key in (("clusters", "cluster"), ("users", "user")):
        named = context.get(key)
        if key == "cluster" and not named:
            raise UsageError(f"context {wanted} in {where} names no cluster")
        if named and named not in {e["name"] for e in config[section]}:
            raise UsageError(f"context {wanted} in {where} names {key} {named}, which is not "
                             f"defined there")
    cluster = next(e["cluster"] for e in config["clusters"] if e["name"] == context["cluster"])
    if not isinstance(cluster.get("server"), str) or not cluster["server"].strip():
        raise UsageError(f"cluster {context['cluster']} in {where} has no server "
                         f"(context {wanted})", hint="set its server: to the API server's URL")
    return wanted


def resolve(kubeconfigs: Sequence[Path], contexts: Sequence[str],
            environ: Mapping[str, str] | None = None) -> list[ClusterAccess]:
    """One ClusterAccess per cluster of `verify --kubeconfig`: per `--kubeconfig` (with one
    `--context` for all, or one per file, in order), or, without `--kubeconfig`, per `--context`
    in kubectl's default kubeconfig (its current context when none is given). Names are the
    context when one was given, else the file's stem (the current context for the default
    kubeconfig), made unique."""
    if kubeconfigs and contexts and len(contexts) not in (1, len(kubeconfigs)):
        raise UsageError(f"{len(contexts)} --context for {len(kubeconfigs)} --kubeconfig",
                         hint="give one --context for all, or one per --kubeconfig, in order")
    pairs: list[tuple[KubeconfigSource, str | None]]
    if kubeconfigs:
        pairs = [(given_source(path), contexts[i if len(contexts) > 1 else 0] if contexts
                  else None) for i, path in enumerate(kubeconfigs)]
    else:
        default = default_source(environ)
        pairs = [(default, c) for c in contexts] or [(default, None)]
    loaded: dict[KubeconfigSource, dict[str, Any]] = {}
    out: list[ClusterAccess] = []
    seen: set[str] = set()
    for index, (source, wanted) in enumerate(pairs):
        config = loaded.get(source)
        if config is None:
            config = loaded[source] = load(source)
        context = _context(config, wanted, source)
        name = wanted or source.stem or context or f"cluster-{index + 1}"
        unique, n = name, 2
        while unique in seen:
            unique, n = f"{name}-{n}", n + 1
        seen.add(unique)
        out.append(ClusterAccess(unique, source, context, config))
    return out


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """kubectl's `--request-timeout`: a number of seconds, or a duration such as `30s`, `1m30s`,
    `500ms`; 0 means no timeout (None)."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        seconds = float(value)
    elif value and re.fullmatch(f"(?:{_DURATION.pattern})+", value):
        scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        seconds = sum(float(n) * scale[unit] for n, unit in _DURATION.findall(value))
    else:
        raise ValueError(f"'{text}' is not a duration (e.g. 30s, 1m, 500ms; 0 for none)")
    return seconds or None


def exec_plugin_missing(config: Mapping[str, Any], context: str,
                        path: str | None = None) -> str:
    """Why the context's user cannot authenticate: its exec credential plugin is not installed
    ('' when it is, or the user has none). kubectl then fails before sending any request:
    `exec: executable X not found`, then "It looks like you are trying to use a client-go
    credential plugin that is not installed" and the kubeconfig's `installHint` (client-go
    plugin/pkg/client/auth/exec/exec.go:57-62, 548-561 at kubernetes-1.35.2). The Python client
    would log the failure and send the requests unauthenticated (kubernetes 37.0.2
    config/kube_config.py:473-474): gpulab checks first. `path`: the PATH to look in (None:
    the environment's)."""
    import shutil

    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or ()}
    users = {u.get("name"): u.get("user") or {} for u in config.get("users") or ()}
    user = users.get((contexts.get(context) or {}).get("user")) or {}
    plugin = user.get("exec") if isinstance(user, dict) else None
    if not isinstance(plugin, dict):
        return ""
    command = str(plugin.get("command") or "")
    if command and shutil.which(command, path=path) is not None:
        return ""
    hint = " ".join(str(plugin.get("installHint") or "").split())
    return (f"exec: executable {command} not found: the kubeconfig's client-go credential plugin "
            f"is not installed, so gpulab sends no request" + (f" ({hint})" if hint else ""))


def proxy_problem(config: Mapping[str, Any], context: str) -> str:
    """Why the context's cluster `proxy-url` cannot be used ('' when it can, or there is none):
    kubectl takes http, https and socks5 only (client-go tools/clientcmd/helpers.go:38-50 at
    kubernetes-1.35.2) and refuses any other scheme before sending anything."""
    from urllib.parse import urlsplit

    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or ()}
    clusters = {c.get("name"): c.get("cluster") or {} for c in config.get("clusters") or ()}
    cluster = clusters.get((contexts.get(context) or {}).get("cluster")) or {}
    proxy = cluster.get("proxy-url") if isinstance(cluster, dict) else None
    if not proxy:
        return ""
    try:
        parts = urlsplit(str(proxy))
        _ = parts.port  # a port that is not a number is no URL
    except ValueError:
        return "proxy-url is not a URL (client-go tools/clientcmd/helpers.go:38-42)"
    if parts.scheme not in ("http", "https", "socks5"):
        return (f"proxy-url scheme {parts.scheme!r} is not supported: kubectl takes http, https "
                f"or socks5 (client-go tools/clientcmd/helpers.go:44-48)")
    return ""
