import { getSharedLimiterStore } from "@/lib/server/limiter-store";
import { getControlDeps } from "../control-deps";
import type { ExplainDeps } from "./explain-limits";

/** The process-wide explain dependencies: the control plane's database, the enforcers' store. */
export function getExplainDeps(): ExplainDeps {
  return { db: getControlDeps().db, store: getSharedLimiterStore(""), nowMs: Date.now };
}
