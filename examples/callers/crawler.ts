/**
 * A polite crawler (docs/callers.md): fetches PAGES pages from each of HOSTS through the provider
 * example, never faster than 10 requests a second per host, burst 1, however many crawler
 * processes run at once: they share the budget through Redis. Failed fetches are retried, and
 * each retry waits for a turn of its own, so retries stay within the quota too.
 *
 *   npx tsx examples/callers/provider.ts &
 *   for i in 1 2 3; do npx tsx examples/callers/crawler.ts & done; wait
 *
 * Environment: REDIS_URL (default 127.0.0.1:6379), PROVIDER_URL (default http://127.0.0.1:4300),
 * HOSTS (default a.example,b.example), PAGES (default 50).
 */
import { createOutboundLimiter, OutboundError } from "@limitplane/enforcer/callers";
import { Redis } from "ioredis";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379/0");
const provider = process.env.PROVIDER_URL ?? "http://127.0.0.1:4300";
const hosts = (process.env.HOSTS ?? "a.example,b.example").split(",");
const pages = Number(process.env.PAGES ?? 50);

const limiter = createOutboundLimiter({
  client: redis,
  keyPrefix: "crawler-example:",
  budgets: [
    {
      name: "crawl",
      limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
      maxWaitMs: 120_000,
      keyBy: "host",
    },
  ],
});

class FetchFailed extends Error {}

async function crawl(host: string): Promise<number> {
  let fetched = 0;
  for (let page = 1; page <= pages; page++) {
    await limiter.schedule(
      "outbound:crawl",
      host,
      async () => {
        const response = await fetch(`${provider}/page?host=${host}&page=${page}`);
        await response.arrayBuffer();
        if (!response.ok) throw new FetchFailed(`${host} page ${page}: HTTP ${response.status}`);
      },
      { retries: 5, isRetryable: (error) => error instanceof FetchFailed },
    );
    fetched += 1;
  }
  return fetched;
}

try {
  const counts = await Promise.all(hosts.map((host) => crawl(host)));
  console.log(`crawler ${process.pid}: fetched ${counts.join(" + ")} pages`);
} catch (error: unknown) {
  if (error instanceof OutboundError) console.error(`crawler ${process.pid}: ${error.message}`);
  else throw error;
  process.exitCode = 1;
} finally {
  limiter.close();
  await redis.quit();
}
