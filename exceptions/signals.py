"""Events of the exception workflow: one Django signal per event (the pretix manner).

Who reacts to a request being filed, amended, decided or withdrawn is listed here, once.
The service (``exceptions.services``) sends each event with ``send`` (never
``send_robust``), synchronously, inside its transaction: a receiver writes its own
ledger in the same commit (the reminder ledger's rows commit with the decision), and a
receiver that raises rolls the decision back. Work outside the database (a Slack post, a
DM) is queued by the receiver with ``transaction.on_commit``.

The exceptions app imports none of its listeners: each app connects its receivers in its
``AppConfig.ready()`` with a ``dispatch_uid``. Every receiver of every signal is listed
below; ``tests/releasecal/test_signals.py`` fails when a connection and this list differ.

Receivers are called as ``receiver(sender, **kwargs)``; ``sender`` is ``ExceptionRequest``.
"""

from __future__ import annotations

from django.dispatch import Signal

exception_request_submitted = Signal()
"""A request was filed (email, the API, Slack's form, the admin, the intake mailbox).

Sent by ``exceptions.services.exception_request_submit``.
kwargs: ``request``.

Receivers:
- ``reminders.receivers.exception_request_submitted`` (uid
  ``reminders.exception_request_submitted``): the "new exception request" notifications
  of the release's event rules.
- ``slack_integration.receivers.exception_request_submitted`` (uid
  ``slack_integration.exception_request_submitted``): the Slack ledger's row in this
  transaction (``SlackWork``), sent on commit: posts the request with Approve/Reject to
  the release team's channel.
- ``github.receivers.exception_request_submitted`` (uid
  ``github.exception_request_submitted``): a read-write board's write of the request's
  fields (the ledger row in this transaction, sent on commit).
"""

exception_request_amended = Signal()
"""A pending request has a new version (the requester changed 6 days to 3).

Sent by ``exceptions.services.exception_request_amend``.
kwargs: ``request``.

Receivers:
- ``slack_integration.receivers.exception_request_changed`` (uid
  ``slack_integration.exception_request_changed``): on commit, updates the request's
  channel messages.
- ``github.receivers.exception_request_amended`` (uid
  ``github.exception_request_amended``): a read-write board's write of the new version.
"""

exception_request_signed_off = Signal()
"""Someone signed off a pending request (a SIG lead's "+1").

Sent by ``exceptions.services.exception_request_signoff``.
kwargs: ``request``, ``signoff``.

Receivers: none yet (the sign-offs are read where they are shown).
"""

exception_request_decided = Signal()
"""A pending request was approved or rejected (the admin, the API, Slack's buttons, the
cockpit, a confirmed decision read from email).

Sent by ``exceptions.services.exception_request_approve`` and ``exception_request_reject``.
kwargs: ``request``, ``decision`` (``decision.outcome`` is ``approved`` or ``rejected``).

Receivers:
- ``reminders.receivers.exception_request_decided`` (uid
  ``reminders.exception_request_decided``): cancels the request's nudges; approved,
  schedules the extension's reminders (at the effective deadline); either way, the
  "request decided" notifications of the event rules.
- ``slack_integration.receivers.exception_request_decided`` (uid
  ``slack_integration.exception_request_decided``): Slack ledger rows in this
  transaction, sent on commit: updates the channel messages and DMs the requester (once
  per decision, ``SlackRequesterNotice``).
- ``github.receivers.exception_request_decided`` (uid ``github.exception_request_decided``):
  a read-write board's write of the decision (Exception Status, Status, decision date),
  and for a rejection the KEP issue's removal comment (listed or posted, per release).
- ``notices.receivers.exception_request_decided`` (uid
  ``notices.exception_request_decided``): an approval's announcement to the release's
  lists (the dev list, the SIG's list), when the release announces approvals.
"""

exception_request_withdrawn = Signal()
"""A pending request was withdrawn.

Sent by ``exceptions.services.exception_request_withdraw``.
kwargs: ``request``.

Receivers:
- ``reminders.receivers.exception_request_withdrawn`` (uid
  ``reminders.exception_request_withdrawn``): cancels its nudges.
- ``slack_integration.receivers.exception_request_changed`` (uid
  ``slack_integration.exception_request_changed``): on commit, updates the channel
  messages.
"""

exception_request_liaison_changed = Signal()
"""A request's liaison changed (a lead in the admin, the API or the cockpit).

Sent by ``exceptions.followup.exception_request_liaison_set``.
kwargs: ``request``, ``change`` (the audit row's id: each change is its own event).

Receivers:
- ``github.receivers.exception_request_liaison_changed`` (uid
  ``github.exception_request_liaison_changed``): a read-write board's write of the
  ``Exception Liaison``.
"""

exception_request_slack_thread_linked = Signal()
"""A request's Slack thread became known (the release team's channel post).

Sent by ``exceptions.followup.exception_request_slack_thread_set``.
kwargs: ``request``.

Receivers:
- ``github.receivers.exception_request_slack_thread_linked`` (uid
  ``github.exception_request_slack_thread_linked``): a read-write board's write of the
  ``Exception Request Slack Thread``.
"""

exception_grant_ended = Signal()
"""An approved request's granted time ended (once per grant): the liaison re-evaluates.

Sent by ``exceptions.followup.exception_grants_end`` (beat's minute sweep).
kwargs: ``request``, ``grant_end`` (``GrantEnd``).

Receivers:
- ``reminders.receivers.exception_grant_ended`` (uid ``reminders.exception_grant_ended``):
  the liaison's notice in the reminder ledger (Slack DM with the two outcomes when the
  liaison's Slack is linked, else email), sent on commit.
"""

exception_grant_reevaluated = Signal()
"""The KEP of an ended grant was re-evaluated: ``grant_end.outcome`` is ``tracked``
(Tracked for <freeze>) or ``removed`` (Removed From Milestone).

Sent by ``exceptions.followup.exception_grant_reevaluate``.
kwargs: ``request``, ``grant_end``.

Receivers:
- ``github.receivers.exception_grant_reevaluated`` (uid ``github.exception_grant_reevaluated``):
  a read-write board's write of the KEP's ``Status``, and the KEP issue's comment (the
  re-add commands, or the removal ones: ``github.comments.comment_for_reevaluation``).
"""

exception_grant_moved = Signal()
"""An approved grant's instant moved to what its kept wall time means under new zone
rules (``manage.py tzdata_check --apply``); the wall time and zone stay.

Sent by ``exceptions.services.decision_grant_retime``.
kwargs: ``request``, ``decision``.

Receivers:
- ``reminders.receivers.exception_grant_moved`` (uid ``reminders.exception_grant_moved``):
  reschedules the extension's reminders.
- ``slack_integration.receivers.exception_request_changed`` (uid
  ``slack_integration.exception_request_changed``): on commit, updates the channel messages.
"""

exception_decision_corrected = Signal()
"""A made decision was corrected (a clerical error: the wrong grant time, the wrong
outcome, the note) or reopened (made on the wrong request: back to pending), by a
release-team member with a reason. The decision in force is the ``Decision`` row; each
correction is kept as an ``exceptions.models.DecisionCorrection``.

Sent by ``exceptions.services.exception_decision_correct`` and
``exception_decision_reopen``.
kwargs: ``request``; ``correction`` (the ``DecisionCorrection`` row: ``number``,
``action`` ``corrected`` or ``reopened``); ``old``: the decision before, a dict
(``outcome``, ``granted_until`` ISO 8601 UTC or None, ``granted_zone``, ``note``,
``decided_by``, ``decided_at``); ``new``: the decision after, the same dict, or None for a
reopen; ``reason``: the text the release team gave. A listener that posted something
about the old decision (an issue comment) follows it with the correction from these.

Receivers:
- ``reminders.receivers.exception_decision_corrected`` (uid
  ``reminders.exception_decision_corrected``): the extension's reminders follow the
  decision in force (due_at recomputed for a changed grant, cancelled for a rejection
  or a reopen); everyone the decision's notification reached gets the correction.
- ``slack_integration.receivers.exception_request_changed`` (uid
  ``slack_integration.exception_request_changed``): on commit, updates the channel
  messages.
- ``github.receivers.exception_decision_corrected`` (uid
  ``github.exception_decision_corrected``): a read-write board's write of the decision
  in force (one ledger row per correction); the KEP issue's comments: a rejection
  corrected away follows each removal comment posted with a correction, a decision
  corrected to a rejection gets the removal comment.
- ``notices.receivers.exception_decision_corrected`` (uid
  ``notices.exception_decision_corrected``): the correction's announcement to the lists
  an approval was announced to (or a rejection corrected to an approval).
"""
