// MetaMask's @metamask/multichain-api-client with one session spanning `eip155:1337` and the Solana
// dev chain, over the WebSocket transport (`ws_transport.mjs`): Solana accounts granted as CAIP-10
// base58 ids, `signMessage` through `invokeMethod` verified with ed25519 (node's crypto), and an
// `eth_subscribe` newHeads and an `accountSubscribe` held by the one session on the one socket, both
// notified through `wallet_notify` after an `evm_mine` and a `requestAirdrop` over HTTP.
//
// usage: node multichain_solana.mjs '{"ws": URL, "evmHttp": URL, "solanaHttp": URL, "solana": CAIP-2,
//                                     "origin": O}'

import { createPublicKey, verify } from 'node:crypto';

import { getMultichainClient } from '@metamask/multichain-api-client';
import { generateKeyPairSigner, getBase58Encoder } from '@solana/kit';

import { httpCall, runScript, until } from './report.mjs';
import { getWebSocketTransport } from './ws_transport.mjs';

const EVM = 'eip155:1337';
const EVM_SCOPE = { methods: ['eth_chainId', 'eth_subscribe', 'eth_unsubscribe'], notifications: ['eth_subscription'] };
const SOLANA_SCOPE = {
  methods: ['getBalance', 'signMessage', 'accountSubscribe', 'accountUnsubscribe'],
  notifications: ['accountNotification'],
};
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;
const CURSOR = /^[0-9a-f]{24}(\.[0-9a-z-]+)+$/;
const SOL = 1_000_000_000;

/** Is `signature` (base58) an ed25519 signature of `message` by `address` (a base58 public key)? */
function ed25519Verify(address, message, signature) {
  const raw = getBase58Encoder().encode(address);
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' });
  return verify(null, message, key, getBase58Encoder().encode(signature));
}

async function main(report, config) {
  const SOLANA = config.solana;
  const wire = [];
  const transport = getWebSocketTransport(config.ws, { origin: config.origin, wire });
  const client = getMultichainClient({ transport });
  const notified = [];
  client.onNotification((message) => {
    if (message?.method === 'wallet_notify') notified.push(message.params);
  });
  const next = async (scope, method) => {
    let found;
    await until(
      () => (found = notified.find((n) => n.scope === scope && n.notification?.method === method)) !== undefined,
      10_000,
      `wallet_notify ${method} on ${scope}`,
    );
    return found;
  };

  try {
    report.progress('createSession with eip155:1337 and the Solana dev chain');
    const created = await client.createSession({ optionalScopes: { [EVM]: EVM_SCOPE, [SOLANA]: SOLANA_SCOPE } });
    report.observe('createSession', created);
    report.equal(Object.keys(created?.sessionScopes ?? {}).sort(), [EVM, SOLANA].sort(), 'both scopes granted');
    const solana = created?.sessionScopes?.[SOLANA];
    const accounts = solana?.accounts ?? [];
    report.check(
      accounts.length > 0 && accounts.every((a) => a.startsWith(`${SOLANA}:`) && BASE58.test(a.slice(SOLANA.length + 1))),
      'Solana accounts are CAIP-10 ids with a base58 address (case kept)',
      accounts,
    );
    if (accounts.length === 0) report.fail('no Solana account granted');
    const signer = accounts[0].slice(SOLANA.length + 1);
    report.equal((await client.getSession())?.sessionScopes, created.sessionScopes, 'getSession');

    report.progress('signMessage through invokeMethod, verified with ed25519');
    const message = Buffer.from('scopecast: one session, two chains');
    const signed = await client.invokeMethod({
      scope: SOLANA,
      request: { method: 'signMessage', params: { account: { address: signer }, message: message.toString('base64') } },
    });
    report.observe('signMessage', signed);
    const answer = signed?.result?.result;
    report.equal(signed?.scope, SOLANA, 'signMessage answers for the Solana scope');
    report.equal(answer?.signatureType, 'ed25519', 'signatureType');
    report.equal(answer?.signedMessage, message.toString('base64'), 'signedMessage is the message');
    report.check(ed25519Verify(signer, message, answer?.signature), 'the signature verifies with the account key', answer);
    report.check(
      !ed25519Verify(signer, Buffer.from('something else'), answer?.signature),
      'and does not verify for another message',
    );

    report.progress('eth_subscribe newHeads and accountSubscribe in the one session');
    const heads = await client.invokeMethod({ scope: EVM, request: { method: 'eth_subscribe', params: ['newHeads'] } });
    const watched = (await generateKeyPairSigner()).address;
    const account = await client.invokeMethod({
      scope: SOLANA,
      request: { method: 'accountSubscribe', params: [watched, { encoding: 'base64', commitment: 'confirmed' }] },
    });
    report.observe('accountSubscribe', account);
    report.check(Number.isInteger(account?.result?.result), 'accountSubscribe answers an integer id', account);
    await httpCall(config.evmHttp, 'evm_mine', []);
    const airdrop = await httpCall(config.solanaHttp, 'requestAirdrop', [watched, 2 * SOL]);
    report.check(SIGNATURE.test(airdrop), 'requestAirdrop answers a base58 signature', airdrop);

    const head = await next(EVM, 'eth_subscription');
    report.equal(head.notification.params.subscription, heads?.result?.result, 'newHeads arrives for the eip155 subscription');
    const credited = await next(SOLANA, 'accountNotification');
    report.observe('accountNotification', credited);
    report.check(CURSOR.test(credited.cursor), 'wallet_notify carries a resume cursor', credited);
    const params = credited.notification.params;
    report.equal(Object.keys(params).sort(), ['result', 'subscription'], "the notification's params are Solana's");
    report.equal(params.subscription, account.result.result, 'accountNotification carries the subscription id');
    report.equal(params.result?.value?.lamports, 2 * SOL, 'accountNotification: the airdropped lamports');
    report.equal(params.result?.value?.data, ['', 'base64'], 'accountNotification: base64 data');
    report.check(Number.isInteger(params.result?.context?.slot), 'accountNotification: {context: {slot}, value}', params);
    const balance = await client.invokeMethod({ scope: SOLANA, request: { method: 'getBalance', params: [watched] } });
    report.equal(balance?.result?.result?.value, 2 * SOL, 'getBalance through the session');

    const ended = await client.invokeMethod({
      scope: SOLANA,
      request: { method: 'accountUnsubscribe', params: [account.result.result] },
    });
    report.equal(ended?.result?.result, true, 'accountUnsubscribe');
    await client.revokeSession();
  } finally {
    report.observe('wire', wire);
    await transport.disconnect();
  }
}

await runScript('multichain-solana', ['@metamask/multichain-api-client', '@solana/kit', 'ws'], main, { deadlineMs: 25_000 });
