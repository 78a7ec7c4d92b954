// MetaMask's Solana wallet-standard wallet (`@metamask/solana-wallet-standard`), unmodified, over
// MetaMask's multichain client on a WebSocket transport with `?client=metamask` (the one README's
// dapp page uses, docs/metamask/websocket-transport.mjs), against a
// scopecast whose Solana dev chain claims mainnet's genesis hash (the only cluster the wallet asks
// for). The wallet is obtained as a dapp page obtains it: `registerSolanaWalletStandard` registers
// it with the page's `window` (a stand-in EventTarget here) and the app side of the wallet-standard
// protocol (`wallet-standard:register-wallet`) receives it.
//
// Steps: standard:connect gives the session's account; solana:signMessage, solana:signTransaction
// (a @solana/kit transfer, legacy and v0) give signatures that verify (ed25519, node's crypto);
// solana:signAndSendTransaction lands (the recipient's balance rises over HTTP); solana:signIn signs
// the Sign-In-With-Solana text; revoking the session from the same client, and from another tab of
// the same dapp, raises the wallet's `change` event with no accounts; standard:disconnect ends the
// session. A tab without `?client=metamask` still gets SPEC's envelope.
//
// usage: node metamask_wallet_standard.mjs '{"ws": URL, "solanaHttp": URL, "origin": O}'

import { createPublicKey, verify } from 'node:crypto';

import { getMultichainClient } from '@metamask/multichain-api-client';
import { registerSolanaWalletStandard } from '@metamask/solana-wallet-standard';
import {
  address,
  appendTransactionMessageInstruction,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase58Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
  lamports,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';

import { httpCall, runScript, until } from './report.mjs';
import WebSocket from 'ws';

import { getWebSocketTransport } from '../../docs/metamask/websocket-transport.mjs';

const MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
const HOST = 'dapp.example';
const SOL = 1_000_000_000;

/** A dapp page's `window`, as much of it as the wallet-standard protocol and the wallet use. */
function standInWindow() {
  const page = new EventTarget();
  page.location = { host: HOST, origin: `https://${HOST}` };
  return page;
}

/** Is `signature` (bytes) an ed25519 signature of `message` by `publicKey` (32 bytes)? */
function ed25519Verify(publicKey, message, signature) {
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') },
    format: 'jwk',
  });
  return verify(null, message, key, signature);
}

/** A SOL transfer from `from` to `to` built with kit, unsigned, as wire bytes. */
async function transfer(http, from, to, amount, version) {
  const { value: latest } = await httpCall(http, 'getLatestBlockhash', [{ commitment: 'confirmed' }]);
  const message = pipe(
    createTransactionMessage({ version }),
    (m) => setTransactionMessageFeePayer(address(from), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(
      { blockhash: latest.blockhash, lastValidBlockHeight: BigInt(latest.lastValidBlockHeight) },
      m,
    ),
    (m) => appendTransactionMessageInstruction(
      getTransferSolInstruction({ source: createNoopSigner(address(from)), destination: address(to), amount: lamports(BigInt(amount)) }),
      m,
    ),
  );
  return new Uint8Array(getTransactionEncoder().encode(compileTransaction(message)));
}

async function main(report, config) {
  globalThis.window = standInWindow();
  const registered = [];
  window.addEventListener('wallet-standard:register-wallet', (event) => {
    event.detail({ register: (wallet) => (registered.push(wallet), () => {}) });
  });
  // The transport README's dapp page uses (the browser's WebSocket API), on `ws` with an Origin.
  const tab = (client) =>
    getWebSocketTransport(`${config.ws}${client ? `?client=${client}` : ''}`, {
      createWebSocket: (url) => new WebSocket(url, { origin: config.origin }),
    });
  const client = getMultichainClient({ transport: tab('metamask') });

  report.progress('registerSolanaWalletStandard with a stand-in window');
  await registerSolanaWalletStandard({ client, walletName: 'MetaMask' });
  if (registered.length !== 1) report.fail(`${registered.length} wallets registered`);
  const wallet = registered[0];
  report.equal(wallet.name, 'MetaMask', 'the wallet registered is MetaMask');
  report.check(wallet.chains.includes('solana:mainnet'), 'it serves solana:mainnet', wallet.chains);
  const changes = [];
  wallet.features['standard:events'].on('change', (change) => changes.push(change.accounts?.map((a) => a.address) ?? null));
  const lastChange = (what) => until(() => changes.length > 0 && changes.at(-1)?.length === 0, 10_000, what);

  report.progress('standard:connect');
  const connected = await wallet.features['standard:connect'].connect();
  const account = connected.accounts[0];
  if (account === undefined) report.fail('standard:connect gave no account');
  const session = await client.getSession();
  report.observe('session', session);
  report.equal(session.sessionScopes[MAINNET]?.accounts, [`${MAINNET}:${account.address}`], "connect gives the session's account");
  report.check(Buffer.from(account.publicKey).equals(Buffer.from(getBase58Encoder().encode(account.address))), 'its public key is its address');
  report.check(changes.some((c) => c?.[0] === account.address), 'change announced the account', changes);

  report.progress('solana:signMessage');
  const message = new TextEncoder().encode('scopecast: MetaMask wallet-standard');
  const [signedMessage] = await wallet.features['solana:signMessage'].signMessage({ account, message });
  report.equal(signedMessage.signatureType, 'ed25519', 'signatureType');
  report.check(Buffer.from(signedMessage.signedMessage).equals(Buffer.from(message)), 'signedMessage is the message');
  report.check(ed25519Verify(account.publicKey, message, signedMessage.signature), 'the message signature verifies');

  const recipient = (await generateKeyPairSigner()).address;
  for (const version of ['legacy', 0]) {
    report.progress(`solana:signTransaction (${version})`);
    const unsigned = await transfer(config.solanaHttp, account.address, recipient, SOL, version);
    const [{ signedTransaction }] = await wallet.features['solana:signTransaction'].signTransaction({
      account, transaction: unsigned, chain: 'solana:mainnet',
    });
    const decoded = getTransactionDecoder().decode(signedTransaction);
    const signature = decoded.signatures[account.address];
    report.check(signature instanceof Uint8Array, `a ${version} transaction signed by the account`, Object.keys(decoded.signatures));
    report.check(ed25519Verify(account.publicKey, decoded.messageBytes, signature), `the ${version} signature verifies`);
    const original = getTransactionDecoder().decode(unsigned);
    report.check(Buffer.from(decoded.messageBytes).equals(Buffer.from(original.messageBytes)), `the ${version} message is unchanged`);
  }

  report.progress('solana:signAndSendTransaction');
  const before = (await httpCall(config.solanaHttp, 'getBalance', [recipient])).value;
  const sendable = await transfer(config.solanaHttp, account.address, recipient, 2 * SOL, 0);
  const [sent] = await wallet.features['solana:signAndSendTransaction'].signAndSendTransaction({
    account, transaction: sendable, chain: 'solana:mainnet',
  });
  report.equal(sent.signature.length, 64, 'a 64-byte signature');
  let after = before;
  const deadline = Date.now() + 10_000;
  while (after === before && Date.now() < deadline) {
    after = (await httpCall(config.solanaHttp, 'getBalance', [recipient])).value;
    if (after === before) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  report.equal(after - before, 2 * SOL, "the recipient's balance rose by the amount sent");
  report.observe('balances', { before, after });

  report.progress('solana:signIn');
  const [signedIn] = await wallet.features['solana:signIn'].signIn({ statement: 'Sign in to scopecast', nonce: 'abcdef12' });
  const text = new TextDecoder().decode(signedIn.signedMessage);
  report.observe('signIn', text);
  report.check(text.startsWith(`${HOST} wants you to sign in with your Solana account:\n${account.address}`), 'the SIWS text names the domain and the account', text);
  report.check(text.includes('Sign in to scopecast') && text.includes('Nonce: abcdef12'), 'it carries the statement and the nonce', text);
  report.equal(signedIn.account.address, account.address, 'signIn names the account');
  report.check(ed25519Verify(account.publicKey, signedIn.signedMessage, signedIn.signature), 'the sign-in signature verifies');

  report.progress('revokeSession from the same client');
  changes.length = 0;
  await client.revokeSession();
  await lastChange('the change event after the revoke');
  report.equal(wallet.accounts, [], 'no account after the revoke');

  report.progress('revokeSession from another tab of the same dapp');
  const again = await wallet.features['standard:connect'].connect();
  report.equal(again.accounts[0]?.address, account.address, 'connect again');
  changes.length = 0;
  const otherTab = getMultichainClient({ transport: tab('metamask') });
  await otherTab.revokeSession();
  await lastChange("the change event after the other tab's revoke");
  report.equal(wallet.accounts, [], "no account after the other tab's revoke");

  report.progress('a tab without ?client=metamask gets the SPEC envelope');
  await wallet.features['standard:connect'].connect();
  const spec = getMultichainClient({ transport: tab() });
  const envelope = await spec.invokeMethod({ scope: MAINNET, request: { method: 'getBalance', params: [recipient] } });
  report.equal(envelope, { scope: MAINNET, result: { method: 'getBalance', result: envelope?.result?.result } }, 'SPEC envelope');
  report.equal(envelope?.result?.result?.value, after, 'with the balance inside');

  report.progress('standard:disconnect');
  changes.length = 0;
  await wallet.features['standard:disconnect'].disconnect();
  report.equal(changes, [[]], 'disconnect announces no accounts');
  report.equal((await spec.getSession()).sessionScopes, {}, 'and ends the session');
  await spec.revokeSession();
}

await runScript(
  'metamask_wallet_standard',
  ['@metamask/solana-wallet-standard', '@metamask/multichain-api-client', '@solana/kit'],
  main,
  { deadlineMs: 40_000 },
);
