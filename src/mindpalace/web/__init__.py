"""What every web front end shares: who is calling, and the guards at the door.

``mindpalace serve`` (``server``: REST, MCP over HTTP, the inspector at
``/``) and ``mindpalace ui`` (``ui``: the inspector of a local palace) both
stand on these modules, and this package imports neither of them, so the
two front ends never lean on each other:

``identity`` (bearer tokens to agents, one palace view per caller),
``hosts`` (loopback host names and same-origin checks), ``body`` (the
request body ceiling), ``limits`` (the limits on clients and their
defaults, read by the command line without the ``server`` extra) and
``guard`` (uvicorn's HTTP protocol with request deadlines and a connection
cap). All but ``identity`` and ``limits`` need the ``server`` extra.
"""
