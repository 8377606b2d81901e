"""The whole system, end to end, as real processes on the machine's PostgreSQL and Redis.

gunicorn (2 workers, docker/gunicorn.conf.py, production settings), a Celery worker and
Celery beat (their commands read from docker/compose.yml) and a fake Slack on 127.0.0.1.
An exception request is filed through the REST API with a user's token, approved in the
admin by a release-team member in headless Chromium (Debian's package, driven by
Playwright), and then:

- the release team's Slack message is updated to "Approved" and the decision is posted
  to an incoming webhook (the worker sends both);
- the KEP's iCal feed, fetched from gunicorn, has the extension event at the decision's
  granted_until;
- a milestone reminder ("1m" before a deadline), falling due once everything is up, is
  sent by beat's sweep, not before its time, and exactly once (the next sweep
  sends nothing);
- on SIGTERM gunicorn, the worker and beat shut down gracefully (exit code 0).

Needs DATABASE_URL=postgres://..., REDIS_URL=redis://... and /usr/bin/chromium. Without
them it skips locally; under CI=true it fails. About a minute and a half.
Run it alone: see the README ("End-to-end system test").
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from releasecal import tz
from tests.support.fake_slack import FakeSlack
from tests.support.processes import (
    Processes,
    compose_command,
    forget_queue,
    fresh_database,
    gunicorn_port,
    http_status,
    production_env,
    run,
    unavailable,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# From seed_demo: alice is a KEP author, release-lead is in the Release Team group.
REQUESTER = "alice"
APPROVER = "release-lead"
KEP = 753  # tracked in the demo cycle (1.36), with no exception request of its own
RELEASE = "1.36"
TEAM_CHANNEL = "C0E2ETEAM"
REMINDER_CHANNEL = "C0E2EREMIND"
# Beat sweeps a minute after it starts, then every minute. The reminder falls due this
# long before a sweep, after gunicorn is up.
REMINDER_BEFORE_SWEEP = 15
# Beat sweeps every 20 s here (OUTBOX_SWEEP_SECONDS; a minute in production): the test
# waits for a sweep after the reminder's time and for the one after it.
SWEEP_SECONDS = 20
# The set-up script picks the reminder's time once Django is up in it (its start-up takes
# from 2 s to over 20 s on a loaded machine): the first sweep at least this long after
# the time the rows are about to be made, less REMINDER_BEFORE_SWEEP.
ROWS_MARGIN = 10


def _require_services() -> tuple[str, str]:
    """(REDIS_URL for the cache, the Celery broker URL); skip or fail when missing."""
    database = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not database.startswith("postgres"):
        unavailable("needs PostgreSQL: set DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name>")
    if not redis_url.startswith("redis"):
        unavailable("needs Redis: set REDIS_URL=redis://127.0.0.1:6379/<db>")
    import psycopg
    import redis

    try:
        psycopg.connect(database.rsplit("/", 1)[0] + "/postgres", connect_timeout=3).close()
    except psycopg.Error as exc:
        unavailable(f"PostgreSQL at DATABASE_URL does not answer: {exc}")
    broker = os.environ.get("CELERY_BROKER_URL") or redis_url
    for url in {redis_url, broker}:
        client = redis.Redis.from_url(url, socket_connect_timeout=3)
        try:
            client.ping()
        except redis.RedisError as exc:
            unavailable(f"Redis at {url.split('@')[-1]} does not answer: {exc}")
        finally:
            client.close()
    if not Path(CHROMIUM).exists():
        unavailable(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("Python Playwright is not installed in the venv")
    return redis_url, broker


# The demo's data and the requester's API token: seed_demo and api_token, in one process
# (each manage.py run costs Django's start-up). The token is the last line.
SEED_SCRIPT = """
import io, os
from django.core.management import call_command
call_command("seed_demo")
token = io.StringIO()
call_command("api_token", os.environ["E2E_REQUESTER"], stdout=token)
print(token.getvalue().strip())
"""

# The rows this test needs beyond seed_demo, made through the services in one shell
# script: the approver's password, the Slack channels and rules, and a milestone whose
# 1-minute reminder falls due E2E_BEFORE_SWEEP seconds before the first of beat's sweeps
# (E2E_FIRST_SWEEP, then every E2E_SWEEP_SECONDS) that is E2E_MARGIN seconds after that.
SETUP_SCRIPT = """
import datetime as dt, json, os
from django.contrib.auth.models import User
from releasecal import tz
from releasecal.models import MilestoneKind, Release
from releasecal.services import milestone_create
from reminders.models import Channel, Delivery, ReminderRule

lead = User.objects.get(username=os.environ["E2E_APPROVER"])
lead.set_password(os.environ["E2E_PASSWORD"])
lead.save()
decisions = Channel.objects.create(
    name="e2e decisions (webhook)", kind="slack_webhook", config={"url": os.environ["E2E_WEBHOOK"]}
)
ReminderRule.objects.create(name="e2e: decisions to Slack", applies_to="request_decided", channel=decisions)
team = Channel.objects.create(
    name="e2e release team (bot)", kind="slack_bot", config={"channel": os.environ["E2E_REMINDER_CHANNEL"]}
)
kind = MilestoneKind.objects.create(slug="e2e-checkpoint", name="E2E checkpoint")
rule = ReminderRule.objects.create(
    name="e2e: checkpoint in a minute", applies_to="milestones", offsets="1m", channel=team
)
rule.kinds.set([kind])
before, every = (int(os.environ[name]) for name in ("E2E_BEFORE_SWEEP", "E2E_SWEEP_SECONDS"))
sweep = dt.datetime.fromisoformat(os.environ["E2E_FIRST_SWEEP"])
while sweep - tz.utc_now() < dt.timedelta(seconds=before + int(os.environ["E2E_MARGIN"])):
    sweep += dt.timedelta(seconds=every)
due = (sweep - dt.timedelta(seconds=before)).replace(microsecond=0)
milestone = milestone_create(
    release=Release.objects.get(slug=os.environ["E2E_RELEASE"]),
    kind=kind,
    title="E2E checkpoint",
    at=due + dt.timedelta(minutes=1),
)
delivery = Delivery.objects.get(milestone=milestone, offset="1m")
print(json.dumps({"delivery": delivery.pk, "due_at": tz.isoformat_utc(delivery.due_at), "state": delivery.state}))
"""

DELIVERY_SCRIPT = """
import json, os
from reminders.models import Delivery
d = Delivery.objects.get(pk=int(os.environ["E2E_DELIVERY"]))
print(json.dumps({"state": d.state, "attempts": d.attempts, "queued": d.queued_at is not None}))
"""


def _manage(env: dict[str, str], *args: str, timeout: int = 120) -> str:
    result = run([sys.executable, "manage.py", *args], env, timeout=timeout)
    assert result.returncode == 0, f"manage.py {' '.join(args[:1])} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _api(method: str, url: str, *, token: str = "", body: dict | None = None) -> tuple[int, dict]:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def _utc(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso).astimezone(dt.UTC)


def _line_with(process, text: str) -> str:
    return next((line for line in process.output().splitlines() if text in line), "")


def _utc_log_time(line: str) -> dt.datetime:
    """The time on a worker's or beat's log line: they write Django's format
    ("2026-11-30 04:33:35,042 INFO celery.beat ...", config/celery.py; UTC here)."""
    stamp = re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", line).group(0)
    return dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC)


def test_a_request_filed_by_api_and_approved_in_the_admin_reaches_slack_the_feed_and_reminders(tmp_path):
    redis_url, broker = _require_services()
    started = time.monotonic()
    password = secrets.token_urlsafe(16)
    run_id = uuid.uuid4().hex[:8]
    slack = FakeSlack().start()
    procs = Processes(log_dir=tmp_path, extra_details=[slack.summary])
    try:
        with fresh_database("releasecal_e2e", sqlite_path=tmp_path / "unused.sqlite3") as database:
            env = production_env(
                DATABASE_URL=database,
                REDIS_URL=redis_url,
                CELERY_BROKER_URL=broker,
                # Its own queue and cache keys: the Redis databases may be shared.
                CELERY_QUEUE=f"releasecal-e2e-{run_id}",
                CACHE_KEY_PREFIX=f"releasecal-e2e-{run_id}",
                TZ="UTC",  # Celery's log lines, read for beat's start time
                STATIC_ROOT=str(tmp_path / "static"),
                # gunicorn binds a free port itself; the test reads it from its log.
                GUNICORN_BIND="127.0.0.1:0",
                WEB_CONCURRENCY="2",
                # Plain HTTP on loopback: no proxy in front to terminate TLS.
                SECURE_SSL_REDIRECT="0",
                # The public address behind the proxy (links in messages; nothing follows them).
                SITE_URL="https://releasecal.example.org",
                SLACK_API_URL=slack.api_url,
                SLACK_BOT_TOKEN="xoxb-e2e-not-a-real-token",
                SLACK_RELEASE_TEAM_CHANNEL=TEAM_CHANNEL,
                CONN_MAX_AGE="0",
                OUTBOX_SWEEP_SECONDS=str(SWEEP_SECONDS),
            )
            try:
                _run_system(env, procs, slack, password=password, tmp_path=tmp_path)
                # SIGTERM: gunicorn and Celery shut down gracefully, with exit code 0.
                codes = procs.stop_all()
                assert codes == {"gunicorn": 0, "beat": 0, "worker": 0, "collectstatic": 0}, (codes, procs.tails())
                assert "Shutting down: Master" in procs.named("gunicorn").output()
            finally:
                procs.stop_all()  # before the database is dropped
    finally:
        slack.stop()
        forget_queue(broker, f"releasecal-e2e-{run_id}")
    print(f"e2e wall time: {time.monotonic() - started:.1f}s")


def _run_system(env, procs: Processes, slack: FakeSlack, *, password: str, tmp_path: Path) -> None:
    # ------------------------------------ migrate, then worker, beat and gunicorn
    collect = procs.start("collectstatic", [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env)
    migrate = run(compose_command("migrate"), env, timeout=300)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    # All three start now and load the data meanwhile (the worker also sends what seeding
    # the demo queues); gunicorn after collectstatic (WhiteNoise reads STATIC_ROOT once).
    worker = procs.start("worker", compose_command("worker"), env)
    beat_schedule = str(tmp_path / "celerybeat-schedule")
    beat = procs.start("beat", compose_command("beat", {"/tmp/celerybeat-schedule": beat_schedule}), env)  # noqa: S108
    assert collect.proc.wait(timeout=120) == 0, collect.tail()
    gunicorn = procs.start("gunicorn", compose_command("web"), env)

    # ------------------------------------------------------------------- data
    token = _manage({**env, "E2E_REQUESTER": REQUESTER}, "shell", "-c", SEED_SCRIPT).strip().splitlines()[-1]
    beat_started = _utc_log_time(
        wait_for(lambda: _line_with(beat, "beat: Starting..."), 60, "Celery beat to start", procs.tails)
    )
    port = wait_for(lambda: gunicorn_port(gunicorn.log_path), 60, "gunicorn to listen", procs.tails)
    web = f"http://127.0.0.1:{port}"
    wait_for(lambda: http_status(f"{web}/healthz") == 200, 60, "gunicorn /healthz to answer 200", procs.tails)
    wait_for(lambda: " ready." in worker.output(), 60, "the Celery worker to be ready", procs.tails)
    assert gunicorn.output().count("Booting worker with pid") == 2, gunicorn.tail()
    # Due once the processes are up (they are) and its rows are made, shortly before a
    # sweep of beat's, which must send it: the set-up script picks the sweep.
    first_sweep = beat_started + dt.timedelta(seconds=SWEEP_SECONDS)
    setup = json.loads(
        _manage(
            {
                **env,
                "E2E_APPROVER": APPROVER,
                "E2E_PASSWORD": password,
                "E2E_WEBHOOK": slack.webhook_url("e2e-decisions"),
                "E2E_REMINDER_CHANNEL": REMINDER_CHANNEL,
                "E2E_RELEASE": RELEASE,
                "E2E_FIRST_SWEEP": first_sweep.isoformat(),
                "E2E_SWEEP_SECONDS": str(SWEEP_SECONDS),
                "E2E_BEFORE_SWEEP": str(REMINDER_BEFORE_SWEEP),
                "E2E_MARGIN": str(ROWS_MARGIN),
            },
            "shell",
            "-c",
            SETUP_SCRIPT,
        )
        .strip()
        .splitlines()[-1]
    )
    reminder_id = setup["delivery"]
    reminder_due = _utc(setup["due_at"])
    # REMINDER_BEFORE_SWEEP before one of beat's sweeps (its time cut to the second).
    before_sweep = (reminder_due + dt.timedelta(seconds=REMINDER_BEFORE_SWEEP) - first_sweep).total_seconds()
    sweeps_after = round(before_sweep / SWEEP_SECONDS)
    assert sweeps_after >= 0, (setup, first_sweep)
    assert -1 < before_sweep - sweeps_after * SWEEP_SECONDS <= 0, (setup, first_sweep)
    assert setup["state"] == "pending", setup
    assert tz.utc_now() < reminder_due, (
        f"the set-up took too long: the reminder fell due ({reminder_due}) before its rows were made"
    )

    # -------------------------------------- (1) file a request through the API
    status, filed = _api(
        "POST",
        f"{web}/api/v1/exceptions/",
        token=token,
        body={
            "kep": KEP,
            "release": RELEASE,
            "kind": "code-freeze",
            "days": 2,
            "stage": "stable",
            "sig": "node",
            "pr_urls": ["https://github.com/kubernetes/kubernetes/pull/123"],
            "reason": "The last PR has lgtm and waits for approval.",
            "risks_adding": "Low; behind a feature gate.",
            "risks_cutting": "Users wait a release.",
        },
    )
    assert status == 201, (status, filed, procs.tails())
    request_id = filed["id"]
    assert filed["state"] == "pending"
    assert filed["requester"] == REQUESTER
    default_grant = _utc(filed["default_granted_until"])
    # The release team's channel gets the request with Approve / Reject buttons.
    posted = wait_for(
        lambda: slack.matching(
            lambda c: (
                c.method == "chat.postMessage"
                and c.data.get("channel") == TEAM_CHANNEL
                and f"request #{request_id}:" in c.text
            )
        ),
        30,
        "the new request to be posted to the release team's Slack channel",
        procs.tails,
    )[0]
    assert posted.authorization == "Bearer xoxb-e2e-not-a-real-token"
    assert "exception_approve" in posted.text

    # ---------------------------------------- (2) approve it in the admin, in Chromium
    shown_grant = _approve_in_browser(web, request_id=request_id, password=password, tmp_path=tmp_path, procs=procs)
    status, decided = _api("GET", f"{web}/api/v1/exceptions/{request_id}/", token=token)
    assert status == 200, (status, decided)
    assert decided["state"] == "approved", decided
    decision = decided["decision"]
    assert decision["decided_by"] == APPROVER
    granted_until, granted_zone = _utc(decision["granted_until"]), decision["granted_zone"]
    assert granted_until == default_grant, "the prefilled granted_until was kept"
    # A grant at the end of a day is worded as people say deadlines (tests of the wording
    # itself, with literal strings, are in tests/releasecal/test_deadline_wording.py; the
    # demo's dates follow today, so here the words are built without releasecal.tz).
    rendered = _end_of_day_words(granted_until, granted_zone)
    assert rendered in shown_grant, (rendered, shown_grant)

    # ------------------------------ (3) the approval reaches the fake Slack
    updated = wait_for(
        lambda: slack.matching(
            lambda c: c.method == "chat.update" and c.data.get("ts") == posted.reply["ts"] and "Approved" in c.text
        ),
        30,
        f"chat.update marking request #{request_id} approved",
        procs.tails,
    )
    assert rendered in updated[-1].text, (rendered, updated[-1].text)
    assert f"by {APPROVER}" in updated[-1].text
    notice = wait_for(
        lambda: slack.matching(lambda c: c.path == "/webhook/e2e-decisions" and f"#{request_id} " in c.text),
        30,
        "the decision notice at the incoming webhook",
        procs.tails,
    )
    assert len(notice) == 1, [c.text for c in notice]
    assert f"was approved by {APPROVER}" in notice[0].text

    # ---------------------------------- (4) the KEP's feed shows the new deadline
    _check_feed(web, request_id=request_id, granted_until=granted_until, procs=procs)

    # ------------------------------- (5) a reminder fires when its time comes, once
    def reminders():
        return slack.matching(lambda c: c.data.get("channel") == REMINDER_CHANNEL)

    wait_for(
        reminders,
        max(5.0, (reminder_due - tz.utc_now()).total_seconds()) + 75,
        f"reminder delivery #{reminder_id} (due {tz.isoformat_utc(reminder_due)}) at the fake Slack",
        procs.tails,
    )
    first = reminders()[0]
    assert f"releasecal delivery #{reminder_id}" in first.text
    assert "E2E checkpoint in 1 minute" in first.text
    assert first.at >= reminder_due.timestamp(), "sent before its time"
    # Beat's next sweep must not send it again.
    sweeps = beat.output().count("Sending due task reminders-sweep")
    assert sweeps >= 1, beat.tail()
    wait_for(
        lambda: beat.output().count("Sending due task reminders-sweep") > sweeps,
        75,
        "beat's next sweep",
        procs.tails,
    )
    wait_for(
        lambda: _sweeps_done(worker) > sweeps,
        20,
        "the worker to finish that sweep",
        procs.tails,
    )
    assert len(reminders()) == 1, [c.text for c in reminders()]
    row = json.loads(
        _manage({**env, "E2E_DELIVERY": str(reminder_id)}, "shell", "-c", DELIVERY_SCRIPT).strip().splitlines()[-1]
    )
    assert row == {"state": "sent", "attempts": 1, "queued": True}, row
    assert "reminders.send" in worker.output()
    for process in (gunicorn, worker, beat):
        assert process.running, process.tail()
        assert "Traceback" not in process.output(), process.tail(60)


def _end_of_day_words(instant: dt.datetime, zone: str) -> str:
    """How render_deadline words a deadline at the end of a day, built from zoneinfo and
    strftime alone: "end of Friday 4 December 2026 PST (08:00 UTC Saturday 5 December 2026)"."""
    local = instant.astimezone(ZoneInfo("Etc/GMT+12" if zone == "AoE" else zone))
    assert local.time() == dt.time(0, 0), f"the default grant is the end of a day in {zone}, not {local}"
    day = local.date() - dt.timedelta(days=1)
    label = "AoE" if zone == "AoE" else local.tzname()
    words = f"end of {day:%A} {day.day} {day:%B %Y} {label}"
    if label == "UTC":
        return words
    at = instant.astimezone(dt.UTC)
    return f"{words} ({at:%H:%M} UTC {at:%A} {at.day} {at:%B %Y})"


def _sweeps_done(worker) -> int:
    return sum(1 for line in worker.output().splitlines() if "reminders.sweep[" in line and "succeeded" in line)


def _approve_in_browser(web: str, *, request_id: int, password: str, tmp_path: Path, procs: Processes) -> str:
    """Log in as the approver, open the request from the list, Approve, keep the
    prefilled granted_until, submit. Returns the success message shown."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except PlaywrightError as exc:
            unavailable(f"Chromium does not start: {exc}")
        page = browser.new_page()
        page.set_default_timeout(20_000)
        try:
            page.goto(f"{web}/admin/login/?next=/admin/")
            page.fill("#id_username", APPROVER)
            page.fill("#id_password", password)
            page.click("input[type=submit]")
            page.wait_for_url(f"{web}/admin/")
            page.goto(f"{web}/admin/exceptions/exceptionrequest/?q={KEP}")
            page.locator(f"#result_list a[href*='/exceptionrequest/{request_id}/change/']").first.click()
            page.wait_for_url(lambda url: f"/exceptionrequest/{request_id}/change/" in url)
            page.click("a.rc-approve")
            page.wait_for_url(lambda url: f"/exceptionrequest/{request_id}/approve/" in url)
            granted = page.locator("input[name$='granted_day']")
            assert granted.input_value(), "the granted day is prefilled"
            page.click("input[type=submit][value='Approve']")
            page.wait_for_url(lambda url: f"/exceptionrequest/{request_id}/change/" in url)
            message = page.locator(".messagelist .success").inner_text()
        except (PlaywrightError, AssertionError) as exc:
            shot = tmp_path / "admin-failure.png"
            page.screenshot(path=str(shot), full_page=True)
            raise AssertionError(
                f"approving in the admin failed at {page.url}: {exc}\nscreenshot: {shot}\n{procs.tails()}"
            ) from exc
        finally:
            browser.close()
    assert "Approved" in message, message
    return message


def _check_feed(web: str, *, request_id: int, granted_until: dt.datetime, procs: Processes) -> None:
    import icalendar

    url = f"{web}/calendar/kep/{KEP}.ics"
    with urllib.request.urlopen(url, timeout=15) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/calendar")
        calendar = icalendar.Calendar.from_ical(response.read())
    events = {str(event["UID"]): event for event in calendar.walk("VEVENT")}
    extension = [event for uid, event in events.items() if uid.startswith(f"releasecal-extension-{request_id}@")]
    assert len(extension) == 1, (f"no extension event for request #{request_id} in {url}", sorted(events))
    event = extension[0]
    start = event.decoded("DTSTART")
    assert isinstance(start, dt.datetime), start
    assert start.tzinfo is not None, "a timed event in a named zone"
    assert start.astimezone(dt.UTC) == granted_until, (start, granted_until)
    assert str(event["STATUS"]) == "CONFIRMED"
