"""The effective deadline is computed in one function, ``exceptions.selectors.
effective_deadline``, and every face shows what it returns.

Dynamic: the function is replaced by one that moves every granted extension to an
instant no rule would give (13:17 CEST Sunday 28 July 2024, in Berlin); the KEP's feed,
the API, the KEP page, Slack's ``/relcal kep`` and Home tab, the reminder ledger and its
decision notice, the admin, and the schedule notices all show (or act on) that instant.
A face that worked the deadline out itself would show the grant instead.

Static: outside that function (and the policy's own checks of a grant against its
freeze), no code compares a grant with a deadline or takes the later of the two.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import importlib
import inspect
import json
import pkgutil
import sys

import icalendar
import pytest
from django.test import Client

from exceptions import selectors
from exceptions.services import exception_request_approve
from feeds import ical
from notices.models import NoticeDelivery
from releasecal import tz
from releasecal.services import milestone_save
from reminders import services as reminder_services
from reminders.models import Delivery, ReminderRule
from slack_integration.commands import relcal
from slack_integration.home import home_view
from slack_integration.models import SlackIdentity
from tests.support.paths import ROOT
from tests.support.reminders_helpers import channel, rule

LA = "America/Los_Angeles"
DISTINCT = dt.datetime(2024, 7, 28, 11, 17, tzinfo=dt.UTC)
DISTINCT_ZONE = "Europe/Berlin"
DISTINCT_NATIVE = "13:17 CEST Sunday 28 July 2024"
DISTINCT_SHOWN = "13:17 CEST Sunday 28 July 2024 (11:17 UTC Sunday 28 July 2024)"
GRANT = "19:00 PDT Friday 26 July 2024"  # what the grant itself says
NOW = dt.datetime(2024, 7, 20, 12, 0, tzinfo=dt.UTC)

REAL = selectors.effective_deadline


APPS = ("api", "config", "demo", "exceptions", "feeds", "intake", "notices", "pages", "releasecal", "reminders")
APPS += ("slack_integration",)


def everywhere(monkeypatch, replacement) -> None:
    """Put ``replacement`` wherever the real function is bound (its module, and any
    module that imported it by name), so no face escapes it. Every module of the apps
    is imported first: one imported later (a URLconf's view) would bind the replacement
    for good."""
    for app in APPS:
        package = importlib.import_module(app)
        for module in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations." not in module.name and not module.name.startswith("config.settings"):
                importlib.import_module(module.name)
    bound = [m for m in list(sys.modules.values()) if getattr(m, "effective_deadline", None) is REAL]
    assert len(bound) > 1  # the faces that call it directly import it by name
    assert selectors in bound
    for module in bound:
        monkeypatch.setattr(module, "effective_deadline", replacement)


def distinct(**kwargs) -> selectors.Deadline:
    deadline = REAL(**kwargs)
    if deadline.source != "exception":
        return deadline
    return dataclasses.replace(deadline, instant=DISTINCT, zone=DISTINCT_ZONE, superseded=False, hard_stop=None)


@pytest.fixture
def granted(pending_request, release_team_member, kep, requester, monkeypatch, django_capture_on_commit_callbacks):
    """KEP-2400's code freeze extension, approved while the one function is replaced;
    the KEP's owner is linked to Slack; reminder rules for extensions and decisions."""
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)
    team = channel("email", "team", to=["release-team@example.com"])
    rule(team, offsets="1d", applies_to=ReminderRule.AppliesTo.EXTENSIONS)
    rule(team, applies_to=ReminderRule.AppliesTo.REQUEST_DECIDED)
    kep.owners.update(user=requester)
    SlackIdentity.objects.create(slack_user_id="U0OWNER", team_id="T0", user=requester)
    everywhere(monkeypatch, distinct)
    with django_capture_on_commit_callbacks(execute=False):
        exception_request_approve(
            request=pending_request, actor=release_team_member,
            granted_until=tz.parse_wall_time("2024-07-26 19:00", LA), granted_zone=LA,
        )  # fmt: skip
    return pending_request


def test_the_kep_feed_shows_the_one_functions_deadline(granted):
    body = Client().get("/calendar/kep/2400.ics").content
    event = next(
        e for e in icalendar.Calendar.from_ical(body).walk("VEVENT") if f"extension-{granted.pk}@" in str(e["UID"])
    )
    assert event.decoded("DTSTART") == DISTINCT
    assert f"Extended deadline: {DISTINCT_SHOWN}" in str(event["DESCRIPTION"])


def test_the_api_shows_the_one_functions_deadline(granted):
    row = Client().get(f"/api/v1/exceptions/{granted.pk}/").json()
    assert (row["effective_deadline"], row["effective_deadline_local"]["timezone"]) == (
        "2024-07-28T11:17:00Z",
        DISTINCT_ZONE,
    )
    listed = Client().get("/api/v1/exceptions/?kep=2400").json()["results"][0]
    assert listed["effective_deadline"] == "2024-07-28T11:17:00Z"
    upcoming = Client().get("/api/v1/deadlines/next/?kep=2400&limit=10").json()["deadlines"]
    extension = next(row for row in upcoming if row["source"] == "exception")
    assert (extension["deadline"], extension["display"]) == ("2024-07-28T11:17:00Z", DISTINCT_SHOWN)


def test_the_kep_page_shows_the_one_functions_deadline(granted):
    page = Client().get("/kep/2400/").content.decode()
    assert DISTINCT_NATIVE in page
    assert GRANT not in page.split('id="hist-title"')[0]


def test_slack_shows_the_one_functions_deadline(granted):
    answer = json.dumps(relcal("kep 2400", slack_user_id="U0OTHER"))
    assert DISTINCT_SHOWN in answer
    home = json.dumps(home_view(identity=SlackIdentity.objects.get(slack_user_id="U0OWNER"), slack_tz=None, now=NOW))
    assert DISTINCT_SHOWN in home


def test_the_reminders_follow_the_one_functions_deadline(granted, mailoutbox):
    reminder = Delivery.objects.get(request=granted, offset="1d")
    assert (reminder.deadline_at, reminder.due_at) == (DISTINCT, DISTINCT - dt.timedelta(days=1))
    notice = Delivery.objects.get(request=granted, offset="event:approved")
    assert reminder_services.delivery_send(delivery_id=notice.pk, now=NOW) == "sent"
    assert f"New deadline for Code Freeze: {DISTINCT_SHOWN}" in mailoutbox[-1].body


def test_the_admin_shows_the_one_functions_deadline(granted, client, release_team_member):
    release_team_member.is_staff = True
    release_team_member.is_superuser = True
    release_team_member.save()
    client.force_login(release_team_member)
    assert DISTINCT_SHOWN in client.get(f"/admin/exceptions/exceptionrequest/{granted.pk}/change/").content.decode()
    assert DISTINCT_SHOWN in client.get("/admin/exceptions/exceptionrequest/").content.decode()


def test_the_schedule_notices_ask_the_one_function(pending_request, release_team_member, code_freeze, monkeypatch):
    """Moving the freeze an hour, with the grant days later, changes no KEP's effective
    deadline: the grant's owners are not told. Replaced by a function under which the
    deadline follows the freeze, they are."""
    exception_request_approve(request=pending_request, actor=release_team_member)

    def move(hours: int) -> set[str]:
        code_freeze.at += dt.timedelta(hours=hours)
        milestone_save(milestone=code_freeze)
        return set(NoticeDelivery.objects.filter(notice__milestone=code_freeze).values_list("recipient", flat=True))

    assert "email:kep2400@example.com" not in move(-1)

    def follows_the_freeze(**kwargs):
        deadline = REAL(**kwargs)
        own = kwargs.get("own") or kwargs["milestone"].deadline
        return dataclasses.replace(deadline, instant=own + dt.timedelta(days=5))

    everywhere(monkeypatch, follows_the_freeze)
    assert "email:kep2400@example.com" in move(-1)


def test_an_extension_event_needs_its_deadline():
    parameter = inspect.signature(ical.extension_event).parameters["deadline"]
    assert parameter.default is inspect.Parameter.empty
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY


# ------------------------------------------------------------------------- static

# Where a grant may be compared with a deadline: the rule itself, and the policy's checks
# that a grant is after the freeze it extends (approve, a tzdata move of a grant).
ALLOWED = {
    ("exceptions/selectors.py", "effective_deadline"),
    ("exceptions/services.py", "_check_grant"),
    ("exceptions/services.py", "decision_grant_retime"),
}
GRANT_WORDS = ("grant",)
DEADLINE_WORDS = ("deadline", "freeze", "closes")


def _names(node: ast.AST) -> set[str]:
    found = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id.lower())
        elif isinstance(child, ast.Attribute):
            found.add(child.attr.lower())
    return found


def _mentions(names: set[str], words: tuple[str, ...], exact: tuple[str, ...] = ()) -> bool:
    return any(word in name for name in names for word in words) or any(name in exact for name in names)


def grant_against_deadline(source: str) -> list[tuple[str, int]]:
    """(function, line) of every comparison, ``max`` or ``min`` that sets a grant against
    a deadline (its own or a freeze), which is the effective-deadline rule written again."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            operands = None
            if isinstance(child, ast.Compare) and not all(isinstance(op, ast.Is | ast.IsNot) for op in child.ops):
                operands = [child.left, *child.comparators]
            elif isinstance(child, ast.Call) and getattr(child.func, "id", "") in {"max", "min"}:
                operands = list(child.args)
            if operands is not None:
                sides = [_names(operand) for operand in operands]
                grant = {i for i, names in enumerate(sides) if _mentions(names, GRANT_WORDS)}
                deadline = {i for i, names in enumerate(sides) if _mentions(names, DEADLINE_WORDS, ("own",))}
                if any(i != j for i in grant for j in deadline):
                    found.append((name, child.lineno))
            visit(child, name)

    visit(ast.parse(source), "")
    return found


def test_the_static_check_finds_the_rule_written_again():
    """The shapes the four copies had (feeds, reminders, notices, the selector)."""
    copies = [
        "def f(milestone, decision):\n    if milestone.deadline >= decision.granted_until:\n        pass\n",
        "def f(request, granted):\n    superseded = granted is not None and request.milestone.deadline >= granted\n",
        "def _effective(deadline, granted):\n    return max(deadline, granted)\n",
        "def g(own, granted):\n    return own >= granted\n",
    ]
    for copy in copies:
        assert grant_against_deadline(copy), copy
    assert grant_against_deadline("def f(d):\n    return d.granted_until is None\n") == []
    assert grant_against_deadline("def f(d, now):\n    return d.granted_until <= now\n") == []


def test_no_face_compares_a_grant_with_a_deadline():
    found = []
    packages = [p for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name not in {"tests", "bench"}]
    assert {"exceptions", "feeds", "reminders", "notices", "pages", "slack_integration", "api"} <= {
        p.name for p in packages
    }
    for path in sorted(path for package in packages for path in package.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if "/migrations/" in relative:
            continue
        for function, line in grant_against_deadline(path.read_text()):
            if (relative, function) not in ALLOWED:
                found.append(f"{relative}:{line} in {function or 'the module'}")
    assert found == [], "the effective deadline is worked out outside exceptions.selectors.effective_deadline"
