"""Hostile exceptions.yaml files (issue 29's attack): each is refused in one line, or the
bad entry is left out with its reason and the rest imported; never a traceback."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exceptions.yaml_format import RecordFileError, read_record_file
from tests.releasecal.test_import_files import alias_bomb

ENTRY = """\
- name: {name}
  issue: {issue}
  date_requested: 2024-07-24
  date_reviewed: 2024-07-25
  thread: {thread}
  pull_requests:
    - https://github.com/kubernetes/kubernetes/pull/125941
  status: "approved"
"""


def record(*entries: dict) -> str:
    text = "codeFreeze:\n"
    for entry in entries:
        fields = {"name": '"Compatibility versions"', "issue": 4330, "thread": "https://groups.google.com/g/x/c/y"}
        text += ENTRY.format(**{**fields, **entry})
    return text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # 10**9 strings behind one name: ruamel.yaml's round trip passed 1.5 GB (MemoryError).
        (alias_bomb(9, key="x") + record({}), r"YAML refused: its aliases stand for more than 100,000 values"),
        # 10**6: small enough to build on today's code, and refused all the same.
        (alias_bomb(6, key="x") + record({}), r"YAML refused: its aliases stand for more than 100,000 values"),
        # ruamel.yaml's round trip raised TypeError on it.
        (record({"name": '!!python/object/apply:os.system ["echo pwned"]'}), r"the tag !!python/object/apply:os"),
        # RecursionError in ruamel.yaml's composer.
        (record({}) + "x: " + "[" * 5000 + "]" * 5000 + "\n", r"nested more than 50 levels deep"),
    ],
    ids=["alias-bomb-1e9", "alias-bomb-1e6", "python-tag", "deep-nesting"],
)
def test_a_hostile_file_is_refused_in_one_line(text, message):
    with pytest.raises(RecordFileError, match=message) as caught:
        read_record_file(text)
    assert "\n" not in str(caught.value)


def test_the_command_says_so_and_saves_nothing(db, release, tmp_path):
    path = tmp_path / "exceptions.yaml"
    path.write_text(alias_bomb(9, key="x") + record({}))
    with pytest.raises(CommandError, match=r"exceptions\.yaml: YAML refused: its aliases stand for more than"):
        call_command("import_exceptions_yaml", str(path), "--release", release.slug, stdout=io.StringIO())
    assert not release.exception_requests.exists()


def test_a_file_that_is_not_yaml_is_still_read_line_by_line():
    text = record({}) + "  - name: broken indentation\n   status: approved\n"
    result = read_record_file(text)
    assert result.lenient
    assert [e.kep_number for e in result.entries][:1] == [4330]
