// A typed client for the REST API of `mindpalace serve`: one method per
// operation, named as the Python library names it (remember, recall,
// context, get, update, forget, ...). No runtime dependency: it sends with
// the global fetch (Node >= 18, browsers, Deno, Bun) or one you pass.

import {
  OPERATIONS,
  type ActivateSkillsRequest,
  type ActivatedSkills,
  type Answer,
  type Context,
  type Erased,
  type DependsOnParams,
  type Feedback,
  type Forgotten,
  type FoundSkills,
  type FindSkillsParams,
  type HitList,
  type MemoryEraseRequest,
  type MemoryListParams,
  type MemoryPage,
  type MemoryRecallRequest,
  type MemoryResult,
  type MemorySearchRequest,
  type MemoryStoreRequest,
  type MemoryUpdateRequest,
  type MessageMatches,
  type Messages,
  type OperationId,
  type Operations,
  type PersonalResults,
  type PersonalSearchRequest,
  type PreflightRequest,
  type Problem,
  type RecentParams,
  type SearchMessagesRequest,
  type SkillResult,
  type StatsResult,
  type Updated,
  type WhatDoIKnowRequest,
  type WhoOwnsParams,
  type WhyDidWeRequest,
} from "./types.js";

/** Where `mindpalace serve` listens unless told otherwise. */
export const DEFAULT_URL = "http://127.0.0.1:8765";

/** The header that names the agent when a shared (`*=TOKEN`) token is used. */
export const AGENT_HEADER = "x-mindpalace-agent-id";

/** How to reach the server; each option has a default. */
export interface ClientOptions {
  /** The server's base URL: default `$MINDPALACE_URL`, else http://127.0.0.1:8765. */
  url?: string;
  /** The bearer token: default `$MINDPALACE_TOKEN`; none sends no Authorization
   * header (a server started with `--auth none`). */
  token?: string;
  /** The agent to act as, sent in `x-mindpalace-agent-id`: needed with a
   * shared (`*=TOKEN`) token, ignored by the server with an agent's own token. */
  agent_id?: string;
  /** The fetch to send with (default: the global one). */
  fetch?: typeof fetch;
}

/**
 * What the server refused, or why no answer came: `status` is the HTTP
 * status (0 when the server could not be reached) and `problem` the body
 * the server sent (`error`: a machine-readable code; `message`: what went
 * wrong, naming the valid options; `field` and `valid` for an invalid value).
 */
export class MindpalaceError extends Error {
  override readonly name = "MindpalaceError";
  readonly status: number;
  readonly problem: Problem;

  constructor(status: number, problem: Problem, options?: { cause?: unknown }) {
    super(`${problem.message} (${status} ${problem.error})`, options);
    this.status = status;
    this.problem = problem;
  }

  /** The machine-readable code, e.g. `invalid_argument`, `unauthorised`, `not_found`. */
  get error(): string {
    return this.problem.error;
  }

  /** The argument that was refused, when one was. */
  get field(): string | undefined {
    return this.problem.field;
  }

  /** The values that argument may take, when it has a fixed set. */
  get valid(): string[] | undefined {
    return this.problem.valid;
  }
}

/** Which client method serves each REST operation (by its operationId). */
export const METHODS = {
  memory_store: "remember",
  memory_search: "recall",
  memory_recall: "context",
  memory_get: "get",
  memory_update: "update",
  memory_forget: "forget",
  memory_list: "memories",
  memory_stats: "stats",
  memory_feedback: "feedback",
  memory_erase: "erase",
  recent: "recent",
  search_messages: "search_messages",
  personal_search: "personal.search",
  what_do_i_know: "family.what_do_i_know",
  why_did_we: "family.why_did_we",
  who_owns: "family.who_owns",
  depends_on: "family.depends_on",
  preflight: "family.preflight",
  activate_skills: "skills.activate",
  get_skill: "skills.get",
  find_skills: "skills.find",
} as const satisfies Record<OperationId, string>;

type Options<T, K extends keyof T> = Omit<T, K>;

function environment(name: string): string | undefined {
  // No dependency on Node's types: read process.env only where it exists.
  const scope = globalThis as { process?: { env?: Record<string, string | undefined> } };
  const value = scope.process?.env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

function isProblem(value: unknown): value is Problem {
  if (typeof value !== "object" || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body.error === "string" && typeof body.message === "string";
}

/**
 * A client of one `mindpalace serve`, acting as the agent its token names.
 *
 * ```ts
 * const palace = new MindpalaceClient(); // $MINDPALACE_URL, $MINDPALACE_TOKEN
 * const { memory } = await palace.remember("We chose SQLite", { category: "decision" });
 * const { hits } = await palace.recall("which database?");
 * ```
 *
 * Every method throws a {@link MindpalaceError} when the server refuses.
 */
export class MindpalaceClient {
  /** The base URL requests go to (no trailing slash). */
  readonly url: string;
  readonly #token: string | undefined;
  readonly #agent: string | undefined;
  readonly #fetch: typeof fetch;

  /** The recall family: questions answered from the graph of memories. */
  readonly family: {
    what_do_i_know(topic: string, options?: Options<WhatDoIKnowRequest, "topic">): Promise<Answer>;
    why_did_we(query: string, options?: Options<WhyDidWeRequest, "query">): Promise<Answer>;
    who_owns(entity: string, options?: Options<WhoOwnsParams, "entity">): Promise<Answer>;
    depends_on(entity: string, options?: Options<DependsOnParams, "entity">): Promise<Answer>;
    preflight(action: string, options?: Options<PreflightRequest, "action">): Promise<Answer>;
  };

  /** Skills: procedures an agent follows. */
  readonly skills: {
    activate(
      query: string,
      options?: Options<ActivateSkillsRequest, "query">,
    ): Promise<ActivatedSkills>;
    get(name: string): Promise<SkillResult>;
    find(tags: string, options?: Options<FindSkillsParams, "tags">): Promise<FoundSkills>;
  };

  /** Personal data: journal, knowledge nodes, issues, specs and messages. */
  readonly personal: {
    search(
      query: string,
      options?: Options<PersonalSearchRequest, "query">,
    ): Promise<PersonalResults>;
  };

  constructor(options: ClientOptions = {}) {
    const url = options.url ?? environment("MINDPALACE_URL") ?? DEFAULT_URL;
    this.url = url.replace(/\/+$/, "");
    this.#token = options.token ?? environment("MINDPALACE_TOKEN");
    this.#agent = options.agent_id;
    const send = options.fetch ?? globalThis.fetch;
    if (typeof send !== "function") {
      throw new TypeError("no fetch: use Node 18 or later, or pass options.fetch");
    }
    this.#fetch = send;
    this.family = {
      what_do_i_know: (topic, more = {}) => this.#call("what_do_i_know", {}, { ...more, topic }),
      why_did_we: (query, more = {}) => this.#call("why_did_we", {}, { ...more, query }),
      who_owns: (entity, more = {}) => this.#call("who_owns", { ...more, entity }, undefined),
      depends_on: (entity, more = {}) => this.#call("depends_on", { ...more, entity }, undefined),
      preflight: (action, more = {}) => this.#call("preflight", {}, { ...more, action }),
    };
    this.skills = {
      activate: (query, more = {}) => this.#call("activate_skills", {}, { ...more, query }),
      get: (name) => this.#call("get_skill", { name }, undefined),
      find: (tags, more = {}) => this.#call("find_skills", { ...more, tags }, undefined),
    };
    this.personal = {
      search: (query, more = {}) => this.#call("personal_search", {}, { ...more, query }),
    };
  }

  /** Remember one self-contained note; the answer's `memory` is what was stored
   * (an existing memory when the same note was stored before). */
  remember(
    content: string,
    options: Options<MemoryStoreRequest, "content"> = {},
  ): Promise<MemoryResult> {
    return this.#call("memory_store", {}, { ...options, content });
  }

  /** Search memories by meaning and keywords, best first. */
  recall(query: string, options: Options<MemorySearchRequest, "query"> = {}): Promise<HitList> {
    return this.#call("memory_search", {}, { ...options, query });
  }

  /** A prompt-ready block for a task, within `max_tokens` (2048). */
  context(query: string, options: Options<MemoryRecallRequest, "query"> = {}): Promise<Context> {
    return this.#call("memory_recall", {}, { ...options, query });
  }

  /** One memory in full. */
  get(memory_id: string): Promise<MemoryResult> {
    return this.#call("memory_get", { memory_id }, undefined);
  }

  /** Correct a memory you own; fields left out are kept. */
  update(memory_id: string, changes: MemoryUpdateRequest): Promise<Updated> {
    return this.#call("memory_update", { memory_id }, changes);
  }

  /** Archive a memory you own (hidden from search, kept), or with `hard` delete it. */
  forget(memory_id: string, options: { hard?: boolean } = {}): Promise<Forgotten> {
    return this.#call("memory_forget", { ...options, memory_id }, undefined);
  }

  /** The memories you can see, newest first, a page at a time (pass
   * `next_cursor` back as `cursor`). */
  memories(options: MemoryListParams = {}): Promise<MemoryPage> {
    return this.#call("memory_list", options, undefined);
  }

  /** Counts of the memories you can see. */
  stats(): Promise<StatsResult> {
    return this.#call("memory_stats", {}, undefined);
  }

  /** Say whether a recalled memory was useful. */
  feedback(memory_id: string, options: { useful: boolean }): Promise<Feedback> {
    return this.#call("memory_feedback", {}, { memory_id, useful: options.useful });
  }

  /** Erase for good what `kind` (and `value`) select: a dry run (counts
   * only) unless `confirm` is true. Returns the receipt, never content. */
  erase(
    kind: MemoryEraseRequest["kind"],
    options: Options<MemoryEraseRequest, "kind"> = {},
  ): Promise<Erased> {
    return this.#call("memory_erase", {}, { kind, ...options });
  }

  /** The last conversation turns, oldest first. */
  recent(options: RecentParams = {}): Promise<Messages> {
    return this.#call("recent", options, undefined);
  }

  /** Conversation turns containing an exact phrase, newest first. */
  search_messages(
    phrase: string,
    options: Options<SearchMessagesRequest, "phrase"> = {},
  ): Promise<MessageMatches> {
    return this.#call("search_messages", {}, { ...options, phrase });
  }

  /** Sends one operation: path arguments into the path, the other params into
   * the query string (a list as repeated keys), the body as JSON. */
  async #call<K extends OperationId>(
    operation: K,
    params: Operations[K]["params"],
    body: Operations[K]["body"],
  ): Promise<Operations[K]["result"]> {
    const route = OPERATIONS[operation];
    const args: Record<string, unknown> = { ...params };
    let path: string = route.path;
    for (const name of route.path_args) {
      const value = args[name];
      if (typeof value !== "string" || value === "") {
        throw new TypeError(`${METHODS[operation]} needs ${name} (a non-empty string)`);
      }
      path = path.replace(`{${name}}`, encodeURIComponent(value));
      delete args[name];
    }
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(args)) {
      for (const one of Array.isArray(value) ? value : [value]) {
        if (one !== undefined) query.append(name, String(one));
      }
    }
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    if (this.#agent !== undefined) headers[AGENT_HEADER] = this.#agent;
    const init: RequestInit = { method: route.method, headers };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const search = query.toString();
    const target = `${this.url}${path}${search === "" ? "" : `?${search}`}`;
    let response: Response;
    try {
      response = await this.#fetch(target, init);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      const problem = { error: "unreachable", message: `could not reach ${this.url}: ${reason}` };
      throw new MindpalaceError(0, problem, { cause });
    }
    const text = await response.text();
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = undefined;
    }
    if (response.ok && answer !== undefined) {
      return answer as Operations[K]["result"];
    }
    if (!response.ok && isProblem(answer)) {
      throw new MindpalaceError(response.status, answer);
    }
    const shown = JSON.stringify(text.slice(0, 200));
    throw new MindpalaceError(response.status, {
      error: "unexpected_response",
      message: `${route.method} ${path} answered ${response.status} without a JSON ${
        response.ok ? "result" : "problem"
      }: ${shown}`,
    });
  }
}
