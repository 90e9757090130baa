/**
 * The rate-limit service: one enforcer runtime (policy hot reload, leases, the local stage, the
 * failure policy per limit, metrics, heartbeats, recent rejections) behind two protocols, Envoy's
 * RLS v3 over gRPC and forward-auth over HTTP. Its decisions reach the console's fleet and charts
 * exactly as a Node gateway's do, because they are a Node gateway's: only the front differs.
 * Beside them, the outbound budgets' waiting API over HTTP, for callers that are not Node: the
 * enforcer package's outbound limiter, reading the budgets of the policy in force.
 *
 * Replicas need nothing from each other: every budget lives in Redis, one per key.
 */
import type { Enforcer } from "@limitplane/enforcer";
import type { OutboundLimiter } from "@limitplane/enforcer/callers";
import { startGrpcServer } from "./grpc-server";
import { startHttpServer } from "./http-server";
import type { ServiceConfig } from "./service-config";
import { ServiceMetrics } from "./service-metrics";

/** The parts of the enforcer the service uses. */
export type ServiceEnforcer = Pick<
  Enforcer,
  | "enforcerId"
  | "checkNow"
  | "matchDescriptors"
  | "checkDescriptors"
  | "descriptorMapping"
  | "checkLimitOverride"
  | "status"
  | "prometheus"
  | "onPolicyApplied"
  | "stop"
>;

export interface RunningRateLimitService {
  readonly grpcPort: number;
  readonly httpUrl: string;
  readonly metrics: ServiceMetrics;
  /** Stops taking calls, lets those in flight finish, then stops the enforcer (lease refills sent). */
  stop(): Promise<void>;
}

export async function startRateLimitService(options: {
  readonly config: ServiceConfig;
  readonly enforcer: ServiceEnforcer;
  /** Reads its budgets from `enforcer`; closed when the service stops. */
  readonly outbound: OutboundLimiter;
  readonly logError: (message: string, error: unknown) => void;
}): Promise<RunningRateLimitService> {
  const { config, enforcer, outbound, logError } = options;
  const metrics = new ServiceMetrics();
  const check = enforcer.checkNow.bind(enforcer);
  const grpcServer = await startGrpcServer(
    {
      check,
      rules: enforcer,
      metrics,
      tls: config.tls,
      logError,
    },
    config.host,
    config.grpcPort,
  );
  const isReady = () => enforcer.status().isReady;
  grpcServer.setServing(isReady());
  const unsubscribe = enforcer.onPolicyApplied(() => grpcServer.setServing(true));
  const httpServer = await startHttpServer(
    {
      check,
      outbound,
      outboundMaxWaitMs: config.outboundMaxWaitMs,
      metrics,
      forwardAuth: { customerHeader: config.customerHeader, tierHeader: config.tierHeader },
      secret: config.secret,
      tls: config.tls,
      isReady,
      status: () => enforcer.status(),
      prometheus: () => enforcer.prometheus() + metrics.render(enforcer.enforcerId),
      logError,
    },
    config.host,
    config.httpPort,
  );
  return {
    grpcPort: grpcServer.port,
    httpUrl: httpServer.url,
    metrics,
    async stop() {
      unsubscribe();
      grpcServer.setServing(false);
      await Promise.all([grpcServer.stop(), httpServer.stop()]);
      outbound.close();
      await enforcer.stop();
    },
  };
}
