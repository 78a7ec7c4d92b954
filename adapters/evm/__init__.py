"""What every EVM chain adapter shares (the EVM chain family)."""
