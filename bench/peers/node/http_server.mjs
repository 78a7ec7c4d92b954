// Peer of the HTTP benchmarks: Node's own `http` server, decoding the JSON-RPC envelope of each
// POST and answering constant bytes (read from the file named by argv[3]; the reply scopecast gives
// to the same call). Usage: node http_server.mjs PORT REPLY_FILE. Prints "listening PORT".
import http from "node:http";
import { readFileSync } from "node:fs";

const port = Number(process.argv[2] ?? 0);
const reply = readFileSync(process.argv[3]);
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let id = null;
    try {
      const message = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      id = Array.isArray(message) ? null : message.id;
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}');
      return;
    }
    void id;
    res.writeHead(200, { "content-type": "application/json", "content-length": reply.length });
    res.end(reply);
  });
});
server.keepAliveTimeout = 75_000;
server.listen(port, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
