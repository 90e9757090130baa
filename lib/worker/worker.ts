/**
 * The worker process's engine: leader election and a loop per job.
 *
 * Leadership: each worker opens a dedicated Postgres connection (outside the Prisma pool) and
 * tries `pg_try_advisory_lock`, a session-level lock, every `leaderPollMs`. The one that gets it
 * leads and runs the jobs; the others wait. The lock lives exactly as long as that connection, so
 * when a leader dies (crash, kill -9, network loss) Postgres releases it and a follower takes
 * over within one poll. A leader that loses its connection stops its jobs at once.
 *
 * Correctness never depends on there being one leader: the publisher serialises on its own lock
 * and Redis refuses older versions, and each expiry is recorded once by a guarded update. So the
 * moment of overlap when leadership changes hands is harmless; the lock only avoids duplicated work.
 *
 * The same connection LISTENs on the jobs' channels, so a committed change wakes the publisher
 * within milliseconds; every job also runs on its own schedule, the safety net for notifications
 * missed while reconnecting.
 */
import { setMaxListeners } from "node:events";
import pg from "pg";
import { LOCK_KEYS, LOCK_NAMESPACE } from "@/lib/control/locks";
import { Sleeper } from "./sleeper";
import type { WorkerJob } from "./worker-job";

export interface WorkerOptions {
  /**
   * Postgres for the leader lock and LISTEN (the jobs bring their own clients); null runs SOLO:
   * no election and no LISTEN, the jobs run on their own schedules and wake-ups. Solo is for the
   * embedded Postgres, which serves one connection and so cannot give the worker its own; there
   * is exactly one process then, so there is nothing to elect.
   */
  readonly databaseUrl: string | null;
  readonly jobs: readonly WorkerJob[];
  /** How often a follower tries to take the lead, and the leader checks its connection. @default 1000 */
  readonly leaderPollMs?: number;
  /** @default console.log */
  readonly log?: (line: string) => void;
  /**
   * Called after each try for the lead, with whether it was won: tests drive the election by
   * waiting for tries, instead of sleeping and hoping one happened.
   */
  readonly onElection?: (isWon: boolean) => void;
}

export interface Worker {
  /** Whether this worker leads right now. */
  isLeader(): boolean;
  /** Resolves when it first leads (for tests and health checks). */
  whenLeading(): Promise<void>;
  /** Stops the jobs (each finishes its current run), releases the lead, and closes the connection. */
  stop(): Promise<void>;
}

export function startWorker(options: WorkerOptions): Worker {
  const log = options.log ?? ((line: string) => console.log(line));
  const pollMs = options.leaderPollMs ?? 1_000;
  const stopping = new AbortController();
  setMaxListeners(2 * options.jobs.length + 4, stopping.signal);
  const pause = new Sleeper();
  const ended = new WeakSet<pg.Client>();
  let leading = false;
  let resolveFirstLead: () => void = () => {};
  const firstLead = new Promise<void>((resolve) => {
    resolveFirstLead = resolve;
  });

  async function lead(client: pg.Client): Promise<void> {
    const term = new AbortController();
    // Every job's sleep listens on the term, and a job's run may wait on it once more.
    setMaxListeners(2 * options.jobs.length + 2, term.signal);
    const stopTerm = () => term.abort();
    stopping.signal.addEventListener("abort", stopTerm, { once: true });
    client.once("error", stopTerm);
    client.once("end", stopTerm);
    const jobs = options.jobs.map((job) => ({ job, sleeper: new Sleeper() }));
    client.on("notification", (message) => {
      for (const { job, sleeper } of jobs) {
        if (job.wakeOn?.includes(message.channel)) sleeper.wake();
      }
    });
    try {
      for (const channel of new Set(options.jobs.flatMap((job) => job.wakeOn ?? []))) {
        await client.query(`LISTEN "${channel.replaceAll('"', '""')}"`);
      }
      const detachers = jobs.map(({ job, sleeper }) => job.attach?.(() => sleeper.wake()));
      const loops = jobs.map(({ job, sleeper }) => runJob(job, sleeper, term.signal));
      // The connection is the lease: check it, and end the term the moment it is gone.
      while (!term.signal.aborted) {
        await pause.sleep(pollMs, term.signal);
        if (term.signal.aborted) break;
        await client.query("SELECT 1").catch(stopTerm);
      }
      for (const detach of detachers) detach?.();
      await Promise.all(loops);
    } finally {
      term.abort();
      stopping.signal.removeEventListener("abort", stopTerm);
    }
  }

  async function runJob(job: WorkerJob, sleeper: Sleeper, signal: AbortSignal): Promise<void> {
    let lastError: string | null = null;
    while (!signal.aborted) {
      let waitMs: number;
      try {
        waitMs = (await job.run(signal)).nextRunInMs;
        if (lastError !== null) log(`worker: ${job.name} recovered`);
        lastError = null;
      } catch (error: unknown) {
        const message = error instanceof Error ? error.message : String(error);
        // Once per streak of the same failure, not once per retry.
        if (message !== lastError) log(`worker: ${job.name} failed: ${message}`);
        lastError = message;
        waitMs = job.errorRetryMs ?? 5_000;
      }
      await sleeper.sleep(waitMs, signal);
    }
  }

  async function connect(connectionString: string): Promise<pg.Client | null> {
    const client = new pg.Client({
      connectionString,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
      application_name: "limitplane-worker",
    });
    // A lost connection emits "error"; without a listener it would crash the process.
    client.on("error", () => {});
    client.once("end", () => ended.add(client));
    try {
      await client.connect();
      return client;
    } catch (error: unknown) {
      log(
        `worker: cannot reach Postgres (${error instanceof Error ? error.message : String(error)}); retrying`,
      );
      await close(client);
      return null;
    }
  }

  /**
   * Ends a connection. `end()` on one the server already closed never settles, so it is skipped
   * then, and bounded otherwise.
   */
  async function close(client: pg.Client): Promise<void> {
    if (ended.has(client)) return;
    await Promise.race([
      client.end().catch(() => {}),
      new Promise((resolve) => setTimeout(resolve, 2_000).unref()),
    ]);
  }

  async function tryLock(client: pg.Client): Promise<boolean> {
    const { rows } = await client.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_lock($1::int4, $2::int4) AS locked",
      [LOCK_NAMESPACE, LOCK_KEYS.WORKER_LEADER],
    );
    const isWon = rows[0]?.locked === true;
    options.onElection?.(isWon);
    return isWon;
  }

  async function leadSolo(): Promise<void> {
    const jobs = options.jobs.map((job) => ({ job, sleeper: new Sleeper() }));
    const detachers = jobs.map(({ job, sleeper }) => job.attach?.(() => sleeper.wake()));
    leading = true;
    log("worker: running solo (in this process, no election)");
    resolveFirstLead();
    await Promise.all(jobs.map(({ job, sleeper }) => runJob(job, sleeper, stopping.signal)));
    for (const detach of detachers) detach?.();
    leading = false;
  }

  const databaseUrl = options.databaseUrl;
  const done = (async () => {
    if (databaseUrl === null) return leadSolo();
    while (!stopping.signal.aborted) {
      const client = await connect(databaseUrl);
      if (client === null) {
        await pause.sleep(pollMs, stopping.signal);
        continue;
      }
      try {
        while (!stopping.signal.aborted && !(await tryLock(client))) {
          await pause.sleep(pollMs, stopping.signal);
        }
        if (stopping.signal.aborted) break;
        leading = true;
        log("worker: leading");
        resolveFirstLead();
        await lead(client);
        if (!stopping.signal.aborted) log("worker: lost the lead (connection gone); reconnecting");
      } catch (error: unknown) {
        if (!stopping.signal.aborted) {
          log(
            `worker: leader connection failed (${error instanceof Error ? error.message : String(error)}); reconnecting`,
          );
        }
      } finally {
        leading = false;
        // Ending the session releases the advisory lock and the LISTENs.
        await close(client);
      }
    }
  })();

  return {
    isLeader: () => leading,
    whenLeading: () => firstLead,
    async stop() {
      stopping.abort();
      await done;
    },
  };
}
