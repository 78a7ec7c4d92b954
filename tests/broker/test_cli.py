"""The ``scopecast`` command as a real process: endpoints printed, refusals, graceful SIGTERM."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from broker.cli import build_broker, parser
from broker.config import Config, ConfigError, load_config, url_port_error
from broker.transport import frames
from tests.adapters.upstream.e2e import FIXTURES, needs_fixtures
from tests.support.rawws import RawWebSocket

SCOPECAST = str(Path(sys.executable).with_name("scopecast"))


async def read_until(stream: trio.abc.ReceiveStream, pattern: bytes) -> bytes:
    seen = b""
    while not re.search(pattern, seen):
        chunk = await stream.receive_some(4096)
        assert chunk, f"process ended before printing {pattern!r}: {seen.decode(errors='replace')}"
        seen += chunk
    return seen


async def test_serve_prints_endpoints_and_drains_on_sigterm() -> None:
    with trio.fail_after(60):
        process = await trio.lowlevel.open_process(
            [SCOPECAST, "serve", "--port", "0", "--block-time", "0"], stdout=subprocess.PIPE
        )
        try:
            assert process.stdout is not None
            banner = await read_until(process.stdout, rb"dev API key: dev")
            port = int(re.search(rb"listening on http://127\.0\.0\.1:(\d+)", banner).group(1))  # type: ignore[union-attr]
            assert f"POST http://127.0.0.1:{port}/v3/dev".encode() in banner
            assert f"ws://127.0.0.1:{port}/ws/v3/dev".encode() in banner
            # The Solana dev network beside the dev chain, under its own name.
            assert re.search(rb"network solana \(solana:[1-9A-HJ-NP-Za-km-z]{32}\)", banner)
            assert f"POST http://127.0.0.1:{port}/solana/v3/dev".encode() in banner
            assert f"ws://127.0.0.1:{port}/solana/ws/v3/dev".encode() in banner
            assert b"Bearer dev; the dev token, for loopback only" in banner
            assert b"approval   auto: sessions and signatures are granted at once" in banner
            conn = await RawWebSocket.connect(port, "/ws/v3/dev")
            process.send_signal(signal.SIGTERM)
            while (frame := await conn.frame()) is not None and frame[0] != 0x8:
                pass
            assert conn.close_code == frames.CLOSE_SERVICE_RESTART  # 1012: resume elsewhere
            conn.close()
            assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_refuses_to_bind_beyond_loopback_with_the_dev_key() -> None:
    with trio.fail_after(30):
        result = await trio.run_process(
            [SCOPECAST, "serve", "--host", "0.0.0.0", "--port", "0"],
            capture_stderr=True,
            check=False,
        )
    assert result.returncode != 0
    assert b"refusing to bind 0.0.0.0" in result.stderr


async def test_help_names_the_deployment_settings() -> None:
    result = await trio.run_process([SCOPECAST, "serve", "--help"], capture_stdout=True)
    help_text = result.stdout.decode()
    for setting in ("--api-key", "--admin-token", "--redis-url", "--config", "--approval"):
        assert setting in help_text
    assert "--role {all,web}" in help_text
    # the settings text says what --role web needs, and names the README sections to read
    assert re.search(r"--role web\s.*needs --redis-url and\s+upstream networks", help_text, re.S)
    assert "[server] stream_maxlen" in help_text
    for section in ('"Limits"', '"Several processes (Redis)"', '"Upstream nodes (the `upstream`'):
        assert section in help_text
    worker = await trio.run_process([SCOPECAST, "worker", "--help"], capture_stdout=True)
    assert b'README "Several processes (Redis)"' in worker.stdout
    assert b"docs/" not in result.stdout + worker.stdout, "no page that does not exist"


def test_chain_import_flags_with_configured_networks_are_an_error() -> None:
    config = Config(networks={"local": {"chain": "eip155:1337", "adapter": "devchain"}})
    for flags in (["--genesis", "g.json"], ["--chain-file", "c.rlp", "--forkchoice", "f.json"]):
        args = parser().parse_args(["serve", "--port", "0", *flags])
        with pytest.raises(ConfigError, match="only for the embedded dev chain") as caught:
            build_broker(args, config)
        assert flags[0] in str(caught.value)
        assert "devchain network's table" in str(caught.value)


def test_chain_file_without_genesis_is_an_error() -> None:
    args = parser().parse_args(["serve", "--port", "0", "--chain-file", "c.rlp"])
    with pytest.raises(ConfigError, match="--chain-file: only with --genesis"):
        build_broker(args, Config())


async def test_a_misspelt_devchain_option_stops_serve_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "scopecast.toml"
    config.write_text('[networks.local]\nchain = "eip155:1337"\nblock_tme = 2\n')
    with trio.fail_after(30):
        result = await trio.run_process(
            [SCOPECAST, "serve", "--port", "0", "--config", str(config)],
            capture_stderr=True,
            check=False,
        )
    assert result.returncode != 0
    assert (
        b"scopecast: networks.local (devchain adapter): Object contains unknown field `block_tme`"
        in result.stderr
    ), result.stderr


async def mistake(*argv: str) -> bytes:
    """Run ``scopecast argv``: it must fail with status 2 and one line on stderr."""
    with trio.fail_after(60):
        result = await trio.run_process([SCOPECAST, *argv], capture_stderr=True, check=False)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, result.stderr.decode()
    assert "Traceback" not in lines[0]
    return result.stderr


async def test_operator_mistakes_are_one_line_and_status_2(tmp_path: Path) -> None:
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        stderr = await mistake("serve", "--port", str(port))
        assert f"cannot listen on 127.0.0.1:{port}: the address is in use".encode() in stderr
        assert b"--port" in stderr
    assert b"No such file or directory" in await mistake("serve", "--genesis", "/no/such.json")
    garbage = tmp_path / "genesis.json"
    garbage.write_text("not json")
    assert b"not a geth genesis file" in await mistake("serve", "--genesis", str(garbage))
    config = tmp_path / "scopecast.toml"
    config.write_text('[networks.x]\nchain = "eip155:5"\nadapter = "nosuch"\n')
    stderr = await mistake("serve", "--config", str(config))
    assert b"no adapter named 'nosuch'; installed: devchain" in stderr
    for argv in (("--log-level", "verbose", "serve"), ("serve", "--log-level", "verbose")):
        assert b"invalid log level 'verbose'" in await mistake(*argv)
    stderr = await mistake("serve", "--host", "0.0.0.0", "--api-key", "k", "--approval", "manual")
    assert b'approval = "manual" on 0.0.0.0 needs the operator API' in stderr
    assert b"admin_token" in stderr
    assert b"refusing to bind 0.0.0.0" in await mistake("serve", "--host", "0.0.0.0")


def test_the_log_level_goes_before_or_after_the_command_and_version_is_known() -> None:
    assert parser().parse_args(["--log-level", "warning", "serve"]).log_level == "WARNING"
    assert parser().parse_args(["serve", "--log-level", "debug"]).log_level == "DEBUG"
    assert parser().parse_args(["serve"]).log_level == "INFO"
    version = subprocess.run([SCOPECAST, "--version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"scopecast \d+\.\d+\.\d+\n", version.stdout)


@needs_fixtures
async def test_a_missing_chain_file_is_one_line(tmp_path: Path) -> None:
    genesis = str(FIXTURES / "genesis.json")
    missing = str(tmp_path / "no-such.rlp")
    stderr = await mistake("serve", "--port", "0", "--genesis", genesis, "--chain-file", missing)
    assert f"{missing}: No such file or directory".encode() in stderr


async def test_a_port_outside_0_to_65535_is_refused_in_one_line(tmp_path: Path) -> None:
    # 70000 would otherwise be served on 70000 % 65536 = 4464, quietly.
    for argv in (("serve", "--port", "70000"), ("serve", "--port", "-5")):
        stderr = await mistake(*argv)
        assert b"outside the range 0..65535" in stderr, stderr
    stderr = await mistake("worker", "--metrics-port", "65536")
    assert b"argument --metrics-port: port 65536 is outside the range 0..65535" in stderr
    config = tmp_path / "scopecast.toml"
    config.write_text("[server]\nport = 70000\n")
    stderr = await mistake("serve", "--config", str(config))
    assert b"[server] port: port 70000 is outside the range 0..65535" in stderr


def test_every_other_port_setting_is_checked(tmp_path: Path) -> None:
    config = tmp_path / "scopecast.toml"
    config.write_text('[server]\nredis_url = "redis://:secret@127.0.0.1:99999/0"\n')
    with pytest.raises(ConfigError, match=r"\[server\] redis_url: the port in") as caught:
        load_config(config)
    assert "outside the range 0..65535" in str(caught.value)
    assert "secret" not in str(caught.value)  # a URL's password never reaches the message
    upstream = {
        "chain": "eip155:1",
        "upstreams": [{"http": "http://127.0.0.1:8545", "ws": "ws://127.0.0.1:123456"}],
    }
    args = parser().parse_args(["serve"])
    with pytest.raises(
        ConfigError, match=r"ws://127\.0\.0\.1:\.\.\. is outside the range 0\.\.65535"
    ):
        build_broker(args, Config(networks={"main": upstream}))
    args = parser().parse_args(["serve", "--redis-url", "redis://127.0.0.1:65536"])
    with pytest.raises(
        ConfigError, match=r"the Redis URL: the port in redis://127\.0\.0\.1:\.\.\."
    ):
        build_broker(args, Config())


def test_a_sentinel_url_has_each_of_its_ports_checked() -> None:
    """``redis+sentinel://`` names several ``host:port`` pairs: each is checked, none refused
    for the commas between them (found when the Sentinel tests met the port check)."""
    good = "redis+sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/0"
    assert url_port_error(good, "redis_url") is None
    bad = "redis+sentinel://:pw@127.0.0.1:26379,10.0.0.2:99999/mymaster"
    problem = url_port_error(bad, "redis_url")
    assert problem is not None
    assert "redis+sentinel://10.0.0.2:..." in problem
    assert "pw" not in problem


def test_an_enum_setting_names_its_choices(tmp_path: Path) -> None:
    config = tmp_path / "scopecast.toml"
    config.write_text('[server]\napproval = "manul"\nlimits_when_redis_down = "open"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value).endswith(
        "Invalid enum value 'manul' - at `$.server.approval` (choose from 'auto', 'manual')"
    ), caught.value
