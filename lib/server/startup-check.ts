/**
 * Node-only startup check, imported by instrumentation.ts. A malformed DATABASE_URL or REDIS_URL
 * stops the server here with one line that names the variable, not a stack trace.
 */
import { EnvError, loadEnv } from "@/lib/server/env";

export function checkEnvOrExit(): void {
  try {
    loadEnv();
  } catch (error: unknown) {
    if (error instanceof EnvError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}
