// A `Transport` for MetaMask's `@metamask/multichain-api-client` over a WebSocket to scopecast,
// written against the browser's WebSocket API only (no imports), so that a dapp page can use it as
// it is; `tests/interop/metamask_wallet_standard.mjs` runs it under Node with the `ws` package.
//
//   import { getMultichainClient } from '@metamask/multichain-api-client';
//   import { getWebSocketTransport } from './websocket-transport.mjs';
//   const transport = getWebSocketTransport('ws://localhost:8545/ws/v3/dev?client=metamask');
//   const client = getMultichainClient({ transport });
//
// Each request gets a numeric id and resolves with the whole JSON-RPC response (the client turns
// `error` into a MultichainApiError); every message without an id is a notification, handed to the
// `onNotification` callbacks. See README "Solana", "MetaMask's Solana wallet on a dapp page".

const OPEN = 1;

/**
 * @param {string} url - `ws://…/ws/v3/<KEY>?client=metamask`
 * @param {object} [options]
 * @param {(url: string) => WebSocket} [options.createWebSocket] - opens the socket (default: the
 *   page's `WebSocket`; under Node, the `ws` package's, with an `origin`)
 * @param {number} [options.defaultTimeout] - ms per request, -1 for none
 * @param {number} [options.warmupTimeout] - ms for the client's first `wallet_getSession`
 */
export function getWebSocketTransport(
  url,
  { createWebSocket = (target) => new WebSocket(target), defaultTimeout = 10_000, warmupTimeout = 1_000 } = {},
) {
  let socket;
  let nextId = 1;
  const pending = new Map();
  const callbacks = new Set();

  function settleAll(error) {
    for (const { reject, timer } of pending.values()) {
      clearTimeout(timer);
      reject(error);
    }
    pending.clear();
  }

  function onMessage(event) {
    let message;
    try {
      message = JSON.parse(String(event.data));
    } catch (error) {
      settleAll(new Error(`unparseable frame: ${event.data}`, { cause: error }));
      return;
    }
    if (message?.id === null || message?.id === undefined) {
      for (const callback of callbacks) {
        try {
          callback(message);
        } catch (error) {
          console.error('notification callback failed', error);
        }
      }
      return;
    }
    const waiter = pending.get(message.id);
    if (waiter !== undefined) {
      pending.delete(message.id);
      clearTimeout(waiter.timer);
      waiter.resolve(message);
    }
  }

  return {
    warmupTimeout,

    connect: () =>
      new Promise((resolve, reject) => {
        const candidate = createWebSocket(url);
        candidate.addEventListener('message', onMessage);
        candidate.addEventListener('open', () => {
          socket = candidate;
          resolve();
        });
        candidate.addEventListener('error', () => {
          if (socket === undefined) reject(new Error(`cannot connect to ${url}`));
        });
        candidate.addEventListener('close', (event) => {
          if (socket === candidate) socket = undefined;
          settleAll(new Error(`connection closed (${event.code} ${event.reason})`));
        });
      }),

    disconnect: async () => {
      const closing = socket;
      socket = undefined;
      callbacks.clear();
      settleAll(new Error('disconnected'));
      if (closing !== undefined && closing.readyState === OPEN) {
        await new Promise((resolve) => {
          closing.addEventListener('close', resolve);
          closing.close(1000);
        });
      }
    },

    isConnected: () => socket !== undefined && socket.readyState === OPEN,

    request: (request, { timeout = defaultTimeout } = {}) => {
      if (socket === undefined) return Promise.reject(new Error('not connected'));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer =
          timeout === -1
            ? undefined
            : setTimeout(() => {
                pending.delete(id);
                reject(new Error(`no reply to ${request.method} within ${timeout} ms`));
              }, timeout);
        pending.set(id, { resolve, reject, timer });
        socket.send(JSON.stringify({ id, jsonrpc: '2.0', ...request }));
      });
    },

    onNotification: (callback) => {
      callbacks.add(callback);
      return () => callbacks.delete(callback);
    },
  };
}
