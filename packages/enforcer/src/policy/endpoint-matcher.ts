/**
 * Which endpoint class a request belongs to. MATCH ORDER, most specific first:
 *
 * 1. Path specificity, decided at the leftmost segment where two patterns differ: a literal beats
 *    `*`, `*` beats the end of the pattern, the end of the pattern beats `**`. So
 *    `/v1/reports/export` beats `/v1/reports/*` beats `/v1/reports/**` beats `/v1/**` beats `/**`,
 *    and `/v1/reports` beats `/v1/reports/**` for `/v1/reports`. A literal second segment outranks
 *    a `*` there whatever follows it.
 * 2. For the same pattern, a rule naming the method beats `*`. A HEAD request also matches GET rules
 *    (servers run the GET handler for it), after rules naming HEAD.
 * 3. Declaration order. It never decides for a valid policy: the schema refuses two rules with the
 *    same method and the same pattern, and two different patterns of the same shape never match
 *    the same path. So the result does not depend on the order classes or rules are listed in.
 *
 * A request no rule matches belongs to the policy's default endpoint class (`defaultEndpointClass`).
 *
 * The matcher is a segment trie compiled once per snapshot, walked depth first in the order above:
 * the cost of a match grows with the path's depth, not with the number of rules, and no regular
 * expression is built per request.
 */
import { normalizeRequestPath, type PathPattern, parsePathPattern } from "./path-pattern";

/** What the matcher needs of an endpoint class. */
export interface EndpointClassRules {
  readonly name: string;
  readonly match: readonly MatchRule[];
}

/** One match rule: an upper-case HTTP method or `*`, and a path pattern. */
export interface MatchRule {
  readonly method: string;
  readonly path: string;
}

/** The class a request matched and the rule that matched it. */
export interface EndpointMatch {
  readonly endpointClass: string;
  readonly rule: MatchRule;
}

/** A compiled matcher: `match` is the hot-path call. */
export interface EndpointMatcher {
  /** The matching class for a request, or null when no rule matches (use the default class). */
  match(method: string, path: string): EndpointMatch | null;
}

interface Entry {
  readonly methodRank: number;
  readonly order: number;
  readonly method: string;
  readonly result: EndpointMatch;
}

interface TrieNode {
  readonly literals: Map<string, TrieNode>;
  one: TrieNode | null;
  readonly terminal: Entry[];
  readonly rest: Entry[];
}

/**
 * Compiles the match rules of `classes`. Throws on an invalid pattern: rules reach this function
 * only after schema validation, so an invalid one is a programmer error.
 */
export function compileEndpointMatcher(classes: readonly EndpointClassRules[]): EndpointMatcher {
  const root = createNode();
  let order = 0;
  for (const endpointClass of classes) {
    for (const rule of endpointClass.match) {
      const parsed = parsePathPattern(rule.path);
      if (!parsed.ok)
        throw new TypeError(`invalid path pattern ${JSON.stringify(rule.path)}: ${parsed.message}`);
      insert(root, parsed.pattern, {
        methodRank: rule.method === "HEAD" ? 0 : rule.method === "*" ? 2 : 1,
        order: order++,
        method: rule.method,
        result: { endpointClass: endpointClass.name, rule },
      });
    }
  }
  sortEntries(root);
  return {
    match(method: string, path: string): EndpointMatch | null {
      return search(root, normalizeRequestPath(path), 0, method.toUpperCase());
    },
  };
}

const compiled = new WeakMap<readonly EndpointClassRules[], EndpointMatcher>();

/**
 * The endpoint class `method` and `path` belong to under `classes`, or null when no rule matches.
 * Compiles `classes` on first use and caches the matcher for that array; hot paths use a prepared
 * snapshot, which holds its matcher.
 */
export function matchEndpointClass(
  classes: readonly EndpointClassRules[],
  method: string,
  path: string,
): EndpointMatch | null {
  let matcher = compiled.get(classes);
  if (matcher === undefined) {
    matcher = compileEndpointMatcher(classes);
    compiled.set(classes, matcher);
  }
  return matcher.match(method, path);
}

function createNode(): TrieNode {
  return { literals: new Map(), one: null, terminal: [], rest: [] };
}

function insert(root: TrieNode, pattern: PathPattern, entry: Entry): void {
  let node = root;
  for (const segment of pattern.segments) {
    if (segment.kind === "rest") {
      node.rest.push(entry);
      return;
    }
    if (segment.kind === "one") {
      node.one ??= createNode();
      node = node.one;
    } else {
      let child = node.literals.get(segment.value);
      if (child === undefined) {
        child = createNode();
        node.literals.set(segment.value, child);
      }
      node = child;
    }
  }
  node.terminal.push(entry);
}

function sortEntries(node: TrieNode): void {
  const byRank = (a: Entry, b: Entry) => a.methodRank - b.methodRank || a.order - b.order;
  node.terminal.sort(byRank);
  node.rest.sort(byRank);
  for (const child of node.literals.values()) sortEntries(child);
  if (node.one !== null) sortEntries(node.one);
}

function search(
  node: TrieNode,
  segments: readonly string[],
  index: number,
  method: string,
): EndpointMatch | null {
  const segment = segments[index];
  if (segment === undefined) {
    return pickByMethod(node.terminal, method) ?? pickByMethod(node.rest, method);
  }
  const literal = node.literals.get(segment);
  if (literal !== undefined) {
    const found = search(literal, segments, index + 1, method);
    if (found !== null) return found;
  }
  if (node.one !== null) {
    const found = search(node.one, segments, index + 1, method);
    if (found !== null) return found;
  }
  return pickByMethod(node.rest, method);
}

function pickByMethod(entries: readonly Entry[], method: string): EndpointMatch | null {
  for (const entry of entries) {
    if (entry.method === method || entry.method === "*") return entry.result;
    if (entry.method === "GET" && method === "HEAD") return entry.result;
  }
  return null;
}
