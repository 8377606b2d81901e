"""Events of the schedule domain: one Django signal per event (the pretix manner).

The service that makes a change sends its event with ``send`` (never ``send_robust``),
synchronously, inside the service's transaction: a receiver writes its own ledger in the
same commit, and a receiver that raises rolls the whole change back. Work outside the
database (a task, a message) is queued by the receiver with ``transaction.on_commit``.

The schedule domain imports none of its listeners: each app that builds on it connects
its receivers in its ``AppConfig.ready()`` with a ``dispatch_uid`` (so a second
``ready()`` never connects one twice). Every receiver of every signal is listed below;
``tests/releasecal/test_signals.py`` fails when a connection and this list differ.

Receivers are called as ``receiver(sender, **kwargs)``; ``sender`` is the model class.
"""

from __future__ import annotations

from django.dispatch import Signal

milestone_changed = Signal()
"""A milestone was created, or an edit changed what a calendar shows of it (its time,
date, window, zone, title, kind, description, link, week, cancelled).

Sent by ``releasecal.services.milestone_save`` (and so by ``milestone_create`` and
``milestone_cancel``), first of the two milestone events; and by ``manage.py
tzdata_check --apply`` when the running zone rules end a date-only milestone's day at
another instant (its date, and so what people were told, unchanged: no
``milestone_moved``).
kwargs: ``milestone`` (as saved), ``previous`` (the row before the edit; None when created).

Receivers:
- ``reminders.receivers.milestone_changed`` (uid ``reminders.milestone_changed``): the
  reminder ledger reschedules or cancels the milestone's pending reminders and re-syncs
  the extensions granted on it (a moved freeze can supersede a grant).
"""

milestone_moved = Signal()
"""An existing milestone's deadline moved, or it was cancelled or is back on (what
people are told of; a title edit is not a move).

Sent by ``releasecal.services.milestone_save`` after ``milestone_changed``.
kwargs: ``milestone`` (as saved), ``previous`` (the row before the edit).

Receivers:
- ``notices.receivers.milestone_moved`` (uid ``notices.milestone_moved``): writes the
  schedule change notice and one delivery row per recipient (the release team's
  channel, the affected KEPs' owners), with the grants the move overrides.
"""

release_hard_stop_moved = Signal()
"""The hard stop in force of a release moved: its explicit hard stop was set, changed or
cleared, so the last instant an extension may reach is another.

Sent by ``releasecal.services.release_save`` (the admin's release form, the schedule
importer, ``manage.py tzdata_check --apply``).
kwargs: ``release`` (as saved), ``previous`` (the hard stop in force before; None: none).

Receivers:
- ``notices.receivers.release_hard_stop_moved`` (uid ``notices.release_hard_stop_moved``):
  the notice of the move, with the grants it now cuts.
"""

enhancement_owners_changed = Signal()
"""A KEP's owners changed (added, removed, another address or Slack id).

Sent by ``releasecal.services.enhancement_owners_changed`` (``enhancement_upsert``, the
admin's KEP page, the importers).
kwargs: ``enhancement``.

Receivers:
- ``reminders.receivers.enhancement_owners_changed`` (uid
  ``reminders.enhancement_owners_changed``): re-syncs the pending reminders that go to
  the KEP's owners.
"""

tracking_status_changed = Signal()
"""A KEP's tracking status in a release was changed by the release team (out of the
milestone: removed or deferred; back in: tracked again), not by an exception's decision
(that is ``exceptions.signals.exception_request_decided``).

Sent by ``releasecal.services.tracking_status_change`` (the admin's tracking page).
kwargs: ``tracking`` (as saved), ``previous`` (the status before), ``change_id`` (the
audit row's id: one id per change, so a listener can key its ledger on it).

Receivers:
- ``github.receivers.tracking_status_changed`` (uid ``github.tracking_status_changed``):
  the KEP issue's comment (removed, deferred, tracked again; removed after an ended grant:
  the grant was missed), posted or listed as the release's setting says.
"""
