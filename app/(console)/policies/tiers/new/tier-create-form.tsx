"use client";

import { isName } from "@limitplane/enforcer/policy";
import { useState } from "react";
import { emptyDraft, validateDraft } from "../../_components/limit-draft";
import { Field, LimitFields } from "../../_components/limit-fields";
import { type BuildResult, PolicyEditForm } from "../../_components/policy-edit-form";

/** A new tier: its name, a display name and its account limit, created with a preview. */
export function TierCreateForm() {
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [draft, setDraft] = useState(() => emptyDraft("open"));
  const build = (): BuildResult => {
    const { limit, errors } = validateDraft(draft, ["limit"]);
    const nameError = isName(name.trim())
      ? null
      : "1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or a digit";
    if (limit === null || nameError !== null) {
      return {
        ok: false,
        errors: { ...errors, ...(nameError === null ? {} : { name: nameError }) },
      };
    }
    const tier = {
      name: name.trim(),
      displayName: displayName.trim() === "" ? null : displayName.trim(),
      limit,
    };
    return { ok: true, preview: { kind: "tier-create", tier }, body: tier };
  };
  return (
    <PolicyEditForm
      subject={name.trim() === "" ? "the new tier" : `tier "${name.trim()}"`}
      version={0}
      saveUrl="/api/v1/tiers"
      method="POST"
      afterSaveHref={`/policies/tiers/${encodeURIComponent(name.trim())}`}
      saveLabel="Create tier"
      build={build}
      renderFields={(errors) => (
        <>
          <Field
            id="tier-name"
            label="Name"
            error={errors.name}
            help="Gateways send it as the customer's tier; it cannot be renamed later."
          >
            <input
              id="tier-name"
              value={name}
              onChange={(event) => setName(event.target.value)}
              maxLength={63}
              autoComplete="off"
              aria-invalid={errors.name ? true : undefined}
            />
          </Field>
          <Field id="tier-display-name" label="Display name (optional)" error={errors.displayName}>
            <input
              id="tier-display-name"
              value={displayName}
              onChange={(event) => setDisplayName(event.target.value)}
              maxLength={80}
            />
          </Field>
          <LimitFields
            legend="Account limit: every request of this tier's customers, all endpoints"
            path={["limit"]}
            draft={draft}
            errors={errors}
            onChange={setDraft}
            idPrefix="tier-limit"
            isGlobalAllowed
          />
        </>
      )}
    />
  );
}
