// MetaMask's @metamask/multichain-api-client against scopecast, through a WebSocket transport.
//
// Two "tabs" of one dapp (same API key and Origin, so one identity and one shared session):
// tab A creates, reads, uses and revokes the session; tab B only listens. In between the operator
// narrows the session through POST /admin, and a block is mined so that a subscription made inside
// the session arrives as `wallet_notify`.
//
// usage: node multichain_client.mjs '{"ws": URL, "http": URL, "admin": URL, "adminToken": T,
//                                     "apiKey": K, "origin": O}'

import { MultichainApiError, getMultichainClient } from '@metamask/multichain-api-client';

import { httpCall, runScript, until } from './report.mjs';
import { getWebSocketTransport } from './ws_transport.mjs';

const SCOPE = 'eip155:1337';
const METHODS = ['eth_blockNumber', 'eth_chainId', 'eth_getBlockByNumber', 'eth_subscribe', 'eth_unsubscribe'];
const NOTIFICATIONS = ['eth_subscription'];
const HEX = /^0x(0|[1-9a-f][0-9a-f]*)$/;
const HASH = /^0x[0-9a-f]{64}$/;
const ACCOUNT = new RegExp(`^${SCOPE}:0x[0-9a-fA-F]{40}$`);
const CURSOR = /^[0-9a-f]{24}(\.[0-9a-z-]+)+$/;

/** A notification's params less its resume `cursor` (checked here: every notification has one). */
function standard(report, message, what) {
  const { cursor, ...params } = message?.params ?? {};
  report.check(CURSOR.test(cursor), `${what} carries a resume cursor`, message);
  return { ...message, params };
}

/** The notifications a transport delivered, with a way to wait for the next matching one. */
class Inbox {
  constructor(client) {
    this.seen = [];
    this.taken = new Set();
    client.onNotification((message) => this.seen.push(message));
  }

  async next(method, ms = 5_000) {
    let found;
    await until(() => {
      const index = this.seen.findIndex((m, i) => !this.taken.has(i) && m?.method === method);
      if (index === -1) return false;
      found = this.seen[index];
      this.taken.add(index);
      return true;
    }, ms, `a ${method} notification`);
    return found;
  }

  count(method) {
    return this.seen.filter((m) => m?.method === method).length;
  }
}

async function rejection(promise) {
  try {
    const value = await promise;
    return { resolved: value };
  } catch (error) {
    return { error };
  }
}

async function main(report, config) {
  const wire = [];
  const transportA = getWebSocketTransport(config.ws, { origin: config.origin, wire });
  const transportB = getWebSocketTransport(config.ws, { origin: config.origin });
  const tabA = getMultichainClient({ transport: transportA });
  const tabB = getMultichainClient({ transport: transportB });
  const inboxA = new Inbox(tabA);
  const inboxB = new Inbox(tabB);

  try {
    report.progress('getSession before any session');
    const before = await tabB.getSession();
    report.equal(before, { sessionScopes: {} }, 'getSession without a session');

    report.progress('createSession');
    const created = await tabA.createSession({
      optionalScopes: { [SCOPE]: { methods: METHODS, notifications: NOTIFICATIONS } },
      sessionProperties: { dapp: 'interop' },
    });
    report.observe('createSession', created);
    const granted = created?.sessionScopes?.[SCOPE];
    if (!report.check(granted !== undefined, 'createSession grants the dev chain scope', created)) {
      report.fail('no session to continue with');
    }
    report.equal(Object.keys(created.sessionScopes), [SCOPE], 'createSession grants exactly the requested scope');
    report.equal([...granted.methods].sort(), [...METHODS].sort(), 'granted methods');
    report.equal(granted.notifications, NOTIFICATIONS, 'granted notifications');
    report.check(
      Array.isArray(granted.accounts) && granted.accounts.length > 0 && granted.accounts.every((a) => ACCOUNT.test(a)),
      'granted accounts are CAIP-10 ids on the dev chain',
      granted.accounts,
    );
    const expiry = created.sessionProperties?.expiry;
    report.check(
      typeof expiry === 'string' && Date.parse(expiry) > Date.now(),
      'sessionProperties.expiry is a future ISO 8601 timestamp',
      created.sessionProperties,
    );

    const announced = standard(report, await inboxB.next('wallet_sessionChanged'), 'wallet_sessionChanged');
    report.equal(
      announced,
      { jsonrpc: '2.0', method: 'wallet_sessionChanged', params: { sessionScopes: created.sessionScopes } },
      'the other tab hears of the new session',
    );

    report.progress('getSession');
    report.equal(await tabA.getSession(), { sessionScopes: created.sessionScopes }, 'getSession (creator)');
    report.equal(await tabB.getSession(), { sessionScopes: created.sessionScopes }, 'getSession (other tab)');

    report.progress('invokeMethod eth_chainId / eth_blockNumber / eth_getBlockByNumber');
    const chainId = await tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_chainId', params: [] } });
    report.equal(chainId, { scope: SCOPE, result: { method: 'eth_chainId', result: '0x539' } }, 'invokeMethod eth_chainId');

    const height = await tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_blockNumber', params: [] } });
    report.observe('invokeMethod eth_blockNumber', height);
    report.check(
      height?.scope === SCOPE && height?.result?.method === 'eth_blockNumber' && HEX.test(height?.result?.result),
      'invokeMethod eth_blockNumber answers {scope, result: {method, result: hex}}',
      height,
    );

    const latest = await tabA.invokeMethod({
      scope: SCOPE,
      request: { method: 'eth_getBlockByNumber', params: [height.result.result, false] },
    });
    const block = latest?.result?.result;
    report.check(
      latest?.scope === SCOPE && latest?.result?.method === 'eth_getBlockByNumber',
      'invokeMethod eth_getBlockByNumber answers {scope, result: {method, result}}',
      latest,
    );
    report.check(
      block?.number === height.result.result && HASH.test(block?.hash) && HASH.test(block?.parentHash) && Array.isArray(block?.transactions),
      'the block read through the session is the block at that height',
      block,
    );

    report.progress('invokeMethod outside the grant');
    const notGranted = await rejection(
      tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_getBalance', params: ['0x' + '00'.repeat(20), 'latest'] } }),
    );
    report.check(
      notGranted.error instanceof MultichainApiError && notGranted.error.cause?.code === 4100,
      'a method outside the grant is refused with 4100 (MultichainApiError)',
      notGranted.error?.cause ?? notGranted,
    );
    const otherChain = await rejection(
      tabA.invokeMethod({ scope: 'eip155:1', request: { method: 'eth_blockNumber', params: [] } }),
    );
    report.check(
      otherChain.error instanceof MultichainApiError && otherChain.error.cause?.code === 4100,
      'a scope outside the grant is refused with 4100 (MultichainApiError)',
      otherChain.error?.cause ?? otherChain,
    );

    report.progress('eth_subscribe inside the session, then mine a block');
    const subscribed = await tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_subscribe', params: ['newHeads'] } });
    report.observe('invokeMethod eth_subscribe', subscribed);
    const subscription = subscribed?.result?.result;
    report.check(typeof subscription === 'string' && subscription.startsWith('0x'), 'eth_subscribe inside the session returns an id', subscribed);
    const mined = await httpCall(config.http, 'evm_mine', []);
    report.observe('evm_mine', mined);
    const notify = standard(report, await inboxA.next('wallet_notify'), 'wallet_notify');
    report.observe('wallet_notify', notify);
    report.equal(notify?.params?.scope, SCOPE, 'wallet_notify.scope');
    report.equal(notify?.params?.notification?.method, 'eth_subscription', 'wallet_notify.notification.method');
    report.equal(notify?.params?.notification?.params?.subscription, subscription, 'wallet_notify carries the subscription id');
    const head = notify?.params?.notification?.params?.result;
    report.check(
      HEX.test(head?.number) && BigInt(head.number) === BigInt(height.result.result) + 1n && HASH.test(head?.hash),
      'the notified head is the next block',
      { head, before: height.result.result },
    );
    report.check(!('id' in notify), 'wallet_notify carries no id', notify);
    const unsubscribed = await tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_unsubscribe', params: [subscription] } });
    report.equal(unsubscribed, { scope: SCOPE, result: { method: 'eth_unsubscribe', result: true } }, 'eth_unsubscribe inside the session');

    report.progress('operator narrows the session');
    const narrowed = {
      [SCOPE]: { methods: ['eth_blockNumber'], notifications: [], accounts: [granted.accounts[0]] },
    };
    const update = await fetch(config.admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${config.adminToken}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'admin_updateSession',
        params: { apiKey: config.apiKey, origin: config.origin, sessionScopes: narrowed },
      }),
      signal: AbortSignal.timeout(10_000),
    }).then((reply) => reply.json());
    report.observe('admin_updateSession', update);
    report.check(update?.error === undefined, 'admin_updateSession succeeds', update);
    for (const [tab, inbox] of [['A', inboxA], ['B', inboxB]]) {
      const changed = await inbox.next('wallet_sessionChanged');
      report.equal(changed?.params?.sessionScopes, narrowed, `tab ${tab} onNotification gets wallet_sessionChanged with the new scopes`);
    }
    report.equal(await tabB.getSession(), { sessionScopes: narrowed }, 'getSession after the operator update');
    const still = await tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_blockNumber', params: [] } });
    report.check(HEX.test(still?.result?.result), 'a method kept by the operator still works', still);
    const removed = await rejection(
      tabA.invokeMethod({ scope: SCOPE, request: { method: 'eth_getBlockByNumber', params: ['latest', false] } }),
    );
    report.check(
      removed.error instanceof MultichainApiError && removed.error.cause?.code === 4100,
      'a method removed by the operator is refused with 4100',
      removed.error?.cause ?? removed,
    );

    report.progress('revokeSession');
    await tabA.revokeSession();
    report.check(!transportA.isConnected(), 'revokeSession disconnects the transport (client behaviour)');
    const revoked = standard(report, await inboxB.next('wallet_sessionChanged'), 'the revocation');
    report.equal(revoked?.params, { sessionScopes: {} }, 'the other tab hears of the revocation');
    report.equal(await tabB.getSession(), { sessionScopes: {} }, 'getSession after revokeSession');
    const afterRevoke = await rejection(
      tabB.invokeMethod({ scope: SCOPE, request: { method: 'eth_blockNumber', params: [] } }),
    );
    report.check(
      afterRevoke.error instanceof MultichainApiError && afterRevoke.error.cause?.code === 4100,
      'invokeMethod after revokeSession is refused with 4100',
      afterRevoke.error?.cause ?? afterRevoke,
    );

    report.equal(inboxB.count('wallet_notify'), 0, "tab B never receives tab A's subscription notifications");
    report.equal(inboxA.count('wallet_notify'), 1, 'tab A receives exactly one wallet_notify for one mined block');
    report.observe('notificationsA', inboxA.seen);
    report.observe('notificationsB', inboxB.seen);
  } finally {
    report.observe('wireA', wire);
    await transportA.disconnect();
    await transportB.disconnect();
  }
}

await runScript('multichain-api-client', ['@metamask/multichain-api-client', 'ws'], main, { deadlineMs: 25_000 });
