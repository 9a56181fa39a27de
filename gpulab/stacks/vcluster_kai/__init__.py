"""vcluster-kai: one kind cluster whose fake-gpu-operator node shares simulated GPUs through KAI
Scheduler's queues, and one vCluster per team (KAI-01..KAI-08 and the queue-naming finding).

- `profile`: the profile model;
- `render`: pure objects (Helm values, queues, verify pods);
- `steps`: the plan `up` runs; `status`: `gpulab status`;
- `observe`, `state`, `objects`, `checks/` (scheduling, isolation, registry), `run`, `record`:
  `verify`.
"""

from __future__ import annotations

from gpulab.stacks.vcluster_kai.profile import VclusterKaiProfile as PROFILE
from gpulab.stacks.vcluster_kai.run import parse_checks, replay, run_checks, write_recording
from gpulab.stacks.vcluster_kai.status import lab_status, status_tables
from gpulab.stacks.vcluster_kai.steps import build_steps, observe_host_facts, verify_previews

__all__ = [
    "PROFILE",
    "build_steps",
    "lab_status",
    "observe_host_facts",
    "parse_checks",
    "replay",
    "run_checks",
    "status_tables",
    "verify_previews",
    "write_recording",
]
