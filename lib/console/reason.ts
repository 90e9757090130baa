/**
 * The reason a person types for a change, checked in the browser exactly as the control plane
 * checks it (`ZChangeContext.shape.reason` in lib/control/change-context.ts): trimmed, not empty,
 * at most 1000 characters, no control or bidirectional formatting characters. The server checks
 * again; this only says so before the request is sent.
 */
import { MAX_REASON_LENGTH, ZChangeContext } from "@/lib/control/change-context";

export { MAX_REASON_LENGTH };

/** What is wrong with a typed reason, in words a person can act on; `null` when it is fine. */
export function reasonProblem(value: string): string | null {
  const parsed = ZChangeContext.shape.reason.safeParse(value);
  if (parsed.success) return null;
  const message = parsed.error.issues[0]?.message ?? "reason is not valid";
  return `${message.charAt(0).toUpperCase()}${message.slice(1)}.`;
}
