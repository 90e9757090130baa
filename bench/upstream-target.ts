/**
 * The application behind nginx in the `ratelimit-service` bench: a node:http server answering
 * `{"ok":true}` to everything. Prints `listening on http://127.0.0.1:<port>`; stops on SIGTERM.
 */
import { once } from "node:events";
import { createServer } from "node:http";

const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { "Content-Type": "application/json", "Content-Length": "11" });
  res.end('{"ok":true}');
});
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1");
await once(server, "listening");
const address = server.address();
if (address === null || typeof address === "string") throw new Error("not listening on TCP");
console.log(`upstream listening on http://127.0.0.1:${address.port}`);
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
