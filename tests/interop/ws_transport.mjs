// The WebSocket `Transport` for @metamask/multichain-api-client the interop scripts use: the one a
// dapp page uses (docs/metamask/websocket-transport.mjs, the browser's WebSocket API), on the `ws`
// package with an Origin header (a browser dapp always sends one), and, when `wire` is given, every
// frame sent and received appended to it.

import WebSocket from 'ws';

import { getWebSocketTransport as overWebSocket } from '../../docs/metamask/websocket-transport.mjs';

/**
 * @param {string} url - the broker's `ws://…/ws/v3/<KEY>` address
 * @param {object} [options]
 * @param {string} [options.origin] - the Origin header
 * @param {number} [options.defaultTimeout] - ms per request, -1 for none
 * @param {number} [options.warmupTimeout] - ms for the client's first `wallet_getSession`
 * @param {Array} [options.wire] - when given, every frame sent and received is appended to it
 */
export function getWebSocketTransport(url, { origin, defaultTimeout, warmupTimeout, wire } = {}) {
  const createWebSocket = (target) => {
    const socket = new WebSocket(target, origin === undefined ? {} : { origin });
    if (wire !== undefined) {
      socket.on('message', (data) => wire.push({ in: data.toString() }));
      const send = socket.send.bind(socket);
      socket.send = (text, ...rest) => {
        wire.push({ out: text });
        return send(text, ...rest);
      };
    }
    return socket;
  };
  return overWebSocket(url, { createWebSocket, defaultTimeout, warmupTimeout });
}
