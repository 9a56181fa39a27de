"""gpulab's Helm post-renderer (gpulab.helm_labels): the lab's labels on every object, and the
rest of the text unchanged. Pure logic here; tests/contract/test_helm_post_render.py runs it
under the real helm 3 and helm 4 on the pinned charts."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulab.helm_labels import LabelError, add_labels, check_labels, main

LAB = {"gpulab.dev/lab": "demo"}
REPO = Path(__file__).resolve().parents[2]


def labelled(obj: dict[str, Any], labels: dict[str, str] = LAB) -> dict[str, Any]:
    """What an object must read as once labelled: only metadata.labels gains the labels."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    out["metadata"] = meta
    return out


def is_subsequence(short: str, long: str) -> bool:
    """Every character of `short` is in `long`, in order (the edit only inserted text)."""
    it = iter(long)
    return all(ch in it for ch in short)


# --------------------------------------------------------------------------- exact outputs


def test_labels_go_before_the_first_label_and_nothing_else_moves() -> None:
    text = ("---\n# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n"
            "metadata:\n  name: x  # the name\n  labels:\n    app: y\n"
            "data:\n  switch: on\n  mode: 0755\n  quoted: 'on'\n  none: ~\n")
    assert add_labels(text, LAB) == text.replace(
        "  labels:\n    app: y\n", '  labels:\n    gpulab.dev/lab: "demo"\n    app: y\n')


def test_metadata_without_labels_and_objects_without_metadata() -> None:
    text = "kind: ConfigMap\nmetadata:\n  name: x\n---\nkind: Namespace\n"
    assert add_labels(text, LAB) == (
        'kind: ConfigMap\nmetadata:\n  labels:\n    gpulab.dev/lab: "demo"\n  name: x\n---\n'
        'metadata:\n  labels:\n    gpulab.dev/lab: "demo"\nkind: Namespace\n')


def test_null_and_empty_labels_become_the_lab_labels() -> None:
    assert add_labels("kind: A\nmetadata:\n  labels:\n  name: x\n", LAB) == \
        'kind: A\nmetadata:\n  labels: {gpulab.dev/lab: "demo"}\n  name: x\n'
    assert add_labels("kind: A\nmetadata:\n  labels: ~\n", LAB) == \
        'kind: A\nmetadata:\n  labels: {gpulab.dev/lab: "demo"}\n'
    assert add_labels("kind: A\nmetadata:\n  labels: {}\n", LAB) == \
        'kind: A\nmetadata:\n  labels: {gpulab.dev/lab: "demo"}\n'
    assert add_labels("kind: A\nmetadata: null\n", LAB) == \
        'kind: A\nmetadata: {labels: {gpulab.dev/lab: "demo"}}\n'


def test_flow_and_json_documents_stay_flow() -> None:
    text = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}\n'
    assert add_labels(text, LAB) == (
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {labels: {gpulab.dev/lab: '
        '"demo"}, "name": "x"}}\n')
    assert add_labels("kind: A\nmetadata: {name: x, labels: {a: b}}\n", LAB) == \
        'kind: A\nmetadata: {name: x, labels: {gpulab.dev/lab: "demo", a: b}}\n'


def test_every_item_of_a_list_is_labelled_and_the_list_itself_is_not() -> None:
    text = ("apiVersion: v1\nkind: List\nmetadata: {}\nitems:\n- apiVersion: v1\n"
            "  kind: ConfigMap\n  metadata:\n    name: a\n- kind: Secret\n  metadata:\n"
            "    name: b\n    labels:\n      k: v\n")
    out = add_labels(text, LAB)
    assert out == text.replace("    name: a\n", '    labels:\n      gpulab.dev/lab: "demo"\n'
                               "    name: a\n").replace(
        "      k: v\n", '      gpulab.dev/lab: "demo"\n      k: v\n')
    assert yaml.safe_load(out)["metadata"] == {}
    # Kubernetes decodes any document with top-level `items` as a list, whatever its kind.
    other = "kind: ConfigMapList\nitems: []\n---\nkind: Whatever\nitems:\n- kind: A\n"
    assert add_labels(other, LAB) == other.replace(
        "- kind: A\n", '- metadata:\n    labels:\n      gpulab.dev/lab: "demo"\n  kind: A\n')
    assert add_labels("kind: List\nitems: null\n", LAB) == "kind: List\nitems: null\n"


def test_only_metadata_labels_never_selectors_nor_pod_templates() -> None:
    text = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels:\n"
            "    app: d\nspec:\n  selector:\n    matchLabels:\n      app: d\n  template:\n"
            "    metadata:\n      labels:\n        app: d\n    spec:\n      containers: []\n")
    out = yaml.safe_load(add_labels(text, LAB))
    assert out == labelled(yaml.safe_load(text))
    assert out["spec"]["selector"]["matchLabels"] == {"app": "d"}
    assert out["spec"]["template"]["metadata"]["labels"] == {"app": "d"}


def test_a_label_with_another_value_is_set_to_the_labs() -> None:
    text = "kind: A\nmetadata:\n  labels:\n    gpulab.dev/lab: 'other'  # theirs\n    a: b\n"
    assert add_labels(text, LAB) == text.replace("'other'", '"demo"')
    same = 'kind: A\nmetadata:\n  labels:\n    gpulab.dev/lab: demo\n'
    assert add_labels(same, LAB) == same  # already there: untouched


def test_empty_documents_comments_and_separators_are_kept() -> None:
    text = ("# leading comment\n---\n# Source: c/templates/empty.yaml\n---\n\n---\n"
            "# Source: c/templates/a.yaml\nkind: A  # trailing\n...\n---\n# only a comment\n")
    out = add_labels(text, LAB)
    assert is_subsequence(text, out)
    assert out == text.replace("kind: A  # trailing\n",
                               'metadata:\n  labels:\n    gpulab.dev/lab: "demo"\n'
                               "kind: A  # trailing\n")
    assert add_labels("", LAB) == ""
    assert add_labels("# nothing\n---\n", LAB) == "# nothing\n---\n"


def test_indented_documents_and_items_keep_their_columns() -> None:
    text = "kind: L\nitems:\n  -   kind: A\n      metadata:\n          name: x\n"
    out = add_labels(text, LAB)
    assert yaml.safe_load(out)["items"] == [labelled({"kind": "A", "metadata": {"name": "x"}})]
    assert out == text.replace("          name: x\n", '          labels:\n'
                               '            gpulab.dev/lab: "demo"\n          name: x\n')


def test_aliased_labels_are_not_edited_where_the_anchor_is_shared() -> None:
    text = ("kind: Deployment\nmetadata:\n  labels: &sel {app: d}\nspec:\n  selector:\n"
            "    matchLabels: *sel\n")
    out = add_labels(text, LAB)
    data = yaml.safe_load(out)
    assert data == labelled(yaml.safe_load(text))
    assert data["spec"]["selector"]["matchLabels"] == {"app": "d"}


def test_a_block_scalar_label_value_is_rewritten_without_changing_its_neighbours() -> None:
    text = ("kind: A\nmetadata:\n  labels:\n    gpulab.dev/lab: |\n      other\n  name: q\n"
            "data:\n  flag: on\n  mode: 0755\n  big: " + "x" * 500 + "\n")
    out = add_labels(text, LAB)
    assert yaml.safe_load(out) == labelled(yaml.safe_load(text))
    assert "flag: on\n" in out and "mode: 0755\n" in out and "x" * 500 in out


def test_values_that_look_like_other_types_stay_strings() -> None:
    for value in ("on", "0755", "1e3", "null", "yes", "12", "true", "~"):
        out = add_labels("kind: A\n", {"gpulab.dev/lab": value} if value not in ("~",) else LAB)
        loaded = yaml.safe_load(out)["metadata"]["labels"]["gpulab.dev/lab"]
        assert isinstance(loaded, str)
    assert yaml.safe_load(add_labels("kind: A\n", {"on": "0755"}))["metadata"]["labels"] == \
        {"on": "0755"}


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("text", "message"), [
    ("kind: [unclosed\n", "not YAML: "),
    ("- a\n- b\n", "document 1 (line 1) is not a Kubernetes object but a list"),
    ("kind: A\n---\njust a string\n", "document 2 (line 3) is not a Kubernetes object but a "
                                      "scalar"),
    ("kind: A\nmetadata: [a]\n", "metadata at line 2 is not a mapping"),
    ("kind: A\nmetadata:\n  labels: oops\n", "labels at line 3 are not a mapping"),
    ("kind: A\nmetadata: {}\nmetadata: {}\n", "key 'metadata' appears twice in the mapping at "
                                               "line 1"),
    ("kind: List\nitems: {a: b}\n", "the items of the list at line 1 are not a list"),
    ("kind: List\nitems:\n- 3\n", "an item of the list at line 3 is not an object"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nest"),  # libyaml's limit, or Python's
])
def test_what_is_not_a_stream_of_objects_is_refused_with_one_line(text: str, message: str
                                                                   ) -> None:
    with pytest.raises(LabelError) as info:
        add_labels(text, LAB)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("labels", [
    {}, {"": "x"}, {"UPPER.example.com/x": "y"}, {"a/b/c": "d"}, {"gpulab.dev/lab": "a b"},
    {"gpulab.dev/lab": "x" * 64}, {"gpulab.dev/lab": "-x"}, {"k" * 64: "v"},
])
def test_labels_that_kubernetes_would_refuse_are_refused(labels: dict[str, str]) -> None:
    with pytest.raises(LabelError):
        check_labels(labels)
    with pytest.raises(LabelError):
        add_labels("kind: A\n", labels)


def test_valid_labels_pass() -> None:
    check_labels({"gpulab.dev/lab": "my-lab.1", "app.kubernetes.io/name": "", "x": "Y_z"})


# --------------------------------------------------------------------------- hostile YAML

SCALARS = st.one_of(
    st.sampled_from(["on", "off", "yes", "no", "y", "0755", "0o17", "0x1F", "1e3", ".inf",
                     "null", "~", "", " ", "-", "a: b", "# not a comment", "'", '"', "\\",
                     "---", "...", "2001-01-01", "1_000", "@x", "*x", "&x", "!x", "%x", "`x",
                     "x" * 3000, "é€😀", "tab\there", "line\nbreak", "trailing \n\n"]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40),
    st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False),
)
KEYS = st.one_of(st.sampled_from(["name", "on", "yes", "0755", "a b", "app.kubernetes.io/name",
                                  "labels", "metadata", "items", "template", "selector"]),
                 st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
                         max_size=12))
TREES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)
LABEL_MAPS = st.dictionaries(st.sampled_from(["app", "on", "gpulab.dev/x", "a.b/c"]),
                             st.sampled_from(["x", "on", "0755", "", "y"]), max_size=3)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": draw(st.sampled_from(
        ["ConfigMap", "Secret", "Deployment", "CustomThing"]))}
    shape = draw(st.sampled_from(["none", "null", "no-labels", "null-labels", "labels"]))
    if shape != "none":
        meta: dict[str, Any] | None = None if shape == "null" else {"name": draw(SCALARS)}
        if meta is not None and shape == "null-labels":
            meta["labels"] = None
        if meta is not None and shape == "labels":
            meta["labels"] = draw(LABEL_MAPS)
        obj["metadata"] = meta
    obj.update(draw(st.dictionaries(st.sampled_from(["data", "spec", "stringData", "x"]),
                                    TREES, max_size=3)))
    return obj


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, list[Any]]:
    """A multi-document stream as helm 3 (raw templates) or helm 4 (kyaml) might hand it over,
    dumped in styles PyYAML can produce, with comments, empty documents and Lists."""
    docs: list[Any] = []
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["object", "object", "list", "empty", "comment"]))
        if kind in ("empty", "comment"):
            parts.append("# Source: chart/templates/x.yaml\n" if kind == "comment" else "")
            docs.append(None)
            continue
        doc: dict[str, Any] = (draw(objects()) if kind == "object" else
                               {"apiVersion": "v1", "kind": "List",
                                "items": draw(st.lists(objects(), max_size=3))})
        docs.append(doc)
        text = yaml.safe_dump(doc, default_flow_style=draw(st.sampled_from([False, None, True])),
                              sort_keys=draw(st.booleans()), allow_unicode=draw(st.booleans()),
                              width=draw(st.sampled_from([20, 80, 1 << 20])),
                              indent=draw(st.sampled_from([2, 4])),
                              explicit_end=draw(st.booleans()))
        comment = draw(st.sampled_from(["", "# Source: chart/templates/y.yaml\n"]))
        parts.append(comment + text)
    return "---\n" + "---\n".join(parts), docs


def _null_meta(doc: Any) -> bool:
    """Whether an object of the document has a null metadata or null labels (replaced)."""
    if not isinstance(doc, dict):
        return False
    objs = doc["items"] if isinstance(doc.get("items"), list) else [doc]
    return any("metadata" in o and (o["metadata"] is None or ("labels" in o["metadata"] and
                                                               o["metadata"]["labels"] is None))
               for o in objs)


def _expected(doc: Any) -> Any:
    if doc is None:
        return None
    if isinstance(doc.get("items"), list):
        return {**doc, "items": [labelled(item) for item in doc["items"]]}
    return labelled(doc)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_any_stream_reads_back_as_itself_plus_the_labels(stream: tuple[str, list[Any]]) -> None:
    text, _ = stream
    docs = list(yaml.safe_load_all(text))  # what the input reads as (PyYAML's dump of a
    out = add_labels(text, LAB)            # string does not always read back as that string)
    assert list(yaml.safe_load_all(out)) == [_expected(d) for d in docs]
    # Nothing was taken away: the input is still there, in order, around what was added (no
    # generated object carries the lab's label with another value; a null is replaced).
    if not any(_null_meta(d) for d in docs):
        assert is_subsequence(text, out)
    assert add_labels(out, LAB) == out  # labelling twice changes nothing more


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_is_labelled_or_refused_with_one_line(text: str) -> None:
    try:
        out = add_labels(text, LAB)
    except LabelError as err:
        assert "\n" not in str(err)
        return
    for doc in yaml.safe_load_all(out):
        if isinstance(doc, dict):
            items = doc.get("items") if "items" in doc else [doc]
            for obj in items or []:
                assert obj["metadata"]["labels"]["gpulab.dev/lab"] == "demo"


# --------------------------------------------------------------------------- the program


def run(args: list[str], stdin: bytes, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "gpulab.helm_labels", *args], input=stdin,
                          capture_output=True, cwd=tmp_path, timeout=60, check=False)


def test_the_program_labels_stdin_to_stdout(tmp_path: Path) -> None:
    done = run(["gpulab.dev/lab=demo"], b"kind: A\nmetadata:\n  name: x\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b'kind: A\nmetadata:\n  labels:\n    gpulab.dev/lab: "demo"\n  name: x\n'
    assert done.stderr == b""


def test_the_program_fails_loudly_on_bad_input(tmp_path: Path) -> None:
    error_file = tmp_path / "error.txt"
    done = run([f"--error-file={error_file}", "gpulab.dev/lab=demo"], b"- not\n- objects\n",
               tmp_path)
    assert done.returncode == 1
    line = ("gpulab post-renderer: document 1 (line 1) is not a Kubernetes object but a list\n")
    assert done.stderr.decode() == line
    assert error_file.read_text() == line
    assert done.stdout == b""
    bad_args = run(["--what"], b"kind: A\n", tmp_path)
    assert bad_args.returncode == 1
    assert bad_args.stderr.decode().startswith("gpulab post-renderer: unexpected argument "
                                                "'--what' (usage: ")
    no_labels = run([], b"kind: A\n", tmp_path)
    assert no_labels.stderr == b"gpulab post-renderer: no labels to add\n"
    binary = run(["gpulab.dev/lab=demo"], b"kind: \xff\n", tmp_path)
    assert binary.stderr == b"gpulab post-renderer: input is not UTF-8 (byte 6)\n"


def test_no_objects_still_gives_helm_4_some_output(tmp_path: Path) -> None:
    done = run(["gpulab.dev/lab=demo"], b"", tmp_path)
    assert done.returncode == 0
    assert done.stdout == b"# gpulab: no objects to label\n"


def test_main_reads_its_arguments(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                  ) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"kind: A\n")))
    assert main(["gpulab.dev/lab=x", "app=y"]) == 0
    out = json.loads(json.dumps(yaml.safe_load(capsys.readouterr().out)))
    assert out == {"kind": "A", "metadata": {"labels": {"gpulab.dev/lab": "x", "app": "y"}}}
