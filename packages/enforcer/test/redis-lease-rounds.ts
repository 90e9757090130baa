/** What redis-lease.race.test.ts and its workers (redis-lease-worker.ts) exchange. */

/** A round: the customer, this worker's share of requests, and how many loops send them. */
export interface LeaseRound {
  readonly customerId: string;
  readonly share: number;
  readonly loops: number;
  /** Whether this worker drains what the round left in the bucket, without leases, afterwards. */
  readonly drain: boolean;
}

/** The worker's report of a round. */
export interface LeaseReport {
  readonly admitted: number;
  readonly fromLeases: number;
  readonly grantedUnits: number;
  readonly returnedUnits: number;
  readonly expiredUnits: number;
  /** Admitted by the drain after the round (0 when this worker did not drain). */
  readonly drained: number;
  readonly error?: string;
}

/** The pro tier's capacity in these rounds; its refill (1 per 1,000 s) cannot interfere. */
export const LEASE_RACE_CAPACITY = 300;
