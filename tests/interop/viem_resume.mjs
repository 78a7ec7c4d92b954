// viem's watchBlocks over a webSocket() transport that reconnects, with docs/resume's helper in
// place of the WebSocket class: the connection is cut under it (a TCP relay in this script drops
// every socket), blocks are mined while it is down, and viem must see every block once, in order.
// A second client without the helper is cut the same way, to show what the helper is for.
//
// usage: node viem_resume.mjs '{"ws": URL, "http": URL}'

import net from 'node:net';

import { createPublicClient, defineChain, webSocket } from 'viem';
import WebSocket from 'ws';

import { resumingWebSocket } from '../../docs/resume/resuming-websocket.mjs';
import { httpCall, runScript, until } from './report.mjs';

const MISSED = 5;

/** A TCP relay to `port` whose sockets can all be dropped at once (a network cut). */
async function relay(port) {
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const [a, b] of [[client, upstream], [upstream, client]]) {
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
      sockets.add(a);
      a.on('close', () => sockets.delete(a));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    cut() {
      for (const socket of sockets) socket.destroy();
    },
    close() {
      this.cut();
      server.close();
    },
  };
}

function contiguous(numbers) {
  return numbers.every((n, i) => i === 0 || n === numbers[i - 1] + 1);
}

async function main(report, config) {
  const serverUrl = new URL(config.ws);
  const relayed = await relay(Number(serverUrl.port));
  const url = `ws://127.0.0.1:${relayed.port}${serverUrl.pathname}`;
  const resumes = [];
  const gaps = [];
  const chain = defineChain({
    id: 1337,
    name: 'scopecast dev',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [config.http], webSocket: [url] } },
  });
  const mine = async (n) => {
    for (let i = 0; i < n; i += 1) await httpCall(config.http, 'evm_mine');
    return BigInt(await httpCall(config.http, 'eth_blockNumber'));
  };

  // viem reads globalThis.WebSocket (through isows) when it opens its first socket.
  globalThis.WebSocket = resumingWebSocket(WebSocket, {
    onResumed: (params) => resumes.push(params),
    onGap: (params) => gaps.push(params),
  });
  const reconnect = { attempts: 20, delay: 200 };
  const client = createPublicClient({ chain, transport: webSocket(url, { reconnect, retryCount: 0 }) });
  const seen = [];
  const errors = [];
  const stop = client.watchBlocks({
    onBlock: (block) => seen.push(Number(block.number)),
    onError: (error) => errors.push(error.name),
  });

  report.progress('live heads before the cut');
  // watchBlocks subscribes in the background: mine until its first head arrives.
  const deadline = Date.now() + 10_000;
  while (seen.length === 0 && Date.now() < deadline) {
    await mine(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await until(() => seen.length > 0, 1_000, 'the first head');
  let head = await mine(2);
  await until(() => seen.at(-1) === Number(head), 10_000, `head ${head}`);

  report.progress(`cut the connection, mine ${MISSED} blocks, let viem reconnect`);
  relayed.cut();
  head = await mine(MISSED);
  await until(() => resumes.length > 0 || gaps.length > 0, 15_000, 'the resume');
  await until(() => seen.at(-1) === Number(head), 10_000, `head ${head} after the resume`);
  head = await mine(2);
  await until(() => seen.at(-1) === Number(head), 10_000, `live head ${head}`);

  report.observe('seen', seen);
  report.observe('resumes', resumes);
  report.observe('errors', errors);
  report.equal(gaps, [], 'the server filled the gap');
  report.equal(resumes.length, 1, 'one resume');
  report.check(resumes[0]?.replayed >= MISSED, 'the blocks mined while cut were replayed', resumes);
  report.check(new Set(seen).size === seen.length, 'no block twice', seen);
  report.check(contiguous(seen), 'no block missing, every block in order', seen);
  stop();
  relayed.close();
}

runScript('viem_resume', ['viem', 'ws'], main, { deadlineMs: 60_000 });
