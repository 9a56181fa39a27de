"""vcluster-kai: one kind cluster whose fake-gpu-operator node shares simulated GPUs through KAI
Scheduler's queues, and one vCluster per team (KAI-01..KAI-08 and the queue-naming finding).

- `profile`: the profile model;
- `render`: pure objects (Helm values, queues, verify pods);
- `steps`: the plan `up` runs; `status`: `gpulab status`;
- `observe`, `state`, `objects`, `checks/` (scheduling, isolation, registry), `run`, `record`:
  `verify`.

The package offers the registry's `Stack` interface (gpulab.stacks), each name imported from its
module on first use, so loading a profile does not import the steps or verify.
"""

from __future__ import annotations

from gpulab.stacks import INTERFACE, lazy_interface

__all__ = ["PROFILE", *INTERFACE]  # noqa: PLE0604 - resolved by __getattr__

__getattr__ = lazy_interface(__name__, "VclusterKaiProfile")
