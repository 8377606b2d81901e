"""The outbox: what every ledger of messages shares (reminders, schedule notices, and
next the GitHub writes), written once so that no ledger depends on another's transport
and no two ledgers can disagree on a rule.

- ``outbox.ledger``: the machinery, ``Ledger``: the claim, the lease, the backoff, the
  give-up, the rate-limit turn and the 429 rule (a 429 is not a failed attempt); its
  docstring is the interface a ledger plugs into (docs/outbox.md);
- ``outbox.ratelimit``: Slack's posting limit per channel, shared by every worker;
- ``outbox.errors``: ``TransportError`` (what every transport raises: permanent or not,
  rate limited or not, how long the server said to wait), ``backoff_delay`` and
  ``retry_after`` (Retry-After, or GitHub's ``x-ratelimit-reset``, from headers);
- ``outbox.smtp``: email, the transport both ledgers use.
"""
