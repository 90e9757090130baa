// Vitest setup file of the package's tests (see fast-check.ts).
import { configureFastCheckFromEnv } from "./fast-check";

configureFastCheckFromEnv();
