// The few Node APIs the tests use, declared here so the package's only
// dependency stays TypeScript (no @types/node).

declare const process: {
  env: Record<string, string | undefined>;
};

declare module "node:test" {
  type Body = () => void | Promise<void>;
  export function test(name: string, body: Body): Promise<void>;
  export function test(name: string, options: { skip?: string | false }, body: Body): Promise<void>;
  export function before(body: Body): void;
  export function after(body: Body): void;
}

declare module "node:assert/strict" {
  interface Assert {
    ok(value: unknown, message?: string): asserts value;
    equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    deepEqual(actual: unknown, expected: unknown, message?: string): void;
    match(text: string, pattern: RegExp, message?: string): void;
    rejects(promise: Promise<unknown>, check: (error: unknown) => boolean): Promise<void>;
  }
  const assert: Assert;
  export default assert;
}

declare module "node:child_process" {
  interface Stream {
    on(event: "data", listener: (chunk: { toString(): string }) => void): void;
  }
  export interface ChildProcess {
    readonly exitCode: number | null;
    readonly stdout: Stream;
    readonly stderr: Stream;
    kill(signal: "SIGTERM" | "SIGKILL"): boolean;
    once(event: "exit", listener: (code: number | null) => void): void;
  }
  export function spawn(
    command: string,
    args: string[],
    options: { env: Record<string, string | undefined>; stdio: ["ignore", "pipe", "pipe"] },
  ): ChildProcess;
}

declare module "node:net" {
  interface Server {
    listen(port: number, host: string, ready: () => void): void;
    address(): { port: number };
    close(done: () => void): void;
  }
  export function createServer(): Server;
}

declare module "node:fs" {
  export function existsSync(path: string): boolean;
  export function mkdtempSync(prefix: string): string;
  export function rmSync(path: string, options: { recursive: true; force: true }): void;
}

declare module "node:os" {
  export function tmpdir(): string;
}

declare module "node:path" {
  export function join(...parts: string[]): string;
}

declare module "node:url" {
  export function fileURLToPath(url: URL): string;
}
