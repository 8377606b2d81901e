"""The domain's events are Django signals: declared with their receivers, sent inside the
service's transaction with ``send``, so a failing receiver rolls the change back."""

from __future__ import annotations

import ast
import datetime as dt
import importlib
import inspect
import itertools
import re
from pathlib import Path

import pytest
from django.dispatch import Signal

from exceptions import signals as workflow
from releasecal import signals as schedule
from releasecal import tz
from releasecal.models import AuditLog, EnhancementOwner, Milestone, Release
from releasecal.services import enhancement_upsert, milestone_cancel, milestone_create, milestone_save, release_save
from reminders.models import Delivery

RECEIVER_LINE = re.compile(r"^- ``(?P<path>[\w.]+)`` \(uid\s+``(?P<uid>[\w.]+)``\)", re.MULTILINE)


class Boom(RuntimeError):
    pass


def boom(sender, **kwargs):
    raise Boom("a receiver failed")


def declared(module) -> dict[str, tuple[Signal, list[tuple[str, str]]]]:
    """Each ``name = Signal()`` of ``module`` with the receivers its docstring lists:
    name -> (signal, [(dotted path of the receiver, dispatch_uid)])."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    found = {}
    body = tree.body
    for statement, following in itertools.pairwise(body):
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
            continue
        if getattr(statement.value.func, "id", "") != "Signal":
            continue
        name = statement.targets[0].id
        doc = following.value.value if isinstance(following, ast.Expr) else ""
        assert "Receivers:" in doc, f"{module.__name__}.{name} has no docstring listing its receivers"
        text = re.sub(r"\s+", " ", doc.split("Receivers:", 1)[1]).replace(" - ", "\n- ")
        found[name] = (getattr(module, name), [(m["path"], m["uid"]) for m in RECEIVER_LINE.finditer("\n" + text)])
    return found


@pytest.mark.parametrize("module", [schedule, workflow], ids=lambda m: m.__name__)
def test_every_signal_has_exactly_the_receivers_its_docstring_lists(module):
    from django.apps import apps

    # A second ready() (tests, a reloaded app) connects nothing twice: dispatch_uid.
    for app in ("reminders", "notices", "slack_integration"):
        apps.get_app_config(app).ready()
    signals = declared(module)
    assert signals, "no Signal() found"
    for name, (signal, receivers) in signals.items():
        functions = []
        for path, uid in receivers:
            module_name, function_name = path.rsplit(".", 1)
            function = getattr(importlib.import_module(module_name), function_name)
            assert callable(function), path
            # The uid names the app and the receiver: "<app>.<function>".
            assert uid == f"{module_name.split('.')[0]}.{function_name}", (name, path, uid)
            functions.append((function, uid))
        try:
            for _, uid in functions:
                assert signal.disconnect(dispatch_uid=uid), f"{name}: {uid} is documented but not connected"
            assert not signal.has_listeners(), f"{name} has a receiver its docstring does not list"
        finally:
            for function, uid in functions:
                signal.connect(function, dispatch_uid=uid)
    # Nothing else sends an event to a list of hooks.
    for path in Path(inspect.getfile(schedule)).parents[1].glob("*/*.py"):
        if ".venv" in path.parts or "tests" in path.parts:
            continue
        assert "_hooks" not in path.read_text(), f"{path} still keeps a hook list"


@pytest.fixture
def failing(request, release, kep):
    """Connect ``boom`` to the signal the test names, for that test only (after the
    release and the KEP were built)."""
    signal = request.param
    signal.connect(boom, dispatch_uid="tests.boom")
    yield signal
    signal.disconnect(dispatch_uid="tests.boom")


@pytest.mark.parametrize("failing", [schedule.milestone_changed, schedule.milestone_moved], indirect=True)
def test_a_failing_milestone_receiver_rolls_the_move_back(failing, code_freeze):
    at, sequence = code_freeze.at, code_freeze.sequence
    audits = AuditLog.objects.count()
    code_freeze.at = at + dt.timedelta(days=2)
    with pytest.raises(Boom):
        milestone_save(milestone=code_freeze)
    stored = Milestone.objects.get(pk=code_freeze.pk)
    assert (stored.at, stored.sequence) == (at, sequence)
    assert AuditLog.objects.count() == audits


@pytest.mark.parametrize("failing", [schedule.milestone_changed], indirect=True)
def test_a_failing_receiver_rolls_a_new_milestone_back(failing, release, kinds):
    count = Milestone.objects.count()
    with pytest.raises(Boom):
        milestone_create(release=release, kind=kinds["docs-freeze"], title="Docs Freeze", on_date=dt.date(2024, 7, 30))
    assert Milestone.objects.count() == count


@pytest.mark.parametrize("failing", [schedule.release_hard_stop_moved], indirect=True)
def test_a_failing_receiver_rolls_a_moved_hard_stop_back(failing, release):
    release.hard_stop = tz.parse_wall_time("2024-07-29 10:00", "America/Los_Angeles")
    with pytest.raises(Boom):
        release_save(release=release)
    assert Release.objects.get(pk=release.pk).hard_stop is None


@pytest.mark.parametrize("failing", [schedule.enhancement_owners_changed], indirect=True)
def test_a_failing_receiver_rolls_new_owners_back(failing, kep):
    with pytest.raises(Boom):
        enhancement_upsert(
            number=kep.number, title=kep.title, owning_sig=kep.owning_sig, owners=[{"github": "someone-new"}]
        )
    assert list(EnhancementOwner.objects.filter(enhancement=kep).values_list("github", flat=True)) == ["kannon92"]


def test_a_title_edit_is_a_change_but_not_a_move(code_freeze):
    heard = []

    def listen(sender, *, milestone, previous, **kwargs):
        heard.append((kwargs["signal"], milestone.title, previous.title if previous else None))

    schedule.milestone_changed.connect(listen, dispatch_uid="tests.listen")
    schedule.milestone_moved.connect(listen, dispatch_uid="tests.listen")
    try:
        code_freeze.title = "Code Freeze (renamed)"
        milestone_save(milestone=code_freeze)
        assert heard == [(schedule.milestone_changed, "Code Freeze (renamed)", "Code Freeze")]
        heard.clear()
        milestone_cancel(milestone=code_freeze)
        assert [signal for signal, *_ in heard] == [schedule.milestone_changed, schedule.milestone_moved]
    finally:
        schedule.milestone_changed.disconnect(dispatch_uid="tests.listen")
        schedule.milestone_moved.disconnect(dispatch_uid="tests.listen")


def test_the_reminder_ledger_is_written_in_the_moves_transaction(code_freeze, kinds, monkeypatch):
    """A real receiver failing (the ledger's) undoes the move: the ledger and the schedule
    never disagree."""
    from reminders import receivers

    def broken(**kwargs):
        raise Boom("the ledger could not be written")

    monkeypatch.setattr(receivers, "deliveries_sync_for_milestone", broken)
    at = code_freeze.at
    code_freeze.at = at + dt.timedelta(days=1)
    with pytest.raises(Boom):
        milestone_save(milestone=code_freeze)
    assert Milestone.objects.get(pk=code_freeze.pk).at == at
    assert not Delivery.objects.filter(milestone=code_freeze, due_at__gt=at).exists()
