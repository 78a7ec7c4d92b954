// @solana/kit against scopecast's Solana network: `createSolanaRpc` over HTTP and
// `createSolanaRpcSubscriptions` over `/solana/ws/v3/<KEY>`, the way a Solana dapp or bot uses them.
//
// Reads (genesis hash, balance, latest blockhash), then a SOL transfer built, signed and sent with
// kit (`@solana-program/system`'s transfer instruction) while `accountNotifications`,
// `signatureNotifications`, `logsNotifications` and `slotNotifications` subscriptions watch it;
// then a second transfer through kit's own `sendAndConfirmTransactionFactory` (which races
// `signatureNotifications` against `getSignatureStatuses` and watches `slotNotifications` for the
// blockhash's expiry).
//
// usage: node solana_kit.mjs '{"http": URL, "ws": URL, "payerSeed": [32 bytes], "lamports": N}'

// Must come first: it installs the recording WebSocket kit picks up.
import { wire } from './recording_websocket.mjs';

import {
  address,
  appendTransactionMessageInstruction,
  createKeyPairSignerFromPrivateKeyBytes,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  lamports,
  pipe,
  sendAndConfirmTransactionFactory,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';

import { runScript, until } from './report.mjs';

const SYSTEM_PROGRAM = '11111111111111111111111111111111';

/**
 * Start reading a kit subscription at once (kit keeps a notification only for an iterator already
 * polling: one that arrives before the first `next()` is dropped) into `seen`; `next(ms)` resolves
 * with the next unread one.
 */
function inbox(iterable, what) {
  const seen = [];
  let read = 0;
  (async () => {
    try {
      for await (const value of iterable) seen.push(value);
    } catch {
      // aborted at the end of the script
    }
  })();
  return {
    seen,
    async next(ms = 10_000) {
      await until(() => seen.length > read, ms, what);
      return seen[read++];
    },
  };
}

async function transferTo(rpc, payer, destination, amount) {
  const { value: latestBlockhash } = await rpc.getLatestBlockhash().send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(latestBlockhash, m),
    (m) => appendTransactionMessageInstruction(getTransferSolInstruction({ source: payer, destination, amount }), m),
  );
  return signTransactionMessageWithSigners(message);
}

async function main(report, config) {
  const rpc = createSolanaRpc(config.http);
  const rpcSubscriptions = createSolanaRpcSubscriptions(config.ws);
  const payer = await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(config.payerSeed));
  const receiver = (await generateKeyPairSigner()).address;
  const amount = lamports(BigInt(config.lamports));
  const abort = new AbortController();
  try {
    report.progress('reads over HTTP');
    const genesis = await rpc.getGenesisHash().send();
    report.observe('genesis', genesis);
    const balance = await rpc.getBalance(payer.address).send();
    report.observe('payerBalance', balance);
    report.equal(balance.value, 1_000_000_000_000n, 'getBalance of the first dev account is 1,000 SOL');
    report.check(typeof balance.context.slot === 'bigint', 'getBalance answers {context: {slot}, value}', balance);
    const health = await rpc.getHealth().send();
    report.equal(health, 'ok', 'getHealth');

    report.progress('accountNotifications and signatureNotifications for a kit-built transfer');
    const accountNotifications = inbox(
      await rpcSubscriptions
        .accountNotifications(address(receiver), { commitment: 'confirmed', encoding: 'base64' })
        .subscribe({ abortSignal: abort.signal }),
      'accountNotification',
    );
    const slotNotifications = inbox(
      await rpcSubscriptions.slotNotifications().subscribe({ abortSignal: abort.signal }),
      'slotNotification',
    );
    const logsNotifications = inbox(
      await rpcSubscriptions
        .logsNotifications({ mentions: [address(receiver)] }, { commitment: 'confirmed' })
        .subscribe({ abortSignal: abort.signal }),
      'logsNotification',
    );
    const signed = await transferTo(rpc, payer, receiver, amount);
    const signature = getSignatureFromTransaction(signed);
    const signatureNotifications = inbox(
      await rpcSubscriptions
        .signatureNotifications(signature, { commitment: 'confirmed' })
        .subscribe({ abortSignal: abort.signal }),
      'signatureNotification',
    );
    const sent = await rpc
      .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64', preflightCommitment: 'confirmed' })
      .send();
    report.equal(sent, signature, 'sendTransaction answers the transaction signature');

    const written = await accountNotifications.next();
    report.observe('accountNotification', written);
    report.equal(written?.value?.lamports, amount, 'accountNotification carries the new balance');
    report.equal(written?.value?.owner, SYSTEM_PROGRAM, 'accountNotification: owned by the system program');
    report.equal(written?.value?.data, ['', 'base64'], 'accountNotification: base64 data');
    const confirmed = await signatureNotifications.next();
    report.observe('signatureNotification', confirmed);
    report.equal(confirmed?.value, { err: null }, 'signatureNotification confirms the transfer');
    report.equal(confirmed?.context?.slot, written?.context?.slot, 'both notifications are for the same slot');
    const logs = await logsNotifications.next();
    report.observe('logsNotification', logs);
    report.equal(logs?.value?.signature, signature, 'logsNotification for the transfer mentioning the receiver');
    report.equal(logs?.value?.err, null, 'logsNotification: no error');
    report.check(
      Array.isArray(logs?.value?.logs) && logs.value.logs.some((line) => line.startsWith(`Program ${SYSTEM_PROGRAM} invoke`)),
      'logsNotification: the system program ran',
      logs,
    );
    const slot = await slotNotifications.next();
    report.observe('slotNotification', slot);
    report.check(
      typeof slot?.slot === 'bigint' && typeof slot?.parent === 'bigint' && typeof slot?.root === 'bigint',
      'slotNotification {parent, root, slot}',
      slot,
    );

    report.progress("kit's sendAndConfirmTransactionFactory");
    const sendAndConfirm = sendAndConfirmTransactionFactory({ rpc, rpcSubscriptions });
    const again = await transferTo(rpc, payer, receiver, amount);
    await sendAndConfirm(again, { commitment: 'confirmed' });
    const second = await accountNotifications.next();
    report.equal(second?.value?.lamports, 2n * amount, 'the account subscription sees the second transfer');
    const statuses = await rpc.getSignatureStatuses([getSignatureFromTransaction(again)]).send();
    report.observe('statuses', statuses);
    report.equal(statuses.value[0]?.err, null, 'the confirmed transfer succeeded');
    const after = await rpc.getBalance(receiver, { commitment: 'confirmed' }).send();
    report.equal(after.value, 2n * amount, 'getBalance of the receiver after both transfers');
    const payerAfter = await rpc.getBalance(payer.address).send();
    report.equal(payerAfter.value, 1_000_000_000_000n - 2n * amount - 10_000n, 'the payer paid both amounts and two fees');

    report.progress('jsonParsed, a landed signature subscribed late, and the cluster methods');
    const parsed = await rpc
      .getTransaction(signature, { encoding: 'jsonParsed', maxSupportedTransactionVersion: 0, commitment: 'confirmed' })
      .send();
    report.observe('parsedTransaction', parsed);
    report.equal(
      parsed?.transaction?.message?.accountKeys?.[0],
      { pubkey: payer.address, writable: true, signer: true, source: 'transaction' },
      'jsonParsed account keys: {pubkey, signer, writable, source}',
    );
    const moved = parsed?.transaction?.message?.instructions?.[0];
    report.equal(moved?.program, 'system', 'jsonParsed: the transfer is the system program\'s');
    report.equal(moved?.parsed?.type, 'transfer', 'jsonParsed: a transfer');
    report.equal(moved?.parsed?.info?.lamports, amount, 'jsonParsed: its lamports');
    report.equal(moved?.parsed?.info?.destination, receiver, 'jsonParsed: its destination');
    const late = inbox(
      await rpcSubscriptions
        .signatureNotifications(signature, { commitment: 'finalized' })
        .subscribe({ abortSignal: abort.signal }),
      'signatureNotification of a landed signature',
    );
    const lateNotification = await late.next();
    report.equal(lateNotification?.value, { err: null }, 'a landed signature is notified at once');
    report.equal(lateNotification?.context?.slot, confirmed?.context?.slot, 'in the slot it landed in');
    const fees = await rpc.getRecentPrioritizationFees([address(receiver)]).send();
    report.observe('fees', fees);
    report.check(
      fees.length > 0 && fees.every((fee) => typeof fee.slot === 'bigint' && fee.prioritizationFee === 0n),
      'getRecentPrioritizationFees: [{slot, prioritizationFee}]',
      fees,
    );
    const { identity } = await rpc.getIdentity().send();
    const votes = await rpc.getVoteAccounts().send();
    report.equal(votes.current[0]?.nodePubkey, identity, 'getVoteAccounts: the node votes');
    report.equal(votes.delinquent, [], 'getVoteAccounts: no one is delinquent');
    const leaders = await rpc.getLeaderSchedule().send();
    report.equal(Object.keys(leaders ?? {}), [identity], 'getLeaderSchedule: the node leads');
    const schedule = await rpc.getEpochSchedule().send();
    report.equal(schedule.slotsPerEpoch, 432_000n, 'getEpochSchedule');
    const supply = await rpc.getSupply().send();
    report.equal(supply.value.total, supply.value.circulating + supply.value.nonCirculating, 'getSupply adds up');
    const rate = await rpc.getInflationRate().send();
    report.equal(rate.epoch, 0n, 'getInflationRate of epoch 0');
  } finally {
    abort.abort();
    report.observe('wire', wire);
  }
}

await runScript('solana-kit', ['@solana/kit', '@solana-program/system', 'ws'], main, { deadlineMs: 25_000 });
