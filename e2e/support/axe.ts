/** axe-core on a page: the tour (e2e/tour.spec.ts) and specs that check a state the tour does not reach. */
import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";

/** axe-core's serious and critical violations on the page, one line each (rule, count, where). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}, ${violation.nodes.length}×): ${violation.nodes
          .slice(0, 3)
          .map((node) => node.target.join(" "))
          .join(" | ")}`,
    );
}
