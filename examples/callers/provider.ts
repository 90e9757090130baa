/**
 * A stand-in for a provider with a documented quota, for the crawler example (docs/callers.md):
 * it answers every request and, each second, prints how many requests each host received in the
 * last second. With FAIL_RATE (0 to 1) it answers that share of requests 503, as a flaky provider
 * does. Run: `npx tsx examples/callers/provider.ts` (PORT, default 4300).
 */
import { createServer } from "node:http";

const port = Number(process.env.PORT ?? 4300);
const failRate = Number(process.env.FAIL_RATE ?? 0);
const arrivalsByHost = new Map<string, number[]>();

createServer((request, response) => {
  const host = new URL(request.url ?? "/", "http://provider").searchParams.get("host") ?? "-";
  const arrivals = arrivalsByHost.get(host) ?? [];
  arrivals.push(performance.now());
  arrivalsByHost.set(host, arrivals);
  const isFailure = Math.random() < failRate;
  response.writeHead(isFailure ? 503 : 200, { "content-type": "text/plain" });
  response.end(isFailure ? "busy" : "ok");
}).listen(port, "127.0.0.1", () => {
  console.log(`provider listening on http://127.0.0.1:${port}`);
});

setInterval(() => {
  const sinceMs = performance.now() - 1_000;
  const counts = [...arrivalsByHost].map(
    ([host, arrivals]) => `${host}=${arrivals.filter((at) => at >= sinceMs).length}`,
  );
  if (counts.length > 0) console.log(`last second: ${counts.join(" ")}`);
}, 1_000);
