/**
 * Redis instructions suite: what redis-server executes per decision, ours against
 * rate-limiter-flexible (rlf), counted by valgrind's callgrind. A count of instructions, not a
 * time: replaying the same commands gives the same count whatever else this shared machine is
 * doing, where `INFO commandstats` usec (the `redis` suite) moves by 10-30% from run to run. (The
 * recordings themselves differ a little between runs: how many decisions ours puts in one call
 * depends on timing. The table prints it.)
 * It counts everything redis-server does for a decision (reading the command, the script, its
 * inner commands, the reply), but not the kernel's share or cache misses, so it complements the
 * `redis` suite's times rather than replacing them.
 *
 * How: each side's traffic is recorded first, on a plain private redis-server, as its own client
 * sends it (ours: RedisStore batching up to 64 decisions per call; rlf: RateLimiterRedis on
 * ioredis with `enableAutoPipelining`, three layers as its union of three limiters), at 1, 16 and
 * 64 decisions in flight over 10,000 subjects in a fixed pseudo-random order, one limit and three
 * layers as in the `redis` suite. Then every recording is replayed into a redis-server run under
 * callgrind: once to create the keys, then, with the counters zeroed, once more to count. Under
 * callgrind redis-server runs tens of times slower, so the replay stretches key lifetimes (ours:
 * the expiry margin argument; rlf: its window argument) to an hour: keys then live through the
 * replay as they live at full speed, and neither side's count is inflated by keys expiring
 * between two uses. The calls are replayed 16 at a time on one connection, for both sides.
 *
 * Needs `valgrind` and `callgrind_control` (Debian's valgrind package) and redis-server on the
 * PATH; without them the suite says so and measures nothing. Takes a few minutes.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { RedisStore } from "@limitplane/enforcer/limiter";
import { freePort, OwnRedisServer, privateRedisServerArgs } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { loadLine } from "./fair";
import { ONE_LIMIT, rlfLimiters, type Shape, THREE_LAYERS } from "./redis-workload";
import { Targets } from "./results";

const execFileAsync = promisify(execFile);

const SUBJECTS = 10_000;
/** Decisions per recording: lone calls cost most per decision, so fewer of them. */
const DECISIONS: Record<number, number> = { 1: 3_000, 16: 10_000, 64: 10_000 };
const IN_FLIGHT = [1, 16, 64] as const;
/** Calls sent together when replaying (both sides). */
const REPLAY_GROUP = 16;
/** Key lifetimes in the replay: an hour (see the header). */
const STRETCHED_MARGIN_MS = "3600000";
const STRETCHED_WINDOW_SEC = "3600";

/** One command as sent: its name and arguments. */
interface Sent {
  readonly name: string;
  readonly args: readonly (string | Buffer)[];
}

/** What a replay needs: commands that set up (scripts), and the recorded decision traffic. */
interface Recording {
  readonly side: "ours" | "rlf";
  readonly shape: Shape;
  readonly inFlight: number;
  readonly decisions: number;
  readonly setup: readonly Sent[];
  readonly calls: readonly Sent[];
}

/** The n-th subject of a fixed pseudo-random order (a multiplicative hash of n). */
function subjectAt(n: number): string {
  return `s${(Math.imul(n + 1, 2_654_435_761) >>> 0) % SUBJECTS}`;
}

/** Runs `decide` for `decisions` subjects with `inFlight` at a time. */
async function drive(
  decisions: number,
  inFlight: number,
  decide: (subject: string) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < decisions) await decide(subjectAt(next++));
    }),
  );
}

const asText = (value: unknown): string | Buffer =>
  Buffer.isBuffer(value) ? value : String(value);

/** Our traffic: the FCALLs RedisStore sends, and the FUNCTION LOAD before them. */
async function recordOurs(url: string, shape: Shape, inFlight: number): Promise<Recording> {
  const redis = new Redis(url);
  const setup: Sent[] = [];
  const calls: Sent[] = [];
  const client = {
    callBuffer(command: string, ...args: (string | number)[]) {
      if (command === "fcall") calls.push({ name: "fcall", args: args.map(asText) });
      return redis.callBuffer(command, ...args);
    },
    call(command: string, ...args: string[]) {
      setup.push({ name: command, args });
      return redis.call(command, ...args);
    },
  };
  const store = new RedisStore({ client, keyPrefix: `ri:${shape}${inFlight}:`, maxBatchSize: 64 });
  const checks = shape === "one" ? ONE_LIMIT : THREE_LAYERS;
  const decisions = DECISIONS[inFlight] ?? 0;
  await drive(decisions, inFlight, (subject) => store.decide({ subject, checks }));
  redis.disconnect();
  return { side: "ours", shape, inFlight, decisions, setup, calls };
}

/** rlf's traffic: every EVALSHA (and the EVAL that loads its script) its ioredis client sends. */
async function recordRlf(url: string, shape: Shape, inFlight: number): Promise<Recording> {
  const redis = new Redis(url, { enableAutoPipelining: true });
  // Commands are kept and read after the run: ioredis turns the first EVALSHA on a connection
  // into an EVAL of the script's text when it writes it, after sendCommand has seen it.
  const sentCommands: { name: string; args: unknown[] }[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    if (command.name === "evalsha") sentCommands.push(command);
    return send(command, stream);
  };
  const { account, union } = rlfLimiters(redis, `ri:rlf:${shape}${inFlight}`);
  const decisions = DECISIONS[inFlight] ?? 0;
  await drive(decisions, inFlight, async (subject) => {
    try {
      await (shape === "one" ? account.consume(subject) : union.consume(subject));
    } catch (rejection: unknown) {
      if (rejection instanceof Error) throw rejection;
    }
  });
  redis.disconnect();
  const setup: Sent[] = [];
  const calls: Sent[] = [];
  for (const command of sentCommands) {
    const args = command.args.map(asText);
    if (command.name === "eval") {
      // The replay loads the script once and sends every decision as EVALSHA.
      const lua = String(args[0]);
      setup.push({ name: "script", args: ["LOAD", lua] });
      args[0] = createHash("sha1").update(lua).digest("hex");
    }
    calls.push({ name: "evalsha", args });
  }
  return { side: "rlf", shape, inFlight, decisions, setup, calls };
}

/** The arguments of a recorded call with every key lifetime stretched (see the header). */
function stretched(recording: Recording, sent: Sent): (string | Buffer)[] {
  const args = [...sent.args];
  if (recording.side === "ours") {
    // fcall <function> <numkeys> <keys...> <margin> <decisions...>
    args[2 + Number(args[1])] = STRETCHED_MARGIN_MS;
  } else {
    // evalsha <sha> 1 <key> <points> <secDuration> <limit points> <limit duration>
    args[4] = STRETCHED_WINDOW_SEC;
  }
  return args;
}

async function replay(url: string, recording: Recording): Promise<void> {
  const redis = new Redis(url);
  try {
    for (let i = 0; i < recording.calls.length; i += REPLAY_GROUP) {
      await Promise.all(
        recording.calls
          .slice(i, i + REPLAY_GROUP)
          .map((sent) => redis.callBuffer(sent.name, ...stretched(recording, sent))),
      );
    }
  } finally {
    redis.disconnect();
  }
}

/** A redis-server under callgrind, its counters reachable through callgrind_control. */
class CountedRedis {
  private constructor(
    readonly url: string,
    readonly directory: string,
    readonly child: ChildProcess,
  ) {}

  static async start(): Promise<CountedRedis> {
    const port = await freePort();
    const directory = await mkdtemp(path.join(tmpdir(), "lp-callgrind-"));
    const child = spawn(
      "valgrind",
      [
        "--tool=callgrind",
        `--callgrind-out-file=${path.join(directory, "out")}`,
        "redis-server",
        ...privateRedisServerArgs(port),
      ],
      { stdio: "ignore" },
    );
    const url = `redis://127.0.0.1:${port}/0`;
    const server = new CountedRedis(url, directory, child);
    const probe = new Redis(url, { retryStrategy: () => 200, maxRetriesPerRequest: null });
    // Refused until valgrind has started redis-server: retried, not reported.
    probe.on("error", () => {});
    try {
      const exited = once(child, "exit").then(() => {
        throw new Error("redis-server under valgrind exited before answering");
      });
      await Promise.race([probe.ping(), exited]);
    } finally {
      probe.disconnect();
    }
    return server;
  }

  #control(flag: "-z" | "-d"): Promise<unknown> {
    return execFileAsync("callgrind_control", [flag, String(this.child.pid)]);
  }

  /** Instructions executed while `work` ran. */
  async count(work: () => Promise<void>): Promise<number> {
    await this.#control("-z");
    await work();
    await this.#control("-d");
    // The dump callgrind_control -d asks for is written as out.<n>.
    const dumps = (await readdir(this.directory)).filter((name) => /^out\.\d+$/.test(name));
    const text = await readFile(path.join(this.directory, dumps.sort().at(-1) ?? "out"), "utf8");
    const summary = /^summary: (\d+)/m.exec(text) ?? /^totals: (\d+)/m.exec(text);
    if (summary === null) throw new Error("callgrind dump has no summary line");
    return Number(summary[1]);
  }

  async stop(): Promise<void> {
    const exited = once(this.child, "exit");
    this.child.kill("SIGTERM");
    await exited;
    await rm(this.directory, { recursive: true, force: true });
  }
}

/** Instructions per decision of one recording: set up, replay once, then count a second replay. */
async function instructionsPerDecision(recording: Recording): Promise<number> {
  const server = await CountedRedis.start();
  try {
    const admin = new Redis(server.url);
    try {
      for (const sent of recording.setup) await admin.call(sent.name, ...sent.args);
    } finally {
      admin.disconnect();
    }
    await replay(server.url, recording);
    const instructions = await server.count(() => replay(server.url, recording));
    return instructions / recording.decisions;
  } finally {
    await server.stop();
  }
}

async function hasTools(): Promise<string | null> {
  for (const tool of ["valgrind", "callgrind_control", "redis-server"]) {
    try {
      await execFileAsync(tool, ["--version"]);
    } catch {
      return tool;
    }
  }
  return null;
}

export async function run(): Promise<void> {
  console.log(loadLine("at start"));
  const missing = await hasTools();
  if (missing !== null) {
    console.log(`left out: ${missing} is not on the PATH (Debian: apt-get install valgrind)`);
    return;
  }
  const recorder = await OwnRedisServer.start();
  const recordings: Recording[] = [];
  try {
    for (const shape of ["one", "three"] as const) {
      for (const inFlight of IN_FLIGHT) {
        recordings.push(await recordOurs(recorder.url, shape, inFlight));
        recordings.push(await recordRlf(recorder.url, shape, inFlight));
      }
    }
  } finally {
    await recorder.stop();
  }
  // Our store loads its function library once per Redis, so only the first recording holds the
  // FUNCTION LOAD: every replay of ours starts with it.
  const ourSetup = recordings.find((r) => r.side === "ours" && r.setup.length > 0)?.setup ?? [];
  for (const [index, recording] of recordings.entries()) {
    if (recording.side === "ours") recordings[index] = { ...recording, setup: ourSetup };
  }
  // Two replays at a time: one per core.
  const counts = new Map<Recording, number>();
  for (let i = 0; i < recordings.length; i += 2) {
    const pair = recordings.slice(i, i + 2);
    const results = await Promise.all(pair.map(instructionsPerDecision));
    for (const [index, recording] of pair.entries()) {
      counts.set(recording, results[index] ?? Number.NaN);
    }
  }
  const find = (side: Recording["side"], shape: Shape, inFlight: number) => {
    const recording = recordings.find(
      (r) => r.side === side && r.shape === shape && r.inFlight === inFlight,
    );
    return {
      instructions: recording === undefined ? Number.NaN : (counts.get(recording) ?? Number.NaN),
      perCall:
        recording === undefined || recording.calls.length === 0
          ? Number.NaN
          : recording.decisions / recording.calls.length,
    };
  };

  console.log(
    "\nredis-server instructions per decision (callgrind, counting a replay of each side's recorded traffic; decisions/call: how ours batched in this run's recording)",
  );
  const header = [
    "shape",
    "in flight",
    "ours",
    "decisions/call",
    "rlf",
    "rlf calls/decision",
    "ours/rlf",
  ];
  const rows: string[][] = [];
  const targets = new Targets();
  for (const shape of ["one", "three"] as const) {
    for (const inFlight of IN_FLIGHT) {
      const ours = find("ours", shape, inFlight);
      const rlf = find("rlf", shape, inFlight);
      const ratio = ours.instructions / rlf.instructions;
      rows.push([
        shape === "one" ? "one limit" : "three layers",
        String(inFlight),
        Math.round(ours.instructions).toLocaleString("en-US"),
        ours.perCall.toFixed(1),
        Math.round(rlf.instructions).toLocaleString("en-US"),
        (1 / rlf.perCall).toFixed(1),
        `${ratio.toFixed(2)}x`,
      ]);
      targets.atMost(
        `Redis server instructions/decision, ${shape === "one" ? "one limit" : "three layers"}, ${inFlight} in flight: ours / rlf${shape === "one" ? "" : " (union)"}`,
        [ratio],
        shape === "one" ? 1 : 1.5,
      );
    }
  }
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ");
  console.log(line(header));
  console.log(line(widths.map((width) => "-".repeat(width))));
  for (const row of rows) console.log(line(row));
  console.log(
    `ours, three layers / one limit at 64 in flight: ${(find("ours", "three", 64).instructions / find("ours", "one", 64).instructions).toFixed(2)}x the instructions (info)`,
  );
  targets.print("Redis instructions suite targets (one replay each: a count, not a sample)");
  console.log(loadLine("at end"));
}
