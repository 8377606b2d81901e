"""Exception requests, their revisions, sign-offs and decisions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from releasecal.models import Enhancement, Milestone, Release, Tracking, WallTimeField, ZoneField


def days_label(days: int | None) -> str:
    """ "3 days", "1 day", or "days not recorded" (a request read from exceptions.yaml)."""
    if days is None:
        return "days not recorded"
    return f"{days} day{'' if days == 1 else 's'}"


class ExceptionRequest(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"

    ACTIVE_STATES = (State.PENDING, State.APPROVED)

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="exception_requests")
    enhancement = models.ForeignKey(Enhancement, on_delete=models.PROTECT, related_name="exception_requests")
    milestone = models.ForeignKey(Milestone, on_delete=models.PROTECT, related_name="exception_requests")
    # A request may name two freezes with one completion date (the handbook, 2025-2026):
    # the PRR freeze (``milestone``) and the same release's enhancements freeze (here).
    # ``ExceptionRequestFreeze`` holds one row per freeze named, so the database keeps
    # "one live request per KEP per freeze" across both columns.
    also_milestone = models.ForeignKey(
        Milestone,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="combined_exception_requests",
        help_text="The enhancements freeze, when a PRR freeze request also covers it (one completion date)",
    )
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="exception_requests"
    )
    requester_name = models.CharField(max_length=200, blank=True, help_text="As written in the email, when not a user")
    requester_email = models.EmailField(
        blank=True, help_text="The address the request was emailed from (its author), when filed from an email"
    )

    class RequesterMark(models.TextChoices):
        """How the requester was read from the thread's own marks (exceptions/reader/authors.py)."""

        FROM_HEADER = "from_header", "From: header"
        BRACKET = "bracket", "[Name] line"
        GOOGLE_GROUPS = "google_groups", "Google Groups header"
        ATTRIBUTION = "attribution", "'On ..., Name wrote:' line"
        SIGNATURE = "signature", "signature"

    requester_mark = models.CharField(
        max_length=16,
        blank=True,
        choices=RequesterMark.choices,
        help_text="How the requester's name was read from the thread; empty when it was typed or is a user",
    )
    on_behalf_of = models.CharField(
        max_length=200, blank=True, help_text="Whom the requester asks for, when the email says so"
    )
    # Who typed or ingested it (the release-team member who ran ingest_exception, the API
    # caller, the admin user). Not the requester: an email's author is the requester.
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING, db_index=True)
    # The current version's fields are on the current revision; ``days`` is denormalised
    # here so lists, policy checks and ordering need no join. NULL only for a request read
    # from exceptions.yaml, which never records the days asked. 0 days is an *admission*
    # request ("None, PRR is approved"): no extra time, only entry past the freeze; it is
    # granted until the freeze itself (see services.default_granted_until).
    days = models.PositiveSmallIntegerField(null=True, blank=True)
    submitted_at = models.DateTimeField(help_text="When the request was sent (the email's date when ingested)")
    # When releasecal received an ingested thread: the mailbox's receipt of the email, the
    # ingest command's run. Waiting for a decision counts from here (a 2024 thread ingested
    # today has waited since today), else from submitted_at (NULL: filed as it was sent,
    # through the API, the admin or Slack, or before the field existed).
    received_at = models.DateTimeField(null=True, blank=True, help_text="When releasecal received the request")
    filed_after_window = models.BooleanField(
        default=False, help_text="The email reached the release team after the request window had closed"
    )
    from_archive = models.BooleanField(
        default=False,
        help_text="Ingested after its window had closed or more than 24 hours after it was sent: "
        "filed without the new-request mail and without nudges",
    )
    thread_url = models.URLField(
        max_length=500, blank=True, help_text="The mailing-list thread, as exceptions.yaml's 'thread' records it"
    )
    # The release-team member who follows the request up and re-evaluates the KEP when the
    # granted time ends: the release's Enhancements Lead when it arrives, changed by a lead.
    liaison = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="liaison_requests",
        help_text="The release-team member who follows the request up",
    )
    # Links the integrations know and tell (slack_integration, github): the domain only keeps them.
    slack_thread_url = models.URLField(
        max_length=500, blank=True, help_text="The release team's Slack thread of the request"
    )
    board_item_url = models.URLField(
        max_length=500, blank=True, help_text="The request's item on the release's GitHub board"
    )
    tracking_status_before = models.CharField(max_length=32, blank=True, choices=Tracking.Status.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-submitted_at", "-id"]
        permissions = [("decide_exceptionrequest", "Can approve or reject exception requests")]
        constraints = [
            # One live request per KEP per milestone. Rejected and withdrawn ones stay as
            # history; the service decides whether a re-filing is allowed.
            models.UniqueConstraint(
                fields=["enhancement", "milestone"],
                condition=Q(state__in=["pending", "approved"]),
                name="one_live_request_per_kep_per_milestone",
            ),
            models.CheckConstraint(
                condition=Q(days__isnull=True) | Q(days__gte=0), name="request_days_not_negative_or_unrecorded"
            ),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "approved", "rejected", "withdrawn"]), name="request_state_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"Exception #{self.pk} for KEP-{self.enhancement.number} ({self.freezes_title})"

    def save(self, *args, **kwargs):
        adding = self._state.adding
        super().save(*args, **kwargs)
        # One row per freeze named, written with the request on every path that creates
        # one (the services, the exceptions.yaml import); ``live`` follows the state
        # (pending or approved) on every path that saves it (a decision, a withdrawal, a
        # correction that reopens it).
        live = self.state in self.ACTIVE_STATES
        if adding:
            ExceptionRequestFreeze.objects.bulk_create(
                ExceptionRequestFreeze(request=self, enhancement_id=self.enhancement_id, milestone_id=pk, live=live)
                for pk in self.milestone_ids
            )
            return
        update_fields = kwargs.get("update_fields")
        if update_fields is None or "state" in update_fields:
            self.freeze_rows.exclude(live=live).update(live=live)

    @property
    def milestone_ids(self) -> list[int]:
        """The freezes the request names: its milestone, and the second one if any."""
        return [self.milestone_id] + ([self.also_milestone_id] if self.also_milestone_id else [])

    @property
    def freezes_title(self) -> str:
        """ "PRR Freeze", or "PRR Freeze and Enhancements Freeze" for a request naming both."""
        if self.also_milestone_id is None:
            return self.milestone.title
        return f"{self.milestone.title} and {self.also_milestone.title}"

    @property
    def current(self) -> ExceptionRequestRevision:
        return self.revisions.order_by("-number").first()

    @property
    def requester_label(self) -> str:
        who = self.requester.get_username() if self.requester_id else (self.requester_name or "unknown")
        return f"{who} (on behalf of {self.on_behalf_of})" if self.on_behalf_of else who

    @property
    def warnings(self) -> list[str]:
        found = []
        if self.filed_after_window:
            found.append(
                "Filed after the window: the email reached the release team after the request window had "
                "closed; the release team decides whether to take it."
            )
        limit = self.release.exception_warn_days
        if self.days is not None and self.days > limit:
            found.append(
                f"{self.days} days requested: exceptions are meant to be days, not weeks "
                f"(more than {limit} days needs a strong reason)."
            )
        return found

    @property
    def waiting_since(self):
        """Waiting for a decision counts from when releasecal received the request."""
        return self.received_at or self.submitted_at


class ExceptionRequestFreeze(models.Model):
    """One row per freeze a request names (one, or two for a PRR + enhancements freeze
    request), so that the database refuses a second live request of a KEP for a freeze
    whichever column of the request names it. ``live`` follows the request's state
    (``ExceptionRequest.save``); ``enhancement`` is the request's, copied for the index."""

    request = models.ForeignKey(ExceptionRequest, on_delete=models.CASCADE, related_name="freeze_rows")
    enhancement = models.ForeignKey(Enhancement, on_delete=models.PROTECT, related_name="+")
    milestone = models.ForeignKey(Milestone, on_delete=models.PROTECT, related_name="+")
    live = models.BooleanField(default=True, help_text="The request is pending or approved")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["request", "milestone"], name="one_freeze_row_per_request_and_freeze"),
            models.UniqueConstraint(
                fields=["enhancement", "milestone"],
                condition=Q(live=True),
                name="one_live_request_per_kep_per_freeze",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.request_id} names milestone #{self.milestone_id}"


class ExceptionRequestRevision(models.Model):
    """Every version of a request, as submitted or amended. Never edited."""

    request = models.ForeignKey(ExceptionRequest, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who entered this version (ran the command, called the API, used the admin)",
    )
    enhancement_name = models.CharField(max_length=300, blank=True)
    stage = models.CharField(max_length=16, choices=Tracking.Stage.choices, blank=True)
    sig = models.CharField(max_length=64, blank=True)
    issue_url = models.URLField(blank=True, max_length=500)
    pr_urls = models.JSONField(default=list, blank=True)
    days = models.PositiveSmallIntegerField(null=True, blank=True)
    until_text = models.CharField(max_length=200, blank=True, help_text='As written: "EOD Friday CET"')
    until_zone = ZoneField(blank=True, help_text="The zone the requester named, if any")
    until_at = models.DateTimeField(
        null=True, blank=True, help_text="The until-text read as an instant (end of day = next midnight there)"
    )
    reason = models.TextField(blank=True)
    risks_adding = models.TextField(blank=True)
    risks_cutting = models.TextField(blank=True)
    source_text = models.TextField(blank=True, help_text="The email text this version came from, if any")

    class Meta:
        ordering = ["request", "number"]
        constraints = [
            models.UniqueConstraint(fields=["request", "number"], name="one_revision_number_per_request"),
            models.CheckConstraint(
                condition=Q(days__isnull=True) | Q(days__gte=0), name="revision_days_not_negative_or_unrecorded"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.request_id} v{self.number}: {days_label(self.days)}"


class SignOff(models.Model):
    request = models.ForeignKey(ExceptionRequest, on_delete=models.CASCADE, related_name="signoffs")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    author_label = models.CharField(max_length=200)
    role = models.CharField(max_length=100, blank=True, help_text='e.g. "SIG Node lead"')
    note = models.TextField(blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request", "author"], condition=Q(author__isnull=False), name="one_signoff_per_user"
            )
        ]

    def __str__(self) -> str:
        return f"+1 from {self.author_label}"


class Decision(models.Model):
    class Outcome(models.TextChoices):
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    # OneToOne: the database itself refuses a second decision on one request.
    request = models.OneToOneField(ExceptionRequest, on_delete=models.CASCADE, related_name="decision")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField()
    note = models.TextField(blank=True)
    # An approval normally grants a deadline. One read from sig-release's exceptions.yaml
    # has none (the file never records it): granted_until is NULL and the grant is shown
    # as "granted, deadline not recorded"; the KEP's deadline stays the milestone's own.
    granted_until = models.DateTimeField(null=True, blank=True)
    granted_zone = ZoneField(blank=True)
    # granted_until as a wall clock in granted_zone, as it was granted (WallTimeField):
    # a tzdata change of the zone's rules moves granted_until, not this.
    granted_wall = WallTimeField(
        null=True, blank=True, editable=False, help_text="granted_until as granted, on the wall clock of granted_zone"
    )
    # The freeze the grant extends, copied at decision time so the database can check
    # "granted_until after the freeze" without a join.
    freeze_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(outcome="approved", granted_until__isnull=False, freeze_at__isnull=False) & ~Q(granted_zone="")
                )
                | Q(outcome="approved", granted_until__isnull=True, freeze_at__isnull=True, granted_zone="")
                | Q(outcome="rejected", granted_until__isnull=True),
                name="decision_grant_matches_outcome_or_unrecorded",
            ),
            # ">=": a 0-day admission is granted until the freeze itself; the service
            # requires "after the freeze" for every request that asked for days.
            models.CheckConstraint(
                condition=Q(granted_until__isnull=True) | Q(granted_until__gte=models.F("freeze_at")),
                name="granted_until_not_before_freeze",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_outcome_display()} #{self.request_id}"

    @property
    def deadline_recorded(self) -> bool:
        """False for an approval whose granted deadline nobody recorded (exceptions.yaml)."""
        return self.outcome != self.Outcome.APPROVED or self.granted_until is not None


UNRECORDED_GRANT = "granted, deadline not recorded"


class GrantEnd(models.Model):
    """The end of an approved request's granted time: recorded once per grant (the
    decision) by beat's minute sweep when the time has passed, and resolved by the
    liaison's re-evaluation, "Tracked for <freeze>" or "Removed From Milestone"."""

    class Outcome(models.TextChoices):
        TRACKED = "tracked", "Tracked"
        REMOVED = "removed", "Removed From Milestone"

    decision = models.OneToOneField(Decision, on_delete=models.CASCADE, related_name="grant_end")
    request = models.ForeignKey(ExceptionRequest, on_delete=models.CASCADE, related_name="grant_ends")
    ended_at = models.DateTimeField(help_text="The granted deadline that passed")
    ended_zone = ZoneField()
    recorded_at = models.DateTimeField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["ended_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(outcome="") & Q(resolved_at__isnull=True))
                | (Q(outcome__in=["tracked", "removed"]) & Q(resolved_at__isnull=False)),
                name="grant_end_outcome_with_time",
            )
        ]

    def __str__(self) -> str:
        return f"Grant of #{self.request_id} ended ({self.outcome or 'to re-evaluate'})"


class ExceptionsYamlFile(models.Model):
    """The last sig-release exceptions.yaml imported for a release, kept as text so the
    export edits that file in place (comments, order and layout as the team wrote them)."""

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="exceptions_yaml")
    text = models.TextField()
    file_name = models.CharField(max_length=300, blank=True)
    imported_at = models.DateTimeField()
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"exceptions.yaml of {self.release.slug}"


class ProposedDecision(models.Model):
    """A release-team decision read from an email thread, waiting for a release-team
    member to confirm it. Never applied by itself: confirming calls the same
    approve/reject services as the admin buttons (``exceptions.services``)."""

    class State(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        CONFIRMED = "confirmed", "Confirmed"
        DISMISSED = "dismissed", "Dismissed"

    request = models.ForeignKey(ExceptionRequest, on_delete=models.CASCADE, related_name="proposed_decisions")
    outcome = models.CharField(max_length=16, choices=Decision.Outcome.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PROPOSED, db_index=True)
    # The granted deadline as written ("18:00 PST Friday, 21st June 2024") and as read.
    granted_text = models.CharField(max_length=300, blank=True)
    granted_until = models.DateTimeField(null=True, blank=True, help_text="Empty when the text is ambiguous")
    granted_zone = ZoneField(blank=True)
    # granted_until as a wall clock in granted_zone, as read (WallTimeField): confirming
    # after a tzdata change grants the wall time read, not the instant read under old rules.
    granted_wall = WallTimeField(
        null=True, blank=True, editable=False, help_text="granted_until as read, on the wall clock of granted_zone"
    )
    warnings = models.JSONField(default=list, blank=True)
    readings = models.JSONField(default=list, blank=True, help_text="Every reading of the deadline text")
    author_name = models.CharField(max_length=200, blank=True, help_text="Who wrote the reply")
    sent_at = models.DateTimeField(null=True, blank=True)
    source_text = models.TextField(help_text="The reply's text the decision was read from")
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(outcome__in=["approved", "rejected"]), name="proposed_decision_outcome_valid"
            ),
            models.CheckConstraint(
                condition=Q(state__in=["proposed", "confirmed", "dismissed"]), name="proposed_decision_state_valid"
            ),
            models.UniqueConstraint(
                fields=["request"], condition=Q(state="proposed"), name="one_open_proposal_per_request"
            ),
        ]

    def __str__(self) -> str:
        return f"Proposed {self.outcome} of #{self.request_id} ({self.state})"


class DecisionCorrection(models.Model):
    """One correction of a made decision, kept as history (never edited).

    How corrections are kept: ``Decision`` stays one-to-one with its request and holds
    the decision *in force*; a correction updates that row in place and writes one of
    these with the decision before and after, the reason, who and when. A reopen (the
    decision was made on the wrong request) deletes the ``Decision`` row, puts the
    request back to pending and writes one of these with ``after`` empty. So the
    database still refuses two decisions in force on one request, every face reads the
    one in force as before, and the history of a request's decisions is its
    corrections, numbered 1, 2, ... (``exceptions.services.exception_decision_correct``
    and ``exception_decision_reopen``)."""

    class Action(models.TextChoices):
        CORRECTED = "corrected", "Corrected"
        REOPENED = "reopened", "Reopened (back to pending)"

    request = models.ForeignKey(ExceptionRequest, on_delete=models.CASCADE, related_name="decision_corrections")
    number = models.PositiveSmallIntegerField()
    action = models.CharField(max_length=16, choices=Action.choices)
    before = models.JSONField(help_text="The decision as it was (outcome, grant, note, who decided, when)")
    after = models.JSONField(null=True, blank=True, help_text="The decision as corrected; empty for a reopen")
    reason = models.TextField(help_text="Why the decision was corrected (a clerical error: which one)")
    corrected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    corrected_by_label = models.CharField(max_length=200)
    at = models.DateTimeField()

    class Meta:
        ordering = ["request", "number"]
        constraints = [
            models.UniqueConstraint(fields=["request", "number"], name="one_correction_number_per_request"),
            models.CheckConstraint(condition=~Q(reason=""), name="correction_has_reason"),
            models.CheckConstraint(
                condition=Q(action="corrected", after__isnull=False) | Q(action="reopened", after__isnull=True),
                name="correction_after_matches_action",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.request_id} correction {self.number}: {self.get_action_display()}"
