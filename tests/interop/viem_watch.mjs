// viem against scopecast's dev chain: `watchBlocks` and `watchEvent` (the demo token's ERC-20
// Transfer) over the webSocket() transport, while this script sends two token transfers with a
// mnemonic account (viem signs locally; writeContract over http()) and mines them with evm_mine;
// then publicClient reads over http(): getBlock, getTransaction, getTransactionReceipt, getLogs.
//
// usage: node viem_watch.mjs '{"ws": URL, "http": URL}'

import {
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  http,
  MethodNotFoundRpcError,
  parseAbiItem,
  parseEventLogs,
  webSocket,
  zeroAddress,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';

import { httpCall, runScript, until } from './report.mjs';

const MNEMONIC = 'test test test test test test test test test test test junk';
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const TRANSFER_SELECTOR = '0xa9059cbb';
const AMOUNTS = [1_000n, 2_000n];

/** webSocket() unchanged, except that each completed eth_subscribe is recorded, so the script can
 * wait until both watchers are live before it makes traffic (viem gives no other signal). */
function observedWebSocket(url, subscriptions) {
  const make = webSocket(url, { reconnect: false, retryCount: 0, timeout: 10_000 });
  return (parameters) => {
    const transport = make(parameters);
    const { subscribe } = transport.value;
    return {
      ...transport,
      value: {
        ...transport.value,
        async subscribe(args) {
          const subscription = await subscribe(args);
          subscriptions.push({ params: args.params, id: subscription.subscriptionId });
          return subscription;
        },
      },
    };
  };
}

const same = (a, b) => a?.toLowerCase() === b?.toLowerCase();

async function main(report, config) {
  const chain = defineChain({
    id: 1337,
    name: 'scopecast dev',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [config.http], webSocket: [config.ws] } },
  });
  const reader = createPublicClient({ chain, transport: http(config.http, { retryCount: 0 }), pollingInterval: 50 });
  const subscriptions = [];
  const watcher = createPublicClient({ chain, transport: observedWebSocket(config.ws, subscriptions) });

  report.progress('chain id and the demo token');
  report.equal(await reader.getChainId(), 1337, 'getChainId over http()');
  report.equal(await watcher.getChainId(), 1337, 'getChainId over webSocket()');

  report.progress('a JSON-RPC batch over http() and error mapping');
  const batched = createPublicClient({ chain, transport: http(config.http, { batch: true, retryCount: 0 }) });
  const [height, batchedChainId, genesis] = await Promise.all([
    batched.getBlockNumber(),
    batched.getChainId(),
    batched.getBlock({ blockNumber: 0n }),
  ]);
  report.check(height >= 0n && batchedChainId === 1337 && genesis.number === 0n, 'three calls batched in one POST', {
    height,
    batchedChainId,
    genesis: genesis.number,
  });
  for (const [name, client] of [['http()', reader], ['webSocket()', watcher]]) {
    const refused = await client.request({ method: 'eth_noSuchMethod', params: [] }).catch((error) => error);
    report.check(
      refused instanceof MethodNotFoundRpcError && refused.code === -32601,
      `an unknown method is a MethodNotFoundRpcError (-32601) over ${name}`,
      `${refused?.constructor?.name} ${refused?.code} ${refused?.details}`,
    );
  }

  const mints = await reader.getLogs({ event: TRANSFER, args: { from: zeroAddress }, fromBlock: 0n, toBlock: 'latest' });
  report.observe('mintLogs', mints);
  if (!report.check(mints.length >= 1, 'the demo token minted its supply (Transfer from 0x0) on a mined block', mints)) {
    report.fail('no demo token found');
  }
  const token = mints[0].address;
  report.observe('token', token);
  report.equal(
    await reader.readContract({ address: token, abi: erc20Abi, functionName: 'decimals' }),
    18,
    'token decimals() through eth_call',
  );

  const accounts = Array.from({ length: 10 }, (_, i) => mnemonicToAccount(MNEMONIC, { addressIndex: i }));
  const balances = await Promise.all(
    accounts.map((a) => reader.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [a.address] })),
  );
  const senderIndex = balances.findIndex((b) => b >= AMOUNTS[0] + AMOUNTS[1]);
  if (!report.check(senderIndex !== -1, 'a mnemonic account holds demo tokens', balances)) {
    report.fail('no funded token holder among the mnemonic accounts');
  }
  const sender = accounts[senderIndex];
  const recipients = [accounts[(senderIndex + 1) % 10].address, accounts[(senderIndex + 2) % 10].address];
  const before = await Promise.all(
    recipients.map((r) => reader.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [r] })),
  );
  report.observe('accounts', { sender: sender.address, recipients });

  report.progress('watchBlocks + watchEvent over webSocket()');
  const heads = [];
  const transfers = [];
  const toSecond = [];
  const errors = [];
  const onError = (error) => errors.push(`${error?.shortMessage ?? error?.message ?? error}`);
  const unwatch = [
    watcher.watchBlocks({ onBlock: (block) => heads.push(block), onError }),
    watcher.watchEvent({ address: token, event: TRANSFER, onLogs: (logs) => transfers.push(...logs), onError }),
    watcher.watchEvent({ address: token, event: TRANSFER, args: { to: recipients[1] }, onLogs: (logs) => toSecond.push(...logs), onError }),
  ];
  await until(() => subscriptions.length === 3 || errors.length > 0, 5_000, 'three eth_subscribe replies');
  report.observe('subscriptions', subscriptions);
  report.equal(errors, [], 'eth_subscribe errors');
  report.check(new Set(subscriptions.map((s) => s.id)).size === 3, 'three distinct subscription ids', subscriptions);

  report.progress('polled filters over http()');
  const start = await reader.getBlockNumber();
  const eventFilter = await reader.createEventFilter({ address: token, event: TRANSFER, fromBlock: start + 1n });
  const blockFilter = await reader.createBlockFilter();
  report.observe('filters', { event: eventFilter.id, block: blockFilter.id });

  report.progress('two token transfers, each mined by evm_mine, then an empty block');
  const wallet = createWalletClient({ account: sender, chain, transport: http(config.http, { retryCount: 0 }) });
  const sent = [];
  for (const [i, to] of recipients.entries()) {
    const hash = await wallet.writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, AMOUNTS[i]] });
    await httpCall(config.http, 'evm_mine', []);
    const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 5_000 });
    sent.push({ hash, receipt });
  }
  await httpCall(config.http, 'evm_mine', []);
  const end = await reader.getBlockNumber();
  report.observe('range', { start, end });

  await until(
    () => heads.some((b) => b?.number === end) && transfers.length >= 2 && toSecond.length >= 1,
    5_000,
    `heads up to ${end}, two Transfer logs and one filtered log`,
  ).catch((error) => report.check(false, error.message, { heads: heads.map((b) => b?.number), transfers, toSecond, errors }));
  // let any duplicate or stray notification arrive before counting
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const stop of unwatch) stop();
  report.equal(errors, [], 'watcher errors');

  report.progress('heads');
  const expected = [];
  for (let n = start + 1n; n <= end; n++) expected.push(n);
  report.equal(heads.map((b) => b?.number), expected, 'watchBlocks delivers every new block once, in order');
  for (const head of heads) {
    const block = await reader.getBlock({ blockNumber: head.number });
    report.equal(head.hash, block.hash, `watched block ${head.number} is the block read over http()`);
  }
  for (let i = 1; i < heads.length; i++) {
    report.equal(heads[i].parentHash, heads[i - 1].hash, `block ${heads[i].number} extends the one before`);
  }

  report.progress('receipts and transactions');
  for (const [i, { hash, receipt }] of sent.entries()) {
    report.equal(receipt.status, 'success', `receipt ${i} status`);
    report.check(receipt.blockNumber > start && receipt.blockNumber <= end, `receipt ${i} is in the mined range`, receipt.blockNumber);
    const again = await reader.getTransactionReceipt({ hash });
    report.equal(again, receipt, `getTransactionReceipt ${i} is stable`);
    const [decoded, ...more] = parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: 'Transfer' });
    report.check(more.length === 0 && decoded !== undefined, `receipt ${i} has one Transfer log`, receipt.logs);
    report.check(
      same(decoded?.address, token) && same(decoded?.args.from, sender.address) && same(decoded?.args.to, recipients[i]) && decoded?.args.value === AMOUNTS[i],
      `receipt ${i} Transfer args`,
      decoded,
    );
    const tx = await reader.getTransaction({ hash });
    report.check(
      same(tx.from, sender.address) && same(tx.to, token) && tx.input.startsWith(TRANSFER_SELECTOR) && tx.blockHash === receipt.blockHash,
      `getTransaction ${i}`,
      tx,
    );
    const full = await reader.getBlock({ blockHash: receipt.blockHash, includeTransactions: true });
    report.check(
      full.transactions.some((t) => t.hash === hash && same(t.from, sender.address)),
      `getBlock(blockHash, includeTransactions) ${i} holds the transaction`,
      full.transactions,
    );
  }

  report.progress('watched logs against receipts and getLogs');
  const key = (log) => `${log.blockHash}/${log.logIndex}/${log.transactionHash}`;
  report.equal(transfers.length, 2, 'watchEvent delivers both transfers once');
  for (const [i, log] of transfers.entries()) {
    const receiptLog = sent[i]?.receipt.logs[0];
    report.check(
      log.eventName === 'Transfer' && log.removed === false && log.transactionHash === sent[i]?.hash && key(log) === key(receiptLog ?? {}),
      `watched Transfer ${i} is the log of transfer ${i}`,
      { log, receiptLog },
    );
    report.check(
      same(log.args?.from, sender.address) && same(log.args?.to, recipients[i]) && log.args?.value === AMOUNTS[i],
      `watched Transfer ${i} decoded args`,
      log.args,
    );
  }
  report.equal(toSecond.map((l) => l.transactionHash), [sent[1]?.hash], 'watchEvent with args {to} gets only the matching transfer');

  const range = { address: token, event: TRANSFER, fromBlock: start + 1n, toBlock: end };
  const logs = await reader.getLogs(range);
  report.equal(logs.map(key), transfers.map(key), 'getLogs over the range returns the watched logs');
  const filtered = await reader.getLogs({ ...range, args: { to: recipients[1] } });
  report.equal(filtered.map((l) => l.transactionHash), [sent[1]?.hash], 'getLogs with a topic filter');
  const inBlock = await reader.getLogs({ address: token, event: TRANSFER, blockHash: sent[0].receipt.blockHash });
  report.equal(inBlock.map((l) => l.transactionHash), [sent[0].hash], 'getLogs by blockHash');
  const none = await reader.getLogs({ ...range, args: { to: zeroAddress } });
  report.equal(none, [], 'getLogs with no match is []');

  report.progress('filter changes and filter logs');
  const changes = await reader.getFilterChanges({ filter: eventFilter });
  report.equal(changes.map(key), transfers.map(key), 'getFilterChanges (event filter) returns the watched logs');
  report.check(
    changes.every((l, i) => l.eventName === 'Transfer' && l.args?.value === AMOUNTS[i]),
    'getFilterChanges logs are decoded by viem',
    changes,
  );
  report.equal(await reader.getFilterChanges({ filter: eventFilter }), [], 'a second getFilterChanges has nothing new');
  report.equal((await reader.getFilterLogs({ filter: eventFilter })).map(key), transfers.map(key), 'getFilterLogs');
  report.equal(
    await reader.getFilterChanges({ filter: blockFilter }),
    heads.map((b) => b.hash),
    'getFilterChanges (block filter) returns the new block hashes in order',
  );
  report.equal(await reader.uninstallFilter({ filter: eventFilter }), true, 'uninstallFilter (event filter)');
  report.equal(await reader.uninstallFilter({ filter: blockFilter }), true, 'uninstallFilter (block filter)');
  const gone = await reader.getFilterChanges({ filter: eventFilter }).then(
    (value) => ({ value }),
    (error) => ({ error: error?.cause?.message ?? error?.details ?? error?.message }),
  );
  report.check(/filter not found/.test(gone.error ?? ''), 'getFilterChanges after uninstall fails with "filter not found"', gone);

  const after = await Promise.all(
    recipients.map((r) => reader.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [r] })),
  );
  report.equal(after, [before[0] + AMOUNTS[0], before[1] + AMOUNTS[1]], 'recipient balances after the transfers');
  report.observe('heads', heads.map((b) => ({ number: b.number, hash: b.hash })));
  report.observe('transfers', transfers);

  const socket = await watcher.transport.getRpcClient();
  socket.close();
}

await runScript('viem', ['viem', 'ws'], main, { deadlineMs: 25_000 });
