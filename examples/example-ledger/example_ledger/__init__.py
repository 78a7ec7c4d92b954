"""A minimal chain adapter for scopecast, as a third party writes one: see ``adapter.py``."""

from example_ledger.adapter import LedgerAdapter as LedgerAdapter
