"""Where keys come from, and that they never show: not in reprs, errors, summaries or pickles."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from eth_account import Account
from eth_account.hdaccount import key_from_seed, seed_from_mnemonic

from adapters.keyring import DEV_MNEMONIC, KeyLoadError, KeyringAdapter, UserOpConfig
from schemas.errors import RpcError
from tests.adapters.keyring.conftest import ACCOUNT_0, ACCOUNT_1

OTHER_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow"
PASSPHRASE_ENV = "SCOPECAST_TEST_KEYSTORE_PASSPHRASE"


def write_keystore(directory: Path, name: str, key: bytes, passphrase: str) -> str:
    # pbkdf2 with few iterations keeps the test fast; the format is the same v3 keystore.
    keystore = Account.encrypt(key, passphrase, kdf="pbkdf2", iterations=16)
    (directory / name).write_text(json.dumps(keystore))
    return str(Account.from_key(key).address).lower()


def secrets_of(mnemonic: str, count: int) -> list[str]:
    """Every spelling of the keys and words that must never appear in output."""
    seed = seed_from_mnemonic(mnemonic, "")
    keys = [key_from_seed(seed, f"m/44'/60'/0'/0/{i}") for i in range(count)]
    return [mnemonic, *mnemonic.split()[:3], *(k.hex() for k in keys)]


async def test_dev_mnemonic_on_the_hardhat_path() -> None:
    adapter = KeyringAdapter(["eip155:1337"], mnemonic=DEV_MNEMONIC, count=2)
    await adapter.start()
    assert adapter.accounts("eip155:1337") == (ACCOUNT_0, ACCOUNT_1)
    assert adapter.accounts("eip155:1") == ()


def test_no_key_source_is_refused_rather_than_the_public_mnemonic() -> None:
    with pytest.raises(ValueError, match="needs a mnemonic or a keystore_dir"):
        KeyringAdapter(["eip155:1"])
    with pytest.raises(ValueError, match="needs a mnemonic or a keystore_dir"):
        KeyringAdapter.from_options(["eip155:1"], {"count": 3})


async def test_mnemonic_and_count() -> None:
    adapter = KeyringAdapter(["eip155:1"], mnemonic=OTHER_MNEMONIC, count=4)
    await adapter.start()
    accounts = adapter.accounts("eip155:1")
    assert len(accounts) == 4
    assert ACCOUNT_0 not in accounts
    assert all(a == a.lower() and len(a) == 42 for a in accounts)


async def test_bad_mnemonic_error_does_not_quote_it() -> None:
    phrase = "correct horse battery staple " * 3
    adapter = KeyringAdapter(["eip155:1"], mnemonic=phrase)
    with pytest.raises(KeyLoadError) as caught:
        await adapter.start()
    assert "horse" not in str(caught.value)
    assert "horse" not in repr(caught.value)


async def test_keystore_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write_keystore(tmp_path, "UTC--2024-01-01--a", b"\x11" * 32, "hunter2")
    second = write_keystore(tmp_path, "b.json", b"\x22" * 32, "hunter2")
    (tmp_path / "README").write_text("not a keystore")
    monkeypatch.setenv(PASSPHRASE_ENV, "hunter2")
    adapter = KeyringAdapter(["eip155:1"], keystore_dir=tmp_path, passphrase_env=PASSPHRASE_ENV)
    await adapter.start()
    # Keystores only (no dev mnemonic), in file-name order.
    assert adapter.accounts("eip155:1") == (first, second)


async def test_keystore_with_mnemonic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = write_keystore(tmp_path, "k.json", b"\x33" * 32, "pw")
    write_keystore(
        tmp_path,
        "dup.json",
        key_from_seed(seed_from_mnemonic(DEV_MNEMONIC, ""), "m/44'/60'/0'/0/0"),
        "pw",
    )
    monkeypatch.setenv(PASSPHRASE_ENV, "pw")
    adapter = KeyringAdapter(
        ["eip155:1"],
        mnemonic=DEV_MNEMONIC,
        count=2,
        keystore_dir=tmp_path,
        passphrase_env=PASSPHRASE_ENV,
    )
    await adapter.start()
    assert adapter.accounts("eip155:1") == (ACCOUNT_0, ACCOUNT_1, extra)


async def test_wrong_passphrase_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_keystore(tmp_path, "UTC--key", b"\x44" * 32, "right")
    monkeypatch.setenv(PASSPHRASE_ENV, "wrong")
    adapter = KeyringAdapter(["eip155:1"], keystore_dir=tmp_path, passphrase_env=PASSPHRASE_ENV)
    with pytest.raises(KeyLoadError, match="UTC--key") as caught:
        await adapter.start()
    assert "44" * 32 not in repr(caught.value)


async def test_missing_passphrase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PASSPHRASE_ENV, raising=False)
    adapter = KeyringAdapter(["eip155:1"], keystore_dir=tmp_path, passphrase_env=PASSPHRASE_ENV)
    with pytest.raises(KeyLoadError, match=PASSPHRASE_ENV):
        await adapter.start()


async def test_empty_keystore_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSPHRASE_ENV, "pw")
    adapter = KeyringAdapter(["eip155:1"], keystore_dir=tmp_path, passphrase_env=PASSPHRASE_ENV)
    with pytest.raises(KeyLoadError, match="no keys"):
        await adapter.start()


def test_only_eip155_and_solana_chains() -> None:
    with pytest.raises(ValueError, match="eip155"):
        KeyringAdapter(["cosmos:cosmoshub-4"], mnemonic=DEV_MNEMONIC)
    assert KeyringAdapter(["solana:mainnet"], mnemonic=DEV_MNEMONIC).chains() == ["solana:mainnet"]
    with pytest.raises(ValueError, match="eip155"):
        KeyringAdapter(["eip155:01"], mnemonic=DEV_MNEMONIC)


async def test_from_options() -> None:
    adapter = KeyringAdapter.from_options(
        ["eip155:10"],
        {
            "mnemonic": DEV_MNEMONIC,
            "count": 1,
            "userop": {"bundler_url": "http://127.0.0.1:4337", "salt": 3},
        },
    )
    await adapter.start()
    assert adapter.accounts("eip155:10") == (ACCOUNT_0,)
    with pytest.raises(ValueError, match="invalid keyring options"):
        KeyringAdapter.from_options(["eip155:10"], {"mnemonik": "typo"})
    with pytest.raises(ValueError, match=r"userop\.factory"):
        KeyringAdapter.from_options(
            ["eip155:10"], {"mnemonic": DEV_MNEMONIC, "userop": {"factory": "0x1234"}}
        )


def test_userop_config_checks() -> None:
    with pytest.raises(ValueError, match="paymaster_data needs"):
        UserOpConfig(paymaster_data="0xab")
    with pytest.raises(ValueError, match="proxy_creation_code"):
        UserOpConfig(proxy_creation_code="0xabc")
    with pytest.raises(ValueError, match="gas limits"):
        UserOpConfig(call_gas_limit=0)


async def test_no_key_material_in_reprs_summaries_or_errors(scope: str) -> None:
    secrets = secrets_of(DEV_MNEMONIC, 3)
    adapter = KeyringAdapter([scope], mnemonic=DEV_MNEMONIC, count=3)
    seen = [repr(adapter), str(adapter)]
    await adapter.start()
    seen += [repr(adapter), str(adapter), repr(adapter.__dict__)]
    request = adapter.prepare(scope, "personal_sign", ["0x68690a", ACCOUNT_0], [ACCOUNT_0])
    seen += [repr(request), str(request.summary)]
    await adapter.execute(request, _no_reads)
    failures: list[BaseException] = []
    for params in (["0x00", ACCOUNT_1], ["0x00", "0xnot-an-address"], []):
        try:
            adapter.prepare(scope, "personal_sign", params, [ACCOUNT_0])
        except RpcError as exc:
            failures.append(exc)
    assert len(failures) == 3
    seen += [repr(exc) + str(exc) for exc in failures]
    text = "\n".join(seen).lower()
    for secret in secrets:
        assert secret.lower() not in text


async def test_keyring_refuses_to_pickle(keyring: KeyringAdapter) -> None:
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(keyring)


async def _no_reads(method: str, params: list[object]) -> object:
    raise AssertionError("personal_sign reads nothing from the chain")
