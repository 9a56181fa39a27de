"""docs/vcluster-kai.md states each KAI check's contract; this holds it to the code, as
tests/kamaji_hami/test_contract.py does for docs/checks.md (see there). The subject is
team-vision; host fields (the manifest's `host`) are named `host.<field>`, other manifest fields
`manifest.<field>`."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache, partial
from typing import Any

import pytest

from gpulab.stacks.vcluster_kai.checks.registry import CHECK_IDS, CHECKS
from gpulab.stacks.vcluster_kai.record import read_recording
from tests.contracts import GENERIC, breaks_alone, changed_fields, documented, tracking
from tests.recordings import member_states, read_edited
from tests.vcluster_kai import test_corpus as corpus

TEAM = corpus.TEAM
DOC = "vcluster-kai.md"
# (name, edit of team-vision's state, manifest edit, {check: verdict for team-vision}, phrase)
Variant = tuple[str, Any, Any, dict[str, str], str]
# Manifest fields a check compares the member state with: the variants that break the relation.
RELATIONS = {"manifest.run_id": {"pod of an earlier verify run",
                                 "over-limit pod of an earlier verify run",
                                 "over-capacity pod of an earlier verify run"},
             # team-nlp's created pods (its `pods`) give the listed pod away
             "pods": {"a pod team-nlp's verify created, listed under another name"}}


def _verdicts(failing: set[tuple[str, str]], verdict: str) -> dict[str, str]:
    return {check: verdict for check, team in failing if team == TEAM}


def _drop(key: str, st: dict[str, Any], _other: dict[str, Any]) -> None:
    st.pop(key)


def _set(fields: dict[str, Any], st: dict[str, Any], _other: dict[str, Any]) -> None:
    st.update(fields)


def _variants() -> list[Variant]:
    out: list[Variant] = [(name, edit, None, _verdicts(failing, "fail"), phrase)
                          for name, edit, failing, phrase in corpus.BROKEN]
    out += [(name, None, edit, _verdicts(failing, "fail"), phrase)
            for name, edit, failing, phrase in corpus.BROKEN_HOST]
    out += [(f"{key} not observed", partial(_drop, key), None, dict.fromkeys(erroring, "error"),
             "in this run or recording") for key, erroring in corpus.MISSING]
    out += [(name, partial(_set, fields), None, verdicts, phrase)
            for name, fields, verdicts, phrase in corpus.READ_FAILED]
    out += [(name, None, edit, dict.fromkeys(erroring.split(), "error"), phrase)
            for name, edit, erroring, phrase in corpus.HOST_MISSING]
    return out


@cache
def _observed() -> dict[str, Any]:
    """Per variant: the fields it changed, and per check the verdict and the fields read."""
    out: dict[str, Any] = {}
    healthy = member_states(corpus.RECORDING)[TEAM]
    healthy_manifest = json.loads((corpus.RECORDING / "manifest.json").read_text())
    for name, edit, manifest_edit, _v, _p in [*_variants(), ("healthy", None, None, {}, "")]:
        states = member_states(corpus.RECORDING)
        if edit is not None:
            edit(states[TEAM], states["team-nlp"])
        edited: dict[str, Any] = {}

        def on_manifest(manifest: dict[str, Any], edit: Any = manifest_edit,
                        edited: dict[str, Any] = edited) -> None:
            if edit is not None:
                edit(manifest)
            edited.update(json.loads(json.dumps(manifest)))

        recording = read_edited(corpus.RECORDING, read_recording, states, on_manifest)
        changed = changed_fields(healthy, states[TEAM])
        changed |= {f"host.{k}" for k in changed_fields(healthy_manifest["host"],
                                                         edited["host"])}
        profile = recording.profile()
        per_check = {}
        for check in CHECKS:
            seen: set[str] = set()
            teams = {n: tracking(s, seen) for n, s in recording.state.teams.items()}
            host = tracking(recording.state.host, seen, "host.")
            lab = tracking(replace(recording.state, teams=teams, host=host), seen, "manifest.")
            result = check.run(lab, profile, TEAM)
            per_check[check.id] = (result.status, {f for f in seen
                                                   if f.removeprefix("manifest.") not in GENERIC})
        out[name] = (changed, per_check)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECK_IDS)
def test_the_docs_list_exactly_the_fields_the_check_reads(check: str) -> None:
    contract = documented(DOC, check)
    read = set().union(*(per_check[check][1] for _c, per_check in _observed().values()))
    assert not contract["evidence"] & contract["diagnostics"]
    assert contract["evidence"] | contract["diagnostics"] == read, (
        f"docs/{DOC} {check}: reads {sorted(read)}")


@pytest.mark.parametrize("check", CHECK_IDS)
def test_every_evidence_field_is_broken_by_the_corpus(check: str) -> None:
    contract = documented(DOC, check)
    for field in contract["evidence"]:
        breaking = [name for name, (changed, per_check) in _observed().items()
                    if breaks_alone(field, name, changed, RELATIONS)
                    and per_check[check][0] in ("fail", "error")]
        assert breaking, f"{check}: no corpus variant breaks {field} alone"


@pytest.mark.parametrize("check", CHECK_IDS)
def test_the_docs_list_every_broken_fact_of_the_corpus(check: str) -> None:
    want = sorted((name, verdicts[check], phrase)
                  for name, _e, _m, verdicts, phrase in _variants() if check in verdicts)
    assert documented(DOC, check)["broken"] == want, "run python -m tests.contract_docs"


def test_each_variant_fails_as_documented() -> None:
    for name, _e, _m, verdicts, _phrase in _variants():
        _changed, per_check = _observed()[name]
        got = {check: status for check, (status, _f) in per_check.items() if status != "pass"}
        assert got == verdicts, name
