"""`gpulab version`: gpulab's version and every version it deploys."""

from __future__ import annotations

import typer

from gpulab.cli.common import Output, OutputOpt, data, emit, guard

__all__ = ["register"]


def version_command(output: OutputOpt = Output.text) -> None:
    """gpulab's version and every version it deploys, per built-in profile (for bug reports)."""

    def body() -> int:
        from gpulab import core

        info = core.versions()
        if output is not Output.text:
            data(info, output)
            return 0
        lines = [f"gpulab {info['gpulab']} (python {info['python']}, helm {info['helm']})"]
        for name, pins in info["profiles"].items():
            if "error" in pins:
                lines.append(f"{name}: {pins['error']}")
                continue
            lines.append(f"{name}: kind {pins['kind']}, node {pins['node_image']}")
            lines += [f"  chart {c['chart']} {c['version']} ({c['from']})" for c in pins["charts"]]
            lines += [f"  manifest {m['component']} {m['version']}" for m in pins["manifests"]]
            lines += [f"  {where}: {tag}" for where, tag in pins["images"].items()]
        emit("\n".join(lines))
        return 0

    guard(body)


def register(app: typer.Typer) -> None:
    app.command("version", short_help="Print the versions of gpulab and all it deploys.")(
        version_command)
