"""The published JSON Schemas of the recording format (docs/schemas/recording-v1/).

They are derived from the types the reader enforces (gpulab.verify.recording); the tests check
the committed files equal what the code derives. Rewrite them after changing a state type:

    python -m tests.recording_schemas
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpulab.stacks.kamaji_hami.record import recording_schemas as kamaji_schemas
from gpulab.stacks.vcluster_kai.record import recording_schemas as kai_schemas
from gpulab.verify.recording import RECORDING_VERSION

SCHEMA_DIR = Path(__file__).parents[1] / "docs" / "schemas" / f"recording-v{RECORDING_VERSION}"


def derived() -> dict[str, dict[str, Any]]:
    """File name -> schema, as the code defines them today."""
    out: dict[str, dict[str, Any]] = {}
    for stack, schemas in (("kamaji-hami", kamaji_schemas()), ("vcluster-kai", kai_schemas())):
        for role, schema in schemas.items():
            out[f"{stack}.{role}.schema.json"] = schema
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    for name, schema in derived().items():
        (SCHEMA_DIR / name).write_text(render(schema), encoding="utf-8")
        print(SCHEMA_DIR / name)


if __name__ == "__main__":
    main()
