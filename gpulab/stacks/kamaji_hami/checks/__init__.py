"""`gpulab verify`: eight acceptance checks as pure functions over an observed lab state.

- `observe`: the only I/O (through `KubeGateway`); builds a `state.LabState`;
- `tc01_*` … `tc08_*`: `(LabState, profile, tenant) -> CheckResult`, listed in `registry.CHECKS`;
- `run`: `run_verify` (observe + judge, live) and `evaluate` (judge a recording, offline);
- `report`: table rows, JSON, JUnit XML, exit code, recordings.
"""
