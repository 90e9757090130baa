/**
 * An nginx of a test's (or the bench's) own: Debian's binary, run unprivileged in the foreground
 * (`-p <dir> -c <conf> -e stderr`, `daemon off`, no master process) on ports the caller picked,
 * with the rate-limit service's documented configuration (docs/nginx-ratelimit.conf) as it is,
 * only its ports and secret replaced, or a plain proxy for comparison.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
export const DOCUMENTED_NGINX_CONF = path.join(ROOT, "docs/nginx-ratelimit.conf");

/** The nginx binary, or null when none is installed. */
export function findNginx(): string | null {
  for (const candidate of ["/usr/sbin/nginx", "/usr/bin/nginx"]) {
    try {
      execFileSync(candidate, ["-v"], { stdio: "ignore" });
      return candidate;
    } catch {
      // Not there; try the next.
    }
  }
  return null;
}

export interface NginxPorts {
  readonly nginx: number;
  readonly app: number;
  /** The service's HTTP port; null for a plain proxy without auth_request. */
  readonly service: number | null;
}

function replaceOnce(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`${DOCUMENTED_NGINX_CONF} no longer holds ${from}`);
  return text.replace(from, to);
}

/**
 * The server block: the documented one pointed at `ports`, or a plain proxy to the app. With
 * `checkTimeoutSec`, the check's connect and read timeouts are that long: a test on a machine
 * loaded far beyond its cores must not turn a slow answer into nginx's 500.
 */
function siteConfig(ports: NginxPorts, secret: string, checkTimeoutSec?: number): string {
  if (ports.service === null) {
    return [
      `upstream plain_app { server 127.0.0.1:${ports.app}; keepalive 16; }`,
      "server {",
      `  listen 127.0.0.1:${ports.nginx};`,
      "  location / {",
      "    proxy_pass http://plain_app;",
      "    proxy_http_version 1.1;",
      '    proxy_set_header Connection "";',
      "  }",
      "}",
    ].join("\n");
  }
  let site = readFileSync(DOCUMENTED_NGINX_CONF, "utf8");
  site = replaceOnce(site, "server 127.0.0.1:9000;", `server 127.0.0.1:${ports.app};`);
  site = replaceOnce(site, "server 127.0.0.1:8080;", `server 127.0.0.1:${ports.service};`);
  site = replaceOnce(site, "listen 80;", `listen 127.0.0.1:${ports.nginx};`);
  if (checkTimeoutSec !== undefined) {
    site = replaceOnce(
      site,
      "proxy_connect_timeout 1s;",
      `proxy_connect_timeout ${checkTimeoutSec}s;`,
    );
    site = replaceOnce(site, "proxy_read_timeout 2s;", `proxy_read_timeout ${checkTimeoutSec}s;`);
  }
  return replaceOnce(site, "change-me-to-a-secret-of-32-characters-or-more", secret);
}

export interface RunningNginx {
  readonly url: string;
  readonly child: ChildProcess;
  /** What nginx wrote to stderr (its error log). */
  errors(): string;
  stop(): Promise<void>;
}

/** Starts nginx with `binary`; resolves once it has started (the caller waits for answers). */
export function startNginx(
  binary: string,
  ports: NginxPorts,
  secret: string,
  checkTimeoutSec?: number,
): RunningNginx {
  const dir = mkdtempSync(path.join(tmpdir(), "lp-nginx-"));
  const conf = path.join(dir, "nginx.conf");
  writeFileSync(
    conf,
    [
      "daemon off;",
      "master_process off;",
      `pid ${dir}/nginx.pid;`,
      "error_log stderr warn;",
      "events { worker_connections 1024; }",
      "http {",
      "  access_log off;",
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map(
        (kind) => `  ${kind}_temp_path ${dir}/${kind};`,
      ),
      siteConfig(ports, secret, checkTimeoutSec),
      "}",
    ].join("\n"),
  );
  const child = spawn(binary, ["-p", dir, "-c", conf, "-e", "stderr"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let errors = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    errors += chunk.toString();
  });
  return {
    url: `http://127.0.0.1:${ports.nginx}`,
    child,
    errors: () => errors,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGQUIT");
      await exited;
    },
  };
}
