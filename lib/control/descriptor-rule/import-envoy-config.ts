/**
 * Imports envoyproxy/ratelimit configuration files as descriptor rules, as ONE audited change
 * (`descriptor-rule.import`), or previews it (`dryRun`).
 *
 * The files are the truth for the domains they name, as they were for envoyproxy/ratelimit: every
 * rule of those domains is replaced by the files' rules (a rule whose pattern is unchanged keeps
 * its id and history, and is only rewritten when its limit or options changed); rules of other
 * domains are untouched. Anything that cannot be carried over is refused with its file, line and
 * field, and nothing is written. The preview lists the rules and their difference from the
 * stored ones; an import writes the same, validates the resulting policy whole, and publishes.
 */
import {
  canonicalJson,
  formatDescriptorPattern,
  type TDescriptorRule,
  ZDescriptorRule,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { validationError } from "../errors";
import {
  type ChangeReceipt,
  type NoChangeReceipt,
  runPolicyChangeOrNothing,
} from "../policy/run-policy-change";
import type { Db } from "../stored";
import {
  type DescriptorRuleRecord,
  descriptorRuleSelect,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";
import { replaceDescriptorRules } from "./descriptor-rule-rows";
import { formatEnvoyProblem, readEnvoyConfigs } from "./envoy-config";

export const ZImportEnvoyConfigOptions = z.strictObject({
  files: z
    .array(
      z.strictObject({
        name: z
          .string({ error: "name is required" })
          .min(1, { error: "name must not be empty" })
          .max(200, { error: "name takes at most 200 characters" }),
        text: z.string({ error: "text is required" }),
      }),
      { error: "files must be a list of { name, text }" },
    )
    .min(1, { error: "give at least one file" })
    .max(100, { error: "give at most 100 files" }),
  /** Only preview: validate and compare, write nothing. @default false */
  dryRun: z.boolean().default(false),
});
export type ImportEnvoyConfigOptions = z.input<typeof ZImportEnvoyConfigOptions>;

/** What the import would do, rule by rule, against the stored rules of the files' domains. */
export interface EnvoyImportPreview {
  readonly domains: readonly string[];
  readonly rules: readonly TDescriptorRule[];
  readonly added: readonly TDescriptorRule[];
  readonly changed: readonly {
    readonly before: DescriptorRuleRecord;
    readonly after: TDescriptorRule;
  }[];
  readonly removed: readonly DescriptorRuleRecord[];
  readonly unchanged: number;
}

export type ImportEnvoyConfigResult = { readonly preview: EnvoyImportPreview } & (
  | ChangeReceipt
  | NoChangeReceipt
  | { readonly dryRun: true }
);

/** The rules the files hold, parsed as the policy holds them, or a validation error. */
function rulesOf(files: readonly { name: string; text: string }[]): TDescriptorRule[] {
  const read = readEnvoyConfigs(files);
  if (!read.ok) {
    throw validationError(
      read.problems.map((problem) => ({
        path: `${problem.file}:${problem.line} ${problem.field}`,
        message: problem.message,
      })),
      read.problems.length === 1
        ? formatEnvoyProblem(read.problems[0] as (typeof read.problems)[number])
        : `The files have ${read.problems.length} problems; nothing was imported. The first is ${formatEnvoyProblem(read.problems[0] as (typeof read.problems)[number])}`,
    );
  }
  return read.rules.map((rule, index) => {
    const parsed = ZDescriptorRule.safeParse(rule);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw validationError([
      {
        path: `rules[${index}] (${formatDescriptorPattern({ domain: rule.domain, descriptor: rule.descriptor.map((level) => ({ key: level.key, value: level.value ?? null })) })})`,
        message: issue?.message ?? "is not a valid descriptor rule",
      },
    ]);
  });
}

async function previewOf(db: Db, rules: readonly TDescriptorRule[]): Promise<EnvoyImportPreview> {
  const domains = [...new Set(rules.map((rule) => rule.domain))].sort();
  const rows = await db.descriptorRule.findMany({
    where: { OR: [{ domain: { in: domains } }, { id: { in: rules.map((rule) => rule.id) } }] },
    orderBy: { id: "asc" },
    select: descriptorRuleSelect,
  });
  const stored = new Map(rows.map((row) => [row.id, toDescriptorRuleRecord(row)]));
  const added: TDescriptorRule[] = [];
  const changed: { before: DescriptorRuleRecord; after: TDescriptorRule }[] = [];
  let unchanged = 0;
  // A file knows nothing of raises: a rule's raises carry over to its imported form while they
  // still fit it, so a re-import during an incident keeps the incident.
  const carried = rules.map((rule) => withRaisesOf(rule, stored.get(rule.id)));
  for (const rule of carried) {
    const before = stored.get(rule.id);
    if (before === undefined) added.push(rule);
    else {
      const { version: _v, createdAt: _c, updatedAt: _u, ...beforeRule } = before;
      if (canonicalJson(beforeRule) === canonicalJson(rule)) unchanged++;
      else changed.push({ before, after: rule });
    }
  }
  const kept = new Set(rules.map((rule) => rule.id));
  const removed = [...stored.values()].filter(
    (record) => !kept.has(record.id) && domains.includes(record.domain),
  );
  return { domains, rules: carried, added, changed, removed, unchanged };
}

function withRaisesOf(rule: TDescriptorRule, before: DescriptorRuleRecord | undefined) {
  if (before === undefined || before.raises.length === 0 || rule.raises.length > 0) return rule;
  const parsed = ZDescriptorRule.safeParse({ ...rule, raises: before.raises });
  return parsed.success ? parsed.data : rule;
}

export async function importEnvoyConfig(
  options: ImportEnvoyConfigOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<ImportEnvoyConfigResult> {
  const { input, ctx } = parseChange(ZImportEnvoyConfigOptions, options, context);
  const rules = rulesOf(input.files);
  if (input.dryRun) return { preview: await previewOf(deps.db, rules), dryRun: true };
  return runPolicyChangeOrNothing(deps, ctx, {
    action: "descriptor-rule.import",
    entityType: "descriptor-rule",
    affectsSnapshot: true,
    focus: null,
    async write(tx) {
      const preview = await previewOf(tx, rules);
      const count = await replaceDescriptorRules(tx, preview.rules, {
        domain: { in: [...preview.domains] },
      });
      return {
        entityId: preview.domains.join(","),
        customerId: null,
        before: {
          rules: [...preview.changed.map((change) => change.before), ...preview.removed],
        },
        after: {
          files: input.files.map((file) => file.name),
          added: preview.added,
          changed: preview.changed.map((change) => change.after),
          removed: preview.removed.map((rule) => rule.id),
        },
        value: { preview },
        isNoChange: count === 0,
      };
    },
  });
}
