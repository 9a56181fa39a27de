"""`gpulab verify` for the vcluster-kai stack: eight checks and one finding over observed state.

- `observe`: the only I/O (host cluster + each team's vCluster, through `KubeGateway`);
- `state`: what was observed (`KaiLabState`), also the recording format;
- `objects`: pure readers of KAI and vCluster facts out of API objects;
- `checks`, `isolation`: `(KaiLabState, profile, team) -> CheckResult`, listed in `registry`;
- `run`: `run_verify` (observe + judge) and `evaluate` (judge a recording);
- `record`: recordings on disk (the manifest says `stack: vcluster-kai`).

Reports (table, JSON, JUnit) are gpulab.checks.report's, shared with kamaji-hami.
"""
