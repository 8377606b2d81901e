"""kubernetes/sig-release's ``releases/release-1.XX/exceptions.yaml``: reading and writing.

No database here: ``read_record_file`` turns the text of any version of the file into
``Entry`` values, and ``RecordDocument`` keeps a loaded file (comments, key order and
quoting kept by ruamel.yaml's round-trip mode) so entries can be updated in place or
appended and the text written back in the file's own layout.

The shapes the file has had (every real file, 1.10 to 1.36, is in the tests):

- 1.10 to 1.17 and 1.20 to 1.23: one flat list; which freeze an entry is for is said only by the
  comment above it ("# Code Freeze Exceptions requested in 1.20"), or by the file's
  first line ("# Exceptions to code freeze requested in 1.10").
- 1.18, 1.19, 1.25 on: a mapping ``enhancementFreeze:`` / ``codeFreeze:`` (1.35 adds
  ``docsFreeze:``), each a list; an empty section is ``null``.
- ``issue`` is a number or a URL (kubernetes/enhancements, the older kubernetes/features,
  or a kubernetes/kubernetes issue or PR that is not a KEP); ``pull_requests`` is also
  spelt ``pull-requests`` (1.19); dates have no time and are sometimes not zero-padded
  (``2020-11-2``); ``status`` is approved, denied, rejected, reverted or removed in any
  case, with or without quotes.
- Three real files are not valid YAML (1.14: an indented entry and text before a list;
  1.20: a comma after a quoted list item; 1.23: lines holding only a zero-width space).
  They are read line by line instead (``lenient=True`` on the result), the same fields
  by the same rules; such a file cannot be written back in its own layout.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from releasecal.errors import ValidationFailed
from releasecal.importers.files import YamlRefused, http_url, plain_text, yaml_guard
from releasecal.models import Enhancement

# Section keys of the mapping shape, and the milestone kind each stands for.
SECTION_KINDS = {
    "enhancementFreeze": "enhancements-freeze",
    "codeFreeze": "code-freeze",
    "docsFreeze": "docs-freeze",
    "prrFreeze": "prr-freeze",
}
KIND_SECTIONS = {kind: key for key, kind in SECTION_KINDS.items()}
SECTION_TITLES = {
    "enhancementFreeze": "Enhancements Freeze",
    "codeFreeze": "Code Freeze",
    "docsFreeze": "Docs Freeze",
    "prrFreeze": "PRR Freeze",
}

# Status words as the release team has written them, and what each means here.
# ``reverted`` and ``removed`` were approved, then taken out of the release again.
STATUS_OUTCOMES = {
    "approved": "approved",
    "approve": "approved",
    "accepted": "approved",
    "granted": "approved",
    "rejected": "rejected",
    "denied": "rejected",
    "declined": "rejected",
    "reverted": "approved",
    "removed": "approved",
    "pending": "pending",
    "withdrawn": "withdrawn",
}
REMOVED_AFTER_APPROVAL = {"reverted", "removed"}

_COMMENT_KINDS = [
    (re.compile(r"enhancements?\s*freeze", re.I), "enhancements-freeze"),
    (re.compile(r"code\s*freeze", re.I), "code-freeze"),
    (re.compile(r"docs?\s*freeze", re.I), "docs-freeze"),
    (re.compile(r"\bprr\s*freeze", re.I), "prr-freeze"),
    (re.compile(r"\btest\s*freeze", re.I), "test-freeze"),
]
_KEP_URL = re.compile(r"github\.com/kubernetes/(?:enhancements|features)/(?:issues|pull)/(\d{1,12})\b", re.I)
_DATE = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$")
_INVISIBLE = "\u200b\u200c\u200d\ufeff"


class RecordFileError(ValueError):
    """The text is not an exceptions.yaml file (one line, shown as it is)."""


@dataclass
class Entry:
    """One request as the file records it. ``line`` is 1-based, for messages."""

    line: int
    kind: str  # milestone kind slug, "" when the file does not say
    name: str
    issue_text: str
    kep_number: int | None
    date_requested: dt.date | None
    date_reviewed: dt.date | None
    thread: str
    pull_requests: list[str]
    status_word: str  # as written, stripped
    outcome: str  # approved / rejected / pending / withdrawn, "" when unknown
    problems: list[str] = field(default_factory=list)
    refused: str = ""  # why the entry cannot be imported at all (a control character in its name)
    # Where it is in the text (0-based line indexes), so it can be edited in place.
    key_lines: dict[str, int] = field(default_factory=dict)
    last_line: int = 0

    @property
    def is_blank(self) -> bool:
        """The empty template entry some files start with (1.14)."""
        return not (self.name or self.issue_text or self.status_word or self.thread)

    @property
    def removed_after_approval(self) -> bool:
        return self.status_word.lower() in REMOVED_AFTER_APPROVAL


@dataclass
class RecordFile:
    entries: list[Entry]
    lenient: bool  # read line by line: the text is not valid YAML
    note: str = ""  # why it was read leniently


def kep_number_of(value) -> tuple[int | None, str]:
    """The KEP number an ``issue`` value names, or None and the reason."""
    text = _text(value)
    if not text:
        return None, "no issue given"
    bare = re.fullmatch(r"(?:#|kep[-\s]?)?(\d{1,12})", text, re.I)  # 1234, #1234, KEP-1234
    match = bare or _KEP_URL.search(text)
    if match:
        number = int(match.group(1))
        if 0 < number <= Enhancement.MAX_NUMBER:
            return number, ""
        return None, f"issue {text[:40]!r} is no KEP number (1 to {Enhancement.MAX_NUMBER:,})"
    return None, f"issue {text[:80]!r} is not a kubernetes/enhancements issue, so it names no KEP"


def parse_date(value) -> tuple[dt.date | None, str]:
    if value is None or value == "":
        return None, ""
    if isinstance(value, dt.datetime):
        return value.date(), ""
    if isinstance(value, dt.date):
        return value, ""
    text = str(value).strip()
    match = _DATE.match(text.replace("/", "-"))
    if match:
        try:
            return dt.date(*(int(g) for g in match.groups())), ""
        except ValueError:
            pass
    for pattern in ("%d %B %Y", "%B %d, %Y", "%B %d %Y", "%d %b %Y", "%b %d, %Y", "%b %d %Y"):
        try:
            return dt.datetime.strptime(re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text), pattern).date(), ""  # noqa: DTZ007 - a date, no time
        except ValueError:
            continue
    return None, f"date {text!r} is not a date (YYYY-MM-DD)"


def _text(value) -> str:
    if value is None:
        return ""
    return str(value).strip().strip(_INVISIBLE).strip()


NAME_MAX = 300  # ExceptionRequestRevision.enhancement_name, Enhancement.title


def _one_line(value, field_name: str) -> tuple[str, str]:
    """(text, why refused): white space (CR/LF, tabs) made one space; a control character
    or a lone surrogate refuses the entry (its name would break every feed showing it)."""
    if isinstance(value, dict | list):
        return "", f"{field_name} is not text"
    try:
        return plain_text(_text(value), field=field_name, max_length=10_000_000), ""
    except ValidationFailed as exc:
        return "", exc.message


def _kind_from_comment(text: str) -> str:
    for pattern, kind in _COMMENT_KINDS:
        if pattern.search(text):
            return kind
    return ""


def _kind_above(lines: list[str], line_index: int) -> str:
    """The freeze named by the nearest comment above ``line_index`` (0-based)."""
    for i in range(line_index - 1, -1, -1):
        stripped = lines[i].strip()
        if stripped.startswith("#"):
            kind = _kind_from_comment(stripped)
            if kind:
                return kind
    return ""


def _make_entry(raw: dict, *, line: int, kind: str, key_lines: dict[str, int], last_line: int) -> Entry:
    problems = []
    issue_text = _text(raw.get("issue"))
    number, why = kep_number_of(issue_text)
    if why and issue_text:
        problems.append(why)
    requested, why = parse_date(raw.get("date_requested"))
    if why:
        problems.append(why)
    reviewed, why = parse_date(raw.get("date_reviewed"))
    if why:
        problems.append(why)
    prs_raw = raw.get("pull_requests", raw.get("pull-requests"))
    if isinstance(prs_raw, str | int):
        prs_raw = [prs_raw]
    prs = []
    for item in prs_raw if isinstance(prs_raw, list) else []:
        url = _text(item).rstrip(",").strip().strip('"')
        if http_url(url):
            prs.append(url)
        elif url:
            problems.append(f"pull request {url[:80]!r} is not an http(s) URL; left out")
    name, refused = _one_line(raw.get("name"), "name")
    if len(name) > NAME_MAX:
        problems.append(f"name is {len(name):,} characters long; the first {NAME_MAX} are kept")
    thread = _text(raw.get("thread")) if not isinstance(raw.get("thread"), dict | list) else ""
    if thread and not http_url(thread):
        problems.append(f"thread {thread[:80]!r} is not an http(s) URL; left out")
        thread = ""
    status_word = " ".join(_text(raw.get("status")).split())[:100]
    # "Approved (late)", "denied." read by their first word; "not approved" stays unknown.
    first_word = re.split(r"[^a-z]+", status_word.lower().strip(" .!"), maxsplit=1)[0] if status_word else ""
    outcome = (
        (STATUS_OUTCOMES.get(status_word.lower()) or STATUS_OUTCOMES.get(first_word, "")) if status_word else "pending"
    )
    if status_word and not outcome:
        problems.append(f"status {status_word!r} is none of {', '.join(sorted(STATUS_OUTCOMES))}")
    return Entry(
        line=line,
        kind=kind,
        name=name,
        issue_text=issue_text,
        kep_number=number,
        date_requested=requested,
        date_reviewed=reviewed,
        thread=thread,
        pull_requests=prs,
        status_word=status_word,
        outcome=outcome,
        problems=problems,
        refused=refused,
        key_lines=key_lines,
        last_line=last_line,
    )


def _yaml() -> YAML:
    yaml = YAML()  # round-trip mode: comments, key order and quoting survive
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long name or URL
    return yaml


def _clean_text(text: str) -> str:
    if "\x00" in text:
        raise RecordFileError("The file holds a NUL byte; it is not an exceptions.yaml file.")
    return text.lstrip("\ufeff")


def _load(text: str):
    """The round-trip document, after the shared guard has read the text's events (an
    alias bomb, 5,000 nested brackets or a ``!!python`` tag are refused before ruamel.yaml
    builds anything; a syntax error the guard finds is the file's syntax error)."""
    try:
        yaml_guard(text)
    except YamlRefused as exc:
        raise RecordFileError(f"{exc.message} It is not an exceptions.yaml file.") from None
    return _yaml().load(text)


def read_record_file(text: str) -> RecordFile:
    """Every entry of an exceptions.yaml text, in file order."""
    text = _clean_text(text)
    if not text.strip():
        raise RecordFileError("The file is empty.")
    try:
        doc = _load(text)
    except (YAMLError, pyyaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "it does not parse"
        entries = _read_lenient(text)
        if not entries:
            raise RecordFileError(
                f"This is not valid YAML ({problem}{where}) and has no '- name:' entry: "
                "it is not an exceptions.yaml file."
            ) from None
        return RecordFile(entries=entries, lenient=True, note=f"not valid YAML ({problem}{where}); read line by line")
    return RecordFile(entries=_entries_of(doc, text), lenient=False)


def _entries_of(doc, text: str) -> list[Entry]:
    lines = text.splitlines()
    header_kind = _kind_from_comment(lines[0]) if lines and lines[0].lstrip().startswith("#") else ""
    entries = []
    if isinstance(doc, CommentedMap):
        unknown = [str(k) for k in doc if k not in SECTION_KINDS]
        if unknown and not any(k in SECTION_KINDS or _looks_like_entries(v) for k, v in doc.items()):
            raise RecordFileError(
                f"This YAML has none of the sections {', '.join(SECTION_KINDS)} and is not a list of "
                f"requests (its keys: {', '.join(unknown[:5])}); it is not an exceptions.yaml file."
            )
        for key, items in doc.items():
            if items is None or (key not in SECTION_KINDS and not _looks_like_entries(items)):
                continue
            if not isinstance(items, list):
                raise RecordFileError(f"Section {key} is not a list of requests.")
            # A section we do not know by name (testFreeze:, featureBlogFreeze:) is read
            # all the same; its freeze comes from its words, else the import says so.
            kind = SECTION_KINDS.get(key) or _kind_from_comment(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", str(key)))
            for item in items:
                entries.append(_entry_from_node(item, kind))
    elif isinstance(doc, CommentedSeq):
        for item in doc:
            line = item.lc.line if isinstance(item, CommentedMap) else 0
            kind = _kind_above(lines, line) or header_kind
            entries.append(_entry_from_node(item, kind))
    elif doc is None:
        return []
    else:
        raise RecordFileError("The text is neither a list of requests nor a mapping of freezes to lists.")
    return entries


def _looks_like_entries(items) -> bool:
    return isinstance(items, list) and any(isinstance(i, dict) and ("name" in i or "issue" in i) for i in items)


def _entry_from_node(item, kind: str) -> Entry:
    if not isinstance(item, CommentedMap):
        raise RecordFileError(f"An entry is not a mapping of name/issue/status: {str(item)[:60]!r}.")
    key_lines = {str(key): item.lc.key(key)[0] for key in item}
    last_line = max(key_lines.values(), default=item.lc.line)
    for value in item.values():
        if isinstance(value, CommentedSeq) and len(value):
            last_line = max(last_line, value.lc.item(len(value) - 1)[0])
    return _make_entry(dict(item), line=item.lc.line + 1, kind=kind, key_lines=key_lines, last_line=last_line)


_LENIENT_KEY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_LENIENT_ITEM = re.compile(r"^\s*-\s*(.*?)\s*$")


def _unquote(value: str) -> str:
    value = value.strip().rstrip(",").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _read_lenient(text: str) -> list[Entry]:
    """Line by line, for the files that are not valid YAML: ``- name:`` starts an entry,
    ``key: value`` lines fill it, ``- item`` lines add to the last list key; a top-level
    ``codeFreeze:`` (etc.) or a comment naming a freeze sets the section."""
    lines = text.splitlines()
    header_kind = _kind_from_comment(lines[0]) if lines and lines[0].lstrip().startswith("#") else ""
    section_kind = ""
    entries: list[Entry] = []
    current: dict | None = None
    current_line = 0
    current_kind = ""
    last_key = ""
    key_lines: dict[str, int] = {}
    last_line = 0

    def close():
        if current is not None:
            entries.append(
                _make_entry(current, line=current_line, kind=current_kind, key_lines=key_lines, last_line=last_line)
            )

    for index, raw_line in enumerate(lines):
        line = raw_line.strip(_INVISIBLE + " \t\r")
        if not line:
            continue
        if line.startswith("#"):
            kind = _kind_from_comment(line)
            if kind and index > 0:
                section_kind = kind
            continue
        key_match = _LENIENT_KEY.match(raw_line.strip(_INVISIBLE))
        if key_match and key_match.group(3) in SECTION_KINDS and not key_match.group(1) and not key_match.group(2):
            section_kind = SECTION_KINDS[key_match.group(3)]
            continue
        if key_match and key_match.group(2) and key_match.group(3) == "name":
            close()
            current = {"name": _unquote(key_match.group(4))}
            current_line = index + 1
            current_kind = section_kind or header_kind
            last_key = "name"
            key_lines = {"name": index}
            last_line = index
            continue
        if current is None:
            continue
        if key_match and not key_match.group(4).startswith("//"):
            key, value = key_match.group(3), _unquote(key_match.group(4))
            if key in ("pull_requests", "pull-requests"):
                current["pull_requests"] = [value] if value else []
            else:
                current[key] = value
            last_key = key
            key_lines[key] = last_line = index
            continue
        item = _LENIENT_ITEM.match(line)
        if item and last_key in ("pull_requests", "pull-requests"):
            value = _unquote(item.group(1))
            if value:
                current.setdefault("pull_requests", []).append(value)
            last_line = index
    close()
    return entries


# --- writing -------------------------------------------------------------------------
#
# A file the release team keeps is edited in place, as a person would: a changed status
# or review date rewrites that one value on its line (quoting and case kept), a new
# request is inserted after the last entry of its freeze in the file's own layout, and
# every other byte (comments, key order, blank lines, trailing spaces) stays as it was.
# ruamel.yaml's round-trip loader tells where each entry and key is; the result is
# read back before it is returned, so an edit that broke the file would be an error.


@dataclass
class NewEntry:
    """What we write for one of our requests."""

    kind: str
    name: str
    kep_number: int
    date_requested: dt.date
    date_reviewed: dt.date | None
    thread: str
    pull_requests: list[str]
    status: str
    comment: str = ""  # a line shown above the entry (pending and withdrawn requests)


@dataclass
class _Style:
    quoted: bool  # strings in double quotes (1.20 onwards) or plain
    list_indent: int  # columns a list inside an entry is indented past its key


def _style_of(text: str) -> _Style:
    # [^\S\n] (blanks but the newline), not \s: "^\s*-?\s*" backtracks in cubic time on
    # a run of blank lines.
    quoted = bool(re.search(r'^[^\S\n]*(?:-[^\S\n]*)?name:[^\S\n]*"', text, re.M))
    quoted = quoted or not re.search(r"^[^\S\n]*(?:-[^\S\n]*)?name:", text, re.M)
    return _Style(quoted=quoted, list_indent=_nested_list_indent(text))


def _nested_list_indent(text: str) -> int:
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() in ("pull_requests:", "pull-requests:"):
            key_col = len(line) - len(line.lstrip())
            for follow in lines[i + 1 :]:
                if follow.strip(_INVISIBLE + " "):
                    match = re.match(r"^( *)- ", follow)
                    if match:
                        return max(0, len(match.group(1)) - key_col)
                    break
    return 2


def _yaml_string(value: str, quoted: bool) -> str:
    value = value.replace("\n", " ").strip()
    plain_ok = value and not re.search(r'^[\s\-?:,\[\]{}#&*!|>\'"%@`]|: | #|\s$', value)
    if quoted or not plain_ok:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def render_entry(entry: NewEntry, style: _Style) -> list[str]:
    pad = " " * style.list_indent
    reviewed = entry.date_reviewed.isoformat() if entry.date_reviewed else ""
    lines = [f"# {entry.comment}"] if entry.comment else []
    lines += [
        f"- name: {_yaml_string(entry.name, style.quoted)}",
        f"  issue: {entry.kep_number}",
        f"  date_requested: {entry.date_requested.isoformat()}",
        f"  date_reviewed: {reviewed}".rstrip(),
        f"  thread: {_yaml_string(entry.thread, style.quoted)}" if entry.thread else "  thread:",
        "  pull_requests:",
        *(f"  {pad}- {_yaml_string(url, style.quoted)}" for url in entry.pull_requests),
        f"  status: {_yaml_string(entry.status, style.quoted)}",
    ]
    return lines


_VALUE = re.compile(r"^(?P<head>\s*(?:-\s+)?[\w-]+\s*:[ \t]*)(?P<value>.*?)(?P<tail>[ \t]*)$")


def _replace_value(line: str, new_value: str) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    match = _VALUE.match(body)
    if match is None:  # not a key line; leave it
        return line
    old = match.group("value")
    if old.startswith('"'):
        new = '"' + new_value + '"'
    elif old.startswith("'"):
        new = "'" + new_value + "'"
    else:
        new = new_value
    return match.group("head") + new + match.group("tail") + ending


def status_word_for(outcome: str, written: str) -> str:
    """The word to write for ``outcome``: the one already written when it means the same
    (``Denied`` stays ``Denied``), else ours in the case the file used."""
    if written and STATUS_OUTCOMES.get(written.lower()) == outcome:
        return written
    if written[:1].isupper() and written[1:].islower():
        return outcome.capitalize()
    return outcome


class RecordEditor:
    """A file's text with edits queued by entry, applied by ``text()``."""

    def __init__(self, text: str):
        self.original = _clean_text(text)
        self.record = read_record_file(self.original)
        self.style = _style_of(self.original)
        self._lines = self.original.splitlines(keepends=True)
        self._replace: dict[int, str] = {}
        self._insert_after: dict[int, list[str]] = {}
        self._append: list[str] = []
        self._appended_kinds: set[str] = set()
        self.header_version = _header_version(self.original)

    @classmethod
    def fresh(cls, *, release_slug: str, leads: list[str], kinds: list[str]) -> RecordEditor:
        """An empty file in the shape the release team has used since 1.33."""
        version = release_slug if release_slug[:1] == "v" else f"v{release_slug}"
        head = [
            f"# Exception requests in {version}",
            "# Google Group: https://groups.google.com/g/kubernetes-sig-release",
        ]
        if leads:
            head.append(f"# Release Team Lead: {' / '.join(leads)}")
        parts = [*head, ""]
        for kind in kinds:
            key = KIND_SECTIONS[kind]
            parts += [f"# {SECTION_TITLES[key]} Exceptions requested in {version}", "", f"{key}:", ""]
        editor = cls("\n".join(parts).rstrip("\n") + "\n")
        editor.style = _Style(quoted=True, list_indent=2)
        return editor

    def set_status(self, entry: Entry, outcome: str) -> bool:
        word = status_word_for(outcome, entry.status_word)
        if word == entry.status_word:
            return False
        line = entry.key_lines.get("status")
        if line is None:
            self._insert_after.setdefault(entry.last_line, []).append(
                f"  status: {_yaml_string(word, self.style.quoted)}"
            )
        else:
            self._replace[line] = _replace_value(self._replace.get(line, self._lines[line]), word)
        return True

    def set_date_reviewed(self, entry: Entry, date: dt.date | None) -> bool:
        if date is None or date == entry.date_reviewed:
            return False
        line = entry.key_lines.get("date_reviewed")
        if line is None:
            anchor = entry.key_lines.get("date_requested", entry.key_lines.get("issue", entry.line - 1))
            self._insert_after.setdefault(anchor, []).append(f"  date_reviewed: {date.isoformat()}")
        else:
            self._replace[line] = _replace_value(self._lines[line], date.isoformat())
        return True

    def add(self, entry: NewEntry) -> None:
        lines = render_entry(entry, self.style)
        same_kind = [e for e in self.record.entries if e.kind == entry.kind]
        if same_kind:
            anchor = max(e.last_line for e in same_kind)
            self._insert_after.setdefault(anchor, []).extend(["", *lines])
            return
        key = KIND_SECTIONS[entry.kind]
        section = _section_line(self._lines, key)
        if section is not None:
            queued = self._insert_after.setdefault(section, [])
            queued.extend(["", *lines] if queued else lines)
            self._mark_section_filled(section)
            return
        if entry.kind not in self._appended_kinds:
            self._appended_kinds.add(entry.kind)
            self._append += ["", f"# {SECTION_TITLES[key]} Exceptions requested in {self.header_version}".rstrip()]
            if _is_mapping_file(self._lines) or not self.record.entries:
                self._append += ["", f"{key}:"]
        else:
            self._append.append("")
        self._append += lines

    def _mark_section_filled(self, section: int) -> None:
        # ``codeFreeze: []`` or ``codeFreeze: null`` must become a bare key.
        line = self._lines[section]
        key = line.split(":", 1)[0]
        ending = "\n" if line.endswith("\n") else ""
        self._replace[section] = f"{key}:{ending}"

    def text(self) -> str:
        out: list[str] = []
        lines = list(self._lines)
        if lines and not lines[-1].endswith("\n") and (self._insert_after.get(len(lines) - 1) or self._append):
            lines[-1] += "\n"
        for index, line in enumerate(lines):
            out.append(self._replace.get(index, line))
            for added in self._insert_after.get(index, []):
                out.append(added + "\n")
        out += [line + "\n" for line in self._append]
        result = "".join(out)
        check = read_record_file(result)  # never hand back a file we cannot read
        if check.lenient and not self.record.lenient:
            raise RecordFileError(f"Writing the file broke it: {check.note}.")
        return result


def _section_line(lines: list[str], key: str) -> int | None:
    for index, line in enumerate(lines):
        if re.match(rf"^{re.escape(key)}\s*:", line):
            return index
    return None


def _is_mapping_file(lines: list[str]) -> bool:
    return any(re.match(rf"^({'|'.join(SECTION_KINDS)})\s*:", line) for line in lines)


def _header_version(text: str) -> str:
    match = re.search(r"in (v?1\.\d+)", text.split("\n", 1)[0])
    return match.group(1) if match else ""
