import type { AuthDeps } from "../deps";
import {
  liveSessionWhere,
  type SessionRecord,
  sessionSelect,
  toSessionRecord,
} from "./session-record";

/** An operator's sessions that still work (not revoked, not past expiry or the idle limit), newest first. */
export async function listSessions(
  operatorId: string,
  deps: Pick<AuthDeps, "db" | "clock" | "sessions">,
): Promise<SessionRecord[]> {
  const nowMs = deps.clock.nowMs();
  const rows = await deps.db.session.findMany({
    where: {
      operatorId,
      ...liveSessionWhere(nowMs),
      lastSeenAt: { gt: new Date(nowMs - deps.sessions.idleMs) },
    },
    orderBy: { createdAt: "desc" },
    take: 200,
    select: sessionSelect,
  });
  return rows.map(toSessionRecord);
}
