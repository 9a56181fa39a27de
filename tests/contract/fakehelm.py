"""A stand-in for `helm` used by test_helm_adapter.py (run as a script, not imported by pytest).

Every invocation is appended to `$FAKEHELM_STATE/calls.jsonl` (argv and stdin). Commands that need
no cluster (`version`, `show`, `template`) are delegated to the real helm in `$FAKEHELM_REAL`.
Cluster commands (`upgrade --install`, `status`, `get`, `list`, `uninstall`) are first given to the
real helm too, with an unreachable kubeconfig: helm parses every flag before it contacts a cluster,
so an unknown flag or a malformed value (e.g. `--timeout 600`) fails here exactly as it would on a
real cluster. Then they are answered from a small release store, `$FAKEHELM_STATE/releases.json`,
in the JSON shapes of helm v4 (`status` strips the chart, as helm 4 does).

`--repo URL` charts resolve to `$FAKEHELM_CHARTS/<name>` (no network in tests). An `upgrade`'s
post-renderer flags go to the real `template` that renders the release's manifest. A file
`$FAKEHELM_STATE/fail-upgrade` makes the next `upgrade` fail with its content as stderr.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

STATE = Path(os.environ["FAKEHELM_STATE"])
REAL = os.environ["FAKEHELM_REAL"]
CHARTS = Path(os.environ["FAKEHELM_CHARTS"])
BAD_FLAGS = ("unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument",
             "accepts ", "requires at least", "unknown command")


def flag(argv: list[str], name: str, default: str | None = None) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def fail(message: str, code: int = 1) -> None:
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.exit(code)


def real(argv: list[str], stdin: str | None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([REAL, *argv], input=stdin.encode() if stdin is not None else None,
                          capture_output=True, env=env, check=False)


def local_chart(argv: list[str]) -> list[str]:
    """The argv with `NAME --repo URL` replaced by the local test chart of that name."""
    if flag(argv, "--repo") is None:
        return argv
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--repo":
            skip = True
            continue
        out.append(str(CHARTS / arg) if i == 2 else arg)  # show chart NAME / upgrade|template R NAME
    return out


def post_render(argv: list[str]) -> list[str]:
    """The post-renderer flags of an `upgrade`, for the `template` that stands for its render."""
    out = [f"--post-renderer={v}" for v in [flag(argv, "--post-renderer")] if v]
    return out + [a for a in argv if a.startswith("--post-renderer-args=")]


def load() -> dict[str, list[dict[str, Any]]]:
    path = STATE / "releases.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save(releases: dict[str, list[dict[str, Any]]]) -> None:
    (STATE / "releases.json").write_text(json.dumps(releases, indent=1))


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def pick(argv: list[str]) -> tuple[str, dict[str, Any]]:
    releases = load()
    key = f"{flag(argv, '--namespace', 'default')}/{argv[2] if argv[0] == 'get' else argv[1]}"
    history = releases.get(key) or []
    revision = flag(argv, "--revision")
    matching = [rel for rel in history if revision is None or str(rel["version"]) == revision]
    if not matching:
        fail("Error: release: not found")
    return key, matching[-1]


def upgrade(argv: list[str], stdin: str | None) -> None:
    marker = STATE / "fail-upgrade"
    if marker.exists():
        message = marker.read_text()
        marker.unlink()
        fail(message)
    name, namespace = argv[1], flag(argv, "--namespace", "default")
    values = json.loads(stdin or "{}") or {}
    source = [f for opt in ("--repo", "--version") if (v := flag(argv, opt)) for f in (opt, v)]
    show = real(local_chart(["show", "chart", argv[2], *source]), None)
    if show.returncode:
        fail(show.stderr.decode())
    template = real(local_chart(["template", name, argv[2], *source, *post_render(argv),
                                 "--namespace", str(namespace), "--values", "-"]), stdin)
    if template.returncode:
        fail(template.stderr.decode())
    releases = load()
    history = releases.setdefault(f"{namespace}/{name}", [])
    for old in history:
        if old["info"]["status"] == "deployed":
            old["info"]["status"] = "superseded"
    first = history[0]["info"]["first_deployed"] if history else now()
    rel = {
        "name": name, "namespace": namespace, "version": len(history) + 1,
        "info": {"first_deployed": first, "last_deployed": now(), "deleted": "",
                 "description": "Upgrade complete" if history else "Install complete",
                 "status": "deployed"},  # helm omits empty notes (omitempty)
        "chart": {"metadata": yaml.safe_load(show.stdout), "templates": [], "values": {}},
        "config": values,
        "manifest": template.stdout.decode().replace("---\n", "", 1),
    }
    history.append(rel)
    save(releases)
    print(json.dumps(rel))


def main(argv: list[str]) -> None:
    reads_stdin = "--values" in argv and flag(argv, "--values") == "-"
    stdin = sys.stdin.read() if reads_stdin else None
    with (STATE / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"argv": argv, "stdin": stdin}) + "\n")
    verb = argv[0] if argv else ""

    if verb in ("version", "show", "template", "env"):
        done = real(local_chart(argv), stdin)
        sys.stdout.buffer.write(done.stdout)
        sys.stderr.buffer.write(done.stderr)
        sys.exit(done.returncode)

    # Let the real helm parse the exact command line; only the cluster must be unreachable.
    # Once per command shape (verb and flag names) and test, to keep the suite fast.
    shape = " ".join([*argv[:2], *sorted(a for a in argv if a.startswith("-"))])
    seen = STATE / "validated.txt"
    if shape not in (seen.read_text().splitlines() if seen.exists() else []):
        env = dict(os.environ, KUBECONFIG=str(STATE / "no-such-kubeconfig"))
        check = real(local_chart(argv), stdin, env)
        stderr = check.stderr.decode()
        if check.returncode and any(marker in stderr for marker in BAD_FLAGS):
            fail("real helm refused the command line: " + stderr)
        with seen.open("a") as out:
            out.write(shape + "\n")

    if verb == "upgrade":
        upgrade(argv, stdin)
    elif verb == "status":
        _, rel = pick(argv)
        print(json.dumps({k: v for k, v in rel.items() if k != "chart"}))
    elif verb == "get" and argv[1] == "all":
        _, rel = pick(argv)  # stands for `--template` rendering of the chart metadata
        print(yaml.safe_dump(rel["chart"]["metadata"]))
    elif verb == "get" and argv[1] == "values":
        _, rel = pick(argv)
        print(json.dumps(rel["config"] or None))
    elif verb == "list":
        print(json.dumps([
            {"name": h[-1]["name"], "namespace": h[-1]["namespace"],
             "revision": str(h[-1]["version"]), "status": h[-1]["info"]["status"],
             "chart": f"{h[-1]['chart']['metadata']['name']}-{h[-1]['chart']['metadata']['version']}"}
            for h in load().values() if h[-1]["info"]["status"] == "deployed"
        ]))
    elif verb == "uninstall":
        releases = load()
        key = f"{flag(argv, '--namespace', 'default')}/{argv[1]}"
        if key not in releases:
            fail(f"Error: uninstall: Release not loaded: {argv[1]}: release: not found")
        del releases[key]
        save(releases)
        print(f'release "{argv[1]}" uninstalled')
    else:
        fail(f"Error: fakehelm does not fake `{' '.join(argv[:2])}`")


if __name__ == "__main__":
    main(sys.argv[1:])
