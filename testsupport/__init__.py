"""Helpers shared by the tests (``tests/``) and the benchmarks (``bench/``); not shipped.

* :mod:`testsupport.gateway`: the gateway (``python -m xmrgate serve``) as a child process;
* :mod:`testsupport.postgres`: throwaway PostgreSQL databases;
* :mod:`testsupport.processes`: waits that report what they waited for, ending processes.

The regtest network itself is the product's :mod:`xmrgate.devnet` (``xmrgate dev`` uses it).
"""
