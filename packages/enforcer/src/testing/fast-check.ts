// Property tests run with fast-check's random seeds. To reproduce a failure, or to search harder:
//   FC_SEED=<seed from the failure> npm run test:unit
//   FC_RUNS=2000 npm run test:unit

/**
 * The part of fast-check this sets: its `configureGlobal`. Taken as an argument, so that this
 * entry point does not make fast-check a dependency of the package.
 */
export interface FastCheckGlobals {
  configureGlobal(parameters: { seed?: number; numRuns?: number }): void;
}

/** Applies `FC_SEED` and `FC_RUNS` from the environment to every property of the run. */
export function configureFastCheckFromEnv(fc: FastCheckGlobals): void {
  const seed = process.env.FC_SEED;
  const runs = process.env.FC_RUNS;
  fc.configureGlobal({
    ...(seed ? { seed: Number(seed) } : {}),
    ...(runs ? { numRuns: Number(runs) } : {}),
  });
}
