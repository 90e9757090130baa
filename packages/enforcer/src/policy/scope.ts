/**
 * One grammar for naming limits, used everywhere a limit is named: response headers, 429 bodies,
 * metrics, the audit log, the resolution trace.
 *
 * A SCOPE names the rule a limit comes from:
 *
 *   ceiling                     the global per-customer ceiling
 *   ceiling/endpoint:E          endpoint class E's ceiling (any subject)
 *   address                     the per-address ceiling every anonymous request is held to
 *   address/endpoint:E          the anonymous limit on endpoint class E (e.g. sign-in)
 *   tier:T                      tier T's account limit
 *   tier:T/endpoint:E           tier T's limit on endpoint class E
 *   customer:C                  customer C's override for all endpoints
 *   customer:C/endpoint:E       customer C's override on endpoint class E
 *   incident:ID                 an incident override (its id says the rest)
 *   candidate:ID                a dry-run candidate
 *
 * A BUCKET names the stored state a check uses under its subject. It is the layer, not the rule,
 * so an override that replaces a tier limit continues the same bucket (an edit neither resets nor
 * refills it):
 *
 *   account | endpoint:E | ceiling | ceiling/endpoint:E | candidate:ID | dry-run/<scope>
 *
 * A SUBJECT names who is limited: `c:<customer id>`, `a:<address>` or, for endpoint classes keyed
 * by address and route, `a:<address>/endpoint:E`. The prefixes keep customers and addresses apart.
 *
 * No escaping is needed: names, customer ids and record ids cannot contain `/`, and a customer id
 * (which may contain `:`) is always the rest of its segment after the first `:`. Every valid scope,
 * bucket and subject has exactly one spelling, so `format(parse(text)) === text`.
 */
import { isCustomerId, isName, isRecordId } from "./names";

/** A parsed scope. `endpointClass` is null for the all-endpoints form. */
export type Scope =
  | { readonly kind: "ceiling"; readonly endpointClass: string | null }
  | { readonly kind: "address"; readonly endpointClass: string | null }
  | { readonly kind: "tier"; readonly tier: string; readonly endpointClass: string | null }
  | {
      readonly kind: "customer";
      readonly customerId: string;
      readonly endpointClass: string | null;
    }
  | { readonly kind: "incident"; readonly incidentId: string }
  | {
      readonly kind: "candidate";
      readonly candidateId: string;
      /**
       * Absent for the candidate itself (its limit in dry-run, or for the rest of the traffic while
       * it is a staged change). A staged change's slice: `slice`, its new limit enforced there;
       * `slice-previous`, the limit it replaces, counted in dry-run there.
       */
      readonly part?: CandidateScopePart;
    };

/** The parts of a staged change's scopes: `candidate:ID/slice`, `candidate:ID/slice-previous`. */
export const CANDIDATE_SCOPE_PARTS = ["slice", "slice-previous"] as const;
export type CandidateScopePart = (typeof CANDIDATE_SCOPE_PARTS)[number];

export type ScopeKind = Scope["kind"];

/** A parsed bucket. */
export type Bucket =
  | { readonly kind: "account" }
  | { readonly kind: "endpoint"; readonly endpointClass: string }
  | { readonly kind: "ceiling"; readonly endpointClass: string | null }
  | { readonly kind: "candidate"; readonly candidateId: string }
  | { readonly kind: "dry-run"; readonly scope: Scope };

/** A parsed subject. `address` is a normalised address (see `normalizeClientAddress`). */
export type Subject =
  | { readonly kind: "customer"; readonly customerId: string }
  | { readonly kind: "address"; readonly address: string; readonly endpointClass: string | null };

const ENDPOINT_PREFIX = "endpoint:";
const DRY_RUN_PREFIX = "dry-run/";

/**
 * The text of a scope. Throws on an identifier outside its character set: that is a programmer
 * error (inputs are validated at the boundary), and a scope that could not be parsed back must
 * never reach a header or a metric.
 */
export function formatScope(scope: Scope): string {
  switch (scope.kind) {
    case "ceiling":
    case "address":
      return scope.kind + endpointSuffix(scope.endpointClass);
    case "tier":
      requireValid(isName(scope.tier), "tier name", scope.tier);
      return `tier:${scope.tier}${endpointSuffix(scope.endpointClass)}`;
    case "customer":
      requireValid(isCustomerId(scope.customerId), "customer id", scope.customerId);
      return `customer:${scope.customerId}${endpointSuffix(scope.endpointClass)}`;
    case "incident":
      requireValid(isRecordId(scope.incidentId), "incident id", scope.incidentId);
      return `incident:${scope.incidentId}`;
    case "candidate":
      requireValid(isRecordId(scope.candidateId), "candidate id", scope.candidateId);
      return `candidate:${scope.candidateId}${scope.part === undefined ? "" : `/${scope.part}`}`;
  }
}

/** The scope `text` names, or null when it is not a valid scope. */
export function parseScope(text: string): Scope | null {
  const slash = text.indexOf("/");
  const head = slash === -1 ? text : text.slice(0, slash);
  let endpointClass: string | null = null;
  if (slash !== -1) {
    const tail = text.slice(slash + 1);
    if (head.startsWith("candidate:")) {
      const candidateId = head.slice("candidate:".length);
      const part = CANDIDATE_SCOPE_PARTS.find((known) => known === tail);
      return part !== undefined && isRecordId(candidateId)
        ? { kind: "candidate", candidateId, part }
        : null;
    }
    if (!tail.startsWith(ENDPOINT_PREFIX)) return null;
    endpointClass = tail.slice(ENDPOINT_PREFIX.length);
    if (!isName(endpointClass)) return null;
  }
  if (head === "ceiling" || head === "address") return { kind: head, endpointClass };
  const colon = head.indexOf(":");
  if (colon === -1) return null;
  const kind = head.slice(0, colon);
  const value = head.slice(colon + 1);
  switch (kind) {
    case "tier":
      return isName(value) ? { kind: "tier", tier: value, endpointClass } : null;
    case "customer":
      return isCustomerId(value) ? { kind: "customer", customerId: value, endpointClass } : null;
    case "incident":
      return slash === -1 && isRecordId(value) ? { kind: "incident", incidentId: value } : null;
    case "candidate":
      return slash === -1 && isRecordId(value) ? { kind: "candidate", candidateId: value } : null;
    default:
      return null;
  }
}

const OUTBOUND_PREFIX = "outbound:";

/**
 * The budget name of an outbound scope (`outbound:<name>`: a limit on calls we make, see
 * `schemas/outbound.ts`), or null when `text` is not one. Outbound scopes are a grammar of their
 * own: they never take part in resolving a request's layers.
 */
export function parseOutboundScope(text: string): string | null {
  if (!text.startsWith(OUTBOUND_PREFIX)) return null;
  const name = text.slice(OUTBOUND_PREFIX.length);
  return isName(name) ? name : null;
}

/** The scope of outbound budget `name`. Throws on a name outside its character set. */
export function formatOutboundScope(name: string): string {
  requireValid(isName(name), "outbound budget name", name);
  return OUTBOUND_PREFIX + name;
}

/** The text of a bucket. Throws on invalid identifiers, like {@link formatScope}. */
export function formatBucket(bucket: Bucket): string {
  switch (bucket.kind) {
    case "account":
      return "account";
    case "endpoint":
      requireValid(isName(bucket.endpointClass), "endpoint class name", bucket.endpointClass);
      return ENDPOINT_PREFIX + bucket.endpointClass;
    case "ceiling":
      return `ceiling${endpointSuffix(bucket.endpointClass)}`;
    case "candidate":
      requireValid(isRecordId(bucket.candidateId), "candidate id", bucket.candidateId);
      return `candidate:${bucket.candidateId}`;
    case "dry-run":
      return DRY_RUN_PREFIX + formatScope(bucket.scope);
  }
}

/** The bucket `text` names, or null when it is not a valid bucket. */
export function parseBucket(text: string): Bucket | null {
  if (text === "account") return { kind: "account" };
  if (text.startsWith(DRY_RUN_PREFIX)) {
    const scope = parseScope(text.slice(DRY_RUN_PREFIX.length));
    return scope === null ? null : { kind: "dry-run", scope };
  }
  if (text.startsWith(ENDPOINT_PREFIX)) {
    const endpointClass = text.slice(ENDPOINT_PREFIX.length);
    return isName(endpointClass) ? { kind: "endpoint", endpointClass } : null;
  }
  const scope = parseScope(text);
  if (scope?.kind === "ceiling") return { kind: "ceiling", endpointClass: scope.endpointClass };
  if (scope?.kind === "candidate" && scope.part === undefined) {
    return { kind: "candidate", candidateId: scope.candidateId };
  }
  return null;
}

/** The text of a subject. Throws on a customer id or endpoint class outside its character set. */
export function formatSubject(subject: Subject): string {
  if (subject.kind === "customer") {
    requireValid(isCustomerId(subject.customerId), "customer id", subject.customerId);
    return `c:${subject.customerId}`;
  }
  requireValid(isSubjectAddress(subject.address), "subject address", subject.address);
  return `a:${subject.address}${endpointSuffix(subject.endpointClass)}`;
}

/** The subject `text` names, or null when it is not a valid subject. */
export function parseSubject(text: string): Subject | null {
  if (text.startsWith("c:")) {
    const customerId = text.slice(2);
    return isCustomerId(customerId) ? { kind: "customer", customerId } : null;
  }
  if (!text.startsWith("a:")) return null;
  const rest = text.slice(2);
  const marker = rest.lastIndexOf(`/${ENDPOINT_PREFIX}`);
  const address = marker === -1 ? rest : rest.slice(0, marker);
  const endpointClass = marker === -1 ? null : rest.slice(marker + 1 + ENDPOINT_PREFIX.length);
  if (!isSubjectAddress(address)) return null;
  if (endpointClass !== null && !isName(endpointClass)) return null;
  return { kind: "address", address, endpointClass };
}

/**
 * What may stand for an address in a subject: the output of `normalizeClientAddress`
 * (`198.51.100.7`, `2001:db8:0:1::/64`) or `unknown`.
 */
function isSubjectAddress(address: string): boolean {
  return /^(?:unknown|[0-9.]{7,15}|[0-9a-f:]{2,39}\/64)$/.test(address);
}

function endpointSuffix(endpointClass: string | null): string {
  if (endpointClass === null) return "";
  requireValid(isName(endpointClass), "endpoint class name", endpointClass);
  return `/${ENDPOINT_PREFIX}${endpointClass}`;
}

function requireValid(isValid: boolean, what: string, value: string): void {
  if (!isValid) throw new TypeError(`invalid ${what}: ${JSON.stringify(value)}`);
}
