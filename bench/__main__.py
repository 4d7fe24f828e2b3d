"""``python -m bench``: run the benchmarks and print a table of figures and targets.

Starts one regtest network (``xmrgate.devnet``) for the whole run; each benchmark
makes its own wallet-rpc, PostgreSQL database and gateway process and ends or drops
them when it finishes, however it finishes. The run itself is ``bench/runner.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bench import (
    all_stores_soak,
    callbacks,
    create,
    greenfield,
    greenfield_idle,
    greenfield_latency,
    read,
    runner,
    stores,
    tick,
)

BENCHMARKS: dict[str, runner.Benchmark] = {
    tick.NAME: tick.run,
    read.NAME: read.run,
    create.NAME: create.run,
    callbacks.NAME: callbacks.run,
    stores.NAME: stores.run,
    greenfield.NAME: greenfield.run,
    greenfield_idle.NAME: greenfield_idle.run,
    greenfield_latency.NAME: greenfield_latency.run,
    all_stores_soak.NAME: all_stores_soak.run,
}
# Run only when named in --only (stores ~10 min on its own, also ``python -m bench.stores``;
# greenfield also ``python -m bench.greenfield``, greenfield-idle
# ``python -m bench.greenfield_idle``; all-stores-soak runs for minutes, 5 by default,
# also ``python -m bench.all_stores_soak --minutes N``).
OPT_IN = {
    stores.NAME,
    greenfield.NAME,
    greenfield_idle.NAME,
    greenfield_latency.NAME,
    all_stores_soak.NAME,
}


def main(argv: Sequence[str]) -> int:
    """Run the selected benchmarks; return the process exit code."""
    return runner.main(argv, BENCHMARKS, OPT_IN)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
