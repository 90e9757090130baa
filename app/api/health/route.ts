import { connection } from "next/server";
import { methodAnswers } from "@/lib/api/route-handler";
import { statusReport } from "@/lib/server/status";

/**
 * Liveness and dependency health for load balancers and humans with curl.
 * 200 when Postgres and Redis both answer, 503 otherwise; the body says which one failed, and
 * how many reporting gateways run no policy (not a failure of the control plane itself).
 */
export async function GET(): Promise<Response> {
  await connection();
  const report = await statusReport();
  const healthy = report.postgres.ok && report.redis.ok;
  return Response.json(
    {
      status: healthy ? "ok" : "degraded",
      checkedAt: report.checkedAt,
      postgres: { ok: report.postgres.ok, error: report.postgres.error },
      redis: { ok: report.redis.ok, error: report.redis.error },
      pendingMigrations: report.migrations?.pending.length ?? null,
      // Counts only: this answers without signing in, so gateway names stay in the console.
      gateways:
        report.gateways === null
          ? null
          : {
              reporting: report.gateways.reporting,
              withoutPolicy: report.gateways.withoutPolicy.length,
            },
      version: report.build.version,
      commit: report.build.commit,
    },
    { status: healthy ? 200 : 503, headers: { "cache-control": "no-store" } },
  );
}

const answers = methodAnswers(["GET"]);
export const OPTIONS = answers.options;
export const POST = answers.notAllowed;
export const PUT = answers.notAllowed;
export const PATCH = answers.notAllowed;
export const DELETE = answers.notAllowed;
