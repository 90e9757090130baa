/**
 * Who is making a request, once authenticated: a signed-in operator (through a session) or an
 * API token. Route handlers, server components and server actions all see this one type.
 */
import type { Actor } from "../change-context";
import type { Role } from "./roles";

export type Principal =
  | {
      readonly kind: "operator";
      readonly id: string;
      readonly name: string;
      readonly role: Role;
      /** The session the request came with: sign-out and the session list use it. */
      readonly sessionId: string;
    }
  | { readonly kind: "token"; readonly id: string; readonly name: string; readonly role: Role };

/** The actor of the changes `principal` makes, for a `ChangeContext`. */
export function actorOf(principal: Principal): Actor {
  return {
    type: principal.kind === "operator" ? "operator" : "token",
    id: principal.id,
    name: principal.name,
  };
}
