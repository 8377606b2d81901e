"""The one loader every import reads YAML and JSON with (releasecal/importers/files.py):
budgets on aliases, nesting and tags, checked on the parser's events before anything is
built; and plain_text, the one way a name from a file becomes a line of text."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from releasecal.errors import ValidationFailed
from releasecal.importers.files import (
    YAML_MAX_ALIASES,
    YAML_MAX_DEPTH,
    ImportFailed,
    YamlRefused,
    load_data,
    plain_text,
    yaml_guard,
)


def alias_bomb(levels: int, *, key: str = "title") -> str:
    """``levels`` anchors, each a list of ten aliases of the one before: 10**levels strings."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n{key}: *a{levels - 1}\n"


# The finding of the attack (issue 29): a 516-byte kep.yaml with ``title: *a8``.
BOMB_1E9 = alias_bomb(9)


def test_the_516_byte_alias_bomb_is_refused_without_being_built():
    assert len(BOMB_1E9) < 600
    tracemalloc.start()
    try:
        with pytest.raises(ImportFailed, match=r"^kep\.yaml: YAML refused: its aliases stand for more than 100,000"):
            load_data(BOMB_1E9, source="kep.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000


def test_aliases_within_the_budget_still_load():
    text = 'base: &b {owner: "@alice"}\nfirst: *b\nsecond: *b\n'
    assert load_data(text) == {"base": {"owner": "@alice"}, "first": {"owner": "@alice"}, "second": {"owner": "@alice"}}


def test_more_aliases_than_the_budget_are_refused_even_when_each_is_small():
    text = "a: &a x\nlist: [" + ",".join(["*a"] * (YAML_MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(ImportFailed, match=rf"more than {YAML_MAX_ALIASES} aliases"):
        load_data(text)
    load_data("a: &a x\nlist: [" + ",".join(["*a"] * YAML_MAX_ALIASES) + "]\n")


def test_an_alias_inside_the_value_it_names_is_refused():
    with pytest.raises(ImportFailed, match=r"the alias \*loop stands for a value that holds it"):
        load_data("a: &loop [1, *loop]\n")


@pytest.mark.parametrize(
    "text",
    [
        'title: !!python/object/apply:os.system ["echo pwned"]\n',
        "title: !!python/name:os.system\n",
        "title: !custom 1\n",
        "!!python/object:collections.OrderedDict {}\n",
    ],
)
def test_tags_that_build_more_than_plain_data_are_refused(text):
    with pytest.raises(ImportFailed, match=r"YAML refused: the tag \S+ builds more than plain data"):
        load_data(text)


def test_core_tags_are_plain_data():
    assert load_data('a: !!str 1.30\nb: !!int "3"\nc: !!seq [1]\n') == {"a": "1.30", "b": 3, "c": [1]}


def test_yaml_nested_deeper_than_the_budget_is_refused_before_it_is_built():
    # 5,000 brackets made PyYAML's recursive composer raise RecursionError (a traceback).
    with pytest.raises(ImportFailed, match=rf"YAML refused: nested more than {YAML_MAX_DEPTH} levels deep"):
        load_data("x: " + "[" * 5000 + "]" * 5000 + "\n")
    inner = YAML_MAX_DEPTH - 1  # the mapping is one level
    assert load_data("x: " + "[" * inner + "]" * inner + "\n")["x"] is not None


def test_json_nested_deeper_than_the_budget_is_refused():
    # 100,000 brackets: RecursionError in json.loads, a traceback.
    with pytest.raises(ImportFailed, match=rf"^in\.json: JSON refused: nested more than {YAML_MAX_DEPTH} levels deep"):
        load_data('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", source="in.json")
    # Deep enough to load, too deep to hand on: refused all the same.
    with pytest.raises(ImportFailed, match="JSON refused"):
        load_data('{"x": ' + "[" * 200 + "]" * 200 + "}")
    assert load_data(json.dumps({"x": [[[1]]]})) == {"x": [[[1]]]}


def test_syntax_errors_keep_their_message():
    with pytest.raises(ImportFailed, match=r"^Not valid YAML \(line 2, column 1\): expected ',' or '\]'"):
        load_data("title: [unclosed\n", source="")


def test_the_guard_alone_raises_yaml_refused_and_passes_plain_files():
    yaml_guard("title: ok\nauthors: ['@a', '@b']\n")
    with pytest.raises(YamlRefused):
        yaml_guard(BOMB_1E9)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Evil\r\nX-Injected: yes", "Evil X-Injected: yes"),
        ("  two\tspaces\u2028and a line separator  ", "two spaces and a line separator"),
        ("no\u00a0break", "no break"),
        ("Über Straße", "Über Straße"),
        (None, ""),
        (2400, "2400"),
    ],
)
def test_plain_text_makes_every_run_of_white_space_one_space(value, expected):
    assert plain_text(value, field="title", max_length=300) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Evil\x00title", "title holds the control character U+0000 at character 5."),
        ("bell\x07", "title holds the control character U+0007 at character 5."),
        ("esc \x1b[31m", "title holds the control character U+001B at character 5."),
        ("bad \ud800", "title holds a lone surrogate (not text), U+D800 at character 5."),
        ("x" * 301, "title is 301 characters long; at most 300 fit."),
    ],
)
def test_plain_text_refuses_other_control_characters_and_long_text(value, message):
    with pytest.raises(ValidationFailed) as caught:
        plain_text(value, field="title", max_length=300)
    assert caught.value.message == message
