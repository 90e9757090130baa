import { Badge } from "@/components/ui/badge";
import { describePropagation, formatUtcClockTime } from "@/lib/console";
import type { Propagation } from "@/lib/control";

/**
 * Where a policy version has reached, region by region (REGIONS): one sentence, then each region
 * with its state and, while pending, the last error its publication met.
 */
export function PropagationPanel({ propagation }: { propagation: Propagation }) {
  // "14:02 UTC": the same for everyone, server-rendered.
  const sentence = describePropagation(
    propagation.regions,
    formatUtcClockTime(Date.parse(propagation.createdAt)),
  );
  return (
    <section
      aria-labelledby="propagation-title"
      data-testid="propagation"
      data-version={propagation.version}
    >
      <h2 id="propagation-title">Version {propagation.version} across regions</h2>
      <p data-testid="propagation-sentence">{sentence[0]?.toUpperCase() + sentence.slice(1)}.</p>
      <ul>
        {propagation.regions.map((region) => (
          <li key={region.region} data-testid="propagation-region" data-region={region.region}>
            <code>{region.region}</code>{" "}
            {region.isApplied ? (
              <Badge tone="ok">applied</Badge>
            ) : (
              <Badge tone="warn">pending</Badge>
            )}
            {region.lastError === null ? null : (
              <span className="muted"> last attempt: {region.lastError}</span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
