/** Runs once when the server starts, before it serves a request. */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { checkEnvOrExit, startInProcessWorkerIfAsked } = await import(
      "@/lib/server/startup-check"
    );
    checkEnvOrExit();
    await startInProcessWorkerIfAsked();
  }
}
