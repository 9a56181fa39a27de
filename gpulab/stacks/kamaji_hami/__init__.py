"""kamaji-hami: a kind management cluster with Kamaji hosted control planes, one per tenant,
kindest/node workers joined with kubeadm, Calico, and HAMi sharing mock GPUs (TC-01..TC-08).

- `profile`: the profile model; `compat`: Kamaji's tenant version range;
- `render`: pure objects (TCP, Helm values, worker containers, verify pods); `inventory`: HAMi's
  annotations;
- `steps`: the plan `up` runs; `status`: `gpulab status`;
- `observe`, `state`, `objects`, `checks/` (tc01..tc08, registry), `run`, `record`: `verify`.

The package offers the registry's `Stack` interface (gpulab.stacks), each name imported from its
module on first use, so loading a profile does not import the steps or verify.
"""

from __future__ import annotations

from gpulab.stacks import INTERFACE, lazy_interface

__all__ = ["PROFILE", *INTERFACE]  # noqa: PLE0604 - resolved by __getattr__

__getattr__ = lazy_interface(__name__, "KamajiHamiProfile")
