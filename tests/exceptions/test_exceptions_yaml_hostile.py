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
        # ValueError (Python reads no number of more than 4,300 digits).
        (record({"issue": "9" * 5000}), r"a number of 5,000 characters"),
    ],
    ids=["alias-bomb-1e9", "alias-bomb-1e6", "python-tag", "deep-nesting", "5000-digits"],
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


def test_hostile_entries_are_left_out_or_made_one_line_and_the_rest_imported(db, release, tmp_path, client):
    path = tmp_path / "exceptions.yaml"
    path.write_text(
        record(
            {"name": '"Evil\\r\\nX-Injected: yes"', "issue": 9101},
            {"name": '"bad \\0 nul"', "issue": 9102},
            {"name": '"bad \\ud800 surrogate"', "issue": 9103},
            {"issue": 2147483648},
            {"name": '"' + "x" * 400 + '"', "issue": 9104, "thread": '"https://groups.google.com/x\\r\\nEvil: 1"'},
            {"name": '"Fine"', "issue": 4330, "thread": '"javascript:alert(1)"'},
        )
    )
    out = io.StringIO()
    call_command("import_exceptions_yaml", str(path), "--release", release.slug, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "exceptions.yaml into 1.31: 3 created, 0 decided, 0 unchanged, 3 skipped."
    assert (
        "  skipped line 10 (KEP-9102, ''): name holds the control character U+0000 at character 5; the entry is "
        "left out"
    ) in lines
    assert (
        "  skipped line 18 (KEP-9103, ''): name holds a lone surrogate (not text), U+D800 at character 5; the entry "
        "is left out"
    ) in lines
    assert (
        "  skipped line 26 (2147483648, 'Compatibility versions'): issue '2147483648' is no KEP number "
        "(1 to 2,147,483,647)"
    ) in lines
    assert f"  note: line 34 (KEP-9104, '{'x' * 60}'): name is 400 characters long; the first 300 are kept" in lines
    assert (
        "  note: line 34 (KEP-9104, '" + "x" * 60 + "'): thread 'https://groups.google.com/x\\r\\nEvil: 1' is not an "
        "http(s) URL; left out"
    ) in lines
    assert "  note: line 42 (KEP-4330, 'Fine'): thread 'javascript:alert(1)' is not an http(s) URL; left out" in lines
    evil = release.exception_requests.get(enhancement__number=9101)
    assert evil.enhancement.title == evil.current.enhancement_name == "Evil X-Injected: yes"
    assert release.exception_requests.get(enhancement__number=9104).thread_url == ""
    assert release.exception_requests.get(enhancement__number=4330).thread_url == ""
    for url in ("/calendar/kep/9101.ics", f"/calendar/{release.slug}.ics", f"/releases/{release.slug}/exceptions/"):
        assert client.get(url).status_code == 200, url
