// Vitest setup file of the app's tests: FC_SEED and FC_RUNS apply here as in the package's.
import { configureFastCheckFromEnv } from "@limitplane/enforcer/testing";
import fc from "fast-check";

configureFastCheckFromEnv(fc);
