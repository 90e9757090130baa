/**
 * A staged change's steps as the API and the console's form take them. Pure (zod only), so the
 * form validates with the same schema the service does.
 */
import { z } from "zod";

/** One step: the share of subjects under the new limit, and how long it is held at least. */
export const ZStagedStep = z.strictObject({
  /** Percent of subjects, 0.01 to 100 in steps of 0.01 (stored as basis points). */
  percent: z
    .number({ error: "percent must be a number from 0.01 to 100" })
    .min(0.01, { error: "percent must be at least 0.01" })
    .max(100, { error: "percent must be at most 100" })
    .refine(isHundredths, {
      error: "percent must have at most two decimals (it is stored in basis points)",
    }),
  /** How long the step is held before the worker advances it, in ms: 1 s to 30 days. */
  dwellMs: z
    .number({ error: "dwellMs must be a whole number of milliseconds" })
    .int({ error: "dwellMs must be a whole number of milliseconds" })
    .min(1000, { error: "dwellMs must be at least 1000 (1 s)" })
    .max(30 * 24 * 3_600_000, { error: "dwellMs must be at most 30 days" }),
});
export type TStagedStep = z.output<typeof ZStagedStep>;

function isHundredths(percent: number): boolean {
  return Math.abs(percent * 100 - Math.round(percent * 100)) < 1e-9;
}

export const ZStagedSteps = z
  .array(ZStagedStep, { error: "steps must be a list of { percent, dwellMs }" })
  .min(1, { error: "steps needs at least one step" })
  .max(10, { error: "steps takes at most 10 steps" })
  .superRefine((steps, ctx) => {
    steps.forEach((step, index) => {
      const previous = steps[index - 1];
      if (previous !== undefined && step.percent <= previous.percent) {
        ctx.addIssue({
          code: "custom",
          path: [index, "percent"],
          message: `each step must widen the slice: ${step.percent} is not above ${previous.percent}`,
        });
      }
    });
    const last = steps.at(-1);
    if (last !== undefined && last.percent !== 100) {
      ctx.addIssue({
        code: "custom",
        path: [steps.length - 1, "percent"],
        message:
          "the last step must be 100: a staged change ends with everyone under the new limit",
      });
    }
  });
