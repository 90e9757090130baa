/**
 * The reason a person types for a change, checked in the browser exactly as the control plane
 * checks it (`ZReason` in lib/control/change-context.ts): trimmed, not empty, at most 1000
 * characters, no control or bidirectional formatting characters. The server checks again; this
 * only says so before the request is sent. Client components import it: it stays pure.
 */
import { MAX_REASON_LENGTH, ZReason } from "@/lib/control/change-context";

export { MAX_REASON_LENGTH };

/**
 * What is wrong with a typed reason, as sentences a person can act on ("Reason must not be
 * empty."), every problem at once; `null` when it is fine. `promptWhenEmpty` replaces the message
 * for an empty reason with one that says what the reason is for (a form's prompt).
 */
export function reasonProblem(reason: string, promptWhenEmpty?: string): string | null {
  const parsed = ZReason.safeParse(reason);
  if (parsed.success) return null;
  if (promptWhenEmpty !== undefined && reason.trim() === "") return promptWhenEmpty;
  return parsed.error.issues.map((issue) => asSentence(issue.message)).join(" ");
}

function asSentence(message: string): string {
  return `${message.charAt(0).toUpperCase()}${message.slice(1)}.`;
}
