// MetaMask's @metamask/multichain-api-client against scopecast: one session spanning the dev chain
// (eip155:1337) and the Solana dev chain, Solana RPC and MetaMask's Solana signMessage through
// wallet_invokeMethod, the signature verified with ed25519 (node:crypto) against the account.
//
// usage: node multichain_solana.mjs '{"ws": URL, "origin": O, "solana": "solana:<ref>"}'

import { createPublicKey, verify } from 'node:crypto';

import { MultichainApiError, getMultichainClient } from '@metamask/multichain-api-client';

import { runScript } from './report.mjs';
import { getWebSocketTransport } from './ws_transport.mjs';

const EVM = 'eip155:1337';
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Base58 to bytes (Solana addresses and signatures). */
function base58(text) {
  let number = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) throw new Error(`not base58: ${text}`);
    number = number * 58n + BigInt(digit);
  }
  const bytes = [];
  while (number > 0n) {
    bytes.unshift(Number(number % 256n));
    number /= 256n;
  }
  const zeros = text.length - text.replace(/^1+/, '').length;
  return Buffer.from([...new Array(zeros).fill(0), ...bytes]);
}

function ed25519Verifies(address, message, signature) {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: base58(address).toString('base64url') }, format: 'jwk' });
  return verify(null, message, key, base58(signature));
}

async function main(report, config) {
  const SOLANA = config.solana;
  const transport = getWebSocketTransport(config.ws, { origin: config.origin });
  const client = getMultichainClient({ transport });
  try {
    report.progress('createSession with both chains');
    const created = await client.createSession({
      optionalScopes: {
        [EVM]: { methods: ['eth_chainId'], notifications: [] },
        [SOLANA]: { methods: ['getBalance', 'getLatestBlockhash', 'signMessage'], notifications: [] },
      },
    });
    report.observe('createSession', created);
    report.equal(Object.keys(created?.sessionScopes ?? {}).sort(), [EVM, SOLANA].sort(), 'both scopes granted');
    const accounts = created?.sessionScopes?.[SOLANA]?.accounts ?? [];
    const solanaAccount = accounts[0]?.slice(SOLANA.length + 1);
    report.check(
      accounts.length > 0 && accounts.every((a) => a.startsWith(`${SOLANA}:`)) && base58(solanaAccount).length === 32,
      'the Solana accounts are CAIP-10 ids with a base58 address',
      accounts,
    );
    if (!solanaAccount) report.fail('no Solana account to sign with');

    report.progress('invokeMethod on each chain');
    const chainId = await client.invokeMethod({ scope: EVM, request: { method: 'eth_chainId', params: [] } });
    report.equal(chainId?.result?.result, '0x539', 'eth_chainId in the EVM scope');
    const balance = await client.invokeMethod({ scope: SOLANA, request: { method: 'getBalance', params: [solanaAccount] } });
    report.equal(balance?.result?.result?.value, 1_000_000_000_000, 'getBalance in the Solana scope: 1,000 SOL');

    report.progress('signMessage');
    const message = Buffer.from('Sign in to interop.example');
    const signed = await client.invokeMethod({
      scope: SOLANA,
      request: { method: 'signMessage', params: { account: { address: solanaAccount }, message: message.toString('base64') } },
    });
    report.observe('signMessage', signed);
    const result = signed?.result?.result;
    report.equal(result?.signatureType, 'ed25519', 'signatureType');
    report.equal(result?.signedMessage, message.toString('base64'), 'signedMessage is the message');
    report.check(ed25519Verifies(solanaAccount, message, result?.signature ?? ''), 'the signature verifies with ed25519', result);

    report.progress('a Solana account outside the session');
    let refused;
    try {
      await client.invokeMethod({
        scope: SOLANA,
        request: { method: 'signMessage', params: { account: { address: solanaAccount.toLowerCase() }, message: 'aGk=' } },
      });
    } catch (error) {
      refused = error;
    }
    report.check(
      refused instanceof MultichainApiError && refused.cause?.code === 4100,
      'the address in another case is another account: 4100',
      refused?.cause ?? refused,
    );
  } finally {
    await transport.disconnect();
  }
}

await runScript('multichain-solana', ['@metamask/multichain-api-client'], main, { deadlineMs: 20_000 });
