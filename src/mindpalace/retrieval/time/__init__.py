"""Time in recall: the dates a text names, and the prior that lifts the
memories of the time a query asks about.

Pure functions but for the event look-ups, which read the store under the
caller's scope. ``intervals`` (half-open intervals and calendar arithmetic,
the shared vocabulary) under ``tense`` (which way a bare weekday points),
``scan`` (the parts of a text that can hold a time expression) and
``temporal`` (time expressions found and resolved against a reference),
then ``anchors`` (a time named by an event the palace knows) and ``prior``
(the time prior of the recall pipeline: ``read_query``, ``settle``,
``lift``).
"""
