"""The peers scopecast is measured against, kept minimal but fair (no artificial slowness)."""
