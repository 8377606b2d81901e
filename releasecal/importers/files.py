"""Reading import files: JSON or YAML text, with one clear message per problem."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from releasecal.errors import ValidationFailed


class ImportFailed(ValidationFailed):
    """The file cannot be imported; ``errors`` lists every problem found."""

    def __init__(self, message: str, *, errors: list[str] | None = None):
        self.errors = errors or []
        self.head = message
        full = message if not self.errors else message + "\n" + "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(full, extra={"errors": self.errors})


# ---------------------------------------------------------------------- loading


class _Loader(yaml.SafeLoader):
    """YAML without surprises: ``1.30`` stays the string "1.30" (not the float 1.3),
    dates and times stay text, parsed by us in the right zone, and ``0752`` is 752 as
    YAML 1.2 reads it, not YAML 1.1's octal 490 (kubernetes/enhancements writes
    ``kep-number: 0752`` in prod-readiness/sig-network/752.yaml)."""


def _int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node).replace("_", "")
    if re.fullmatch(r"[-+]?0[0-7]+", text):
        return int(text, 10)
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:float", lambda loader, node: loader.construct_scalar(node))
_Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
_Loader.add_constructor("tag:yaml.org,2002:int", _int)

# What a YAML document may hold before it is loaded. Every real file (the 656 kep.yaml
# of kubernetes/enhancements, every sig-release exceptions.yaml and schedule) has no
# anchor or alias and nests at most 4 deep; an alias bomb (516 bytes whose aliases
# stand for 10^9 strings) or 5,000 nested brackets are what the budgets stop, by
# reading the parser's events, before anything is built.
YAML_MAX_ALIASES = 100
YAML_MAX_ALIAS_NODES = 100_000  # values the aliases stand for, all together
YAML_MAX_DEPTH = 50
JSON_MAX_DEPTH = YAML_MAX_DEPTH
_CORE = "tag:yaml.org,2002:"
_LONG_NUMBER = re.compile(r"[-+]?[0-9][0-9_,:.]{99,}")  # plain, so read as a number
YAML_TAGS = {_CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")}


class YamlRefused(ImportFailed):
    """Valid YAML past a budget (aliases, size with aliases expanded, nesting) or with a
    tag that builds something other than plain data."""


def yaml_guard(text: str) -> None:
    """Refuse ``text`` when it is past a budget of ``YAML_MAX_*`` or holds a tag outside
    YAML's core schema (``!!python/object/apply``), raising YamlRefused; a syntax error is
    raised as ``yaml.YAMLError``. Linear in the text: aliases are counted, never expanded.

    The one gate for YAML we are given, whatever then loads it (our loader, ruamel.yaml's
    round trip): call it first. libyaml's parser reads the events when PyYAML has it (ten
    times faster); when libyaml refuses the text, PyYAML's own parser, whose grammar the
    loader reads, decides."""
    if getattr(yaml, "CSafeLoader", None) is not None:
        try:
            _check_events(yaml.parse(text, Loader=yaml.CSafeLoader))
            return
        except YamlRefused:
            raise
        except yaml.YAMLError:
            pass
    _check_events(yaml.parse(text, Loader=_Loader))


def _check_events(events) -> None:
    sizes: dict[str, int] = {}  # anchor -> how many nodes it stands for
    open_: list[list] = []  # collections being read: [nodes so far, anchor]
    aliases = alias_nodes = 0

    def count(n: int) -> None:
        if open_:
            open_[-1][0] += n

    for event in events:
        tag = getattr(event, "tag", None)
        if tag not in (None, "!") and tag not in YAML_TAGS:
            shown = "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag
            raise YamlRefused(f"YAML refused: the tag {shown[:80]} builds more than plain data.")
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > YAML_MAX_ALIASES:
                raise YamlRefused(f"YAML refused: more than {YAML_MAX_ALIASES} aliases (*name).")
            if any(anchor == event.anchor for _, anchor in open_):
                raise YamlRefused(f"YAML refused: the alias *{event.anchor[:40]} stands for a value that holds it.")
            size = sizes.get(event.anchor, 1)
            alias_nodes += size
            if alias_nodes > YAML_MAX_ALIAS_NODES:
                raise YamlRefused(
                    f"YAML refused: its aliases stand for more than {YAML_MAX_ALIAS_NODES:,} values (an alias bomb)."
                )
            count(size)
        elif isinstance(event, yaml.ScalarEvent):
            if event.implicit[0] and _LONG_NUMBER.fullmatch(event.value):
                # Python refuses to read a number of more than 4,300 digits (ValueError).
                raise YamlRefused(f"YAML refused: a number of {len(event.value):,} characters.")
            count(1)
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(open_) >= YAML_MAX_DEPTH:
                raise YamlRefused(f"YAML refused: nested more than {YAML_MAX_DEPTH} levels deep.")
            open_.append([1, event.anchor])
        elif isinstance(event, yaml.CollectionEndEvent):
            size, anchor = open_.pop()
            if anchor is not None:
                sizes[anchor] = size
            count(size)


def load_data(text: str, *, source: str = "input") -> Any:
    """Parse JSON or YAML text; a syntax error, YAML past ``yaml_guard``'s budgets, or
    JSON nested deeper than ``JSON_MAX_DEPTH`` becomes one clear message."""
    named = f"{source}: " if source else ""
    source = f"{source}: not" if source else "Not"
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportFailed(f"{source} valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
        except RecursionError:
            data = deep = True
        else:
            deep = _deeper_than(data, JSON_MAX_DEPTH)
        if deep:
            raise ImportFailed(f"{named}JSON refused: nested more than {JSON_MAX_DEPTH} levels deep.")
        return data
    try:
        yaml_guard(text)
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except YamlRefused as exc:
        raise ImportFailed(f"{named}{exc.message}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ImportFailed(f"{source} valid YAML{where}: {problem}.") from None


def _deeper_than(data: Any, limit: int) -> bool:
    """Is ``data`` (parsed JSON) nested more than ``limit`` lists and mappings deep?
    Read level by level, without recursion."""
    level = [data] if isinstance(data, dict | list) else []
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


def read_file(path: str | Path) -> str:
    path = Path(path)
    if not path.exists():
        raise ImportFailed(f"{path}: no such file.")
    if path.is_dir():
        raise ImportFailed(f"{path}: is a directory, not a file.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFailed(f"{path}: not UTF-8 text.") from None
    except OSError as exc:
        raise ImportFailed(f"{path}: cannot be read ({exc.strerror}).") from None


def as_text(value: Any) -> str:
    """A scalar from a parsed file as stripped text ("" for a missing value)."""
    return "" if value is None else str(value).strip()


def plain_text(value: Any, *, field: str, max_length: int) -> str:
    """One line of text from an imported file, safe for every page, feed and email: each
    run of white space (CR, LF, tab, U+2028, no-break space) becomes one space, the ends
    are stripped. Any other control character (NUL, ESC), a lone surrogate (``"\\ud800"``
    in YAML) or more than ``max_length`` characters raise ValidationFailed naming
    ``field``: a CR/LF title would make that KEP's, SIG's and release's feeds fail."""
    text = " ".join(as_text(value).split())
    for index, char in enumerate(text):
        kind = unicodedata.category(char)
        if kind in ("Cc", "Cs"):
            what = "the control character" if kind == "Cc" else "a lone surrogate (not text),"
            raise ValidationFailed(
                f"{field} holds {what} U+{ord(char):04X} at character {index + 1}.", extra={"field": field}
            )
    if len(text) > max_length:
        raise ValidationFailed(
            f"{field} is {len(text):,} characters long; at most {max_length} fit.", extra={"field": field}
        )
    return text


_HTTP_URL = re.compile(r"https?://[^\s<>\"'`\\^{}|]+", re.I)


def http_url(value: Any, *, max_length: int = 500) -> str:
    """``value`` when it is one http(s) URL of at most ``max_length`` characters, else ""
    (``javascript:``, ``data:``, a URL with a blank, a quote or a control character in it)."""
    text = as_text(value)
    if len(text) > max_length or not _HTTP_URL.fullmatch(text):
        return ""
    return text
