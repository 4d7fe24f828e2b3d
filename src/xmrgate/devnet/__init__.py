"""A throwaway Monero regtest network made of real processes (``xmrgate dev``, tests, bench).

Modules, by job:

* :mod:`~xmrgate.devnet.network`: :class:`Devnet`, starting monerod and the wallet-rpcs,
  stopping them by PID, the state file for other processes;
* :mod:`~xmrgate.devnet.chain`: daemon calls, mining, paying from the funder wallet;
* :mod:`~xmrgate.devnet.rpc`: JSON-RPC calls and :class:`WalletRpc`, one wallet-rpc process;
* :mod:`~xmrgate.devnet.processes`: free ports, spawning, ending by PID, log tails;
* :mod:`~xmrgate.devnet.errors`: :class:`DevnetError`.
"""

from xmrgate.devnet.chain import SAFE_RCT_OUTPUTS
from xmrgate.devnet.errors import DevnetError
from xmrgate.devnet.network import Devnet
from xmrgate.devnet.processes import free_port
from xmrgate.devnet.rpc import WalletRpc

__all__ = ["SAFE_RCT_OUTPUTS", "Devnet", "DevnetError", "WalletRpc", "free_port"]
