"""Decoding an adapter's ``[networks.<name>]`` table into its typed options (shared by adapters)."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from adapters.base import NetworkSpec
from schemas.errors import ConfigError

OptionsT = TypeVar("OptionsT", bound=msgspec.Struct)


def decode_options(spec: NetworkSpec, options_type: type[OptionsT], adapter: str) -> OptionsT:
    """``spec.options`` as ``options_type``; a :class:`ConfigError` naming the network and the
    ``adapter`` otherwise (an unknown key, a wrong type, or a check of the Struct failing)."""
    try:
        return msgspec.convert(dict(spec.options), options_type)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"networks.{spec.name} ({adapter} adapter): {exc}") from exc
