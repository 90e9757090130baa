/**
 * The service's own counters, beside the enforcer's (`Enforcer.prometheus()`): calls per protocol,
 * domain and answer, descriptors per domain and mapping rule, descriptors no mapping covers by
 * their keys, and refused calls by field. Label values come from callers, so each label's distinct
 * values are capped (`MAX_SERIES`); past the cap they are counted under `other`.
 */

/** Distinct label sets per counter before new ones are folded into `other`. */
export const MAX_SERIES = 200;

type Labels = Readonly<Record<string, string>>;

class Counter {
  readonly #values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  add(labels: Labels, amount = 1): void {
    let key = JSON.stringify(labels);
    let entry = this.#values.get(key);
    if (entry === undefined && this.#values.size >= MAX_SERIES) {
      const folded = Object.fromEntries(Object.keys(labels).map((name) => [name, "other"]));
      key = JSON.stringify(folded);
      entry = this.#values.get(key);
      labels = folded;
    }
    if (entry === undefined) this.#values.set(key, { labels, value: amount });
    else entry.value += amount;
  }

  value(labels: Labels): number {
    return this.#values.get(JSON.stringify(labels))?.value ?? 0;
  }

  render(constant: Labels): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.#values.values()) {
      const all = { ...constant, ...labels };
      const text = Object.entries(all)
        .map(([name, labelValue]) => `${name}="${escapeLabel(labelValue)}"`)
        .join(",");
      lines.push(`${this.name}{${text}} ${value}`);
    }
    return lines;
  }
}

/** Prometheus label value escaping: backslash, quote and newline. */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

export type ServiceProtocol = "rls" | "forward-auth";

export class ServiceMetrics {
  readonly calls = new Counter(
    "limitplane_service_calls_total",
    "Calls answered, by protocol (rls, forward-auth), domain (forward-auth: http) and answer (OK, OVER_LIMIT, INVALID_ARGUMENT, UNAVAILABLE, UNAUTHENTICATED).",
  );
  readonly descriptors = new Counter(
    "limitplane_service_descriptors_total",
    "RLS descriptors decided, by domain, what decided them (the descriptor mapping's domain, descriptor:<rule id>, or limit-override) and code.",
  );
  readonly uncovered = new Counter(
    "limitplane_service_uncovered_descriptors_total",
    "RLS descriptors no mapping covers (answered OK, nothing spent), by domain and their entry keys in order.",
  );
  readonly outbound = new Counter(
    "limitplane_service_outbound_calls_total",
    "Outbound budget calls answered, by action (acquire, renew, release) and answer (the HTTP status, or aborted when the client went away during the wait).",
  );
  readonly refused = new Counter(
    "limitplane_service_refused_total",
    "Calls refused as invalid, by protocol and the field at fault.",
  );
  readonly ignoredLimitOverrides = new Counter(
    "limitplane_service_ignored_limit_overrides_total",
    "RLS descriptors whose limit override was not applied, by domain and reason: not-allowed (the domain's descriptor mapping says limitOverride: ignore, the default, or no mapping covers the domain), unit (UNKNOWN).",
  );

  render(enforcerId: string): string {
    const constant = { enforcer: enforcerId };
    return `${[
      this.calls,
      this.descriptors,
      this.uncovered,
      this.outbound,
      this.refused,
      this.ignoredLimitOverrides,
    ]
      .flatMap((counter) => counter.render(constant))
      .join("\n")}\n`;
  }
}
