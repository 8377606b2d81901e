"""The outbox: what every ledger of messages shares (reminders, schedule notices, and
next the GitHub writes), written once so that no ledger depends on another's transport.

- ``outbox.errors``: ``TransportError`` (what every transport raises: permanent or not,
  rate limited or not, how long the server said to wait), ``backoff_delay`` and
  ``retry_after`` (Retry-After, or GitHub's ``x-ratelimit-reset``, from headers);
- ``outbox.smtp``: email, the transport both ledgers use.
"""
