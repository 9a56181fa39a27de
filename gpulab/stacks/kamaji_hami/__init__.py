"""kamaji-hami: a kind management cluster with Kamaji hosted control planes, one per tenant,
kindest/node workers joined with kubeadm, Calico, and HAMi sharing mock GPUs (TC-01..TC-08).

- `profile`: the profile model; `compat`: Kamaji's tenant version range;
- `render`: pure objects (TCP, Helm values, worker containers, verify pods); `inventory`: HAMi's
  annotations;
- `steps`: the plan `up` runs; `status`: `gpulab status`;
- `observe`, `state`, `objects`, `checks/` (tc01..tc08, registry), `run`, `record`: `verify`.
"""

from __future__ import annotations

from gpulab.stacks.kamaji_hami.profile import KamajiHamiProfile as PROFILE
from gpulab.stacks.kamaji_hami.run import parse_checks, replay, run_checks, write_recording
from gpulab.stacks.kamaji_hami.status import lab_status, status_tables
from gpulab.stacks.kamaji_hami.steps import build_steps, observe_host_facts, verify_previews

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
