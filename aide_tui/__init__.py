"""aide-tui: offline code search for the terminal."""

import os as _os

# One BLAS thread per process: with two threads numpy collapses under load from other processes,
# and the UI thread must stay free. Must run before numpy is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
