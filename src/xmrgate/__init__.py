"""xmrgate: a self-hosted Monero payment gateway, MoneroPay v2 compatible."""

__version__ = "0.1.0"
