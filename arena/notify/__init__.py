"""Notifications: owners' webhooks, the events they hear, and sending them (issue 21 §4).

:mod:`.events` writes an event's deliveries in the transaction of the change it reports and
enqueues them after the commit; :mod:`.webhooks` is the owner's side (register, list, delete,
"send test event", the delivery log); :mod:`.delivery` is the job's side (one signed attempt
through the SSRF guard, the back-off, the clock's sweep).  The payload and how to verify it:
docs/notifications.md.
"""
