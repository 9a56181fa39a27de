"""What `gpulab verify` creates in a tenant, for `plan` (never run by `up`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.stacks.kamaji_hami import render

if TYPE_CHECKING:
    from gpulab.engine.step import StepContext
    from gpulab.stacks.kamaji_hami.profile import TenantSpec


@dataclass
class VerifyPreview:
    """What `gpulab verify` creates in a tenant; listed by `plan`, never run by `up`."""

    tenant: TenantSpec

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/verify"

    @property
    def title(self) -> str:
        return f"(gpulab verify) test objects in {self.tenant.name}, removed afterwards"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.tenant.name}/gpus",)

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.tenant.name)
                for o in render.verify_objects(self.tenant)]

    def satisfied(self, ctx: StepContext) -> bool:  # pragma: no cover - never run by up
        return True

    def apply(self, ctx: StepContext) -> None:  # pragma: no cover - never run by up
        return None
