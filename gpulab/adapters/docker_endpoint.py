"""Which Docker engine to talk to, resolved as the docker CLI resolves it (standard library only).

gpulab talks to Docker twice over: through its own clients (docker-py in `docker_runtime`, the
stdlib reader in `docker_probe`) and through the `kind` binary, which runs the docker CLI. The CLI
follows `docker context use` and `DOCKER_CONTEXT`; colima, Docker Desktop for Linux and rootless
Docker set up by context all rely on that. So the endpoint is resolved here once, the CLI's way,
and handed to both: the clients connect to `host`, and kind gets `client_env()` (DOCKER_HOST set,
DOCKER_CONTEXT cleared), which makes its docker CLI pick the very same engine.

What the CLI does, read in docker/cli v29.7.2:

- `cli/command/cli.go:439-457` `resolveContextName`: `--context`, then `--host`, then a non-empty
  DOCKER_HOST (the "default" context), then a non-empty DOCKER_CONTEXT, then `currentContext` of
  the config file, else "default". kind reads the same order for its proxy lookup
  (kind fed26882 `pkg/cluster/internal/providers/docker/proxyconfig.go:90-112`).
- `cli/command/cli.go:337-367` `resolveDefaultDockerEndpoint`: the default context is DOCKER_HOST
  (else `unix:///var/run/docker.sock`, `vendor/github.com/moby/moby/client/client_unix.go:13`)
  with TLS from the environment: `cli/flags/options.go:52-54` reads DOCKER_CERT_PATH,
  DOCKER_TLS_VERIFY and DOCKER_TLS (each counts when non-empty), `:108-117` makes the config
  folder the default cert folder, `:137-165` turns TLS on for either TLS variable.
- `cli/config/config.go:24-30,77-90`: the config folder is DOCKER_CONFIG, else `~/.docker`;
  `config.json` is in it (`currentContext`, `cli/config/configfile/file.go:73`) and the context
  store is its `contexts/` folder.
- `cli/context/store/metadatastore.go:19-22,63-97` and `store.go:94-96,531-533`: a context's
  metadata is `contexts/meta/<sha256 of its name>/meta.json`; a missing file is "context not
  found". `store.go:70-74` and `cli/context/endpoint.go:4-7`: the file holds `Name`, `Metadata`,
  `Endpoints`, and the `docker` endpoint (`cli/context/docker/constants.go:5`) has `Host` and
  `SkipTLSVerify` (Go's JSON decoding matches keys without regard to case).
- `cli/context/store/tlsstore.go:11-23` and `cli/context/tlsdata.go:11-15`: the endpoint's TLS
  files are `contexts/tls/<sha256>/docker/{ca,cert,key}.pem`; `cli/context/docker/load.go:87-139`
  uses them only for hosts that are neither sockets (`isSocket`, `:143-150`) nor connection
  helpers (ssh://), and `:45-84` verifies the server unless `SkipTLSVerify`.

TLS from a context is handed on as DOCKER_CERT_PATH (the context's TLS folder, whose file names are
the ones DOCKER_CERT_PATH expects, `cli/flags/options.go:29-34`) with DOCKER_TLS_VERIFY, or
DOCKER_TLS when the context skips verification. Both the CLI and docker-py read that triple, but
docker-py needs the client certificate and key (docker/tls.py `TLSConfig`) and the CLI needs the
CA file when it verifies (go-connections `tlsconfig.Client`), so only a context holding all three
files is supported; any other TLS shape is refused in one line, with what to do instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from gpulab.errors import HostError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DEFAULT_DOCKER_HOST",
    "DockerEndpoint",
    "context_id",
    "docker_config_dir",
    "resolve_endpoint",
]

DEFAULT_DOCKER_HOST: Final = "unix:///var/run/docker.sock"
DEFAULT_CONTEXT: Final = "default"
TLS_FILES: Final = ("ca.pem", "cert.pem", "key.pem")
# Hosts the CLI never speaks TLS to: sockets (load.go isSocket) and connection helpers (ssh://,
# cli/connhelper/connhelper.go:47).
_NO_TLS_SCHEMES: Final = ("unix://", "npipe://", "fd://", "ssh://")
_TLS_VARIABLES: Final = ("DOCKER_TLS_VERIFY", "DOCKER_TLS", "DOCKER_CERT_PATH")


@dataclass(frozen=True)
class DockerEndpoint:
    """The engine gpulab and kind both talk to.

    `source` says why it was chosen: "DOCKER_HOST", "DOCKER_CONTEXT", the config file whose
    `currentContext` named it, or "default". With `tls`, `cert_path` holds ca.pem, cert.pem and
    key.pem; `tls_verify` is false only for a context that skips verification.
    """

    host: str
    context: str = DEFAULT_CONTEXT
    source: str = DEFAULT_CONTEXT
    tls: bool = False
    tls_verify: bool = False
    cert_path: str = ""

    @property
    def unix_socket(self) -> str | None:
        """The socket path for a `unix://` host, else None."""
        if self.host.startswith("unix://"):
            return self.host[len("unix://"):] or None
        return None

    @property
    def from_context(self) -> bool:
        return self.context != DEFAULT_CONTEXT

    def describe(self) -> str:
        """`unix:///x` or, for a context, `unix:///x (Docker context 'colima')`."""
        return f"{self.host} (Docker context '{self.context}')" if self.from_context else self.host

    def client_env(self) -> dict[str, str | None]:
        """DOCKER_* variables that make the docker CLI (kind's) and docker-py's `from_env` use this
        endpoint; None means "unset it". For the default context the user's own TLS variables
        stay as they are (the CLI and docker-py read them from the environment)."""
        env: dict[str, str | None] = {"DOCKER_HOST": self.host, "DOCKER_CONTEXT": None}
        if not self.from_context:
            return env
        env.update(dict.fromkeys(_TLS_VARIABLES))  # the context decides, not stray variables
        if self.tls:
            env["DOCKER_CERT_PATH"] = self.cert_path
            env["DOCKER_TLS_VERIFY" if self.tls_verify else "DOCKER_TLS"] = "1"
        return env

    def docker_py_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The environment docker-py's `from_env` reads for this endpoint (DOCKER_HOST is always
        set there, so docker-py never falls back to contexts of its own)."""
        merged: dict[str, str] = dict(environ)
        for name, value in self.client_env().items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return merged


def context_id(name: str) -> str:
    """The store's folder name for a context (`contextdirOf`: the SHA-256 of its name, hex)."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def docker_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """DOCKER_CONFIG, else ~/.docker (docker/cli `cli/config/config.go` Dir)."""
    env = os.environ if environ is None else environ
    return Path(env.get("DOCKER_CONFIG") or Path.home() / ".docker")


def resolve_endpoint(environ: Mapping[str, str] | None = None) -> DockerEndpoint:
    """The endpoint the docker CLI would use in this environment; HostError (one line, with what
    to do) for a context that does not exist, cannot be read or has TLS gpulab cannot hand on."""
    env = os.environ if environ is None else environ
    host = env.get("DOCKER_HOST", "")
    if host:
        return _default_endpoint(env, host, "DOCKER_HOST")
    config = docker_config_dir(env)
    name, source = env.get("DOCKER_CONTEXT", ""), "DOCKER_CONTEXT"
    if not name:
        name, source = _current_context(config / "config.json"), str(config / "config.json")
    if not name or name == DEFAULT_CONTEXT:
        return _default_endpoint(env, DEFAULT_DOCKER_HOST, DEFAULT_CONTEXT)
    return _context_endpoint(config / "contexts", name, source)


def _default_endpoint(env: Mapping[str, str], host: str, source: str) -> DockerEndpoint:
    verify = bool(env.get("DOCKER_TLS_VERIFY"))
    tls = verify or bool(env.get("DOCKER_TLS"))
    cert_path = (env.get("DOCKER_CERT_PATH") or str(docker_config_dir(env))) if tls else ""
    return DockerEndpoint(host=host, source=source, tls=tls, tls_verify=verify,
                          cert_path=cert_path)


def _current_context(config_file: Path) -> str:
    """`currentContext` of the CLI's config file; '' when absent or unreadable (the CLI warns
    about a broken config file and carries on with the default context)."""
    try:
        data = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    value = data.get("currentContext") if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def _key(mapping: Mapping[str, Any], name: str) -> Any:
    """`mapping[name]` matched as Go's encoding/json matches struct fields: exact, else ignoring
    case."""
    if name in mapping:
        return mapping[name]
    return next((v for k, v in mapping.items() if k.lower() == name.lower()), None)


def _context_endpoint(store: Path, name: str, source: str) -> DockerEndpoint:
    chosen = "DOCKER_CONTEXT" if source == "DOCKER_CONTEXT" else f"currentContext in {source}"
    meta = store / "meta" / context_id(name) / "meta.json"
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HostError(f"Docker context '{name}' ({chosen}) does not exist: no {meta}",
                        hint="docker context ls lists them; docker context use default, or "
                             "unset DOCKER_CONTEXT") from None
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise HostError(f"cannot read Docker context '{name}' ({chosen}) from {meta}: "
                        f"{' '.join(str(reason).split())}",
                        hint=f"docker context inspect {name}") from None
    endpoints = _key(data, "Endpoints") if isinstance(data, dict) else None
    docker = _key(endpoints, "docker") if isinstance(endpoints, dict) else None
    if not isinstance(docker, dict):
        raise HostError(f"Docker context '{name}' ({chosen}) has no docker endpoint ({meta})",
                        hint=f"docker context inspect {name}")
    host = str(_key(docker, "Host") or "") or DEFAULT_DOCKER_HOST
    skip_verify = bool(_key(docker, "SkipTLSVerify"))
    base = DockerEndpoint(host=host, context=name, source=source)
    if host.startswith(_NO_TLS_SCHEMES):
        return base
    folder = store / "tls" / context_id(name) / "docker"
    present = [f for f in TLS_FILES if (folder / f).is_file()]
    if not present and not skip_verify:
        return base
    missing = [f for f in TLS_FILES if f not in present]
    if missing:
        raise HostError(
            f"Docker context '{name}' ({chosen}) uses TLS that gpulab cannot hand on to kind "
            f"and docker-py: {', '.join(missing)} missing in {folder} (supported: a context "
            "with ca.pem, cert.pem and key.pem)",
            hint="give the context all three (docker context update --docker "
                 "host=...,ca=...,cert=...,key=...), or set DOCKER_HOST, DOCKER_TLS_VERIFY=1 and "
                 "DOCKER_CERT_PATH instead")
    return DockerEndpoint(host=host, context=name, source=source, tls=True,
                          tls_verify=not skip_verify, cert_path=str(folder))
