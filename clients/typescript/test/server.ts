// A real `mindpalace serve` for the tests: the one at $MINDPALACE_URL (with
// $MINDPALACE_TOKEN) when set, else one started here on a free loopback port
// with a fresh palace file and the hashing embedder (it starts in a second).

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface Running {
  url: string;
  /** The agent's own token. */
  token: string | undefined;
  /** A shared (`*=`) token, when this server was started here. */
  gateway: string | undefined;
  stop(): Promise<void>;
}

// build/test/server.js -> the repository's root.
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

function python(): string {
  const venv = join(ROOT, ".venv", "bin", "python");
  return process.env.MINDPALACE_PYTHON ?? (existsSync(venv) ? venv : "python3");
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function secret(): string {
  // A loopback server that lives for one test run (Node 18 has no global crypto).
  return `${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
}

async function healthy(url: string, child: ChildProcess, output: string[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`mindpalace serve exited with ${child.exitCode}: ${output.join("")}`);
    }
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`mindpalace serve did not answer in 60 s: ${output.join("")}`);
}

export async function startServer(): Promise<Running> {
  const external = process.env.MINDPALACE_URL;
  if (external !== undefined && external !== "") {
    const stop = async () => {};
    return { url: external, token: process.env.MINDPALACE_TOKEN, gateway: undefined, stop };
  }
  const folder = mkdtempSync(join(tmpdir(), "mindpalace-ts-"));
  const port = await freePort();
  const token = secret();
  const gateway = secret();
  const paths = [join(ROOT, "src"), process.env.PYTHONPATH].filter((p) => p !== undefined);
  const env = {
    ...process.env,
    PYTHONPATH: paths.join(":"),
    MINDPALACE_EMBEDDER: "hashing",
    MINDPALACE_TOKENS: `ts-client=${token},*=${gateway}`,
    MINDPALACE_AGENT_ID: undefined,
  };
  const args = ["-m", "mindpalace.cli", "--db", join(folder, "palace.db"), "serve"];
  const child = spawn(python(), [...args, "--port", String(port)], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  child.stdout.on("data", (chunk) => output.push(chunk.toString()));
  child.stderr.on("data", (chunk) => output.push(chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  await healthy(url, child, output);
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(folder, { recursive: true, force: true });
  };
  return { url, token, gateway, stop };
}
