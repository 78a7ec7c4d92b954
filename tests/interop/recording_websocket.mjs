// Installs `globalThis.WebSocket` as the `ws` package's WebSocket recording every frame in `wire`.
// @solana/kit's WebSocket channel takes the global when there is one, when it is first imported:
// import this module before @solana/kit, so the report shows what kit sent and read.

import WebSocket from 'ws';

export const wire = [];

globalThis.WebSocket = class RecordingWebSocket extends WebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', (event) => wire.push({ in: String(event.data) }));
  }

  send(data, ...rest) {
    wire.push({ out: String(data) });
    return super.send(data, ...rest);
  }
};
