"use client";

import { isName } from "@limitplane/enforcer/policy";
import { useState } from "react";
import { Field } from "../../_components/limit-fields";
import { type BuildResult, PolicyEditForm } from "../../_components/policy-edit-form";
import styles from "../../_components/policy-form.module.css";

/**
 * A new endpoint class: its name, one match rule and its cost, created with a preview. Its
 * per-tier, anonymous and ceiling limits are set on its own page once it exists.
 */
export function EndpointClassCreateForm() {
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [method, setMethod] = useState("GET");
  const [path, setPath] = useState("");
  const [costText, setCostText] = useState("1");
  const build = (): BuildResult => {
    const errors: Record<string, string> = {};
    const trimmed = name.trim();
    if (!isName(trimmed)) {
      errors.name = "1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or a digit";
    }
    const cost = Number(costText.trim());
    if (costText.trim() === "" || !Number.isFinite(cost) || cost < 0) {
      errors.cost = "cost must be a number >= 0";
    }
    if (path.trim() !== "" && !path.trim().startsWith("/")) {
      errors["match[0].path"] = "the path pattern must start with /";
    }
    if (Object.keys(errors).length > 0) return { ok: false, errors };
    const endpointClass = {
      name: trimmed,
      displayName: displayName.trim() === "" ? null : displayName.trim(),
      match: path.trim() === "" ? [] : [{ method, path: path.trim() }],
      cost,
    };
    return {
      ok: true,
      preview: { kind: "endpoint-class-create", endpointClass },
      body: endpointClass,
    };
  };
  return (
    <PolicyEditForm
      subject={name.trim() === "" ? "the new endpoint class" : `endpoint class "${name.trim()}"`}
      version={0}
      saveUrl="/api/v1/endpoint-classes"
      method="POST"
      afterSaveHref={`/policies/endpoint-classes/${encodeURIComponent(name.trim())}`}
      saveLabel="Create endpoint class"
      build={build}
      renderFields={(errors) => (
        <>
          <Field
            id="class-name"
            label="Name"
            error={errors.name}
            help="Used in scopes (tier:pro/endpoint:NAME); it cannot be renamed later."
          >
            <input
              id="class-name"
              value={name}
              onChange={(event) => setName(event.target.value)}
              maxLength={63}
              autoComplete="off"
            />
          </Field>
          <Field id="class-display-name" label="Display name (optional)" error={errors.displayName}>
            <input
              id="class-display-name"
              value={displayName}
              onChange={(event) => setDisplayName(event.target.value)}
              maxLength={80}
            />
          </Field>
          <div className={styles.fieldRow}>
            <Field id="class-method" label="Method" error={errors["match[0].method"]}>
              <select
                id="class-method"
                value={method}
                onChange={(event) => setMethod(event.target.value)}
              >
                {["GET", "POST", "PUT", "PATCH", "DELETE", "*"].map((option) => (
                  <option key={option} value={option}>
                    {option === "*" ? "any method" : option}
                  </option>
                ))}
              </select>
            </Field>
            <Field
              id="class-path"
              label="Path pattern (optional)"
              error={errors["match[0].path"] ?? errors.match}
              help="Such as /v1/reports/* ; empty: gateways name the class themselves."
            >
              <input
                id="class-path"
                value={path}
                onChange={(event) => setPath(event.target.value)}
                maxLength={500}
                autoComplete="off"
              />
            </Field>
          </div>
          <Field
            id="class-cost"
            label="Cost per request"
            error={errors.cost}
            help="Units each request spends on every limit it is checked against (1 is ordinary)."
          >
            <input
              id="class-cost"
              inputMode="decimal"
              value={costText}
              onChange={(event) => setCostText(event.target.value)}
            />
          </Field>
        </>
      )}
    />
  );
}
