"""One host per workspace: the process that indexes a workspace also answers on its socket.

Whichever front end (the app, ``serve``, ``mcp``, the CLI's background indexer) gets the workspace's host
lock first runs the indexing service and the file watcher and answers the workspace protocol
(``/status``, ``/search``, ``/reindex``, ``/events``) on a private Unix socket. Every other front end on
that workspace attaches to it: it searches the versions the host commits, shows the host's progress and
asks it to reindex; when the host goes away, one of them takes over.
"""
