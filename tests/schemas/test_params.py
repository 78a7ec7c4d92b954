"""Params Structs at the door (``schemas.params``): geth's texts for positional params, and each
mistake located in the member it concerns."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from schemas.errors import InvalidParams
from schemas.params import Mistake, decode_named, decode_positional, positional_count


class _Two(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    name: str
    options: dict[str, int] | None = None


_two = msgspec.json.Decoder(_Two)


class _Inner(msgspec.Struct):
    method: Annotated[str, msgspec.Meta(min_length=1)]


class _Named(msgspec.Struct, forbid_unknown_fields=True):
    scope: str
    request: _Inner
    names: list[str] = []


_named = msgspec.json.Decoder(_Named)


@pytest.mark.parametrize("raw", [b"", b" null ", b"[]", None, []])
def test_no_params_are_no_arguments(raw: bytes | list[Any] | None) -> None:
    with pytest.raises(InvalidParams, match=r"\Amissing value for required argument 0\Z"):
        decode_positional(raw, _two)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"name":"a"}', "non-array args"),
        (b'"a"', "non-array args"),
        (b'["a", null, 3]', "too many arguments, want at most 2"),
        (b"[1]", "invalid argument 0: expected `str`, got `int`"),
        (b'["a", {"x": "y"}]', "invalid argument 1: [...]: expected `int`, got `str`"),
        (b'["a", 5]', "invalid argument 1: expected `object | null`, got `int`"),
    ],
)
def test_positional_params_are_refused_with_geths_texts(raw: bytes, message: str) -> None:
    for given in (raw, msgspec.json.decode(raw)):  # their JSON, or the value it decodes to
        with pytest.raises(InvalidParams) as caught:
            decode_positional(given, _two)
        assert caught.value.message == message
        assert caught.value.code == -32602


def test_positional_params_decode_with_their_defaults() -> None:
    assert decode_positional(msgspec.Raw(b' ["a"] '), _two) == _Two("a")
    assert decode_positional(b'["a", {"x": 1}]', _two) == _Two("a", {"x": 1})


def test_a_count_check_of_a_decoded_array() -> None:
    positional_count([1], 1, 2)
    with pytest.raises(InvalidParams, match=r"\Amissing value for required argument 1\Z"):
        positional_count([1], 2, 2)
    with pytest.raises(InvalidParams, match=r"\Atoo many arguments, want at most 1\Z"):
        positional_count([1, 2], 1, 1)


def _explained(value: Any) -> Mistake:
    found: list[Mistake] = []

    def explain(mistake: Mistake) -> InvalidParams:
        found.append(mistake)
        return InvalidParams(mistake.text)

    with pytest.raises(InvalidParams):
        decode_named(value, _named, explain)
    (mistake,) = found
    return mistake


@pytest.mark.parametrize(
    ("value", "path", "kind"),
    [
        ([], (), "invalid"),
        ({"request": {"method": "m"}}, ("scope",), "missing"),
        ({"scope": 1, "request": {"method": "m"}}, ("scope",), "invalid"),
        ({"scope": "s", "request": {}}, ("request", "method"), "missing"),
        ({"scope": "s", "request": {"method": ""}}, ("request", "method"), "invalid"),
        ({"scope": "s", "request": {"method": "m"}, "names": ["a", 2]}, ("names", 1), "invalid"),
        ({"scope": "s", "request": {"method": "m"}, "other": 1}, ("other",), "unknown"),
    ],
)
def test_a_mistake_names_its_member(value: Any, path: tuple[Any, ...], kind: str) -> None:
    for given in (value, msgspec.json.encode(value)):  # a decoded value, or its JSON
        mistake = _explained(given)
        assert (mistake.path, mistake.kind) == (path, kind)
        assert mistake.member == (path[0] if path and isinstance(path[0], str) else None)


def test_a_mistake_reads_as_code_writes_its_path() -> None:
    mistake = _explained({"scope": "s", "request": {"method": "m"}, "names": [None]})
    assert mistake.where == "names[0]"
    assert mistake.clause == "expected `str`, got `null`"


def test_named_params_that_are_not_json() -> None:
    with pytest.raises(InvalidParams, match="params are not JSON"):
        decode_named(b"{", _named, lambda mistake: InvalidParams(mistake.text))
