import { describe, expect, it } from "vitest";
import { EnvError, parseEnv, redisTargetOf, requireTrafficRecordSecret } from "./env";

describe("parseEnv", () => {
  it("works on this machine with nothing set", () => {
    const env = parseEnv({});
    expect(env.DATABASE_URL).toBe("postgresql://postgres@127.0.0.1:5432/limitplane");
    expect(env.REDIS_URL).toBe("redis://127.0.0.1:6379/0");
    expect(env.PORT).toBe(3000);
  });

  it("treats an empty variable as unset", () => {
    expect(parseEnv({ REDIS_URL: "" }).REDIS_URL).toBe("redis://127.0.0.1:6379/0");
  });

  it.each([
    [{ DATABASE_URL: "notaurl" }, 'DATABASE_URL is not a URL (got "notaurl")'],
    [{ DATABASE_URL: "mysql://db/x" }, "DATABASE_URL must start with postgres:// or postgresql://"],
    [{ DATABASE_URL: "postgres://" }, "DATABASE_URL has no host"],
    [{ REDIS_URL: "http://cache:6379" }, "REDIS_URL must start with redis:// or rediss://"],
    [{ REDIS_URL: "redis://cache:6379/42" }, "REDIS_URL selects a database outside 0-15"],
    [{ PORT: "eighty" }, "PORT must be a number"],
    [{ PORT: "0" }, "PORT must be between 1 and 65535"],
    [{ REDIS_KEY_PREFIX: "has space" }, "REDIS_KEY_PREFIX must be 1-32 letters"],
    [
      { NODE_ENV: "production", AUDIT_KEY: "k".repeat(32) },
      "SESSION_SECRET must be set in production",
    ],
    [
      { NODE_ENV: "production", SESSION_SECRET: "s".repeat(32) },
      "AUDIT_KEY must be set in production (the development default is public, so anyone could sign forged audit entries)",
    ],
    [{ AUDIT_KEY: "short" }, 'AUDIT_KEY must be at least 32 characters (got "<hidden>")'],
    [
      { OIDC_ISSUER: "http://idp.example", OIDC_CLIENT_ID: "c", OIDC_ROLE_MAP: "a=admin" },
      "OIDC_ISSUER must be an https:// URL (openid-client refuses a plain-http issuer)",
    ],
    [
      { OIDC_ISSUER: "https://idp.example", OIDC_ROLE_MAP: "a=admin" },
      "OIDC_CLIENT_ID must be set with OIDC_ISSUER",
    ],
    [
      { OIDC_ISSUER: "https://idp.example", OIDC_CLIENT_ID: "c", OIDC_ROLE_MAP: "a=admin,b" },
      "OIDC_ROLE_MAP entry 2 is not value=role with a role of viewer, operator or admin",
    ],
    [
      { OIDC_ISSUER: "https://idp.example", OIDC_CLIENT_ID: "c", OIDC_ROLE_MAP: "a=root" },
      "OIDC_ROLE_MAP entry 1 is not value=role",
    ],
    [
      {
        OIDC_ISSUER: "https://idp.example",
        OIDC_CLIENT_ID: "c",
        OIDC_ROLE_MAP: "a=admin,a=viewer",
      },
      'OIDC_ROLE_MAP entry 2 maps "a" a second time',
    ],
    [{ OIDC_CLIENT_ID: "c" }, "OIDC_CLIENT_ID is set but OIDC_ISSUER is not"],
    [{ PASSWORD_SIGN_IN: "off" }, "PASSWORD_SIGN_IN is off but OIDC_ISSUER is not set"],
    [{ PASSWORD_SIGN_IN: "no" }, "PASSWORD_SIGN_IN must be on or off"],
    [
      { ALERT_WEBHOOK_URLS: "https://hooks.example/a, ftp://hooks.example/b" },
      "ALERT_WEBHOOK_URLS entry 2 is not an http:// or https:// URL",
    ],
    [
      { ALERT_WEBHOOK_URLS: "https://hooks.example/a,https://hooks.example/a" },
      "ALERT_WEBHOOK_URLS lists the same URL twice",
    ],
    [
      { REDIS_CLUSTER_NODES: "10.0.0.1:7000,10.0.0.2" },
      "REDIS_CLUSTER_NODES entry 2 is not host:port with a port from 1 to 65535",
    ],
    [{ REDIS_CLUSTER_NODES: "10.0.0.1:70000" }, "REDIS_CLUSTER_NODES entry 1 is not host:port"],
    [
      { REDIS_CLUSTER_NODES: "redis://10.0.0.1:7000" },
      "REDIS_CLUSTER_NODES entry 1 is not host:port",
    ],
    [
      { REDIS_CLUSTER_NODES: "10.0.0.1:7000", REDIS_URL: "redis://cache:6379/3" },
      "REDIS_URL selects database 3, but REDIS_CLUSTER_NODES is set and a Redis Cluster has database 0 only",
    ],
    [
      { REDIS_SENTINELS: "10.0.0.1:26379,sentinel-b" },
      "REDIS_SENTINELS entry 2 is not host:port with a port from 1 to 65535 (a comma-separated list such as 10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379 is expected)",
    ],
    [
      { REDIS_SENTINELS: "10.0.0.1:26379,10.0.0.1:26379", REDIS_SENTINEL_NAME: "main" },
      "REDIS_SENTINELS lists the same host:port twice",
    ],
    [
      { REDIS_SENTINELS: "10.0.0.1:26379" },
      "REDIS_SENTINEL_NAME must be set with REDIS_SENTINELS: the master group name the sentinels watch",
    ],
    [
      { REDIS_SENTINEL_NAME: "main" },
      "REDIS_SENTINEL_NAME is set but REDIS_SENTINELS is not: list the sentinels, or unset it",
    ],
    [
      { REDIS_SENTINEL_PASSWORD: "hunter2" },
      'REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not: list the sentinels, or unset it (got "<hidden>")',
    ],
    [
      { REDIS_SENTINELS: "10.0.0.1:26379", REDIS_SENTINEL_NAME: "main primary" },
      "REDIS_SENTINEL_NAME must be 1-64 letters, digits, '.', '_' or '-'",
    ],
    [
      {
        REDIS_SENTINELS: "10.0.0.1:26379",
        REDIS_SENTINEL_NAME: "main",
        REDIS_CLUSTER_NODES: "10.0.0.1:7000",
      },
      "REDIS_SENTINELS is set together with REDIS_CLUSTER_NODES: a Redis is either behind Sentinel or a Cluster, set one",
    ],
    [
      { REDIS_SENTINELS: "10.0.0.1:26379", REDIS_SENTINEL_NAME: "main", REDIS_SENTINEL_TLS: "yes" },
      "REDIS_SENTINEL_TLS must be true or false",
    ],
  ])("names the variable and the problem in one line: %o", (source, expected) => {
    let message = "";
    try {
      parseEnv(source);
    } catch (error: unknown) {
      expect(error).toBeInstanceOf(EnvError);
      message = (error as EnvError).message;
    }
    expect(message).toContain(expected);
    expect(message).not.toContain("\n");
  });

  it("reads single sign-on: the role map, password sign-in, the break-glass admins", () => {
    const env = parseEnv({
      OIDC_ISSUER: "https://idp.example/realms/corp",
      OIDC_CLIENT_ID: "limitplane",
      OIDC_ROLE_MAP: "lp-admins=admin, sre=operator,staff=viewer",
      PASSWORD_SIGN_IN: "off",
      BREAK_GLASS_ADMINS: "Owner@Example.com, ",
    });
    expect(env.OIDC_ROLE_MAP).toEqual([
      { value: "lp-admins", role: "admin" },
      { value: "sre", role: "operator" },
      { value: "staff", role: "viewer" },
    ]);
    expect(env.OIDC_ROLE_CLAIM).toBe("groups");
    expect(env.BREAK_GLASS_ADMINS).toEqual(["owner@example.com"]);
    expect(() => parseEnv({ OIDC_CLIENT_SECRET: "s3cr3t-value" })).toThrow(
      'OIDC_CLIENT_SECRET is set but OIDC_ISSUER is not: name the provider, or unset it (got "<hidden>")',
    );
  });

  it("says each problem on a line of its own", () => {
    let message = "";
    try {
      parseEnv({ REDIS_KEY_PREFIX: "has space", PORT: "eighty" });
    } catch (error: unknown) {
      message = (error as EnvError).message;
    }
    expect(message.split("\n")).toEqual([
      "Invalid configuration: REDIS_KEY_PREFIX must be 1-32 letters, digits, ':', '_' or '-' (got \"has space\")",
      'Invalid configuration: PORT must be a number (got "eighty")',
    ]);
  });

  it("production refuses the traffic record's development key; development keeps it", () => {
    const secret = "a-secret-of-my-own-0123456789";
    const production = {
      NODE_ENV: "production",
      SESSION_SECRET: "s".repeat(32),
      AUDIT_KEY: "k".repeat(32),
    };
    expect(() => requireTrafficRecordSecret(parseEnv(production))).toThrow(
      new EnvError(
        "Invalid configuration: TRAFFIC_RECORD_SECRET must be set in production to keep the traffic record (the development default is public, so the recorded address hashes could be reversed)",
      ),
    );
    expect(
      requireTrafficRecordSecret(parseEnv({ ...production, TRAFFIC_RECORD_SECRET: secret })),
    ).toBe(secret);
    expect(requireTrafficRecordSecret(parseEnv({}))).toMatch(/development/);
  });

  it("reads REDIS_CLUSTER_NODES as a list of nodes, empty when unset, IPv6 in brackets", () => {
    expect(parseEnv({}).REDIS_CLUSTER_NODES).toEqual([]);
    expect(
      parseEnv({ REDIS_CLUSTER_NODES: " 10.0.0.1:7000 ,redis-a.internal:7001,[::1]:7002," })
        .REDIS_CLUSTER_NODES,
    ).toEqual([
      { host: "10.0.0.1", port: 7000 },
      { host: "redis-a.internal", port: 7001 },
      { host: "::1", port: 7002 },
    ]);
  });

  it("reports every Sentinel mistake at once, one line each", () => {
    expect(() =>
      parseEnv({
        REDIS_SENTINELS: "a:1,b",
        REDIS_SENTINEL_USERNAME: "ops",
        REDIS_SENTINEL_TLS: "1",
      }),
    ).toThrow(
      [
        'Invalid configuration: REDIS_SENTINELS entry 2 is not host:port with a port from 1 to 65535 (a comma-separated list such as 10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379 is expected) (got "a:1,b")',
        'Invalid configuration: REDIS_SENTINEL_TLS must be true or false (got "1")',
      ].join("\n"),
    );
  });

  it("gives every process the same Redis target: one Redis, a Cluster, or the sentinels' primary", () => {
    expect(redisTargetOf(parseEnv({}))).toEqual({
      url: "redis://127.0.0.1:6379/0",
      clusterNodes: [],
    });
    expect(
      redisTargetOf(
        parseEnv({
          REDIS_URL: "rediss://app:pw@ignored:6379/2",
          REDIS_SENTINELS: "10.0.0.1:26379, [::1]:26380",
          REDIS_SENTINEL_NAME: "limitplane",
          REDIS_SENTINEL_PASSWORD: "sentinel-pw",
          REDIS_SENTINEL_TLS: "true",
        }),
      ),
    ).toEqual({
      url: "rediss://app:pw@ignored:6379/2",
      clusterNodes: [],
      sentinel: {
        nodes: [
          { host: "10.0.0.1", port: 26379 },
          { host: "::1", port: 26380 },
        ],
        name: "limitplane",
        username: undefined,
        password: "sentinel-pw",
        tls: true,
      },
    });
  });

  it("reads ALERT_WEBHOOK_URLS as a list, empty when unset", () => {
    expect(parseEnv({}).ALERT_WEBHOOK_URLS).toEqual([]);
    expect(
      parseEnv({ ALERT_WEBHOOK_URLS: " https://hooks.example/a ,http://127.0.0.1:9000/b," })
        .ALERT_WEBHOOK_URLS,
    ).toEqual(["https://hooks.example/a", "http://127.0.0.1:9000/b"]);
  });

  it("never echoes a webhook URL, which may carry a token", () => {
    expect(() => parseEnv({ ALERT_WEBHOOK_URLS: "https://hooks.example/T0KEN, nope" })).not.toThrow(
      /T0KEN/,
    );
  });

  it("never echoes a password or a secret", () => {
    const attempt = () =>
      parseEnv({ DATABASE_URL: "mysql://admin:hunter2@db/x", SESSION_SECRET: "tooshort" });
    expect(attempt).toThrow(/mysql:\/\/admin:\*\*\*@db\/x/);
    expect(attempt).not.toThrow(/hunter2|tooshort/);
  });
});

describe("REGIONS", () => {
  const regions = JSON.stringify([
    { name: "eu-west", url: "redis://10.0.0.1:6379/0" },
    {
      name: "us-east",
      url: "rediss://app:pw@ignored:6379/0",
      sentinels: "10.0.1.1:26379,10.0.1.2:26379",
      sentinelName: "lp",
    },
    { name: "us-west", url: "redis://ignored:6379", clusterNodes: "10.0.2.1:7000" },
  ]);

  it("gives each region its own Redis target, and a process its REGION's (the first unset)", () => {
    const env = parseEnv({ REGIONS: regions, REGION: "us-west" });
    expect(env.REGIONS.map((region) => region.name)).toEqual(["eu-west", "us-east", "us-west"]);
    expect(env.REGIONS[1]?.redis.sentinel).toEqual({
      nodes: [
        { host: "10.0.1.1", port: 26379 },
        { host: "10.0.1.2", port: 26379 },
      ],
      name: "lp",
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(redisTargetOf(env)).toEqual({
      url: "redis://ignored:6379",
      clusterNodes: [{ host: "10.0.2.1", port: 7000 }],
    });
    expect(redisTargetOf(parseEnv({ REGIONS: regions }))).toEqual({
      url: "redis://10.0.0.1:6379/0",
      clusterNodes: [],
    });
  });

  it.each([
    [
      "[",
      'Invalid configuration: REGIONS is not JSON (a list such as [{"name":"eu-west","url":"redis://10.0.0.1:6379/0"}] is expected) (got "<hidden>")',
    ],
    ["{}", 'Invalid configuration: REGIONS must be a JSON list of regions (got "<hidden>")'],
    ["[]", 'Invalid configuration: REGIONS lists no region (got "<hidden>")'],
    [
      '[{"name":"EU","url":"redis://a:1/0"}]',
      'Invalid configuration: REGIONS entry 1 field "name" must be 1-32 lower-case letters, digits or \'-\', starting with a letter (got "<hidden>")',
    ],
    [
      '[{"name":"eu","url":"http://a:1/0"}]',
      'Invalid configuration: REGIONS entry 1 field "url" must start with redis:// or rediss:// (got "<hidden>")',
    ],
    [
      '[{"name":"eu","url":"redis://a:1/0","port":1}]',
      'Invalid configuration: REGIONS entry 1 Unrecognized key: "port" (got "<hidden>")',
    ],
    [
      '[{"name":"eu","url":"redis://a:1/0"},{"name":"eu","url":"redis://b:1/0"}]',
      'Invalid configuration: REGIONS entry 2 (eu) repeats the name of an earlier region (got "<hidden>")',
    ],
    [
      '[{"name":"eu","url":"redis://a:1/0"},{"name":"us","url":"redis://a:1"}]',
      'Invalid configuration: REGIONS regions eu and us name the same Redis (a:1/0): each region needs its own (got "<hidden>")',
    ],
    [
      '[{"name":"eu","url":"redis://a:1/0","sentinels":"s:1"}]',
      'Invalid configuration: REGIONS entry 1 (eu) sets "sentinels" without "sentinelName" (the master group name the sentinels watch) (got "<hidden>")',
    ],
  ])("refuses REGIONS=%s with one line naming the entry and field", (value, message) => {
    expect(() => parseEnv({ REGIONS: value })).toThrow(message);
  });

  it("refuses a REGION that is not listed, and single-Redis variables beside REGIONS", () => {
    expect(() => parseEnv({ REGIONS: regions, REGION: "ap-south" })).toThrow(
      'Invalid configuration: REGION is not one of the regions in REGIONS (eu-west, us-east, us-west) (got "ap-south")',
    );
    expect(() => parseEnv({ REGION: "eu-west" })).toThrow(
      'Invalid configuration: REGION is set but REGIONS is not: list the regions, or unset it (got "eu-west")',
    );
    expect(() => parseEnv({ REGIONS: regions, REDIS_CLUSTER_NODES: "h:1" })).toThrow(
      'Invalid configuration: REDIS_CLUSTER_NODES is set together with REGIONS: give each region\'s Redis in its REGIONS entry (got "h:1")',
    );
  });

  it("takes the global budget settings with their defaults, and refuses a lease too short", () => {
    expect(parseEnv({ REGIONS: regions })).toMatchObject({
      GLOBAL_BUDGET_INTERVAL_MS: 1_000,
      GLOBAL_BUDGET_LEASE_MS: 3_000,
      GLOBAL_BUDGET_SKEW_MS: 100,
      GLOBAL_BUDGET_APPLY_MS: 300,
      GLOBAL_BUDGET_FLOOR_SHARE: 0.02,
    });
    expect(() => parseEnv({ REGIONS: regions, GLOBAL_BUDGET_LEASE_MS: "2200" })).toThrow(
      'Invalid configuration: GLOBAL_BUDGET_LEASE_MS must be more than twice GLOBAL_BUDGET_INTERVAL_MS plus GLOBAL_BUDGET_APPLY_MS (2300) (got "2200")',
    );
    expect(() => parseEnv({ REGIONS: regions, GLOBAL_BUDGET_FLOOR_SHARE: "0.5" })).toThrow(
      'Invalid configuration: GLOBAL_BUDGET_FLOOR_SHARE must be at most 1 / 3 (the regions in REGIONS) (got "0.5")',
    );
  });
});
