// The client against a real `mindpalace serve` (test/server.ts).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  METHODS,
  MindpalaceClient,
  MindpalaceError,
  OPERATIONS,
  type MemoryStoreRequest,
} from "../src/index.js";
import { type Running, startServer } from "./server.js";

let server: Running;
let palace: MindpalaceClient;
// Unique words, so a reused server's older memories never answer for these.
const run = `run${Date.now().toString(36)}`;
const started = process.env.MINDPALACE_URL === undefined || process.env.MINDPALACE_URL === "";

before(async () => {
  server = await startServer();
  const token = server.token === undefined ? {} : { token: server.token };
  palace = new MindpalaceClient({ url: server.url, ...token });
});

after(async () => {
  await server.stop();
});

function refusal(status: number, error: string) {
  return (thrown: unknown): boolean => {
    assert.ok(thrown instanceof MindpalaceError, `not a MindpalaceError: ${String(thrown)}`);
    assert.equal(thrown.status, status, thrown.message);
    assert.equal(thrown.error, error, thrown.message);
    return true;
  };
}

test("remember, recall, context, update, forget", async () => {
  const content = `The ${run} deploy pipeline runs on Fridays at 16:00 UTC`;
  const { memory } = await palace.remember(content, { category: "fact", tags: [run, "deploy"] });
  assert.equal(memory.content, content);
  assert.equal(memory.category, "fact");

  const found = await palace.recall(`when does the ${run} deploy pipeline run`, { limit: 5 });
  assert.equal(found.memories[0]?.memory_id, memory.memory_id);

  const block = await palace.context(`${run} deploy pipeline`, { max_tokens: 256 });
  assert.match(block.context, /Fridays/);
  assert.ok(block.tokens <= 256);
  assert.ok(block.sources.some((source) => source.memory_id === memory.memory_id));

  const page = await palace.memories({ tags: [run], limit: 5 });
  assert.deepEqual(
    page.memories.map((listed) => listed.memory_id),
    [memory.memory_id],
  );

  const changed = await palace.update(memory.memory_id, {
    content: `The ${run} deploy pipeline runs on Thursdays at 16:00 UTC`,
  });
  assert.equal(changed.updated, true);
  const current = changed.memory.memory_id;
  assert.match((await palace.get(current)).memory.content, /Thursdays/);

  const gone = await palace.forget(current, { hard: true });
  assert.deepEqual(gone, { forgotten: current, hard: true });
  await assert.rejects(palace.get(current), refusal(404, "not_found"));
});

test("bad input is refused with a typed error naming the valid options", async () => {
  const wrong = { category: "opinion" } as unknown as MemoryStoreRequest;
  const refused = palace.remember("a note", {
    // @ts-expect-error: the types refuse a category that is not one, as the server does
    category: "opinion",
  });
  await assert.rejects(refused, refusal(400, "invalid_argument"));
  await assert.rejects(palace.remember("a note", wrong), (thrown: unknown) => {
    assert.ok(thrown instanceof MindpalaceError);
    assert.equal(thrown.field, "category");
    assert.ok(thrown.valid?.includes("fact"), thrown.message);
    assert.match(thrown.message, /fact/);
    return true;
  });
});

test("the token: a wrong one is refused; without one, $MINDPALACE_TOKEN is used", async () => {
  const stranger = new MindpalaceClient({ url: server.url, token: "not-a-token" });
  await assert.rejects(stranger.stats(), refusal(401, "unauthorised"));

  const saved = { url: process.env.MINDPALACE_URL, token: process.env.MINDPALACE_TOKEN };
  process.env.MINDPALACE_URL = server.url;
  process.env.MINDPALACE_TOKEN = server.token ?? "";
  try {
    const fromEnvironment = new MindpalaceClient();
    assert.equal(fromEnvironment.url, server.url.replace(/\/+$/, ""));
    assert.equal(typeof (await fromEnvironment.stats()).stats.memories, "number");
  } finally {
    for (const [name, value] of [
      ["MINDPALACE_URL", saved.url],
      ["MINDPALACE_TOKEN", saved.token],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

const shared = { skip: !started && "needs the server started here (no MINDPALACE_URL)" };

test("agent_id names the agent of a shared token", shared, async () => {
  const gateway = server.gateway ?? "";
  const carol = new MindpalaceClient({ url: server.url, token: gateway, agent_id: "carol" });
  const { memory } = await carol.remember(`Carol keeps the ${run} spare keys`);
  assert.equal(memory.agent_id, "carol");
  await assert.rejects(palace.get(memory.memory_id), (thrown: unknown) => {
    assert.ok(thrown instanceof MindpalaceError);
    assert.ok([403, 404].includes(thrown.status), thrown.message);
    return true;
  });
  const nobody = new MindpalaceClient({ url: server.url, token: gateway });
  await assert.rejects(nobody.stats(), refusal(401, "unauthorised"));
});

test("every operation the server serves has a method", async () => {
  const served = (await (await fetch(`${palace.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  const ids = Object.values(served.paths).flatMap((methods) =>
    Object.values(methods).map((operation) => operation.operationId),
  );
  assert.deepEqual([...ids].sort(), Object.keys(OPERATIONS).sort());
  for (const [operation, name] of Object.entries(METHODS)) {
    let target: unknown = palace;
    for (const part of name.split(".")) target = (target as Record<string, unknown>)[part];
    assert.equal(typeof target, "function", `${operation}: no method ${name}`);
  }
});

test("a server that cannot be reached is a typed error too", async () => {
  const nowhere = new MindpalaceClient({ url: "http://127.0.0.1:9", token: "x" });
  await assert.rejects(nowhere.stats(), refusal(0, "unreachable"));
});

test("the other operations answer with their result shapes", async () => {
  const { memory } = await palace.remember(`Ann owns the ${run} Storage service`, { tags: [run] });
  const feedback = await palace.feedback(memory.memory_id, { useful: true });
  assert.deepEqual(feedback, { recorded: true, memory_id: memory.memory_id, useful: true });
  assert.ok(Array.isArray((await palace.recent({ limit: 3 })).messages));
  assert.ok(Array.isArray((await palace.search_messages(run, { limit: 3 })).messages));
  assert.ok(Array.isArray((await palace.personal.search(run, { limit: 3 })).results));
  const answers = [
    await palace.family.what_do_i_know(run),
    await palace.family.why_did_we(`pick ${run}`),
    await palace.family.who_owns(`${run} Storage service`, { limit: 3 }),
    await palace.family.depends_on(`${run} Storage service`, { direction: "dependents" }),
    await palace.family.preflight(`change the ${run} Storage service`),
  ];
  for (const answer of answers) assert.ok(Array.isArray(answer.groups));
  assert.ok(Array.isArray((await palace.skills.activate("deploy", { limit: 2 })).skills));
  assert.ok(Array.isArray((await palace.skills.find("deploy,ops", { limit: 2 })).skills));
  // The name travels in the path: its spaces arrive intact.
  await assert.rejects(palace.skills.get(`no ${run} skill`), (thrown: unknown) => {
    assert.ok(refusal(400, "invalid_argument")(thrown) && thrown instanceof MindpalaceError);
    assert.match(thrown.message, new RegExp(`no skill named 'no ${run} skill'`));
    return true;
  });
  const page = await palace.memories({ tags: [run], include_archived: true, limit: 1 });
  assert.equal(page.memories.length, 1);
  // Erase: a dry run by default, then for good; the receipt carries no content.
  const dry = await palace.erase("memory", { value: memory.memory_id });
  assert.equal(dry.receipt.erased, false);
  assert.equal(dry.receipt.id, undefined);
  const done = await palace.erase("memory", { value: memory.memory_id, confirm: true });
  assert.equal(done.receipt.erased, true);
  assert.ok(!JSON.stringify(done).includes("Storage service"));
  await assert.rejects(palace.get(memory.memory_id), refusal(404, "not_found"));
});
