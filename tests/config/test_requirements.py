"""Every package the requirements pull in, transitive ones included, is pinned in
requirements/constraints.txt at the version installed: a fresh machine installs exactly
what the tests ran on (check-jsonschema once brought six packages nobody had pinned)."""

from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements"


def _lines(name: str) -> list[str]:
    lines = []
    for raw in (REQUIREMENTS / name).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            lines += _lines(line[3:].strip())
        elif line:
            lines.append(line)
    return lines


def _pulled_in(top: list[str]) -> dict[str, str]:
    """Name → installed version of every distribution the top-level requirements reach
    in this environment, following each one's Requires-Dist with its markers and extras."""
    found: dict[str, str] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(line) for line in top]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = frozenset(requirement.extras)
        if (name, extras) in done:
            continue
        done.add((name, extras))
        dist = metadata.distribution(requirement.name)
        found[name] = dist.version
        for text in dist.requires or []:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({"extra": extra}) for extra in {"", *extras}):
                todo.append(needed)
    return found


def test_every_installed_dependency_is_pinned_at_its_version():
    pins = {}
    for line in _lines("constraints.txt"):
        name, _, version = line.partition("==")
        pins[canonicalize_name(name)] = version
    pulled_in = _pulled_in(_lines("test.txt"))
    assert len(pulled_in) > 50  # the walk followed the tree, not only the top level
    unpinned = {name: version for name, version in pulled_in.items() if pins.get(name) != version}
    assert not unpinned, f"pin these in requirements/constraints.txt: {unpinned}"
