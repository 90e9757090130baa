/**
 * envoyproxy/ratelimit's YAML configuration, read into descriptor rules (the policy's
 * `descriptorRules`, `@limitplane/enforcer/policy`).
 *
 * Every documented field maps: `domain`; nested `descriptors` with `key` and `value` (a trailing
 * `*` stays a wildcard); `rate_limit` with `unit` (second, minute, hour, day, week, month, year: a
 * fixed window of one unit, which is what envoyproxy/ratelimit counts) and `requests_per_unit` (0 is a `deny`
 * rule), `unlimited`, `name` and `replaces`; `shadow_mode` (mode `dry-run`); `detailed_metric`.
 * A descriptor without `rate_limit` is a level other rules nest under and makes no rule itself.
 *
 * Anything else is refused, each problem with its file, line and field, and nothing is returned
 * then: an import is all or nothing. Pure: the caller reads the files.
 */
import { createHash } from "node:crypto";
import {
  MAX_DESCRIPTOR_PATTERN_ENTRIES,
  type TDescriptorRuleInput,
} from "@limitplane/enforcer/policy";
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, type YAMLMap } from "yaml";
import { RLS_UNITS } from "@/lib/ratelimit-service/rls-units";

/** One configuration file as read. */
export interface EnvoyConfigFile {
  /** What the errors call it: the path given on the command line, or the upload's name. */
  readonly name: string;
  readonly text: string;
}

/** A problem found in a file, where a person can find it. */
export interface EnvoyConfigProblem {
  readonly file: string;
  /** 1-based; 0 when the problem concerns the file as a whole. */
  readonly line: number;
  /** The field's path in the file (`descriptors[0].rate_limit.unit`). */
  readonly field: string;
  readonly message: string;
}

export type EnvoyImportResult =
  | { readonly ok: true; readonly rules: TDescriptorRuleInput[] }
  | { readonly ok: false; readonly problems: EnvoyConfigProblem[] };

/**
 * The units envoyproxy/ratelimit's files take, lower case, and the window each is
 * (`lib/ratelimit-service/rls-units.ts`: a week is 7 days, a month 30 and a year 365). Its
 * windows start at multiples of the unit since the Unix epoch, as a fixed window's do here on
 * Redis's clock, so a week turns on Thursdays at 00:00 UTC in both. (Its optional calendar month,
 * `useCalendarMonth`, is a service setting, not a field of these files; a month here is always
 * 30 days.)
 */
const UNIT_WINDOW_MS: ReadonlyMap<string, number> = new Map(
  RLS_UNITS.map((unit) => [unit.name.toLowerCase(), unit.windowMs]),
);

const MAX_FILE_BYTES = 1_048_576;
const ROOT_FIELDS = new Set(["domain", "descriptors"]);
const DESCRIPTOR_FIELDS = new Set([
  "key",
  "value",
  "rate_limit",
  "descriptors",
  "shadow_mode",
  "detailed_metric",
]);
const RATE_LIMIT_FIELDS = new Set(["unit", "requests_per_unit", "unlimited", "name", "replaces"]);

/** The format `formatProblem` prints, as a compiler does: `file:line: field: message`. */
export function formatEnvoyProblem(problem: EnvoyConfigProblem): string {
  return `${problem.file}:${problem.line}: ${problem.field}: ${problem.message}`;
}

/**
 * A rule's id: readable (domain and pattern) and stable (the same pattern always gets the same
 * id, so importing a file again replaces its rules instead of adding copies).
 */
export function envoyRuleId(domain: string, levels: readonly (readonly [string, string | null])[]) {
  const digest = createHash("sha256")
    .update(JSON.stringify([domain, ...levels]))
    .digest("hex")
    .slice(0, 10);
  const readable = [
    domain,
    ...levels.map(([key, value]) => (value === null ? key : `${key}-${value}`)),
  ]
    .join("-")
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 48)
    .replace(/-+$/, "");
  return `${readable === "" ? "rule" : readable}-${digest}`;
}

class FileReader {
  readonly problems: EnvoyConfigProblem[] = [];
  readonly #lines: LineCounter;

  constructor(
    readonly file: string,
    lines: LineCounter,
  ) {
    this.#lines = lines;
  }

  lineOf(node: Node | null | undefined): number {
    const offset = node?.range?.[0];
    return offset === undefined ? 0 : this.#lines.linePos(offset).line;
  }

  refuse(node: Node | null | undefined, field: string, message: string): void {
    this.problems.push({ file: this.file, line: this.lineOf(node), field, message });
  }

  /** The fields of a map, refusing any not in `allowed`. */
  fields(map: YAMLMap, path: string, allowed: ReadonlySet<string>): Map<string, Node | null> {
    const fields = new Map<string, Node | null>();
    for (const pair of map.items) {
      const keyNode = pair.key as Node | null;
      const key = isScalar(keyNode) ? keyNode.value : undefined;
      const field = `${path}${path === "" ? "" : "."}${String(key)}`;
      if (typeof key !== "string") {
        this.refuse(keyNode, field, "field names must be text");
        continue;
      }
      if (!allowed.has(key)) {
        this.refuse(
          keyNode,
          field,
          `unknown field "${key}"; expected one of: ${[...allowed].join(", ")}`,
        );
        continue;
      }
      fields.set(key, (pair.value as Node | null) ?? null);
    }
    return fields;
  }

  /** Text: a string, or a number or boolean written bare (YAML reads `value: 2061234567` as one). */
  text(node: Node | null, field: string): string | null {
    if (!isScalar(node) || node.value === null || typeof node.value === "object") {
      this.refuse(node, field, "must be text");
      return null;
    }
    const text =
      isScalar(node) && typeof node.source === "string" ? node.source : String(node.value);
    if (text === "") {
      this.refuse(node, field, "must not be empty");
      return null;
    }
    return text;
  }

  boolean(node: Node | null, field: string): boolean | null {
    if (!isScalar(node) || typeof node.value !== "boolean") {
      this.refuse(node, field, "must be true or false");
      return null;
    }
    return node.value;
  }
}

interface Level {
  readonly key: string;
  readonly value: string | null;
}

function readRateLimit(
  reader: FileReader,
  node: Node | null,
  path: string,
): {
  limit: TDescriptorRuleInput["limit"];
  name: string | null;
  replaces: string[];
} | null {
  if (!isMap(node)) {
    reader.refuse(
      node,
      path,
      "must be a map of unit, requests_per_unit, unlimited, name, replaces",
    );
    return null;
  }
  const fields = reader.fields(node, path, RATE_LIMIT_FIELDS);
  const unlimitedNode = fields.get("unlimited");
  const isUnlimited =
    unlimitedNode === undefined ? false : reader.boolean(unlimitedNode, `${path}.unlimited`);
  const unitNode = fields.get("unit");
  const perUnitNode = fields.get("requests_per_unit");
  let limit: TDescriptorRuleInput["limit"] | null = null;
  if (isUnlimited === true) {
    if (unitNode !== undefined) {
      reader.refuse(unitNode, `${path}.unit`, "an unlimited rate limit takes no unit");
    }
    limit = "unlimited";
  } else if (isUnlimited === false) {
    const unit = unitNode === undefined ? null : reader.text(unitNode, `${path}.unit`);
    const windowMs = unit === null ? undefined : UNIT_WINDOW_MS.get(unit.toLowerCase());
    if (unitNode === undefined) {
      reader.refuse(
        node,
        `${path}.unit`,
        "is required: second, minute, hour, day, week, month or year",
      );
    } else if (unit !== null && windowMs === undefined) {
      reader.refuse(
        unitNode,
        `${path}.unit`,
        `"${unit}" is not a unit this import carries over; expected second, minute, hour, day, week, month or year (for other windows, edit the imported rule: any duration is possible)`,
      );
    }
    const perUnit = isScalar(perUnitNode) ? perUnitNode.value : undefined;
    if (perUnitNode === undefined) {
      reader.refuse(node, `${path}.requests_per_unit`, "is required");
    } else if (
      typeof perUnit !== "number" ||
      !Number.isInteger(perUnit) ||
      perUnit < 0 ||
      perUnit > 4_294_967_295
    ) {
      reader.refuse(
        perUnitNode,
        `${path}.requests_per_unit`,
        "must be a whole number from 0 to 4294967295",
      );
    } else if (perUnit > 1_000_000_000) {
      reader.refuse(
        perUnitNode,
        `${path}.requests_per_unit`,
        `${perUnit} is above the 1,000,000,000 a limit holds; use "unlimited: true" instead`,
      );
    } else if (windowMs !== undefined) {
      limit = perUnit === 0 ? "deny" : { algorithm: "fixed-window", limit: perUnit, windowMs };
    }
  }
  const nameNode = fields.get("name");
  const name = nameNode === undefined ? null : reader.text(nameNode, `${path}.name`);
  const replaces: string[] = [];
  const replacesNode = fields.get("replaces");
  if (replacesNode !== undefined) {
    if (!isSeq(replacesNode)) {
      reader.refuse(replacesNode, `${path}.replaces`, "must be a list of { name: ... }");
    } else {
      replacesNode.items.forEach((item, index) => {
        const field = `${path}.replaces[${index}]`;
        if (!isMap(item)) {
          reader.refuse(item as Node, field, "must be a map with a name");
          return;
        }
        const itemFields = reader.fields(item, field, new Set(["name"]));
        const replacedNode = itemFields.get("name");
        if (replacedNode === undefined) {
          reader.refuse(item, `${field}.name`, "is required");
          return;
        }
        const replaced = reader.text(replacedNode, `${field}.name`);
        if (replaced === null) return;
        if (replaced === name) {
          reader.refuse(replacedNode, `${field}.name`, "a rate limit cannot replace itself");
          return;
        }
        replaces.push(replaced);
      });
    }
  }
  return limit === null ? null : { limit, name, replaces };
}

function readDescriptors(
  reader: FileReader,
  domain: string,
  node: Node | null,
  path: string,
  parents: readonly Level[],
  rules: TDescriptorRuleInput[],
  seen: Map<string, string>,
): void {
  if (node === null) return;
  if (!isSeq(node)) {
    reader.refuse(node, path, "must be a list of descriptors");
    return;
  }
  node.items.forEach((item, index) => {
    const itemPath = `${path}[${index}]`;
    if (!isMap(item)) {
      reader.refuse(item as Node, itemPath, "must be a map with a key");
      return;
    }
    const fields = reader.fields(item, itemPath, DESCRIPTOR_FIELDS);
    const keyNode = fields.get("key");
    if (keyNode === undefined) {
      reader.refuse(item, `${itemPath}.key`, "is required");
      return;
    }
    const key = reader.text(keyNode, `${itemPath}.key`);
    const valueNode = fields.get("value");
    const value = valueNode === undefined ? null : reader.text(valueNode, `${itemPath}.value`);
    if (key === null || (valueNode !== undefined && value === null)) return;
    const levels = [...parents, { key, value }];
    if (levels.length > MAX_DESCRIPTOR_PATTERN_ENTRIES) {
      reader.refuse(
        item,
        itemPath,
        `nests ${levels.length} levels deep; a descriptor takes at most ${MAX_DESCRIPTOR_PATTERN_ENTRIES}`,
      );
      return;
    }
    const patternKey = JSON.stringify([domain, ...levels.map((level) => [level.key, level.value])]);
    const first = seen.get(patternKey);
    if (first !== undefined) {
      reader.refuse(item, itemPath, `repeats the descriptor at ${first} (same key and value)`);
      return;
    }
    seen.set(patternKey, `${reader.file}:${reader.lineOf(item)}`);

    const shadowNode = fields.get("shadow_mode");
    const isShadow =
      shadowNode === undefined ? false : reader.boolean(shadowNode, `${itemPath}.shadow_mode`);
    const detailedNode = fields.get("detailed_metric");
    const isDetailed =
      detailedNode === undefined
        ? false
        : reader.boolean(detailedNode, `${itemPath}.detailed_metric`);
    const rateLimitNode = fields.get("rate_limit");
    if (rateLimitNode !== undefined) {
      const rateLimit = readRateLimit(reader, rateLimitNode, `${itemPath}.rate_limit`);
      if (rateLimit !== null) {
        rules.push({
          id: envoyRuleId(
            domain,
            levels.map((level) => [level.key, level.value] as const),
          ),
          domain,
          descriptor: levels.map((level) => ({ key: level.key, value: level.value })),
          limit: rateLimit.limit,
          mode: isShadow === true ? "dry-run" : "enforce",
          name: rateLimit.name,
          replaces: rateLimit.replaces,
          detailedMetric: isDetailed === true,
        });
      }
    }
    const nested = fields.get("descriptors");
    if (nested !== undefined) {
      readDescriptors(reader, domain, nested, `${itemPath}.descriptors`, levels, rules, seen);
    }
  });
}

/**
 * Reads envoyproxy/ratelimit configuration files into descriptor rules: all of them, or every
 * problem found in any of them. Two files may not name the same domain (envoyproxy/ratelimit
 * refuses that too unless told to merge).
 */
export function readEnvoyConfigs(files: readonly EnvoyConfigFile[]): EnvoyImportResult {
  const problems: EnvoyConfigProblem[] = [];
  const rules: TDescriptorRuleInput[] = [];
  const domains = new Map<string, string>();
  if (files.length === 0) {
    return {
      ok: false,
      problems: [{ file: "(none)", line: 0, field: "files", message: "give at least one file" }],
    };
  }
  for (const file of files) {
    if (Buffer.byteLength(file.text, "utf8") > MAX_FILE_BYTES) {
      problems.push({
        file: file.name,
        line: 0,
        field: "(file)",
        message: `is larger than ${MAX_FILE_BYTES} bytes`,
      });
      continue;
    }
    const lines = new LineCounter();
    const document = parseDocument(file.text, { lineCounter: lines, uniqueKeys: true });
    const reader = new FileReader(file.name, lines);
    for (const error of document.errors) {
      problems.push({
        file: file.name,
        line: error.linePos?.[0]?.line ?? 0,
        field: "(yaml)",
        message: error.message.split("\n")[0] ?? error.message,
      });
    }
    if (document.errors.length > 0) continue;
    const root = document.contents as Node | null;
    if (!isMap(root)) {
      reader.refuse(root, "(root)", "must be a map with domain and descriptors");
      problems.push(...reader.problems);
      continue;
    }
    const fields = reader.fields(root, "", ROOT_FIELDS);
    const domainNode = fields.get("domain");
    const domain = domainNode === undefined ? null : reader.text(domainNode, "domain");
    if (domainNode === undefined) reader.refuse(root, "domain", "is required");
    if (domain !== null) {
      const other = domains.get(domain);
      if (other !== undefined) {
        reader.refuse(domainNode, "domain", `domain "${domain}" is already configured by ${other}`);
      } else {
        domains.set(domain, file.name);
        readDescriptors(
          reader,
          domain,
          fields.get("descriptors") ?? null,
          "descriptors",
          [],
          rules,
          new Map(),
        );
      }
    }
    problems.push(...reader.problems);
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, rules };
}
