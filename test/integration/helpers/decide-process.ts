/**
 * A separate process deciding one change request, for races across processes:
 * `node --conditions=react-server --import tsx test/integration/helpers/decide-process.ts <database url> <approve|reject> <request id> <operator id> <operator name>`
 * waits for a line on stdin (so two processes can be released together), decides at version 1,
 * and prints one JSON line: `{"ok": true}` or `{"ok": false, "status", "code"}`.
 */
import { once } from "node:events";
import { approveChangeRequest } from "@/lib/control/change-request/approve-change-request";
import { rejectChangeRequest } from "@/lib/control/change-request/reject-change-request";
import { isAppError } from "@/lib/control/errors";
import { systemClock } from "@/lib/server/composition";
import { createPrisma } from "@/lib/server/db";

const [databaseUrl, verb, id, operatorId, operatorName] = process.argv.slice(2);
if (
  databaseUrl === undefined ||
  (verb !== "approve" && verb !== "reject") ||
  id === undefined ||
  operatorId === undefined ||
  operatorName === undefined
) {
  throw new Error(
    "usage: decide-process.ts <database url> <approve|reject> <id> <operator id> <name>",
  );
}
const db = createPrisma({ databaseUrl, poolSize: 2 });
const deps = { db, publisher: null, clock: systemClock };
const actor = { type: "operator" as const, id: operatorId, name: operatorName };
// Connect before the start line, so both processes race on the decision, not on connecting.
await db.$queryRaw`SELECT 1`;
console.log("ready");
await once(process.stdin, "data");
try {
  if (verb === "approve") {
    await approveChangeRequest({ id, expectedVersion: 1, note: "race" }, { actor }, deps);
  } else {
    await rejectChangeRequest({ id, expectedVersion: 1 }, { actor, reason: "race" }, deps);
  }
  console.log(JSON.stringify({ ok: true }));
} catch (error: unknown) {
  if (!isAppError(error)) throw error;
  console.log(JSON.stringify({ ok: false, status: error.status, code: error.code }));
}
await db.$disconnect();
