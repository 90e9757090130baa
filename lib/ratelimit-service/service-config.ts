/**
 * The service's own settings, from environment variables (Redis and the key prefix come from the
 * same variables as every gateway: `lib/server/env.ts`). Parsed with zod; a bad value is one line
 * naming the variable. Defaults are safe: gRPC needs TLS unless plaintext is asked for by name,
 * and the forward-auth endpoint needs a shared secret or a client CA.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { MAX_OUTBOUND_WAIT_MS } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { fieldPath } from "./rls-request";

/** `RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS` when unset: below the usual proxies' 60 s idle timeout. */
export const DEFAULT_OUTBOUND_MAX_WAIT_MS = 30_000;

const port = z.coerce
  .number({ error: "must be a number" })
  .int("must be a whole number")
  .min(0, "must be between 0 (any free port) and 65535")
  .max(65535, "must be between 0 (any free port) and 65535");

const filePath = z.string().trim().min(1, "is empty");
const headerName = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9-]{1,64}$/, "must be a header name (letters, digits and -)");

export const ZServiceEnv = z
  .object({
    RATELIMIT_SERVICE_HOST: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9.:_-]{1,253}$/, "must be a host name or an IP address")
      .default("127.0.0.1"),
    /** Envoy's `rate_limit_service` cluster points here. */
    RATELIMIT_SERVICE_GRPC_PORT: port.default(8081),
    /** Forward-auth `/check`, `/metrics`, `/healthz`, `/readyz`. */
    RATELIMIT_SERVICE_HTTP_PORT: port.default(8080),
    /** PEM certificate chain and key: gRPC and HTTP are served over TLS. */
    RATELIMIT_SERVICE_TLS_CERT: filePath.optional(),
    RATELIMIT_SERVICE_TLS_KEY: filePath.optional(),
    /** PEM CA: gRPC clients must present a certificate it signed; `/check` accepts them. */
    RATELIMIT_SERVICE_TLS_CLIENT_CA: filePath.optional(),
    /** `true` serves gRPC without TLS (a sidecar on loopback, a mesh that encrypts). */
    RATELIMIT_SERVICE_GRPC_PLAINTEXT: z
      .enum(["true", "false"], { error: "must be true or false" })
      .default("false"),
    /** The shared secret gateways send in `X-Limitplane-Secret` to `/check`. */
    RATELIMIT_SERVICE_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
    /**
     * Gone: the descriptor mapping is part of the policy. Refused, so a deployment that still
     * sets it learns where its mapping now lives instead of silently losing it.
     */
    RATELIMIT_SERVICE_MAPPING: z
      .never({
        error:
          "is no longer read: the descriptor mapping is part of the policy; edit it in the console (Descriptor mappings) or with PUT /api/v1/descriptor-mappings, then unset this variable",
      })
      .optional(),
    /**
     * The file the last good policy is kept in (`controlPlane.policyCache`), or `off`. Default:
     * `policy-cache/ratelimit-service.lpcache` under LIMITPLANE_STATE_DIR (`.limitplane`).
     */
    RATELIMIT_SERVICE_POLICY_CACHE: filePath
      .refine((value) => !value.includes("\0"), "must not contain a NUL character")
      .optional(),
    LIMITPLANE_STATE_DIR: filePath.default(".limitplane"),
    /**
     * The longest an outbound `acquire` long poll waits, whatever its budget allows (a budget may
     * allow an hour; an HTTP client, a proxy or a load balancer between would give up first).
     */
    RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS: z.coerce
      .number({ error: "must be a number" })
      .int("must be a whole number of ms")
      .min(0, `must be between 0 and ${MAX_OUTBOUND_WAIT_MS} ms`)
      .max(MAX_OUTBOUND_WAIT_MS, `must be between 0 and ${MAX_OUTBOUND_WAIT_MS} ms`)
      .default(DEFAULT_OUTBOUND_MAX_WAIT_MS),
    RATELIMIT_SERVICE_CUSTOMER_HEADER: headerName.default("x-customer-id"),
    RATELIMIT_SERVICE_TIER_HEADER: headerName.default("x-tier"),
  })
  .superRefine((env, ctx) => {
    if (
      (env.RATELIMIT_SERVICE_TLS_CERT === undefined) !==
      (env.RATELIMIT_SERVICE_TLS_KEY === undefined)
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["RATELIMIT_SERVICE_TLS_KEY"],
        message: "set both RATELIMIT_SERVICE_TLS_CERT and RATELIMIT_SERVICE_TLS_KEY, or neither",
      });
    }
    if (
      env.RATELIMIT_SERVICE_TLS_CLIENT_CA !== undefined &&
      env.RATELIMIT_SERVICE_TLS_CERT === undefined
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["RATELIMIT_SERVICE_TLS_CLIENT_CA"],
        message:
          "mutual TLS needs the server's own certificate: set RATELIMIT_SERVICE_TLS_CERT and _KEY",
      });
    }
    if (
      env.RATELIMIT_SERVICE_TLS_CERT === undefined &&
      env.RATELIMIT_SERVICE_GRPC_PLAINTEXT !== "true"
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["RATELIMIT_SERVICE_TLS_CERT"],
        message:
          "gRPC is served over TLS: set RATELIMIT_SERVICE_TLS_CERT and _KEY, or RATELIMIT_SERVICE_GRPC_PLAINTEXT=true for a loopback sidecar or a mesh that encrypts",
      });
    }
    if (
      env.RATELIMIT_SERVICE_SECRET === undefined &&
      env.RATELIMIT_SERVICE_TLS_CLIENT_CA === undefined
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["RATELIMIT_SERVICE_SECRET"],
        message:
          "the forward-auth endpoint spends customers' budgets: set RATELIMIT_SERVICE_SECRET (32+ characters) or RATELIMIT_SERVICE_TLS_CLIENT_CA",
      });
    }
  });

export interface ServiceConfig {
  readonly host: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly tls: {
    readonly cert: Buffer;
    readonly key: Buffer;
    readonly clientCa: Buffer | null;
  } | null;
  readonly isGrpcPlaintext: boolean;
  readonly secret: string | null;
  readonly customerHeader: string;
  readonly tierHeader: string;
  /** The longest an outbound `acquire` waits over HTTP, whatever its budget allows. */
  readonly outboundMaxWaitMs: number;
  /** Where the last good policy is kept; null: off. */
  readonly policyCachePath: string | null;
}

/** A configuration mistake: one line naming the variable, or the file and field. */
export class ServiceConfigError extends Error {}

/** The configuration from `env`, reading the files it names. Throws {@link ServiceConfigError}. */
export function loadServiceConfig(
  env: Readonly<Record<string, string | undefined>>,
  readFile: (path: string) => Buffer = (path) => readFileSync(path),
): ServiceConfig {
  // An empty variable is an unset one (`VAR=` in a unit file or a compose file).
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = ZServiceEnv.safeParse(set);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ServiceConfigError(
      `${fieldPath(issue?.path ?? [])} ${issue?.message ?? "is invalid"}`,
    );
  }
  const values = parsed.data;
  const read = (name: string, path: string): Buffer => {
    try {
      return readFile(path);
    } catch (error: unknown) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ServiceConfigError(`${name}: cannot read ${path}: ${reason}`);
    }
  };
  const cert = values.RATELIMIT_SERVICE_TLS_CERT;
  const key = values.RATELIMIT_SERVICE_TLS_KEY;
  const ca = values.RATELIMIT_SERVICE_TLS_CLIENT_CA;
  return {
    host: values.RATELIMIT_SERVICE_HOST,
    grpcPort: values.RATELIMIT_SERVICE_GRPC_PORT,
    httpPort: values.RATELIMIT_SERVICE_HTTP_PORT,
    tls:
      cert === undefined || key === undefined
        ? null
        : {
            cert: read("RATELIMIT_SERVICE_TLS_CERT", cert),
            key: read("RATELIMIT_SERVICE_TLS_KEY", key),
            clientCa: ca === undefined ? null : read("RATELIMIT_SERVICE_TLS_CLIENT_CA", ca),
          },
    isGrpcPlaintext: values.RATELIMIT_SERVICE_GRPC_PLAINTEXT === "true",
    secret: values.RATELIMIT_SERVICE_SECRET ?? null,
    customerHeader: values.RATELIMIT_SERVICE_CUSTOMER_HEADER,
    tierHeader: values.RATELIMIT_SERVICE_TIER_HEADER,
    outboundMaxWaitMs: values.RATELIMIT_SERVICE_OUTBOUND_MAX_WAIT_MS,
    policyCachePath:
      values.RATELIMIT_SERVICE_POLICY_CACHE === "off"
        ? null
        : (values.RATELIMIT_SERVICE_POLICY_CACHE ??
          path.join(values.LIMITPLANE_STATE_DIR, "policy-cache", "ratelimit-service.lpcache")),
  };
}
