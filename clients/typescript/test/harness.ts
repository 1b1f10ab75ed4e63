// The real parts the client's tests run against: `finality sim serve` (the
// providers' stand-in, settling every payment a second after it is made and
// sending signed webhooks) and `finality serve` on an SQLite file of its
// own, pushing events to a receiver in this process. All on loopback, on
// free ports; stopped by `stop()`.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { createServer as netServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const TOKEN = "client-tests-token-0123456789abcdef";
export const PUSH_SECRET = "whsec_" + Buffer.from("client tests push secret 32 bytes!").toString("base64");
const SIM_SECRET = "whsec_" + Buffer.from("client tests sim webhook secret!!").toString("base64");

/** The binary under test: FINALITY_BIN, else the workspace's debug build. */
export function binary(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return process.env.FINALITY_BIN ?? resolve(here, "../../../target/debug/finality");
}

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = netServer();
    s.on("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

async function waitFor(url: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url} did not answer in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Push {
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Stack {
  base: string;
  sim: string;
  pushes: Push[];
  stop(): Promise<void>;
}

export async function start(): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), "finality-ts-client-"));
  const [port, simPort] = [await freePort(), await freePort()];
  const pushes: Push[] = [];
  const receiver = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      pushes.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, "127.0.0.1", ok));
  const pushPort = (receiver.address() as { port: number }).port;
  const config = join(dir, "finality.toml");
  writeFileSync(
    config,
    `[server]
listen = "127.0.0.1:${port}"
[database]
url = "sqlite://${join(dir, "finality.db")}"
[providers.sim]
adapter = "sim"
base_url = "http://127.0.0.1:${simPort}"
webhook_secret_envs = ["CLIENT_TESTS_SIM_SECRET"]
schedule = { kind = "fixed", delays = ["2s"] }
# The same provider, giving up after one query: a payment it cannot find
# goes to the review queue at once.
[providers.sim_review]
adapter = "sim"
base_url = "http://127.0.0.1:${simPort}"
schedule = { kind = "fixed", delays = ["1s"] }
max_attempts = 1
[[events.http]]
name = "client-tests"
url = "http://127.0.0.1:${pushPort}/push"
secret_env = "CLIENT_TESTS_PUSH_SECRET"
`,
  );
  const env: Record<string, string | undefined> = {
    ...process.env,
    FINALITY_API_TOKEN: TOKEN,
    CLIENT_TESTS_SIM_SECRET: SIM_SECRET,
    CLIENT_TESTS_PUSH_SECRET: PUSH_SECRET,
    // Warnings and errors only: a failing test's cause, not every request.
    RUST_LOG: process.env.RUST_LOG ?? "warn",
  };
  // The configured SQLite file, not a database the environment names.
  delete env.FINALITY_DATABASE_URL;
  const children: ChildProcess[] = [
    spawn(
      binary(),
      [
        "sim",
        "serve",
        "--listen",
        `127.0.0.1:${simPort}`,
        "--settle-after",
        "1s",
        "--webhook-url",
        `http://127.0.0.1:${port}/webhooks/sim`,
        "--webhook-secret-env",
        "CLIENT_TESTS_SIM_SECRET",
      ],
      { env, stdio: ["ignore", "ignore", "inherit"] },
    ),
    spawn(binary(), ["--config", config, "serve"], {
      env,
      stdio: ["ignore", "ignore", "inherit"],
    }),
  ];
  const base = `http://127.0.0.1:${port}`;
  const sim = `http://127.0.0.1:${simPort}`;
  await waitFor(`${sim}/v1/payments/none`);
  await waitFor(`${base}/healthz`);
  return {
    base,
    sim,
    pushes,
    async stop() {
      for (const c of children) c.kill("SIGTERM");
      await Promise.all(
        children.map((c) => new Promise((ok) => (c.exitCode !== null ? ok(null) : c.on("exit", ok)))),
      );
      await new Promise((ok) => receiver.close(ok));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A payment made at the simulated provider: its id there. */
export async function providerPayment(sim: string, merchantRef?: string): Promise<string> {
  const r = await fetch(`${sim}/v1/payments`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ amount: 1999, currency: "USD", merchant_ref: merchantRef }),
  });
  if (r.status !== 201) throw new Error(`simulator answered ${r.status}`);
  return ((await r.json()) as { id: string }).id;
}
