// A WebSocket that picks scopecast subscriptions up where a dropped connection left them.
//
// Hand it to a client library that reconnects and re-subscribes by itself (viem's webSocket()
// transport, ethers' WebSocketProvider): when the library opens its next socket to the same URL,
// this one adds `?resume=<the last cursor>`; scopecast replays what was missed with the same
// subscription ids; the library's own re-subscribe is answered here with the id the server kept,
// and what the server replayed for that id is passed on once the library listens for it again.
// If the server cannot fill the gap (`scopecast_resumed {complete: false}`) the re-subscribes go
// to the server as usual, and `onGap` is called: nothing is skipped silently.
//
//   import WebSocket from 'ws';                      // or the browser's WebSocket
//   import { resumingWebSocket } from './resuming-websocket.mjs';
//   globalThis.WebSocket = resumingWebSocket(WebSocket);   // before viem opens its first socket
//
// See README "Resume after a drop".

const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;
const SERVICE_RESTART = 1012; // a draining server names the cursor in the close reason

export function resumingWebSocket(Base = globalThis.WebSocket, { onResumed, onGap } = {}) {
  // Per URL: the last cursor, and the subscriptions the server knows (params as JSON -> ids).
  const memory = new Map();

  return class ResumingWebSocket extends EventTarget {
    static CONNECTING = CONNECTING;
    static OPEN = OPEN;
    static CLOSING = CLOSING;
    static CLOSED = CLOSED;
    CONNECTING = CONNECTING;
    OPEN = OPEN;
    CLOSING = CLOSING;
    CLOSED = CLOSED;
    onopen = null;
    onmessage = null;
    onerror = null;
    onclose = null;

    #socket;
    #memory;
    #resume = null; // while resuming: { kept: params JSON -> ids not yet claimed, settled }
    #held = new Map(); // id -> notifications replayed for it before the client claimed it
    #waiting = []; // subscribe requests that wait for the resume's outcome
    #pending = new Map(); // request id -> params JSON of a subscribe sent to the server

    constructor(url, protocols) {
      super();
      this.url = url;
      let known = memory.get(url);
      if (known === undefined) memory.set(url, (known = { cursor: null, subscriptions: new Map() }));
      this.#memory = known;
      let target = url;
      if (known.cursor !== null) {
        target = `${url}${url.includes('?') ? '&' : '?'}resume=${encodeURIComponent(known.cursor)}`;
        this.#resume = { kept: known.subscriptions, settled: false };
        known.subscriptions = new Map();
      }
      this.#socket = new Base(target, protocols);
      for (const type of ['open', 'error']) {
        this.#socket.addEventListener(type, () => this.#dispatch(new Event(type)));
      }
      this.#socket.addEventListener('close', (event) => this.#closed(event));
      this.#socket.addEventListener('message', (event) => this.#received(event.data));
    }

    get readyState() {
      return this.#socket.readyState;
    }

    close(code, reason) {
      this.#socket.close(code, reason);
    }

    send(data) {
      const request = parse(data);
      if (request?.method === 'eth_subscribe') {
        const key = JSON.stringify(request.params ?? []);
        if (this.#resume?.kept.has(key)) {
          this.#waiting.push({ request, key, data });
          if (this.#resume.settled) this.#answerWaiting();
          return;
        }
        this.#pending.set(request.id, key);
      } else if (request?.method === 'eth_unsubscribe') {
        forget(this.#memory.subscriptions, request.params?.[0]);
      }
      this.#socket.send(data);
    }

    #received(data) {
      const message = parse(data);
      const params = message?.params;
      if (typeof params?.cursor === 'string') this.#memory.cursor = params.cursor;
      if (message?.method === 'scopecast_resumed') {
        this.#settle(params);
        return;
      }
      if (message?.id !== undefined && this.#pending.has(message.id)) {
        const key = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (typeof message.result === 'string') remember(this.#memory.subscriptions, key, message.result);
      }
      const id = message?.method === 'eth_subscription' ? params?.subscription : undefined;
      if (id !== undefined && this.#held.has(id)) {
        this.#held.get(id).push(data);
        return;
      }
      if (id !== undefined && this.#resume !== null && claimable(this.#resume.kept, id)) {
        this.#held.set(id, [data]); // replayed before the client re-subscribed: kept for it
        return;
      }
      this.#message(data);
    }

    #settle(params) {
      if (this.#resume === null) return;
      if (params?.complete === true) {
        this.#resume.settled = true;
        onResumed?.(params);
        this.#answerWaiting();
        return;
      }
      // Nothing was kept: the subscriptions start afresh on the server, and the gap is reported.
      this.#resume = null;
      this.#held.clear();
      onGap?.(params);
      for (const { request, key, data } of this.#waiting.splice(0)) {
        this.#pending.set(request.id, key);
        this.#socket.send(data);
      }
    }

    #answerWaiting() {
      const kept = this.#resume.kept;
      for (const { request, key, data } of this.#waiting.splice(0)) {
        const ids = kept.get(key) ?? [];
        const id = ids.shift();
        if (ids.length === 0) kept.delete(key);
        if (id === undefined) {
          this.#pending.set(request.id, key);
          this.#socket.send(data);
          continue;
        }
        remember(this.#memory.subscriptions, key, id);
        this.#message(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: id }));
        for (const held of this.#held.get(id) ?? []) this.#message(held);
        this.#held.delete(id);
      }
    }

    #closed(event) {
      if (event.code === SERVICE_RESTART && event.reason) this.#memory.cursor = event.reason;
      const closed = new Event('close');
      Object.assign(closed, { code: event.code, reason: event.reason, wasClean: event.wasClean });
      this.#dispatch(closed);
    }

    #message(data) {
      this.#dispatch(Object.assign(new Event('message'), { data }));
    }

    #dispatch(event) {
      this.dispatchEvent(event);
      this[`on${event.type}`]?.(event);
    }
  };
}

function parse(data) {
  try {
    return JSON.parse(typeof data === 'string' ? data : data.toString());
  } catch {
    return undefined;
  }
}

function remember(subscriptions, key, id) {
  if (!subscriptions.has(key)) subscriptions.set(key, []);
  subscriptions.get(key).push(id);
}

function forget(subscriptions, id) {
  for (const [key, ids] of subscriptions) {
    const at = ids.indexOf(id);
    if (at >= 0) ids.splice(at, 1);
    if (ids.length === 0) subscriptions.delete(key);
  }
}

function claimable(restored, id) {
  for (const ids of restored.values()) if (ids.includes(id)) return true;
  return false;
}
