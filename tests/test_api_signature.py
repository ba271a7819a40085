"""``aviary.replay``'s signature is written out (``help()`` and an IDE show every parameter, its type and
its default) and held equal to the one declaration of the parameters, the fields of ``ReplaySpec``: the
same names in the same order, the same types (a path may also be a ``str``; ``params`` may be None) and
the same defaults.

After a field is added or changed: ``AVIARY_UPDATE_API=1 python -m pytest tests/test_api_signature.py``
writes the parameters anew between the markers in ``api.py`` (from ``launch/flags/spec.py``'s source).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import pydoc
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import aviary.api as api
from aviary.launch.flags.spec import ReplaySpec, field_types

ROOT = Path(api.__file__).resolve().parent
BEGIN, END = "    # -- generated from ReplaySpec: begin\n", "    # -- generated from ReplaySpec: end\n"


def generated() -> str:
    """The parameter lines of ``replay`` from ``ReplaySpec``'s source: its annotations and defaults as
    written there, a ``Path`` also a ``str``, a field with a default factory ``None`` for its default."""
    source = (ROOT / "launch" / "flags" / "spec.py").read_text()
    tree = ast.parse(source)
    (spec,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ReplaySpec"]
    lines = []
    for node in spec.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        annotation = ast.get_source_segment(source, node.annotation) or ""
        default = ast.get_source_segment(source, node.value) if node.value else None
        if annotation.split(" | ")[0] == "Path":
            annotation = "str | " + annotation
        if default is not None and default.startswith("field(default_factory="):
            annotation, default = f"{annotation} | None", "None"
        assert default is not None, f"ReplaySpec.{node.target.id} has no default: replay() needs one"
        lines.append(f"    {node.target.id}: {annotation} = {default},\n")
    return "".join(lines)


def test_the_written_parameters_are_the_generated_ones():
    source = (ROOT / "api.py").read_text()
    head, rest = source.split(BEGIN)
    written, tail = rest.split(END)
    if os.environ.get("AVIARY_UPDATE_API"):
        (ROOT / "api.py").write_text(head + BEGIN + generated() + END + tail)
        written = generated()
    assert written == generated(), (
        "replay()'s parameters differ from ReplaySpec's fields: "
        "AVIARY_UPDATE_API=1 python -m pytest tests/test_api_signature.py writes them anew"
    )


def _kinds(hint: Any) -> frozenset[Any]:
    """A type as the set of the types of its union (a path: ``str`` too, as ``replay`` takes it)."""
    members = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    return frozenset(members) | ({str} if Path in members else set())


def test_replay_takes_every_field_of_the_spec_with_its_type_and_default():
    parameters = list(inspect.signature(api.replay).parameters.values())
    spec, *keywords, quiet = parameters
    assert (spec.name, spec.kind, spec.default) == ("spec", inspect.Parameter.POSITIONAL_ONLY, None)
    assert (quiet.name, quiet.annotation, quiet.default) == ("quiet", bool, True)
    specs = dataclasses.fields(ReplaySpec)
    assert [p.name for p in keywords] == [f.name for f in specs]
    types_ = field_types()
    for p, f in zip(keywords, specs, strict=True):
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, p.name
        if f.default_factory is not dataclasses.MISSING:  # params: None for the factory's empty dict
            assert p.default is None and f.default_factory() == {}, p.name
            assert _kinds(p.annotation) == _kinds(types_[f.name]) | {type(None)}, p.name
        else:
            assert p.default == f.default and type(p.default) is type(f.default), p.name
            assert _kinds(p.annotation) == _kinds(types_[f.name]), p.name


def test_help_shows_every_parameter_with_its_type_and_default():
    text = pydoc.render_doc(api.replay, renderer=pydoc.plaintext)
    assert "**values" not in text and "jobs: int | None = None" in text
    assert "workload: Literal['google', 'alibaba', 'tpch', 'tpcds', 'gshet'] = 'google'" in text
    assert "load: float | None = None" in text and "quiet: bool = True" in text
    for f in dataclasses.fields(ReplaySpec):
        assert f"{f.name}: " in text, f.name
