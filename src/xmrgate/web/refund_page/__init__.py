"""The customer's refund claim page, ``/refund/{token}`` (``docs/refunds.md``).

``routes.py`` serves it (``create_app`` mounts it beside the checkout), ``page.py``
renders it in the checkout's style; ``web/limits.py`` bounds a flood of claims and
``web/form_origin.py`` refuses a form posted from another site.
"""
