// Vitest setup file of the package's tests (see fast-check.ts).
import fc from "fast-check";
import { configureFastCheckFromEnv } from "./fast-check";

configureFastCheckFromEnv(fc);
