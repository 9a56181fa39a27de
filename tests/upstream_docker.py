"""Docker's own examples and fixtures, read from the copies in tests/data/pinned/upstream (sources and
pins: tests/data/pinned/SOURCES.md). Nothing here is typed from memory.

- moby docker-v29.7.2 `api/swagger.yaml`: the Engine API's examples (`docker info`'s
  SecurityOptions, a container's published ports).
- docker/cli v29.7.2 `e2e/context/testdata/test-dockerconfig/`: a real Docker config folder with a
  context store (`contexts/meta/<sha256("remote")>/meta.json`, written by the CLI).
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

UPSTREAM = Path(__file__).parent / "data" / "pinned" / "upstream"
SWAGGER = UPSTREAM / "moby_docker-v29.7.2_api_swagger.yaml"
DOCKER_CLI_CONFIG = UPSTREAM / "docker-cli_v29.7.2_e2e_context_testdata_test-dockerconfig"
REMOTE_CONTEXT = "remote"  # the context docker/cli's fixture holds


@functools.cache
def swagger() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data: dict[str, Any] = yaml.load(SWAGGER.read_text(encoding="utf-8"), Loader=loader)
    return data


def example(definition: str, prop: str | None = None) -> Any:
    """The `example` of a swagger definition, or of one of its properties."""
    node = swagger()["definitions"][definition]
    if prop is not None:
        node = node["properties"][prop]
    return node["example"]


def system_info() -> dict[str, Any]:
    """`GET /info` as the API documents it: every SystemInfo property that has an example."""
    props = swagger()["definitions"]["SystemInfo"]["properties"]
    return {name: spec["example"] for name, spec in props.items() if "example" in spec}


def docker_config(target: Path) -> Path:
    """A copy of docker/cli's test Docker config folder at `target` (to add contexts to)."""
    shutil.copytree(DOCKER_CLI_CONFIG, target)
    return target


def remote_meta() -> dict[str, Any]:
    """The fixture's `remote` context metadata, as the CLI wrote it."""
    from gpulab.adapters.docker_endpoint import context_id

    path = DOCKER_CLI_CONFIG / "contexts" / "meta" / context_id(REMOTE_CONTEXT) / "meta.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def add_context(config: Path, name: str, host: str, *, skip_tls_verify: bool = False) -> Path:
    """Store a context the way the CLI stores one: the fixture's `remote` metadata with another
    name and docker host (kubernetes endpoint dropped), at contexts/meta/<sha256(name)>."""
    from gpulab.adapters.docker_endpoint import context_id

    meta = remote_meta()
    meta["Name"] = name
    meta["Endpoints"] = {"docker": {**meta["Endpoints"]["docker"], "Host": host,
                                    "SkipTLSVerify": skip_tls_verify}}
    folder = config / "contexts" / "meta" / context_id(name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def use_context(config: Path, name: str) -> None:
    """`docker context use NAME`: the config file's currentContext."""
    path = config / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["currentContext"] = name
    path.write_text(json.dumps(data, indent="\t"), encoding="utf-8")
