"""Defaults from the Kubernetes release process: milestone kinds and the two groups.

Plain constants so the data migration and the runtime ``*_ensure`` services share them
(a transactional test flushes the tables a data migration filled).
"""

RELEASE_TEAM = "Release Team"
ENHANCEMENTS = "Enhancements"

GROUP_PERMISSIONS = {
    RELEASE_TEAM: [
        ("exceptions", "decide_exceptionrequest"),
        ("exceptions", "view_exceptionrequest"),
        ("exceptions", "change_exceptionrequest"),
        ("exceptions", "add_exceptionrequest"),
        ("exceptions", "view_decision"),
        ("exceptions", "view_signoff"),
        ("exceptions", "add_signoff"),
        ("releasecal", "view_release"),
        ("releasecal", "change_release"),
        ("releasecal", "view_milestone"),
        ("releasecal", "add_milestone"),
        ("releasecal", "change_milestone"),
        ("releasecal", "view_enhancement"),
        ("releasecal", "change_enhancement"),
        ("releasecal", "view_tracking"),
        ("releasecal", "change_tracking"),
        ("releasecal", "view_auditlog"),
    ],
    ENHANCEMENTS: [
        ("exceptions", "view_exceptionrequest"),
        ("exceptions", "add_exceptionrequest"),
        ("exceptions", "view_signoff"),
        ("exceptions", "add_signoff"),
        ("releasecal", "view_release"),
        ("releasecal", "view_milestone"),
        ("releasecal", "view_enhancement"),
        ("releasecal", "add_enhancement"),
        ("releasecal", "change_enhancement"),
        ("releasecal", "view_tracking"),
        ("releasecal", "add_tracking"),
        ("releasecal", "change_tracking"),
        ("releasecal", "view_auditlog"),
    ],
}

# Permissions of models added after the groups were first created: granted by their own
# data migrations (exceptions 0005, reminders 0003, github_board 0002 and 0006), which cannot come from
# GROUP_PERMISSIONS because migration 0002 reads that and runs before these models exist.
# The release team reads the reminder ledger and retries a failed delivery (the cockpit's
# Retry): the retry action asks for change_delivery.
LATER_GROUP_PERMISSIONS = {
    RELEASE_TEAM: [
        ("exceptions", "view_proposeddecision"),
        ("reminders", "view_delivery"),
        ("reminders", "change_delivery"),
        ("reminders", "view_channel"),
        ("github_board", "view_board"),
        ("github_board", "change_board"),
        ("github_board", "view_boarditem"),
        ("github_board", "view_issuecomment"),
        ("github_board", "change_issuecomment"),
        ("github_board", "view_boardconflict"),
        ("github_board", "change_boardconflict"),
        ("github_board", "view_boardwrite"),
        ("github_board", "change_boardwrite"),
    ],
}

# slug, name, allows_exceptions, is_freeze, ordering
DEFAULT_KINDS = [
    ("release-start", "Start of release cycle", False, False, 10),
    ("prr-freeze", "Production Readiness Freeze", True, True, 20),
    ("enhancements-freeze", "Enhancements Freeze", True, True, 30),
    ("feature-blog-freeze", "Feature Blog Freeze", False, True, 35),
    ("alpha", "Alpha release", False, False, 38),
    ("beta", "Beta release", False, False, 39),
    ("code-freeze", "Code Freeze", True, True, 40),
    ("docs-freeze", "Docs Freeze", True, True, 45),
    ("test-freeze", "Test Freeze", False, True, 50),
    ("rc", "Release candidate", False, False, 60),
    ("ga", "Release (GA)", False, False, 70),
    ("event", "Event", False, False, 80),
    ("other", "Other", False, False, 90),
]

# The request window of each kind, in hours after the freeze closes (the handbook,
# 2025-2026: within 3 days after the PRR, enhancements and code/test freezes; a docs
# freeze request "as soon as possible, within 24 hours"). A kind's default; a release
# may set its own hours per kind (``Release.request_window_hours``).
DEFAULT_REQUEST_WINDOW_HOURS = 72
REQUEST_WINDOW_HOURS = {"docs-freeze": 24}
