"""Alembic environment: migrations always run on the connection handed in by ``migrate()``.

``target_metadata`` is the tables of ``tables.py``, so autogenerate (and
``alembic check``) compare the database with them.
"""

from alembic import context

from xmrgate.adapters.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    compare_server_default=True,
)
with context.begin_transaction():
    context.run_migrations()
