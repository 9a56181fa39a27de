"""`gpulab verify --kubeconfig`: look at a cluster gpulab did not build
(docs/verify-any-cluster.md).

- `observe`: the only I/O, read-only: one `ClusterSnapshot` per kubeconfig;
- `state`: the snapshot (also the recording format);
- `inventory`: pure: what is installed (HAMi, KAI, tenancy) and the GPU cards, from a snapshot;
- `plan`: pure: the pods verify would create, sized from the cards found, or why it refuses;
- `record`: recordings on disk; `report`: text and JSON of the inspection and the plan.
"""
