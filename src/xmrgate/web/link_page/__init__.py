"""The public page of a payment link, ``/l/{slug}`` (``docs/links.md``).

``routes.py`` serves it (``create_app`` mounts it beside the checkout), ``page.py``
renders it in the checkout's style; ``web/limits.py`` bounds a flood of "Pay".
"""
