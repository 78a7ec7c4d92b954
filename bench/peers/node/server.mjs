// Peer (b): a fan-out server written the obvious way with Node's `ws` package.
//
// Every connection that sends eth_subscribe gets a subscription id back and joins the subscriber
// set; a burst is K notifications, each sent with `client.send(buffer, {binary: false})` to every
// subscriber (ws frames it per connection and writes without waiting). The payload bytes are the
// ones scopecast sends: read from the files bench/payloads.py wrote (argument --payloads DIR).
//
// Control on stdin/stdout as bench/server.py: {"cmd":"burst"|"settle"|"exit"} JSON lines.
// Times are process.hrtime (CLOCK_MONOTONIC, the clock Python's time.monotonic() reads).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { WebSocketServer } from 'ws';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const port = Number(option('--port', '0'));
const directory = option('--payloads');
const SUBSCRIPTION = '0x' + '5c'.repeat(16);

const load = (kind) =>
  readFileSync(`${directory}/${kind}.jsonl`)
    .toString('utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => Buffer.from(line, 'utf8'));
const messages = { heads: load('heads'), logs: load('logs') };
let sent = 0;

const subscribers = new Set();
const server = new WebSocketServer({ host: '127.0.0.1', port, backlog: 1024 });

server.on('connection', (ws) => {
  ws.on('message', (data) => {
    const request = JSON.parse(data.toString());
    let result = null;
    if (request.method === 'eth_subscribe') {
      subscribers.add(ws);
      result = SUBSCRIPTION;
    }
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: request.id ?? null, result }));
  });
  ws.on('close', () => subscribers.delete(ws));
  ws.on('error', () => subscribers.delete(ws));
});

const now = () => Number(process.hrtime.bigint()) / 1e9;
const emit = (message) => process.stdout.write(JSON.stringify(message) + '\n');

const burst = (kind, count) => {
  const published = [];
  const list = messages[kind];
  for (let i = 0; i < count; i++) {
    const message = list[sent % list.length];
    sent += 1;
    published.push(now());
    for (const client of subscribers) client.send(message, { binary: false });
  }
  return published;
};

server.on('listening', () => {
  emit({ ready: server.address().port, pid: process.pid });
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (!line.trim()) return;
    const command = JSON.parse(line);
    if (command.cmd === 'burst') {
      emit({ published: burst(command.kind, command.count) });
    } else if (command.cmd === 'settle') {
      if (global.gc) global.gc();
      emit({ connections: server.clients.size, subscriptions: subscribers.size });
    } else if (command.cmd === 'stats') {
      emit({});  // V8's collector is not timed here (its time counts in the process CPU)
    } else if (command.cmd === 'exit') {
      process.exit(0);
    } else {
      emit({ error: `unknown command ${command.cmd}` });
    }
  });
});
