"""How many examples the expensive Hypothesis property tests run.

Each such test states its full number (``examples(200)``), which ``make test`` (CI) and a
plain ``pytest`` run. ``make unit``, what developers run between edits, selects the
``dev`` profile (``--hypothesis-profile=dev``, registered in ``tests/conftest.py``):
there they run a quarter of it. Hypothesis loads the profile before the test modules
are imported, so the number is fixed when the module's ``settings(...)`` is made.
"""

from __future__ import annotations

from hypothesis import settings

#: The profile of ``make unit``; it changes nothing but :func:`examples`.
DEV_PROFILE = "dev"
#: Under ``dev``, the expensive property tests run 1/DEV_SHARE of their examples.
DEV_SHARE = 4


def examples(full: int) -> int:
    """``full``, or under the ``dev`` profile a quarter of it (at least 10)."""
    if settings.get_current_profile_name() == DEV_PROFILE:
        return max(10, full // DEV_SHARE)
    return full
