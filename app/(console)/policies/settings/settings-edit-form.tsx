"use client";

import type { TCeilings } from "@limitplane/enforcer/policy";
import { useState } from "react";
import { draftOf, validateDraft } from "../_components/limit-draft";
import { Field, LimitFields } from "../_components/limit-fields";
import { type BuildResult, PolicyEditForm } from "../_components/policy-edit-form";
import styles from "../_components/policy-form.module.css";
import { stageOfEdit } from "../_components/staged-steps-draft";

/** The two ceilings and the defaults, edited with a preview. */
export function SettingsEditForm({
  version,
  ceilings,
  defaultTier,
  defaultEndpointClass,
  tiers,
  endpointClasses,
}: {
  version: number;
  ceilings: TCeilings;
  defaultTier: string;
  defaultEndpointClass: string;
  tiers: readonly string[];
  endpointClasses: readonly string[];
}) {
  const [perCustomer, setPerCustomer] = useState(() => draftOf(ceilings.perCustomer));
  const [perAddress, setPerAddress] = useState(() => draftOf(ceilings.perAddress));
  const [tier, setTier] = useState(defaultTier);
  const [endpointClass, setEndpointClass] = useState(defaultEndpointClass);

  const build = (): BuildResult => {
    const customer = validateDraft(perCustomer, ["ceilings", "perCustomer"]);
    const address = validateDraft(perAddress, ["ceilings", "perAddress"]);
    if (customer.limit === null || address.limit === null) {
      return { ok: false, errors: { ...customer.errors, ...address.errors } };
    }
    const change = {
      ceilings: { perCustomer: customer.limit, perAddress: address.limit },
      defaultTier: tier,
      defaultEndpointClass: endpointClass,
    };
    const otherChange =
      tier !== defaultTier || endpointClass !== defaultEndpointClass ? "the defaults" : null;
    return {
      ok: true,
      preview: { kind: "settings", ...change },
      body: change,
      stage: stageOfEdit(
        [
          { target: "ceiling", before: ceilings.perCustomer, after: customer.limit },
          { target: "address", before: ceilings.perAddress, after: address.limit },
        ],
        otherChange,
      ),
    };
  };

  return (
    <PolicyEditForm
      subject="the ceilings and defaults"
      version={version}
      saveUrl="/api/v1/settings"
      build={build}
      isStageable
      renderFields={(errors) => (
        <>
          <LimitFields
            legend="Per-customer ceiling: every authenticated request, whatever the tier"
            path={["ceilings", "perCustomer"]}
            draft={perCustomer}
            errors={errors}
            onChange={setPerCustomer}
            idPrefix="ceiling-customer"
            isGlobalAllowed
          />
          <LimitFields
            legend="Per-address ceiling: every anonymous request (keep it loose: offices share addresses)"
            path={["ceilings", "perAddress"]}
            draft={perAddress}
            errors={errors}
            onChange={setPerAddress}
            idPrefix="ceiling-address"
          />
          <div className={styles.fieldRow}>
            <Field
              id="default-tier"
              label="Tier for an unknown or missing tier"
              error={errors.defaultTier}
            >
              <select
                id="default-tier"
                value={tier}
                onChange={(event) => setTier(event.target.value)}
              >
                {tiers.map((name) => (
                  <option key={name} value={name}>
                    {name}
                  </option>
                ))}
              </select>
            </Field>
            <Field
              id="default-class"
              label="Class for requests no rule matches"
              error={errors.defaultEndpointClass}
            >
              <select
                id="default-class"
                value={endpointClass}
                onChange={(event) => setEndpointClass(event.target.value)}
              >
                {endpointClasses.map((name) => (
                  <option key={name} value={name}>
                    {name}
                  </option>
                ))}
              </select>
            </Field>
          </div>
        </>
      )}
    />
  );
}
