"""docs/checks.md states each check's contract; this holds it to the code.

Per TC the docs list the recording fields the verdict rests on (evidence), those read only to
explain a cause (diagnostics), and every broken fact of the adversarial corpus that check must
catch, with its verdict and a phrase of the reason. Here:

- what each check reads, found by running it over the whole corpus on a state that records every
  field access, equals evidence + diagnostics;
- every evidence field is broken by at least one corpus variant that the check does not pass;
- the docs' broken-fact rows are exactly the corpus rows for that check.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache, partial
from typing import Any

import pytest

from gpulab.stacks.kamaji_hami.checks.registry import CHECK_IDS, CHECKS
from gpulab.stacks.kamaji_hami.record import read_recording
from tests.contracts import GENERIC, breaks_alone, changed_fields, documented, tracking
from tests.kamaji_hami import test_corpus as corpus
from tests.recordings import member_states, read_edited

TENANT = "tenant-a"
# Manifest fields a check compares the member state with: the variants that break the relation.
RELATIONS = {"manifest.run_id": {"share pod of another verify run",
                                 "first share pod of another verify run",
                                 "big pod of another verify run"},
             # tenant-b's created pods (its gpu_pods) give the listed pod away
             "gpu_pods": {"a pod tenant-b's verify created, listed under another name"}}
# (name, edit of tenant-a's state, {check: verdict}, phrase)
Variant = tuple[str, Any, dict[str, str], str]


def _variants() -> list[Variant]:
    out: list[Variant] = [(name, edit, dict.fromkeys(failing, "fail"), phrase)
                          for name, edit, failing, phrase in corpus.BROKEN]
    out += [(f"{key} not observed", partial(_drop, key), dict.fromkeys(erroring, "error"),
             "in this run or recording") for key, erroring in corpus.MISSING]
    out += [(name, partial(_set, fields), verdicts, phrase)
            for name, fields, verdicts, phrase in corpus.READ_FAILED]
    return out


def _drop(key: str, st: dict[str, Any], _other: dict[str, Any]) -> None:
    st.pop(key)


def _set(fields: dict[str, Any], st: dict[str, Any], _other: dict[str, Any]) -> None:
    st.update(fields)


@cache
def _observed() -> dict[str, Any]:
    """Per variant: the fields it changed, and per check the verdict and the fields read."""
    out: dict[str, Any] = {}
    healthy = member_states(corpus.RECORDING)[TENANT]
    for name, edit, _verdicts, _phrase in [*_variants(), ("healthy", lambda st, _o: None, {}, "")]:
        states = member_states(corpus.RECORDING)
        edit(states[TENANT], states["tenant-b"])
        recording = read_edited(corpus.RECORDING, read_recording, states)
        profile = recording.profile()
        per_check = {}
        for check in CHECKS:
            seen: set[str] = set()
            tenants = {n: tracking(s, seen) for n, s in recording.state.tenants.items()}
            lab = tracking(replace(recording.state, tenants=tenants), seen, "manifest.")
            result = check.run(lab, profile, TENANT)
            per_check[check.id] = (result.status, {f for f in seen
                                                   if f.removeprefix("manifest.") not in GENERIC})
        out[name] = (changed_fields(healthy, states[TENANT]), per_check)
    return out


@pytest.mark.parametrize("check", CHECK_IDS)
def test_the_docs_list_exactly_the_fields_the_check_reads(check: str) -> None:
    contract = documented("checks.md", check)
    read = set().union(*(per_check[check][1] for _c, per_check in _observed().values()))
    assert not contract["evidence"] & contract["diagnostics"]
    assert contract["evidence"] | contract["diagnostics"] == read, (
        f"docs/checks.md {check}: reads {sorted(read)}")


@pytest.mark.parametrize("check", CHECK_IDS)
def test_every_evidence_field_is_broken_by_the_corpus(check: str) -> None:
    contract = documented("checks.md", check)
    for field in contract["evidence"]:
        breaking = [name for name, (changed, per_check) in _observed().items()
                    if breaks_alone(field, name, changed, RELATIONS)
                    and per_check[check][0] in ("fail", "error")]
        assert breaking, f"{check}: no corpus variant breaks {field} alone"


@pytest.mark.parametrize("check", CHECK_IDS)
def test_the_docs_list_every_broken_fact_of_the_corpus(check: str) -> None:
    want = sorted((name, verdicts[check], phrase)
                  for name, _edit, verdicts, phrase in _variants() if check in verdicts)
    assert documented("checks.md", check)["broken"] == want, "run python -m tests.contract_docs"


def test_each_variant_fails_as_documented() -> None:
    for name, _edit, verdicts, _phrase in _variants():
        _changed, per_check = _observed()[name]
        got = {check: status for check, (status, _f) in per_check.items() if status != "pass"}
        assert got == verdicts, name
