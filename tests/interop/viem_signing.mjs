// viem's wallet client signs with the node's account, unmodified, as an anvil user writes it:
// signTransaction(await prepareTransactionRequest({to, value})) (eth_signTransaction), the signed
// bytes (the result's `raw`: SPEC's signature object carries them) parsed back and sent; and watchPendingTransactions over webSocket() sees a sent transaction
// (eth_subscribe newPendingTransactions).
//
// usage: node viem_signing.mjs '{"http": URL, "ws": URL}'

import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  parseTransaction,
  recoverTransactionAddress,
  webSocket,
} from 'viem';

import { runScript } from './report.mjs';

runScript('viem signing', ['viem'], async (report, { http: httpUrl, ws: wsUrl }) => {
  const chain = defineChain({
    id: 1337,
    name: 'scopecast dev',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [httpUrl], webSocket: [wsUrl] } },
  });
  const publicClient = createPublicClient({ chain, transport: http(httpUrl) });
  const walletClient = createWalletClient({ chain, transport: http(httpUrl) });
  const [, , , , , from, to] = await walletClient.getAddresses();

  report.progress('signTransaction(prepareTransactionRequest({to, value}))');
  const request = await walletClient.prepareTransactionRequest({ account: from, to, value: 4242n });
  // viem hands back the node's result as it came: SPEC's signature object {v, r, s} plus raw,
  // where anvil answers the raw hex alone. The signed transaction is its `raw`.
  const signed = await walletClient.signTransaction(request);
  const serialized = signed.raw;
  const parsed = parseTransaction(serialized);
  report.equal(parsed.r, signed.r, 'r of the signature object is the transaction\'s');
  report.equal(parsed.s, signed.s, 's of the signature object is the transaction\'s');
  report.equal(parsed.type, 'eip1559', 'an EIP-1559 transaction');
  report.equal(parsed.to?.toLowerCase(), to.toLowerCase(), 'to as asked');
  report.equal(parsed.value, 4242n, 'value as asked');
  report.equal(parsed.nonce, request.nonce, 'nonce as prepared');
  report.equal(parsed.gas, request.gas, 'gas as prepared');
  report.equal(parsed.maxFeePerGas, request.maxFeePerGas, 'maxFeePerGas as prepared');
  report.equal(parsed.chainId, 1337, 'chainId 1337');
  const signer = await recoverTransactionAddress({ serializedTransaction: serialized });
  report.equal(signer.toLowerCase(), from.toLowerCase(), 'signed by the account asked for');

  report.progress('watchPendingTransactions over webSocket()');
  const wsClient = createPublicClient({ chain, transport: webSocket(wsUrl) });
  const seen = [];
  let announced;
  const arrived = new Promise((resolve) => { announced = resolve; });
  const unwatch = wsClient.watchPendingTransactions({
    onTransactions: (hashes) => { seen.push(...hashes); announced(); },
    onError: (error) => report.check(false, 'watchPendingTransactions error', `${error}`),
  });
  // viem subscribes in the background: send once the server counts the subscription.
  const metrics = `${new URL(httpUrl).origin}/metrics`;
  const subscribed = /^scopecast_subscriptions\{kind="newPendingTransactions"\} [1-9]/m;
  while (!subscribed.test(await (await fetch(metrics)).text())) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const hash = await publicClient.sendRawTransaction({ serializedTransaction: serialized });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 10_000 });
  report.equal(receipt.status, 'success', 'the signed transaction was mined');
  await arrived;
  report.check(seen.includes(hash), 'the sent transaction was announced as pending', { seen, hash });
  unwatch();
  report.observe('pending', seen);
  await wsClient.transport.getRpcClient().then((client) => client.close());
});
