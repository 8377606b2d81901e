"""The default milestone kinds, from the Kubernetes release process.

A plain constant so the data migration and ``milestone_kinds_ensure`` share it.
"""

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
