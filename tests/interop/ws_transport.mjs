// A `Transport` for @metamask/multichain-api-client that speaks JSON-RPC over a WebSocket (the `ws`
// package), the way the package's own extension transports speak to MetaMask: each request gets a
// numeric id and is sent as `{id, jsonrpc: '2.0', ...request}`; `request` resolves with the whole
// JSON-RPC response, errors included (the client turns `error` into a MultichainApiError); every
// message without an id is a notification handed to the `onNotification` callbacks.

import { TransportError, TransportTimeoutError } from '@metamask/multichain-api-client';
import WebSocket from 'ws';

/**
 * @param {string} url - the broker's `ws://…/ws/v3/<KEY>` address
 * @param {object} [options]
 * @param {string} [options.origin] - the Origin header (a browser dapp always sends one)
 * @param {number} [options.defaultTimeout] - ms per request, -1 for none
 * @param {number} [options.warmupTimeout] - ms for the client's first `wallet_getSession`
 * @param {Array} [options.wire] - when given, every frame sent and received is appended to it
 */
export function getWebSocketTransport(url, { origin, defaultTimeout = 10_000, warmupTimeout = 1_000, wire } = {}) {
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

  function onMessage(data) {
    const text = data.toString();
    wire?.push({ in: text });
    let message;
    try {
      message = JSON.parse(text);
    } catch (error) {
      settleAll(new TransportError(`unparseable frame: ${text}`, error));
      return;
    }
    if (message?.id === null || message?.id === undefined) {
      for (const callback of callbacks) {
        try {
          callback(message);
        } catch (error) {
          process.stderr.write(`[ws-transport] notification callback failed: ${error?.stack ?? error}\n`);
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
        const candidate = new WebSocket(url, origin === undefined ? {} : { origin });
        candidate.on('message', onMessage);
        candidate.once('open', () => {
          socket = candidate;
          resolve();
        });
        candidate.once('error', (error) => {
          if (socket === undefined) reject(new TransportError(`cannot connect to ${url}`, error));
        });
        candidate.once('unexpected-response', (_request, response) => {
          reject(new TransportError(`upgrade refused with HTTP ${response.statusCode}`));
        });
        candidate.once('close', (code, reason) => {
          if (socket === candidate) socket = undefined;
          settleAll(new TransportError(`connection closed (${code} ${reason})`));
        });
      }),

    disconnect: async () => {
      const closing = socket;
      socket = undefined;
      callbacks.clear();
      settleAll(new TransportError('disconnected'));
      if (closing !== undefined && closing.readyState === WebSocket.OPEN) {
        await new Promise((resolve) => {
          closing.once('close', resolve);
          closing.close(1000);
        });
      }
    },

    isConnected: () => socket !== undefined && socket.readyState === WebSocket.OPEN,

    request: (request, { timeout = defaultTimeout } = {}) => {
      if (socket === undefined) {
        return Promise.reject(new TransportError('not connected'));
      }
      const id = nextId++;
      const text = JSON.stringify({ id, jsonrpc: '2.0', ...request });
      return new Promise((resolve, reject) => {
        const timer =
          timeout === -1
            ? undefined
            : setTimeout(() => {
                pending.delete(id);
                reject(new TransportTimeoutError(`no reply to ${request.method} within ${timeout} ms`));
              }, timeout);
        pending.set(id, { resolve, reject, timer });
        wire?.push({ out: text });
        socket.send(text, (error) => {
          if (error) {
            pending.delete(id);
            clearTimeout(timer);
            reject(new TransportError(`cannot send ${request.method}`, error));
          }
        });
      });
    },

    onNotification: (callback) => {
      callbacks.add(callback);
      return () => callbacks.delete(callback);
    },
  };
}
