/**
 * The application behind nginx in the `ratelimit-service` bench: a node:http server answering
 * `{"ok":true}` to everything. With `UPSTREAM_HEADERS` (a JSON object) it adds those headers to
 * every answer: as the target of nginx's `auth_request` it is then a check that decides nothing
 * and answers what the service's `/check` answers an admitted request, the floor under the
 * service. Prints `listening on http://127.0.0.1:<port>`; stops on SIGTERM.
 */
import { once } from "node:events";
import { createServer } from "node:http";

const extraHeaders = JSON.parse(process.env.UPSTREAM_HEADERS ?? "{}") as Record<string, string>;
const headers = { ...extraHeaders, "Content-Type": "application/json", "Content-Length": "11" };

const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, headers);
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
