/**
 * The audit page says whether the audit log's hash chain is whole, as the API and the database
 * say: every entry written by the run so far verifies, none is left unchained.
 */
import pg from "pg";
import { expect, test } from "./fixtures";
import { E2E_DATABASE_URL } from "./run-env";

async function chainedEntries(): Promise<number> {
  const client = new pg.Client({ connectionString: E2E_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ chained: number; unchained: number }>(
      `SELECT count("chainHash")::int AS chained, (count(*) - count("chainHash"))::int AS unchained FROM "AuditEntry"`,
    );
    expect(rows[0]?.unchained).toBe(0);
    return rows[0]?.chained ?? 0;
  } finally {
    await client.end();
  }
}

test("the audit page shows the chain whole, with as many entries as the database holds", async ({
  page,
  signIn,
}) => {
  await signIn("viewer");
  const verification = await page.request.get("/api/v1/audit/verification");
  expect(verification.status(), await verification.text()).toBe(200);
  expect(await verification.json()).toMatchObject({ isWhole: true, firstBreak: null });
  const entries = await chainedEntries();
  await page.goto("/audit");
  const panel = page.getByTestId("audit-chain");
  await expect(panel.getByText("Chain whole")).toBeVisible();
  await expect(panel).toContainText(
    `${entries} entries verified against their hashes and AUDIT_KEY`,
  );
});
