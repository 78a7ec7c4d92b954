"""Heads and logs as the ingestion side reports them (sans-io)."""

import json
from typing import Any

import msgspec
import pytest

from adapters.upstream._blocks import HEADER_FIELDS, BadUpstreamData, Header, log_records
from adapters.upstream._logs_query import check_logs_params
from schemas.errors import InvalidParams

HASH = "0x" + "aa" * 32
PARENT = "0x" + "bb" * 32

# A geth newHeads notification's header (types.Header order, a fork field set to null).
GETH_HEADER = (
    b'{"parentHash":"'
    + PARENT.encode()
    + b'","sha3Uncles":"0x1d","miner":"0x00","stateRoot":"0x01",'
    b'"transactionsRoot":"0x02","receiptsRoot":"0x03","logsBloom":"0x00","difficulty":"0x0",'
    b'"number":"0x1b4","gasLimit":"0x1c9c380","gasUsed":"0x0","timestamp":"0x6553f100",'
    b'"extraData":"0x","mixHash":"0x04","nonce":"0x0000000000000000","baseFeePerGas":"0x7",'
    b'"withdrawalsRoot":"0x05","blobGasUsed":"0x0","excessBlobGas":"0x0",'
    b'"parentBeaconBlockRoot":"0x06","requestsHash":null,"hash":"' + HASH.encode() + b'"}'
)


def as_block(header: bytes) -> bytes:
    """The same header as eth_getBlockByNumber(..., false) shows it: other order, block fields."""
    fields = json.loads(header)
    del fields["requestsHash"]  # geth leaves out an absent fork field in blocks
    block = {"number": fields.pop("number"), "hash": fields.pop("hash"), **fields}
    block.update(size="0x220", totalDifficulty="0x0", transactions=[], uncles=[], withdrawals=[])
    return json.dumps(block, indent=1).encode()


def test_a_geth_notification_is_kept_byte_for_byte() -> None:
    header = Header.from_json(GETH_HEADER)
    assert header.json == GETH_HEADER
    assert (header.number, header.hash, header.parent_hash) == (0x1B4, HASH, PARENT)


def test_a_block_projects_to_the_notification() -> None:
    assert Header.from_json(as_block(GETH_HEADER)).json == GETH_HEADER


def test_other_fields_are_kept_after_the_geth_ones() -> None:
    fields = json.loads(GETH_HEADER)
    fields["l1BlockNumber"] = "0x10"
    projected = json.loads(Header.from_json(json.dumps(fields).encode()).json)
    assert list(projected) == [*HEADER_FIELDS, "l1BlockNumber"]


@pytest.mark.parametrize(
    "broken",
    [
        b"[]",
        b'{"hash":"0x1","number":"0x1","parentHash":"0x1"}',
        b'{"hash":"' + HASH.encode() + b'"}',
    ],
)
def test_unusable_headers_are_refused(broken: bytes) -> None:
    with pytest.raises(BadUpstreamData):
        Header.from_json(broken)


def test_logs_get_removed_false_once_and_lowercase_keys() -> None:
    logs: list[dict[str, Any]] = [
        {
            "address": "0xABCDEF0000000000000000000000000000000001",
            "topics": ["0x" + "CC" * 32],
            "data": "0x",
            "blockHash": HASH,
            "logIndex": "0x0",
            "removed": False,
        },
        {"removed": True, "address": "0x" + "00" * 20, "topics": [], "blockHash": HASH},
        {"address": "0x" + "00" * 20, "topics": [], "data": '"removed":false', "blockHash": HASH},
    ]
    records = log_records(msgspec.json.encode(logs), HASH)
    assert records[0].address == "0xabcdef0000000000000000000000000000000001"
    assert records[0].topics == ("0x" + "cc" * 32,)
    for record in records:
        assert record.json.count(b'"removed":false') == 1
        assert b" " not in record.json
    assert json.loads(records[0].json)["address"] == logs[0]["address"]  # the node's spelling


def test_logs_of_another_block_are_refused() -> None:
    other = [{"address": "0x" + "00" * 20, "topics": [], "blockHash": PARENT}]
    with pytest.raises(BadUpstreamData):
        log_records(msgspec.json.encode(other), HASH)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (b"{}", "non-array args"),
        (b"[]", "missing value for required argument 0"),
        (b"[{}, {}]", "too many arguments"),
        (b'["x"]', "filter must be an object"),
        (b'[{"blockHash":"' + HASH.encode() + b'","toBlock":"0x1"}]', "cannot specify both"),
        (b'[{"BLOCKHASH":"' + HASH.encode() + b'","fromblock":"latest"}]', "cannot specify both"),
        (b'[{"address":"0x12"}]', "invalid address"),
        (
            b'[{"topics":[[' + b",".join(b'"0x%064x"' % i for i in range(5001)) + b"]]}]",
            "too many addresses and topics",
        ),
    ],
)
def test_get_logs_params_the_broker_refuses(params: bytes, message: str) -> None:
    with pytest.raises(InvalidParams, match=message):
        check_logs_params(params)


@pytest.mark.parametrize(
    "params",
    [
        b"[{}]",
        b'[{"blockHash":"' + HASH.encode() + b'","fromBlock":null}]',
        b'[{"fromBlock":"0x1","toBlock":"latest","address":["0x' + b"00" * 20 + b'"]}]',
    ],
)
def test_get_logs_params_passed_on(params: bytes) -> None:
    check_logs_params(params)
