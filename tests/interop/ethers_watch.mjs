// ethers v6 against scopecast's WebSocket: a WebSocketProvider listens for blocks and for the demo
// token's Transfer logs (both eth_subscribe underneath) while this script mines blocks and sends a
// token transfer; every notification scopecast sends carries a `cursor` member in its params,
// which ethers must ignore.
//
// usage: node ethers_watch.mjs '{"ws": URL, "http": URL, "token": ADDRESS}'

import { Contract, WebSocketProvider, version } from 'ethers';

import { httpCall, runScript, until } from './report.mjs';

const RECIPIENT = '0x' + 'e7'.repeat(20);

async function main(report, config) {
  report.observe('ethers', version); // its package.json is not exported
  const provider = new WebSocketProvider(config.ws);
  const frames = [];
  provider.websocket.addEventListener('message', (event) => frames.push(JSON.parse(event.data)));
  const blocks = [];
  const transfers = [];
  await provider.on('block', (number) => blocks.push(number));
  const token = new Contract(config.token, ['event Transfer(address indexed from, address indexed to, uint256 value)'], provider);
  await token.on(token.filters.Transfer(null, RECIPIENT), (...args) => transfers.push(token.interface.parseLog(args.at(-1).log)));

  report.progress('blocks');
  report.equal(Number((await provider.getNetwork()).chainId), 1337, 'getNetwork over the WebSocket');
  const deadline = Date.now() + 10_000;
  while (blocks.length < 2 && Date.now() < deadline) {
    await httpCall(config.http, 'evm_mine');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await until(() => blocks.length >= 2, 1_000, 'two blocks');

  report.progress('a token transfer');
  const [sender] = await httpCall(config.http, 'eth_accounts');
  const data = '0xa9059cbb' + RECIPIENT.slice(2).padStart(64, '0') + (42).toString(16).padStart(64, '0');
  await httpCall(config.http, 'eth_sendTransaction', [{ from: sender, to: config.token, data }]);
  await httpCall(config.http, 'evm_mine');
  await until(() => transfers.length === 1, 10_000, 'the Transfer log');

  const notifications = frames.filter((frame) => frame.method === 'eth_subscription');
  report.observe('blocks', blocks);
  report.check(blocks.every((n, i) => i === 0 || n === blocks[i - 1] + 1), 'blocks in order', blocks);
  report.equal(transfers[0].args.to.toLowerCase(), RECIPIENT, 'the Transfer log decoded by ethers');
  report.equal(transfers[0].args.value, 42n, 'its value');
  report.check(notifications.length >= 3, 'notifications arrived', notifications.length);
  report.check(
    notifications.every((frame) => typeof frame.params.cursor === 'string'),
    'every notification carried a cursor that ethers ignored',
  );
  await provider.destroy();
}

runScript('ethers_watch', [], main, { deadlineMs: 30_000 });
