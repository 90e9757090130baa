"use client";

import type { TPolicyLimit } from "@limitplane/enforcer/policy";
import { useState } from "react";
import { draftOf, validateDraft } from "../../_components/limit-draft";
import { LimitFields } from "../../_components/limit-fields";
import { type BuildResult, PolicyEditForm } from "../../_components/policy-edit-form";
import { stageOfEdit } from "../../_components/staged-steps-draft";

/** A tier's account limit, edited with a preview. */
export function TierEditForm({
  name,
  version,
  limit,
}: {
  name: string;
  version: number;
  limit: TPolicyLimit;
}) {
  const [draft, setDraft] = useState(() => draftOf(limit));
  const build = (): BuildResult => {
    const { limit: parsed, errors } = validateDraft(draft, ["limit"]);
    if (parsed === null) return { ok: false, errors };
    return {
      ok: true,
      preview: { kind: "tier", name, limit: parsed },
      body: { limit: parsed },
      stage: stageOfEdit([{ target: `tier:${name}`, before: limit, after: parsed }]),
    };
  };
  return (
    <PolicyEditForm
      subject={`tier "${name}"`}
      version={version}
      saveUrl={`/api/v1/tiers/${encodeURIComponent(name)}`}
      build={build}
      isStageable
      renderFields={(errors) => (
        <LimitFields
          legend="Account limit: every request of this tier's customers, all endpoints"
          path={["limit"]}
          draft={draft}
          errors={errors}
          onChange={setDraft}
          idPrefix="tier-limit"
          isGlobalAllowed
        />
      )}
    />
  );
}
