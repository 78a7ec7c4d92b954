"""The keyring account adapter: keys held by scopecast sign SPEC area B's account methods.

``personal_sign``, ``eth_signTransaction`` and ``eth_signTypedData_v4`` sign with the account's
own key; the ERC-4337 methods build and sign user operations for a SimpleAccount (EntryPoint v0.6)
owned by that key. See ``docs/account-methods.md`` for one example per method.
"""

from adapters.keyring._adapter import METHODS as METHODS
from adapters.keyring._adapter import KeyringAdapter as KeyringAdapter
from adapters.keyring._config import ENTRY_POINT_V06 as ENTRY_POINT_V06
from adapters.keyring._config import SIMPLE_ACCOUNT_FACTORY_V06 as SIMPLE_ACCOUNT_FACTORY_V06
from adapters.keyring._config import KeyringOptions as KeyringOptions
from adapters.keyring._config import UserOpConfig as UserOpConfig
from adapters.keyring._keys import DEV_MNEMONIC as DEV_MNEMONIC
from adapters.keyring._keys import KeyLoadError as KeyLoadError
