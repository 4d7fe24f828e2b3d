"""BTCPay Server's Greenfield API v1, the pure part (docs/greenfield.md).

A second facade over the same ledger: a Greenfield invoice IS an xmrgate payment request.
These modules translate between Greenfield's words and ours, with no I/O:

- ``errors``: the 422 list and the ``{"code","message"}`` bodies, and the one field error;
- ``amounts``: decimal strings both ways (never an exponent);
- ``payment_methods``: the spellings of ``XMR-CHAIN``;
- ``speed``: ``speedPolicy`` and the confirmations it asks for;
- ``payments``: payment ids ``txid#account#index``, a payment's status and its JSON;
- ``states``: BTCPay's ``status``/``additionalStatus`` derived from our states, and marking;
- ``permissions``: Greenfield permission names, their hierarchy, and our scopes;
- ``events``: webhook event types, the subscription filter, which events a change makes;
- ``deliveries``: the body of one delivery try, its bytes and its ``BTCPay-Sig``.

Nothing is re-exported here: import the module that does the job.
"""
