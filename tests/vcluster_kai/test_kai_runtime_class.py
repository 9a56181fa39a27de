"""What gpulab's `admission.gpuFractionRuntimeClassName` does to the pinned KAI chart (v0.16.8,
rendered by the real `helm template`): the Config kai-config the operator reads. An empty
string reaches the Config as "" (templates/_helpers.tpl:203-207), which the operator passes as
--gpu-fraction-runtime-class-name "" (pkg/operator/operands/admission/resources.go:393-395) and
the admission then registers no runtime enforcement (cmd/admission/main.go:58-61): no
RuntimeClass on GPU-fraction pods. Null does not disable it: helm drops a null value, `hasKey`
fails, the Config leaves the field out and the operator's default is `nvidia`
(pkg/apis/kai/v1/admission/admission.go:89-94)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpulab.stacks import load_profile
from gpulab.stacks.vcluster_kai import render as kr
from gpulab.stacks.vcluster_kai.existing import fraction_runtime_class
from tests.rendered import find, render


def _admission(values: dict[str, Any]) -> dict[str, Any]:
    release = kr.kai_scheduler_release(load_profile("vcluster-kai").profile)  # type: ignore[arg-type]
    objects = render(release.chart, release.name, release.namespace, values)
    # the chart's post-install hook applies Config kai-config from this ConfigMap
    # (templates/hooks/post/kai-config-deployer/configmap.yaml, job.yaml:90)
    manifest = find(objects, "ConfigMap", "kai-config-manifest")["data"]["kai-config.yaml"]
    config = yaml.safe_load(manifest)
    assert config["kind"] == "Config" and config["metadata"]["name"] == "kai-config"
    return config["spec"]["admission"]  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize(("runtime_class", "rendered"), [
    (None, "nvidia"), ("", ""), ("nvidia-cr", "nvidia-cr")])
def test_the_value_gpulab_gives_reaches_kais_config(runtime_class: str | None,
                                                    rendered: str) -> None:
    profile: Any = load_profile("vcluster-kai").profile
    values = kr.kai_scheduler_release(profile, runtime_class).values
    assert _admission(values)["gpuFractionRuntimeClassName"] == rendered


@pytest.mark.slow
def test_null_leaves_the_field_out_so_the_operator_default_nvidia_applies() -> None:
    profile: Any = load_profile("vcluster-kai").profile
    values = kr.kai_scheduler_release(profile).values
    admission = _admission({**values, "admission": {"gpuFractionRuntimeClassName": None}})
    assert "gpuFractionRuntimeClassName" not in admission
    assert "gpuPodRuntimeClassName" not in admission


@pytest.mark.parametrize(("classes", "fake", "chosen"), [
    ((("nvidia", "nvidia"), ("nvidia-cdi", "nvidia-cdi")), False, None),
    ((("nvidia-cr", "nvidia"),), False, "nvidia-cr"),
    ((("crun", "crun"),), False, ""),
    ((), False, ""),
    ((), True, None),  # fake-gpu-operator's chart brings RuntimeClass nvidia
    (None, False, None),  # unread: the preflight refuses it (unknown)
])
def test_which_runtime_class_kai_gets(classes: Any, fake: bool, chosen: str | None) -> None:
    assert fraction_runtime_class(classes, fake=fake) == chosen
