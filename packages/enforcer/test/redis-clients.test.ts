/**
 * The client factory against servers of this file's own (never the shared Redis): a primary that
 * is demoted under a connected client. Its `READONLY` reply is treated as a failover (the client
 * reconnects at once), and the write that got it fails, for the failure policy to decide, instead
 * of being sent again.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisClient, reconnectOnReadOnly } from "../src/publication/redis-clients";
import { OwnRedisServer } from "../src/testing/redis-server";
import { waitFor } from "../src/testing/wait-for";

let first: OwnRedisServer;
let second: OwnRedisServer;

beforeAll(async () => {
  [first, second] = await Promise.all([OwnRedisServer.start(), OwnRedisServer.start()]);
});

afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
});

/** A plain admin connection to `server`, for commands the product never sends. */
async function admin<T>(server: OwnRedisServer, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(server.url, { maxRetriesPerRequest: 0 });
  client.on("error", () => {});
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

describe("reconnectOnReadOnly", () => {
  it.each([
    ["READONLY You can't write against a read only replica.", 1],
    ["ERR unknown command", false],
    ["LOADING Redis is loading the dataset in memory", false],
    ["readonly in lower case is not Redis's reply", false],
  ] as const)("%s -> %s", (message, expected) => {
    expect(reconnectOnReadOnly(new Error(message))).toBe(expected);
  });
});

describe("a demoted primary", () => {
  it("answers READONLY once: the decision fails and the client reconnects at once", async () => {
    const decisions = createRedisClient("decisions", { url: first.url });
    try {
      await waitFor("the client to connect", () =>
        decisions.status === "ready" ? true : undefined,
      );
      await decisions.set("lp-test:readonly", "0");
      let reconnects = 0;
      decisions.on("reconnecting", () => {
        reconnects++;
      });
      // Demote the server under the connected client: it now replicates the other one.
      await admin(first, (client) => client.replicaof("127.0.0.1", second.port));
      await waitFor("the demoted server to report the replica role", () =>
        admin(first, (client) => client.info("replication")).then((info) =>
          info.includes("role:slave") ? true : undefined,
        ),
      );
      await expect(decisions.incr("lp-test:readonly")).rejects.toThrow(/^READONLY/);
      await waitFor("the client to reconnect after READONLY", () =>
        reconnects > 0 ? true : undefined,
      );
      await waitFor("the client to be connected again", () =>
        decisions.status === "ready" ? true : undefined,
      );
    } finally {
      decisions.disconnect();
      await admin(first, (client) => client.replicaof("NO", "ONE"));
    }
  });
});
