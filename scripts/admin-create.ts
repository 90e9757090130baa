/**
 * `npm run admin:create -- --email ada@example.com --name "Ada Lovelace"`: creates an admin, the
 * way into a new installation. The password comes from `--password-stdin` (piped), else from a
 * prompt that does not echo (leave it empty to generate one), else (no terminal) it is generated;
 * a generated password is printed once and stored only as its hash. Refused when an enabled admin
 * already exists, unless `--force`; with `--if-none` that is not an error (exit 0), which is how
 * `npm run up` makes sure a new installation has one. `--save FILE` also writes the email and a
 * generated password to FILE (mode 0600) for local development. Audited as `operator.create` by
 * the system actor "admin:create".
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { systemActor } from "../lib/control/change-context";
import type { AuthDeps } from "../lib/control/deps";
import { createOperator } from "../lib/control/operator/create-operator";
import type { OperatorRecord } from "../lib/control/operator/operator-record";
import { EnvError } from "../lib/server/env";
import { cliAuthDeps, describeCliError } from "./cli-deps";

export interface CreateAdminOptions {
  readonly email: string;
  readonly name: string;
  /** Null: generate one. */
  readonly password: string | null;
  /** Create one even when an enabled admin exists. */
  readonly force: boolean;
  /** @default "first admin, created from the command line" */
  readonly reason?: string;
}

export type CreateAdminOutcome =
  | {
      readonly status: "created";
      readonly operator: OperatorRecord;
      readonly generatedPassword: string | null;
    }
  | { readonly status: "refused"; readonly existingAdmins: number };

export async function createAdmin(
  options: CreateAdminOptions,
  deps: AuthDeps,
): Promise<CreateAdminOutcome> {
  const existingAdmins = await deps.db.operator.count({
    where: { role: "admin", disabledAt: null },
  });
  if (existingAdmins > 0 && !options.force) return { status: "refused", existingAdmins };
  const { operator, generatedPassword } = await createOperator(
    {
      email: options.email,
      name: options.name,
      role: "admin",
      ...(options.password === null ? {} : { password: options.password }),
    },
    {
      actor: systemActor("admin:create"),
      reason: options.reason ?? "first admin, created from the command line",
    },
    deps,
  );
  return { status: "created", operator, generatedPassword };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

/** Reads a line from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const input = process.stdin;
    process.stdout.write(question);
    input.setRawMode(true);
    input.resume();
    input.setEncoding("utf8");
    let answer = "";
    const onData = (data: string) => {
      for (const character of data) {
        if (character === "\r" || character === "\n" || character === "\u0004") {
          input.setRawMode(false);
          input.pause();
          input.off("data", onData);
          process.stdout.write("\n");
          resolve(answer);
          return;
        }
        if (character === "\u0003") {
          input.setRawMode(false);
          reject(new Error("cancelled"));
          return;
        }
        if (character === "\u007f" || character === "\b") answer = answer.slice(0, -1);
        else answer += character;
      }
    };
    input.on("data", onData);
  });
}

async function passwordFrom(values: { "password-stdin"?: boolean }): Promise<string | null> {
  if (values["password-stdin"] === true) return readStdin();
  if (!process.stdin.isTTY) return null;
  const first = await promptHidden("Password (leave empty to generate one): ");
  if (first === "") return null;
  const second = await promptHidden("Again: ");
  if (first !== second) throw new Error("the two passwords differ; nothing was created");
  return first;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      email: { type: "string" },
      name: { type: "string" },
      "password-stdin": { type: "boolean" },
      force: { type: "boolean" },
      "if-none": { type: "boolean" },
      save: { type: "string" },
      reason: { type: "string" },
    },
    strict: true,
  });
  if (values.email === undefined || values.name === undefined) {
    console.error(
      'usage: npm run admin:create -- --email ada@example.com --name "Ada Lovelace" [--password-stdin] [--force]',
    );
    return 2;
  }
  const deps = cliAuthDeps();
  try {
    const ifNone = values["if-none"] === true;
    const outcome = await createAdmin(
      {
        email: values.email,
        name: values.name,
        password: ifNone ? null : await passwordFrom(values),
        force: values.force === true,
        reason: values.reason,
      },
      deps,
    );
    if (outcome.status === "refused" && ifNone) {
      console.log(`  an enabled admin exists; none created`);
      return 0;
    }
    if (outcome.status === "refused") {
      console.error(
        `admin:create: ${outcome.existingAdmins} enabled admin(s) already exist; nothing was created. Use --force to add another.`,
      );
      return 1;
    }
    console.log(`Created admin ${outcome.operator.email} (${outcome.operator.id}).`);
    if (outcome.generatedPassword !== null) {
      console.log(`Password (shown once, stored only as a hash): ${outcome.generatedPassword}`);
      if (values.save !== undefined) {
        writeFileSync(
          values.save,
          `email: ${outcome.operator.email}\npassword: ${outcome.generatedPassword}\n`,
          { mode: 0o600 },
        );
        console.log(`Also written to ${values.save} (readable by you only).`);
      }
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
        error instanceof EnvError ? error.message : `admin:create: ${describeCliError(error)}`,
      );
      process.exit(1);
    },
  );
}
