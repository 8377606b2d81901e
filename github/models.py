"""A release's board on GitHub and what releasecal knows of it.

The exception workflow never imports this app: the board is configured here, read here,
and (in read-write mode) written from here.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from releasecal.models import Release


class Board(models.Model):
    """The release's tracking board: an organization's Projects (v2) board by number."""

    class Mode(models.TextChoices):
        OFF = "off", "Off"
        READ_ONLY = "read_only", "Read-only: read the board, report what releasecal would write"
        READ_WRITE = "read_write", "Read-write: write the exception fields"

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="github_board")
    owner = models.CharField(max_length=39, help_text='The organization that owns the board, e.g. "kubernetes"')
    number = models.PositiveIntegerField(help_text="The project's number (github.com/orgs/kubernetes/projects/241)")
    mode = models.CharField(
        max_length=16,
        choices=Mode.choices,
        default=Mode.READ_ONLY,
        help_text="A board is read-only when first set: releasecal reads it and reports what it would write",
    )
    field_names = models.JSONField(
        default=dict,
        blank=True,
        help_text="The board's own name of a field or option where it differs from the handbook's, e.g. "
        '{"Exception Status": "Exception state", "Exception Status/In Review": "Under review"}',
    )
    # What the last contact with GitHub found (a sync, check_services).
    title = models.CharField(max_length=300, blank=True, help_text="The project's title, as GitHub last answered")
    project_node_id = models.CharField(max_length=100, blank=True)
    reachable = models.BooleanField(null=True, help_text="Whether GitHub answered for the board at the last check")
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True, help_text="The last completed read of the board")
    last_report = models.JSONField(default=dict, blank=True, help_text="What the last sync found (the cockpit's view)")
    backfilled_at = models.DateTimeField(
        null=True, blank=True, help_text="When the board's existing items were linked to releasecal's requests"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["release__slug"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "number"], name="one_release_per_github_board"),
            models.CheckConstraint(
                condition=models.Q(mode__in=["off", "read_only", "read_write"]), name="github_board_mode_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.owner}/{self.number} ({self.release.slug})"

    @property
    def url(self) -> str:
        return f"https://github.com/orgs/{self.owner}/projects/{self.number}"

    def clean(self) -> None:
        if not isinstance(self.field_names, dict) or not all(
            isinstance(key, str) and isinstance(value, str) and value.strip()
            for key, value in (self.field_names or {}).items()
        ):
            raise ValidationError({"field_names": 'An object of names: {"Exception Status": "Exception state", ...}'})


class BoardItem(models.Model):
    """A board item that holds an exception request's fields (the KEP's issue item, or a
    draft item for a second exception of one KEP): linked once, by the backfill or by the
    write that created it, so that releasecal never adds a second item for one request."""

    class Kind(models.TextChoices):
        ISSUE = "issue", "KEP issue"
        DRAFT = "draft", "Draft item"

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="items")
    item_id = models.CharField(max_length=100, help_text="The ProjectV2Item's node id (PVTI_...)")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    request = models.OneToOneField(
        "exceptions.ExceptionRequest", on_delete=models.CASCADE, related_name="github_board_item"
    )
    linked_at = models.DateTimeField()

    class Meta:
        ordering = ["board", "request"]
        constraints = [models.UniqueConstraint(fields=["board", "item_id"], name="one_request_per_board_item")]

    def __str__(self) -> str:
        return f"{self.item_id} on {self.board}"


class BoardWrite(models.Model):
    """The board writes' ledger (the outbox's third, ``outbox.ledger``): one row per
    event of a request (filed, amended, decided), unique, so an event is written once
    however often it is heard. The send reads the board and writes what differs from
    releasecal's record, the field updates of one item in one GraphQL document."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="writes")
    request = models.ForeignKey("exceptions.ExceptionRequest", on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=64, help_text='"submitted", "amended:<revision>" or "decided"')
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    written = models.JSONField(default=list, blank=True, help_text="The fields the send set, as it set them")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["request", "event"], name="one_board_write_per_event"),
            models.CheckConstraint(
                condition=models.Q(state__in=["pending", "sending", "sent", "failed"]),
                name="board_write_state_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} of request #{self.request_id} on {self.board}"


class BoardConflict(models.Model):
    """A field releasecal owns whose value on the board contradicts releasecal's record
    (a person changed Exception Status on the board): found by the reconcile, shown in
    the cockpit and the admin until someone resolves it. While it is open, no write sets
    that field (the person's value is never overwritten silently), and releasecal's
    record is not changed from the board either."""

    class Resolution(models.TextChoices):
        KEPT_RELEASECAL = "kept_releasecal", "Kept releasecal's value (written to the board)"
        TOOK_BOARD = "took_board", "Took the board's value (applied in releasecal)"
        AGREED = "agreed", "The board and releasecal agree again"

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="conflicts")
    request = models.ForeignKey("exceptions.ExceptionRequest", on_delete=models.CASCADE, related_name="+")
    item_id = models.CharField(max_length=100, help_text="The ProjectV2Item's node id (PVTI_...)")
    item = models.CharField(max_length=300, help_text='How a person finds it: "kubernetes/enhancements#1880"')
    field = models.CharField(max_length=100, help_text="The handbook's name of the field")
    board_value = models.CharField(max_length=1000, blank=True, help_text="What the board shows")
    releasecal_value = models.CharField(max_length=1000, blank=True, help_text="What releasecal's record says")
    seen_at = models.DateTimeField(help_text="When the reconcile first saw the board contradict releasecal")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=32, choices=Resolution.choices, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-seen_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request", "field"],
                condition=models.Q(resolved_at__isnull=True),
                name="one_open_board_conflict_per_field",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.field} of {self.item}: board {self.board_value!r}, releasecal {self.releasecal_value!r}"


class IssueCommentSetting(models.Model):
    """Per release: what becomes of the KEP issues' comments releasecal composes (a
    decision, a tracking change, the sweeps). Off: none is composed; list: each is shown
    in the cockpit to post by hand (a copy button, a "posted" mark); post: each is posted
    through the comments' ledger."""

    class Mode(models.TextChoices):
        OFF = "off", "Off: compose no comment"
        LIST = "list", "List: show each comment in the cockpit, to post by hand"
        POST = "post", "Post: post each comment on the KEP's issue"

    release = models.OneToOneField(Release, on_delete=models.CASCADE, related_name="issue_comment_setting")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.LIST)
    repository = models.CharField(
        max_length=140,
        default="kubernetes/enhancements",
        help_text="The KEP issues' repository (owner/name), for a KEP without an issue URL",
    )

    class Meta:
        ordering = ["release__slug"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(mode__in=["off", "list", "post"]), name="issue_comment_mode_valid"
            )
        ]

    def __str__(self) -> str:
        return f"KEP issue comments of {self.release.slug}: {self.mode}"


class IssueComment(models.Model):
    """The KEP issues' comments ledger (the outbox's fourth, ``outbox.ledger``): one row
    per (KEP, event, source), unique, so one event is commented once however often it
    is heard or a sweep is run. ``listed`` rows wait for a person to post them by hand
    (``posted_by_hand`` once marked); ``pending`` rows are posted by the send; a listed
    row a corrected decision made wrong is ``superseded`` (never to post; ``superseded_note``
    says why)."""

    class State(models.TextChoices):
        LISTED = "listed", "To post by hand"
        POSTED_BY_HAND = "posted_by_hand", "Posted by hand"
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"
        SUPERSEDED = "superseded", "Superseded: not to post (the decision was corrected)"

    class Event(models.TextChoices):
        REJECTED = "rejected", "Exception rejected"
        GRANT_MISSED = "grant-missed", "Granted deadline missed"
        GRANT_MET = "grant-met", "Granted deadline met: tracked"
        READDED = "readded", "Tracked again"
        REMOVED = "removed", "Removed from the milestone"
        DEFERRED = "deferred", "Deferred"
        OPT_IN = "opt-in-reminder", "Opt-in reminder"
        CLEANUP_CLOSED = "cleanup-closed", "Cleanup: closed issue"
        CLEANUP_CLOSE = "cleanup-close", "Cleanup: stable and implemented, close"
        CLEANUP_ASK = "cleanup-ask", "Cleanup: stable, ask to update kep.yaml"
        CLEANUP_CLEAR = "cleanup-clear", "Cleanup: clear labels and milestone"
        CORRECTION = "correction", "Correction of an earlier comment"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="issue_comments")
    kep = models.PositiveIntegerField(help_text="The KEP's number (its kubernetes/enhancements issue)")
    repository = models.CharField(max_length=140, default="kubernetes/enhancements")
    issue_number = models.PositiveIntegerField()
    event = models.CharField(max_length=32, choices=Event.choices)
    source = models.CharField(
        max_length=64, help_text='What the event is of: "request:12", "change:345" (an audit row), "sweep:1.38"'
    )
    body = models.TextField(help_text="The comment, as composed from the handbook's template")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    comment_url = models.URLField(blank=True, max_length=500, help_text="The posted comment on GitHub")
    comment_id = models.BigIntegerField(null=True, blank=True)
    corrects = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="corrections", help_text="A follow-up of"
    )
    marked_by = models.CharField(max_length=150, blank=True, help_text="Who marked it posted by hand")
    superseded_note = models.CharField(
        max_length=500, blank=True, help_text="Why a listed comment is not to be posted any more"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["kep", "event", "source"], name="one_issue_comment_per_event"),
            models.CheckConstraint(
                condition=models.Q(
                    state__in=["listed", "posted_by_hand", "pending", "sending", "sent", "failed", "superseded"]
                ),
                name="issue_comment_state_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} on {self.repository}#{self.issue_number} ({self.source})"

    @property
    def issue_url(self) -> str:
        return f"https://github.com/{self.repository}/issues/{self.issue_number}"
