// Runs in every integration worker before its test files: point the app's configuration at this
// run's own database and Redis prefix.
import { inject } from "vitest";

process.env.DATABASE_URL = inject("databaseUrl");
process.env.REDIS_URL = inject("redisUrl");
process.env.REDIS_KEY_PREFIX = inject("redisKeyPrefix");
