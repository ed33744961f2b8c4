"""``aide-tui status [ROOT]``: what the index holds, without touching it."""

from __future__ import annotations

import argparse
import json

from aide_tui.cli.common import printable, root_arg, setup
from aide_tui.host.served import workspace_status


def cmd_status(args: argparse.Namespace) -> int:
    """Print the index state (``--json``: the contract's object plus extra keys)."""
    given = root_arg(args)
    ready = None if given is None else setup(given, args, new_workspace=False)
    if ready is None:
        return 2
    root, settings = ready
    obj, st = workspace_status(root, settings, use_server=not args.no_server)  # a host answers the same
    if args.json:
        print(json.dumps(obj if obj is not None else st.to_json()))
        return 0
    print(
        f"{printable(str(root))}: {st.state}, {st.files} files, {st.chunks} chunks, "
        f"{st.embedded} embedded [{st.embedder}], last indexed {st.last_indexed or 'never'}"
    )
    if st.extra.get("store") == "milvus":
        x = st.extra
        print(
            f"store: milvus {printable(x['uri'])}, collection {x['collection']}, workspace {x['workspace']}"
        )
    if st.static:
        cover = f"{st.static_missing} chunks without it" if st.static_missing else "every chunk"
        print(f"static tier [{printable(st.static)}]: {cover}")
    elif st.static_missing:
        print(f"static tier: not in the index yet ({st.static_missing} chunks without it)")
    if st.vectors_missing:
        print(f"{st.vectors_missing} vectors still to compute")
    if st.degraded_reason:
        print(f"degraded: {printable(st.degraded_reason)}")
    if st.error:
        print(printable(st.error))
    return 0
