"""Benchmarks of xmrgate against a real regtest network and a real PostgreSQL.

Run all of them with ``python -m bench`` (or ``make bench``) from the repository root;
``python -m bench --help`` lists the options. One module per benchmark:

- ``bench.tick``: sync tick time as stored history grows.
- ``bench.read``: ``GET /receive/:address`` throughput and latency.
- ``bench.create``: ``POST /receive`` rate against the wallet's own ``create_address``.
- ``bench.callbacks``: block-to-callback delay and callback delivery rate.

Peak RSS of every gateway process started is reported too. Shared helpers live in
``bench.common``; the load generator (``bench.loadgen``) and the callback receiver
(``bench.receiver``) run as separate processes so that they do not share the
measuring process's interpreter lock.
"""
