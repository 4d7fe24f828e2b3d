"""Helpers shared by the tests (``tests/``) and the benchmarks (``bench/``); not shipped.

* :mod:`testsupport.gateway`: the gateway (``python -m xmrgate serve``) as a child process;
* :mod:`testsupport.postgres`: throwaway PostgreSQL databases;
* :mod:`testsupport.processes`: waits that report what they waited for, ending processes;
* :mod:`testsupport.browser`: headless Chromium and the waits and clicks of browser tests;
* :mod:`testsupport.served_app`: an ASGI app served on loopback in a thread, for a browser;
* :mod:`testsupport.page_shots`: screenshots on a phone and a desktop, light and dark;
* :mod:`testsupport.admin_page`: helpers of the dashboard's browser tests.

The regtest network itself is the product's :mod:`xmrgate.devnet` (``xmrgate dev`` uses it).
"""
