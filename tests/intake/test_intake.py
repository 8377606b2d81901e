"""The mailbox that feeds itself, against a real IMAP server (dovecot, started once per
session in a temporary directory) and, for the beat task, a real Celery worker on Redis."""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parsedate_to_datetime
from mailbox import mbox
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from exceptions.models import ExceptionRequest
from intake.conf import MailboxConfig
from intake.mail import read_mail
from intake.models import IntakeMessage, IntakeProblem, MailboxState
from intake.services import intake_problem_retry, mailbox_poll
from intake.tasks import poll_mailbox
from releasecal import tz
from tests.support.imap_server import Dovecot, dovecot_or_skip
from tests.support.paths import TEST_DATA
from tests.support.pg import require_postgres
from tests.support.reminder_workers import Worker, purge_broker, wait_for
from tests.support.reminders_helpers import redis_url_or_skip

EXCEPTION_THREADS = TEST_DATA / "exception-threads"
SENT = dt.datetime(2024, 7, 24, 9, 30, tzinfo=dt.UTC)  # the morning after the fixture's code freeze

REQUEST_BODY = """Hello release team,

I would like to request an exception for the following enhancement.

* Enhancement name: Node memory swap support
* Enhancement status (alpha/beta/stable): beta
* SIG: node
* k/enhancements repo issue #: https://github.com/kubernetes/enhancements/issues/2400
* PR #'s: https://github.com/kubernetes/kubernetes/pull/118764
* Additional time needed (in days): 4
* Reason this enhancement is critical for this milestone: the beta graduation is blocked only on one e2e PR.
* Risks from adding code late: (to k8s stability, testing, etc.) Low; behind a gate that is off by default.
* Risks from cutting enhancement: (partial implementation, critical customer usecase, etc.) A release of delay.

Thanks!
"""


@pytest.fixture(scope="session")
def dovecot():
    # Not pytest's tmp_path: its folders are private (0700) and dovecot's processes run as
    # another user, so the server gets a directory of its own under the system temp dir.
    dovecot_or_skip()
    base = Path(tempfile.mkdtemp(prefix="releasecal-dovecot-"))
    server = Dovecot(base)
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def mailbox(dovecot) -> MailboxConfig:
    """A mailbox of its own on the session's server, for this test only."""
    user, password = dovecot.new_user()
    return MailboxConfig(host=dovecot.host, port=dovecot.port, user=user, password=password, tls="none")


def mail(
    body: str = REQUEST_BODY,
    *,
    subject: str = "[sig-node] Exception Request for KEP-2400 (code freeze)",
    sender: str = "Kevin Hannon <kannon@example.com>",
    sent: dt.datetime = SENT,
    reply_to: EmailMessage | None = None,
    html: str | None = None,
    headers: dict | None = None,
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "kubernetes-sig-release@googlegroups.com"
    msg["Subject"] = subject
    msg["Date"] = format_datetime(sent)
    msg["Message-ID"] = make_msgid(domain="example.com")
    if reply_to is not None:
        msg["In-Reply-To"] = reply_to["Message-ID"]
        msg["References"] = " ".join(filter(None, [reply_to.get("References", ""), reply_to["Message-ID"]]))
    for name, value in (headers or {}).items():
        msg[name] = value
    if html is not None and body:
        msg.set_content(body)
        msg.add_alternative(html, subtype="html")
    elif html is not None:
        msg.set_content(html, subtype="html")
    else:
        msg.set_content(body)
    return msg


def put(dovecot, mailbox: MailboxConfig, message, folder: str = "INBOX") -> int:
    raw = message if isinstance(message, bytes) else message.as_bytes()
    return dovecot.append(mailbox.user, mailbox.password, raw, folder=folder)


@pytest.fixture
def node_kep(kep):
    return kep


# ------------------------------------------------------------------ reading once


def test_a_request_appended_over_imap_is_filed_once_and_never_marked_seen(dovecot, mailbox, node_kep, code_freeze):
    uid = put(dovecot, mailbox, mail())
    result = mailbox_poll(config=mailbox)
    assert result.error == ""
    assert result.outcomes == {"filed": 1}
    request = ExceptionRequest.objects.get(enhancement=node_kep, milestone=code_freeze)
    assert request.days == 4
    assert request.requester_name == "Kevin Hannon"
    assert request.submitted_at == SENT
    assert request.current.pr_urls == ["https://github.com/kubernetes/kubernetes/pull/118764"]
    state = MailboxState.objects.get(mailbox=mailbox.key)
    assert (state.last_uid, state.messages_read, state.last_error) == (uid, 1, "")
    assert b"\\Seen" not in dovecot.flags(mailbox.user, mailbox.password)[uid]
    again = mailbox_poll(config=mailbox)
    assert (again.read, again.error) == (0, "")
    assert ExceptionRequest.objects.filter(enhancement=node_kep).count() == 1


def test_a_message_someone_marked_read_is_still_read(dovecot, mailbox, node_kep, code_freeze):
    uid = put(dovecot, mailbox, mail())
    conn = dovecot.client(mailbox.user, mailbox.password)
    conn.select("INBOX")
    conn.uid("STORE", str(uid), "+FLAGS", "(\\Seen)")
    conn.logout()
    assert mailbox_poll(config=mailbox).outcomes == {"filed": 1}


def test_the_author_is_the_requester_and_a_known_address_is_the_user(dovecot, mailbox, node_kep, code_freeze):
    user = User.objects.create_user("kannon92", "kannon@example.com", "pw")
    put(dovecot, mailbox, mail())
    mailbox_poll(config=mailbox)
    request = ExceptionRequest.objects.get(enhancement=node_kep)
    assert request.requester == user


def test_google_groups_rewritten_sender_maps_back_to_the_person(dovecot, mailbox, node_kep, code_freeze):
    user = User.objects.create_user("kannon92", "kannon@example.com", "pw")
    put(
        dovecot,
        mailbox,
        mail(
            sender="'Kevin Hannon' via kubernetes-sig-release <kubernetes-sig-release@googlegroups.com>",
            headers={
                "X-Original-Sender": "kannon@example.com",
                "Reply-To": "Kevin Hannon <kannon@example.com>",
                "List-ID": "<kubernetes-sig-release.googlegroups.com>",
            },
        ),
    )
    mailbox_poll(config=mailbox)
    request = ExceptionRequest.objects.get(enhancement=node_kep)
    assert request.requester == user
    message = IntakeMessage.objects.get(request=request)
    assert (message.sender_name, message.sender_email) == ("Kevin Hannon", "kannon@example.com")


def test_rewritten_sender_without_original_address_keeps_the_name():
    raw = mail(sender="\"'Jane Doe' via kubernetes-sig-release\" <kubernetes-sig-release@googlegroups.com>").as_bytes()
    read = read_mail(raw, fallback_id="<x@y>")
    assert (read.sender_name, read.sender_email, read.list_rewritten) == ("Jane Doe", "", True)


def test_html_only_and_multipart_mail_are_read(dovecot, mailbox, node_kep, code_freeze, kinds):
    html = "<html><body><p>Hello release team,</p><ul>" + "".join(
        f"<li>{line[2:]}</li>" for line in REQUEST_BODY.splitlines() if line.startswith("* ")
    )
    html += "</ul><p>Thanks!</p></body></html>"
    put(dovecot, mailbox, mail("", html=html))
    result = mailbox_poll(config=mailbox)
    assert result.outcomes == {"filed": 1}, IntakeProblem.objects.values_list("reason", flat=True)
    request = ExceptionRequest.objects.get(enhancement=node_kep)
    assert request.days == 4
    assert request.current.sig == "node"
    # multipart/alternative: the text/plain part is read.
    ExceptionRequest.objects.all().delete()
    other = mail(REQUEST_BODY.replace("in days): 4", "in days): 3"), html="<p>ignored html</p>")
    put(dovecot, mailbox, other)
    assert mailbox_poll(config=mailbox).outcomes == {"filed": 1}
    assert ExceptionRequest.objects.get(enhancement=node_kep).days == 3


# ------------------------------------------------------------------ threads


def test_a_reply_in_the_thread_amends_the_request(dovecot, mailbox, node_kep, code_freeze):
    first = mail()
    put(dovecot, mailbox, first)
    mailbox_poll(config=mailbox)
    reply = mail(
        "Sorry, we can do it faster: please change the request to 2 days.\n\n"
        f"On Wed, 24 Jul 2024 Kevin Hannon wrote:\n> {REQUEST_BODY.splitlines()[0]}\n",
        subject="Re: [sig-node] Exception Request for KEP-2400 (code freeze)",
        sent=SENT + dt.timedelta(hours=3),
        reply_to=first,
    )
    put(dovecot, mailbox, reply)
    result = mailbox_poll(config=mailbox)
    assert result.outcomes == {"amended": 1}, IntakeMessage.objects.values_list("detail", flat=True)
    request = ExceptionRequest.objects.get(enhancement=node_kep)
    assert request.days == 2
    assert list(request.revisions.values_list("days", flat=True)) == [4, 2]
    assert request.revisions.get(number=2).created_at == SENT + dt.timedelta(hours=3)
    # A thank-you further down the thread (References only) changes nothing.
    thanks = mail("Thanks!", subject="Re: Exception", sent=SENT + dt.timedelta(hours=4), reply_to=reply)
    put(dovecot, mailbox, thanks)
    assert mailbox_poll(config=mailbox).outcomes == {"reply": 1}
    assert ExceptionRequest.objects.get(enhancement=node_kep).revisions.count() == 2


# ------------------------------------------------------------------ what cannot be filed


def test_list_chatter_is_ignored_and_an_unreadable_exception_mail_is_a_problem(dovecot, mailbox, kinds, release):
    put(dovecot, mailbox, mail("Meeting notes for Tuesday.", subject="SIG Release meeting"))
    put(dovecot, mailbox, mail("Can I still ask for an exception next week?", subject="question"))
    result = mailbox_poll(config=mailbox)
    assert result.outcomes == {"ignored": 1, "problem": 1}
    problem = IntakeProblem.objects.get()
    assert "not a request" in problem.reason or "not readable as a request" in problem.reason, problem.reason
    assert b"Can I still ask" in bytes(problem.raw)
    assert mailbox_poll(config=mailbox).read == 0  # never retried by itself


def test_a_malformed_message_is_a_problem_and_the_next_one_is_still_filed(dovecot, mailbox, node_kep, code_freeze):
    put(dovecot, mailbox, b"\x00\x01\x02 not an email at all \xff\xfe")
    put(dovecot, mailbox, b"Subject: attachment only\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\r\n")
    put(dovecot, mailbox, mail())
    result = mailbox_poll(config=mailbox)
    assert result.outcomes == {"problem": 2, "filed": 1}
    reasons = sorted(IntakeProblem.objects.values_list("reason", flat=True))
    assert any("no text part" in r for r in reasons), reasons
    assert MailboxState.objects.get(mailbox=mailbox.key).last_error == ""


def test_an_unknown_kep_is_a_problem_until_it_is_imported_then_try_again_files_it(
    dovecot, mailbox, code_freeze, release_team_member
):
    put(dovecot, mailbox, mail(REQUEST_BODY.replace("* SIG: node\n", "")))
    mailbox_poll(config=mailbox)
    problem = IntakeProblem.objects.get()
    assert "KEP-2400 is not known here" in problem.reason
    from releasecal.services import enhancement_upsert

    enhancement_upsert(number=2400, title="Node memory swap support", owning_sig="node")
    outcome = intake_problem_retry(problem=problem, actor=release_team_member)
    assert outcome.startswith("Request #")
    problem.refresh_from_db()
    assert problem.resolved_at is not None
    assert problem.resolved_by == release_team_member
    assert IntakeMessage.objects.get(message_id=problem.message_id).outcome == "filed"


def test_a_new_uidvalidity_reads_the_folder_again_without_filing_twice(dovecot, mailbox, node_kep, code_freeze):
    folder = "Requests"
    config = MailboxConfig(**{**vars(mailbox), "folder": folder})
    first = mail()
    put(dovecot, config, first, folder=folder)
    assert mailbox_poll(config=config).outcomes == {"filed": 1}
    before = MailboxState.objects.get(mailbox=config.key).uidvalidity
    conn = dovecot.client(config.user, config.password)
    assert conn.delete(folder)[0] == "OK"
    conn.logout()
    put(dovecot, config, first, folder=folder)  # the same message again, in a new folder
    put(dovecot, config, mail(subject="SIG Release meeting", body="notes"), folder=folder)
    result = mailbox_poll(config=config)
    state = MailboxState.objects.get(mailbox=config.key)
    assert state.uidvalidity != before
    assert result.outcomes == {"duplicate": 1, "ignored": 1}
    assert ExceptionRequest.objects.filter(enhancement=node_kep).count() == 1


# ------------------------------------------------------------------ the mailbox itself failing


def test_a_wrong_password_is_reported_not_raised_and_health_stays_green(dovecot, mailbox, kinds, client, settings):
    healthy_before = client.get("/readyz")
    wrong = MailboxConfig(**{**vars(mailbox), "password": "not-it"})
    result = mailbox_poll(config=wrong)
    assert result.error.startswith("Login refused for the intake mailbox")
    state = MailboxState.objects.get(mailbox=wrong.key)
    assert state.failures == 1
    assert state.last_error == result.error
    mailbox_poll(config=wrong)
    assert MailboxState.objects.get(mailbox=wrong.key).failures == 2
    for name, value in vars(wrong).items():
        if name in ("host", "port", "user", "password", "folder", "tls"):
            setattr(settings, f"INTAKE_IMAP_{name.upper()}", value)
    out = io.StringIO()
    call_command("check_services", stdout=out)  # exit 0: a mailbox problem is not ill health
    assert "intake mailbox: failing (2 polls in a row): Login refused" in out.getvalue()
    healthy_after = client.get("/readyz")  # decided by the database, migrations and Redis only
    assert (healthy_after.status_code, healthy_after.json()) == (healthy_before.status_code, healthy_before.json())
    # The worker's health check is `celery inspect ping`: the poll task never raises, so
    # a failing mailbox leaves nothing in the worker to fail (see the worker test).
    assert poll_mailbox.run() == {
        "read": 0,
        "problems": 0,
        "error": MailboxState.objects.get(mailbox=wrong.key).last_error,
    }
    # The password fixed: the next poll works and the error clears.
    assert mailbox_poll(config=mailbox).error == ""


def test_a_dropped_connection_is_reported_and_the_next_poll_goes_on(kinds, dovecot, mailbox, node_kep, code_freeze):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def hang_up():  # greets like an IMAP server, then drops the connection
        conn, _ = listener.accept()
        conn.sendall(b"* OK IMAP4rev1 ready\r\n")
        conn.recv(1024)
        conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    dropping = MailboxConfig(**{**vars(mailbox), "port": port})
    result = mailbox_poll(config=dropping)
    thread.join(timeout=10)
    listener.close()
    assert "dropped" in result.error or "refused" in result.error.lower(), result.error
    closed = MailboxConfig(**{**vars(mailbox), "port": port})  # nothing listens there now
    assert mailbox_poll(config=closed).error
    put(dovecot, mailbox, mail())
    assert mailbox_poll(config=mailbox).outcomes == {"filed": 1}


def test_off_when_unset(db):
    result = mailbox_poll(config=MailboxConfig(host="", user="", password=""))
    assert result.off
    assert not MailboxState.objects.exists()
    out = io.StringIO()
    call_command("check_services", stdout=out)
    assert "intake mailbox: off" in out.getvalue()


def test_the_sent_time_is_the_date_header_in_utc():
    read = read_mail(mail(sent=dt.datetime(2024, 7, 24, 3, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))).as_bytes(),
                     fallback_id="<x@y>")  # fmt: skip
    assert read.sent_at == dt.datetime(2024, 7, 24, 1, 0, tzinfo=dt.UTC)
    assert tz.isoformat_utc(read.sent_at) == "2024-07-24T01:00:00Z"


# ------------------------------------------------------------------ the beat task, run by a real worker


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_a_real_worker_polls_the_mailbox_on_its_own_queue(dovecot, mailbox, kinds, release, kep, tmp_path):
    require_postgres()
    broker = redis_url_or_skip("CELERY_BROKER_URL")
    queue = f"intake-test-{uuid.uuid4().hex[:8]}"
    owner = User.objects.create_user("intake-owner", "owner@example.com", "pw")
    env = {
        "INTAKE_IMAP_HOST": mailbox.host,
        "INTAKE_IMAP_PORT": str(mailbox.port),
        "INTAKE_IMAP_USER": mailbox.user,
        "INTAKE_IMAP_PASSWORD": mailbox.password,
        "INTAKE_IMAP_TLS": "none",
        "INTAKE_IMAP_ENTERED_BY": owner.username,
    }
    worker = Worker(broker=broker, name=queue, concurrency=1, env=env, log_dir=tmp_path, queue=queue)
    try:
        put(dovecot, mailbox, mail())
        put(dovecot, mailbox, b"garbage without headers")
        poll_mailbox.apply_async(queue=queue)
        assert wait_for(lambda: MailboxState.objects.filter(messages_read=2).exists(), timeout=90), worker.output()
        request = ExceptionRequest.objects.get(enhancement=kep)
        assert (request.days, request.requester_name) == (4, "Kevin Hannon")
        assert request.entered_by == owner  # the mailbox owner entered it; the author asked
        assert request.revisions.get().entered_by == owner
        assert IntakeProblem.objects.count() == 1
        # A second beat finds nothing new.
        poll_mailbox.apply_async(queue=queue)
        assert wait_for(
            lambda: MailboxState.objects.filter(last_success_at__isnull=False, messages_read=2).exists(), timeout=30
        )
    finally:
        worker.stop()
        purge_broker(broker, queue)


def test_beat_polls_only_when_the_mailbox_is_configured():
    code = (
        "from django.conf import settings; import django; django.setup(); print(sorted(settings.CELERY_BEAT_SCHEDULE))"
    )
    base = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base"}
    base.pop("INTAKE_IMAP_HOST", None)
    off = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True, text=True, check=True)
    on = subprocess.run(
        [sys.executable, "-c", code], env={**base, "INTAKE_IMAP_HOST": "imap.example.com"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "intake-poll" not in off.stdout
    assert "intake-poll" in on.stdout


def test_the_release_teams_reply_becomes_a_proposed_decision_never_applied(dovecot, mailbox, node_kep, code_freeze):
    first = mail()
    put(dovecot, mailbox, first)
    mailbox_poll(config=mailbox)
    reply = mail(
        "Hi Kevin,\n\nThe release team is APPROVING this exception request. Your updated deadline to merge is "
        "18:00 PDT Friday, 26th July 2024.\n\nThanks,\nRelease Lead\n",
        subject="Re: [sig-node] Exception Request for KEP-2400 (code freeze)",
        sender="Release Lead <lead@example.com>",
        sent=SENT + dt.timedelta(days=1),
        reply_to=first,
    )
    put(dovecot, mailbox, reply)
    result = mailbox_poll(config=mailbox)
    assert result.outcomes == {"proposed": 1}, IntakeMessage.objects.values_list("detail", flat=True)
    request = ExceptionRequest.objects.get(enhancement=node_kep)
    assert request.state == "pending"  # proposed, not applied
    proposal = request.proposed_decisions.get()
    assert proposal.outcome == "approved"
    assert proposal.granted_until == dt.datetime(2024, 7, 27, 1, 0, tzinfo=dt.UTC)  # 18:00 PDT
    # Read again with the next message of the thread, it is not proposed twice.
    put(dovecot, mailbox, mail("Thank you!", subject="Re: Exception", sent=SENT + dt.timedelta(days=2), reply_to=reply))
    assert mailbox_poll(config=mailbox).outcomes == {"reply": 1}
    assert request.proposed_decisions.count() == 1


def test_a_reply_to_a_thread_never_read_is_a_problem(dovecot, mailbox, kinds, release):
    put(
        dovecot,
        mailbox,
        mail(
            "The release team is APPROVING this exception request.",
            subject="Re: Exception Request for KEP-9999 (code freeze)",
            headers={"In-Reply-To": "<never-seen@example.com>"},
        ),
    )
    mailbox_poll(config=mailbox)
    assert "release-team reply" in IntakeProblem.objects.get().reason


def test_quoted_printable_latin1_html_only_mail_is_read_as_text():
    raw = (
        b"From: =?iso-8859-1?q?Ren=E9_M=FCller?= <rene@example.com>\r\n"
        b"Subject: Exception request\r\nDate: Wed, 24 Jul 2024 09:30:00 +0000\r\nMessage-ID: <qp@example.com>\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: text/html; charset=iso-8859-1\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
        b"<div>Gr=FC=DFe,</div><ul><li>Additional time needed (in days): 3</li></ul>"
        b"<blockquote><p>earlier text</p></blockquote>\r\n"
    )
    read = read_mail(raw, fallback_id="<x@y>")
    assert read.sender_name == "René Müller"
    assert "Grüße," in read.text
    assert "- Additional time needed (in days): 3" in read.text
    assert "> earlier text" in read.text


def test_the_admin_lists_intake_problems_and_mailbox_state(admin_client, dovecot, mailbox, kinds, release):
    put(dovecot, mailbox, mail("Can I still ask for an exception?", subject="question"))
    mailbox_poll(config=mailbox)
    wrong = MailboxConfig(**{**vars(mailbox), "password": "not-it"})
    mailbox_poll(config=wrong)
    problems = admin_client.get("/admin/intake/intakeproblem/")
    assert problems.status_code == 200
    assert "question" in problems.content.decode()
    states = admin_client.get("/admin/intake/mailboxstate/").content.decode()
    assert "failing: Login refused for the intake mailbox" in states
    problem = IntakeProblem.objects.get()
    detail = admin_client.get(f"/admin/intake/intakeproblem/{problem.pk}/change/")
    assert detail.status_code == 200
    assert "Can I still ask" in detail.content.decode()


def test_a_real_thread_from_an_mbox_gives_the_same_request_and_proposal_as_the_command(dovecot, mailbox, release):
    """The reader's real fixture (an approval naming PST in June), delivered message by
    message in the order sent, without Message-ID headers: the reply joins its request by
    subject, and what is filed matches what ``ingest_exception`` files from the mbox."""
    from releasecal.models import Enhancement

    Enhancement.objects.create(number=4639, title="OCI VolumeSource", owning_sig="node")
    box = mbox(str(EXCEPTION_THREADS / "thread-approval-pst-in-june-2024.mbox"))
    messages = sorted(box, key=lambda m: parsedate_to_datetime(m["Date"]))
    for message in messages:
        put(dovecot, mailbox, message.as_bytes())
    result = mailbox_poll(config=mailbox)
    assert result.outcomes == {"filed": 1, "proposed": 1}, list(IntakeProblem.objects.values_list("reason", flat=True))
    request = ExceptionRequest.objects.get()
    assert request.state == "pending"
    assert request.milestone.kind.slug == "enhancements-freeze"
    assert request.requester_name == "Sascha Example"
    assert request.current.until_at == dt.datetime(2024, 6, 21, 22, 0, tzinfo=dt.UTC)
    proposal = request.proposed_decisions.get()
    assert (proposal.outcome, proposal.state) == ("approved", "proposed")
    assert proposal.granted_until == dt.datetime(2024, 6, 22, 1, 0, tzinfo=dt.UTC)
    assert proposal.granted_zone == "America/Los_Angeles"
    assert proposal.author_name == "Kat Example"
    assert "18:00 UTC-8 = 02:00Z" in proposal.warnings[0]


def test_list_chatter_is_read_once_but_its_text_is_not_kept(dovecot, mailbox, kinds):
    put(dovecot, mailbox, mail("Meeting notes: nothing about requests.", subject="SIG Release meeting"))
    assert mailbox_poll(config=mailbox).outcomes == {"ignored": 1}
    message = IntakeMessage.objects.get()
    assert (message.subject, message.text) == ("SIG Release meeting", "")
