"""What `gpulab verify` creates in a team's vCluster, for `plan` (never run by `up`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.engine.step import Artifact
from gpulab.stacks.vcluster_kai import render as kr

if TYPE_CHECKING:
    from gpulab.engine.step import StepContext
    from gpulab.stacks.vcluster_kai.profile import TeamSpec, VclusterKaiProfile


@dataclass
class VerifyPreview:
    """What `gpulab verify` creates in a team's vCluster; listed by `plan`, never run by `up`."""

    profile: VclusterKaiProfile
    team: TeamSpec

    @property
    def name(self) -> str:
        return f"{self.team.name}/verify"

    @property
    def title(self) -> str:
        return f"(gpulab verify) test objects in {self.team.name}, removed afterwards"

    @property
    def requires(self) -> tuple[str, ...]:
        return (f"{self.team.name}/gpu-node", "management/queues")

    def describe(self) -> list[Artifact]:
        return [Artifact("object", f"{o['kind']}/{o['metadata']['name']}", o,
                         cluster=self.team.name)
                for o in kr.verify_objects(self.profile, self.team)]

    def satisfied(self, ctx: StepContext) -> bool:  # pragma: no cover - never run by up
        return True

    def apply(self, ctx: StepContext) -> None:  # pragma: no cover - never run by up
        return None
