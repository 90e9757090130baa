/**
 * Who is calling, from the API key: the lookup your authentication already does. Here a map held
 * in memory; in production a database or a cache in front of it. The tier comes from the key's
 * account, never from anything else the client sends.
 */
import type { Identity } from "@limitplane/enforcer";

export interface ApiKeyAccount {
  readonly customerId: string;
  readonly tier: string;
}

export class ApiKeys {
  readonly #accounts: ReadonlyMap<string, ApiKeyAccount>;

  constructor(accounts: Readonly<Record<string, ApiKeyAccount>>) {
    this.#accounts = new Map(Object.entries(accounts));
  }

  /**
   * The account of `Authorization: Bearer <key>`, or null (anonymous: limited by client address)
   * when the header is missing or the key is unknown. Your authentication then refuses the
   * request; the limiter only needs to know whose budget to count.
   */
  lookUp(authorization: string | undefined): Identity | null {
    const key = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1];
    if (key === undefined) return null;
    return this.#accounts.get(key) ?? null;
  }
}
