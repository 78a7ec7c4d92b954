"""Fork schedules: geth's chain config mapped onto py-evm's block-number VM configuration.

py-evm activates forks by block number only. Block-number forks map directly; the merge is placed
at the first block whose parent reached the terminal total difficulty; timestamp forks (Shanghai,
Cancun, Prague) at the first block whose timestamp reaches the fork time, found by scanning the
headers of the chain being imported. Pre-merge VMs run without proof-of-work checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from eth.abc import VirtualMachineAPI
from eth.consensus.noproof import NoProofConsensus
from eth.vm.forks.arrow_glacier import ArrowGlacierVM
from eth.vm.forks.berlin import BerlinVM
from eth.vm.forks.byzantium import ByzantiumVM
from eth.vm.forks.cancun import CancunVM
from eth.vm.forks.constantinople import ConstantinopleVM
from eth.vm.forks.frontier import FrontierVM
from eth.vm.forks.gray_glacier import GrayGlacierVM
from eth.vm.forks.homestead import HomesteadVM
from eth.vm.forks.istanbul import IstanbulVM
from eth.vm.forks.london import LondonVM
from eth.vm.forks.muir_glacier import MuirGlacierVM
from eth.vm.forks.paris import ParisVM
from eth.vm.forks.petersburg import PetersburgVM
from eth.vm.forks.prague import PragueVM
from eth.vm.forks.shanghai import ShanghaiVM
from eth.vm.forks.spurious_dragon import SpuriousDragonVM
from eth.vm.forks.tangerine_whistle import TangerineWhistleVM

VMClass = type[VirtualMachineAPI]

#: geth config keys of block-number forks, oldest first.
BLOCK_FORKS: Final[tuple[tuple[str, VMClass], ...]] = (
    ("homesteadBlock", HomesteadVM),
    ("eip150Block", TangerineWhistleVM),
    ("eip158Block", SpuriousDragonVM),
    ("byzantiumBlock", ByzantiumVM),
    ("constantinopleBlock", ConstantinopleVM),
    ("petersburgBlock", PetersburgVM),
    ("istanbulBlock", IstanbulVM),
    ("muirGlacierBlock", MuirGlacierVM),
    ("berlinBlock", BerlinVM),
    ("londonBlock", LondonVM),
    ("arrowGlacierBlock", ArrowGlacierVM),
    ("grayGlacierBlock", GrayGlacierVM),
)
#: geth config keys of timestamp forks, oldest first.
TIME_FORKS: Final[tuple[tuple[str, VMClass], ...]] = (
    ("shanghaiTime", ShanghaiVM),
    ("cancunTime", CancunVM),
    ("pragueTime", PragueVM),
)
UNSUPPORTED_FORKS: Final = ("osakaTime", "verkleTime", "bpo1Time")

#: EIP-4844 / EIP-7691 blob base fee update fractions, used unless the config's blobSchedule says.
DEFAULT_BLOB_FRACTIONS: Final[dict[str, int]] = {"cancun": 3_338_477, "prague": 5_007_716}


class ForkScheduleError(ValueError):
    """The chain config asks for something py-evm cannot run."""


@dataclass(frozen=True, slots=True)
class HeaderSummary:
    """What the schedule needs from each imported header."""

    number: int
    timestamp: int
    difficulty: int


@dataclass(frozen=True, slots=True)
class ForkSchedule:
    """The VM configuration of a chain and its blob fee parameters."""

    vm_configuration: tuple[tuple[int, VMClass], ...]
    blob_fractions: Mapping[str, int]

    def blob_fee_fraction(self, vm_class: VMClass) -> int | None:
        """The blob base fee update fraction in force for blocks run by ``vm_class``."""
        if issubclass(vm_class, PragueVM):
            return self.blob_fractions["prague"]
        if issubclass(vm_class, CancunVM):
            return self.blob_fractions["cancun"]
        return None


def dev_schedule() -> ForkSchedule:
    """The dev chain: the newest fork py-evm supports, from genesis."""
    return ForkSchedule(((0, PragueVM),), dict(DEFAULT_BLOB_FRACTIONS))


def _blob_fractions(config: Mapping[str, Any]) -> dict[str, int]:
    fractions = dict(DEFAULT_BLOB_FRACTIONS)
    for fork, entry in (config.get("blobSchedule") or {}).items():
        if fork in fractions and "baseFeeUpdateFraction" in entry:
            fractions[fork] = int(entry["baseFeeUpdateFraction"])
    return fractions


def _merge_block(
    config: Mapping[str, Any], genesis_difficulty: int, headers: Sequence[HeaderSummary]
) -> int | None:
    ttd = config.get("terminalTotalDifficulty")
    if ttd is None:
        return None
    ttd = int(ttd)
    total = genesis_difficulty
    if total >= ttd:
        return 1 if genesis_difficulty else 0
    for header in headers:
        if total >= ttd:  # the parent reached the terminal difficulty: this block is post-merge
            return header.number
        total += header.difficulty
    return headers[-1].number + 1 if headers else 1


def _first_block_at(timestamp: int, genesis_time: int, headers: Sequence[HeaderSummary]) -> int:
    if genesis_time >= timestamp:
        return 0
    for header in headers:
        if header.timestamp >= timestamp:
            return header.number
    raise LookupError


def schedule_from_geth_config(
    config: Mapping[str, Any],
    *,
    genesis_difficulty: int,
    genesis_time: int,
    headers: Sequence[HeaderSummary],
) -> ForkSchedule:
    """The py-evm fork schedule for a geth ``config`` and the headers of the chain to import.

    A timestamp fork that no imported header reaches is left out: later blocks stay on the fork
    before it.
    """
    for key in UNSUPPORTED_FORKS:
        if config.get(key) is not None:
            raise ForkScheduleError(f"{key} is not supported by py-evm")
    if config.get("daoForkSupport"):
        raise ForkScheduleError("daoForkSupport is not supported")
    forks: list[tuple[int, VMClass]] = [(0, FrontierVM)]
    for key, vm_class in BLOCK_FORKS:
        if config.get(key) is not None:
            block = int(config[key])
            if vm_class is HomesteadVM:
                vm_class = HomesteadVM.configure(support_dao_fork=False)
            forks.append((block, vm_class))
    merge = _merge_block(config, genesis_difficulty, headers)
    if merge is not None:
        forks.append((merge, ParisVM))
    for key, vm_class in TIME_FORKS:
        if config.get(key) is None:
            continue
        try:
            forks.append((_first_block_at(int(config[key]), genesis_time, headers), vm_class))
        except LookupError:
            break
    by_block: dict[int, VMClass] = {}
    latest = -1
    for block, vm_class in forks:
        if block < latest:
            raise ForkScheduleError(f"{vm_class.__name__} activates before an older fork")
        latest = block
        by_block[block] = vm_class  # several forks at one block: the newest wins
    configuration = tuple(
        (block, vm_class if issubclass(vm_class, ParisVM) else _without_proof(vm_class))
        for block, vm_class in sorted(by_block.items())
    )
    return ForkSchedule(configuration, _blob_fractions(config))


def _without_proof(vm_class: VMClass) -> VMClass:
    # Imported PoW blocks are trusted for their seal; everything else is validated.
    return vm_class.configure(consensus_class=NoProofConsensus)
