// Runs in every Redis test worker before its files: the run's Redis, also for child processes.
import { inject } from "vitest";

process.env.REDIS_URL = inject("redisUrl");
