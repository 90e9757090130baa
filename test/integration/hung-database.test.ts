/**
 * A Postgres that accepts connections and never answers (a hung server, a partition) is the same
 * outage as one that refuses them: the connection timeout (lib/server/db.ts) ends the wait, the
 * error is recognised as the database being unavailable, and the API answers 503
 * DATABASE_UNAVAILABLE with Retry-After, never a bare 500. The test prints how long it took; it
 * asserts the answer, not the time.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineEndpoint, toRouteHandler } from "@/lib/api/endpoint";
import { isDatabaseUnavailable } from "@/lib/control/prisma-errors";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createPrisma } from "@/lib/server/db";

let server: net.Server;
const sockets = new Set<net.Socket>();
let db: PrismaClient;

beforeAll(async () => {
  server = net.createServer((socket) => {
    // Accept, read, never answer.
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  db = createPrisma({ databaseUrl: `postgresql://postgres@127.0.0.1:${port}/hung`, poolSize: 2 });
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await db.$disconnect().catch(() => undefined);
});

describe("a database that accepts connections and never answers", () => {
  it("is recognised as unavailable once the connection times out", async () => {
    const startedAt = performance.now();
    const error = await db.operator.findFirst().then(
      () => null,
      (caught: unknown) => caught,
    );
    console.log(
      `hung database: the query failed after ${Math.round(performance.now() - startedAt)} ms`,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(sockets.size).toBeGreaterThan(0);
  });

  it("503: the API answers DATABASE_UNAVAILABLE with Retry-After", async () => {
    const endpoint = defineEndpoint({
      method: "GET",
      path: "/api/v1/test",
      summary: "test",
      tag: "Test",
      access: "public",
      response: z.unknown(),
      handle: () => db.tier.findMany(),
    });
    const response = await toRouteHandler(endpoint, { authenticate: async () => null })(
      new Request("http://console.test/api/v1/test"),
      { params: Promise.resolve({}) },
    );
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect((await response.json()).error.code).toBe("DATABASE_UNAVAILABLE");
  });
});
