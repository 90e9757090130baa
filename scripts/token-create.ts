/**
 * `npm run token:create -- --name ci --role operator [--expires-in-days 90]`: an API token for a
 * script, printed once (only its hash is stored). Send it as `Authorization: Bearer <token>`.
 * `--into FILE` writes it to FILE (mode 0600) instead of the terminal, and does nothing when FILE
 * exists: how `npm run up` keeps a local token for the examples in docs/http-api.md. Audited as
 * `token.create` by the system actor "token:create".
 */
import { existsSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { systemActor } from "../lib/control/change-context";
import { ZRole } from "../lib/control/operator/operator-record";
import { createApiToken } from "../lib/control/token/create-api-token";
import { EnvError } from "../lib/server/env";
import { cliAuthDeps, describeCliError } from "./cli-deps";

const DAY_MS = 86_400_000;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      name: { type: "string" },
      role: { type: "string" },
      "expires-in-days": { type: "string" },
      into: { type: "string" },
      reason: { type: "string" },
    },
    strict: true,
  });
  if (values.name === undefined || values.role === undefined) {
    console.error(
      "usage: npm run token:create -- --name ci --role viewer|operator|admin [--expires-in-days 90] [--reason why]",
    );
    return 2;
  }
  const days = values["expires-in-days"];
  if (days !== undefined && !/^[1-9][0-9]{0,2}$/.test(days)) {
    console.error("token:create: --expires-in-days must be a whole number of days from 1 to 366");
    return 2;
  }
  if (values.into !== undefined && existsSync(values.into)) {
    console.log(`  ${values.into} exists; no token created`);
    return 0;
  }
  const role = ZRole.safeParse(values.role);
  if (!role.success) {
    console.error(`token:create: ${role.error.issues[0]?.message ?? "invalid role"}`);
    return 2;
  }
  const deps = cliAuthDeps();
  try {
    const { token, apiToken } = await createApiToken(
      {
        name: values.name,
        role: role.data,
        expiresAt:
          days === undefined ? null : new Date(Date.now() + Number(days) * DAY_MS).toISOString(),
      },
      {
        actor: systemActor("token:create"),
        reason: values.reason ?? `token "${values.name}" created from the command line`,
      },
      deps,
    );
    console.log(
      `Created API token "${apiToken.name}" (${apiToken.prefix}, ${apiToken.role}${apiToken.expiresAt === null ? ", no expiry" : `, expires ${apiToken.expiresAt}`}).`,
    );
    if (values.into !== undefined) {
      writeFileSync(values.into, `${token}\n`, { mode: 0o600 });
      console.log(`Token written to ${values.into} (readable by you only).`);
    } else {
      console.log("Token (shown once, stored only as a hash):");
      console.log(token);
    }
    return 0;
  } finally {
    await deps.db.$disconnect();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(
        error instanceof EnvError ? error.message : `token:create: ${describeCliError(error)}`,
      );
      process.exit(1);
    },
  );
}
