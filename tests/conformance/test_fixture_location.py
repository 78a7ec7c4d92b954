"""Where the conformance fixtures are read: the variable's folder, else the one beside the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.conformance import BESIDE, ENV, find_fixtures


def test_the_variable_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("genesis.json", "chain.rlp", "headfcu.json"):
        (tmp_path / name).write_text("{}")
    monkeypatch.setenv(ENV, str(tmp_path))
    assert find_fixtures() == (tmp_path.resolve(), True)


def test_a_variable_naming_a_folder_without_the_chain_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "genesis.json").write_text("{}")
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(RuntimeError, match=r"no chain\.rlp, headfcu\.json there"):
        find_fixtures()


def test_unset_it_reads_the_shared_folder_when_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    folder, found = find_fixtures()
    assert folder == BESIDE
    assert found == (BESIDE / "chain.rlp").is_file()
