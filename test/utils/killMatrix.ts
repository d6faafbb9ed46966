/**
 * Shared helpers of the durability tests (test/durable/*): a recording MCP
 * server and a SQLite setup for real server processes, an SSE client that can
 * be cut off at any instant, the assertions every kill test makes (event ids
 * continue, one `resumed`, `done`, the stored conversation paired and without
 * duplicates) and the kill-point matrix: one scripted 3-iteration run, killed
 * at a chosen point, restarted (or taken over), resumed, and checked against
 * what was stored before the kill.
 *
 * The fake model of the matrix gives every request its own tool-call ids
 * (`call_<request#>_<k>`, `FakeOpenAi.freshCallId`) and decides its reply from
 * the request's content (how many tool messages it carries), never from ids:
 * a model asked again for a reply it already gave answers with new ids, and a
 * tool that had completed runs again under its new id — both show up here.
 */
import { assert } from "@effect/vitest"
import { createParser } from "eventsource-parser"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "./fakeOpenAiServer.js"
import type { Postgres } from "./postgres.js"
import { freePort, type ServerProcess, startServerProcess } from "./serverProcess.js"
import { getJson, openSse, type SseEvent } from "./sse.js"

export const RECORDER = fileURLToPath(new URL("./recorderMcp.ts", import.meta.url))

// ---------------------------------------------------------------------------
// Waiting, limiting

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Polls `predicate` every 50 ms; fails after `timeoutMs` naming `what`. */
export const waitUntil = async (predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string) => {
  const started = Date.now()
  while (!(await predicate())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

/** At most `n` of the wrapped jobs at a time (the machine is shared: server processes are heavy). */
export const limit = (n: number) => {
  let running = 0
  const queue: Array<() => void> = []
  return async <A>(job: () => Promise<A>): Promise<A> => {
    if (running >= n) await new Promise<void>((resolve) => queue.push(resolve))
    running++
    try {
      return await job()
    } finally {
      running--
      queue.shift()?.()
    }
  }
}

// ---------------------------------------------------------------------------
// Setups

/** A file the recorder MCP server appends `start <label>` / `end <label>` lines to. */
export interface RecordFile {
  readonly path: string
  readonly records: () => Array<string>
}

export const recordFile = (dir: string): RecordFile => {
  const path = join(dir, "records.txt")
  writeFileSync(path, "")
  return { path, records: () => readFileSync(path, "utf8").split("\n").filter((l) => l !== "") }
}

/** An MCP config with the recorder as server `rec` (tools `rec__record`, `rec__record_idem`). */
export const recorderConfig = (dir: string, file: RecordFile, instance?: string): string => {
  const path = join(dir, `mcp${instance ? `-${instance}` : ""}.json`)
  writeFileSync(
    path,
    JSON.stringify({
      mcpServers: {
        rec: {
          command: process.execPath,
          args: ["--import", "tsx", RECORDER],
          env: { RECORD_FILE: file.path, ...(instance ? { INSTANCE: instance } : {}) }
        }
      }
    })
  )
  return path
}

/** The model settings every durable test uses (the fake in this process). */
export const modelEnv = (llmUrl: string): Record<string, string> => ({
  LLM_BASE_URL: llmUrl,
  LLM_MODEL: "fake-model",
  LLM_API_KEY: "test",
  LLM_MAX_RETRIES: "0",
  REACT_COMPLETION_CHECK_MIN_TOOLS: "10",
  // the fakes answer streamed requests as the synthesis call; the streamed loop
  // calls of synthesis policy auto have a test of their own
  REACT_SYNTHESIS: "always"
})

export interface SqliteSetup extends RecordFile {
  readonly dir: string
  readonly databasePath: string
  readonly env: Record<string, string>
}

/** A temporary directory with a SQLite file, a record file and the recorder's MCP config. */
export const sqliteSetup = (llmUrl: string): SqliteSetup => {
  const dir = mkdtempSync(join(tmpdir(), "react-durable-"))
  const file = recordFile(dir)
  const databasePath = join(dir, "react.sqlite")
  return {
    ...file,
    dir,
    databasePath,
    env: {
      DATABASE_PATH: databasePath,
      MCP_CONFIG: recorderConfig(dir, file),
      RUN_DETACH_GRACE_MS: "60000",
      ...modelEnv(llmUrl)
    }
  }
}

/** Several instances on one PostgreSQL database: one record file, per-instance MCP configs (lines name the instance) and runner ports. */
export interface PgCluster {
  /** The database's URL. */
  readonly url: string
  readonly records: () => Array<string>
  readonly env: (instance: string) => Promise<Record<string, string>>
}

/** A database on `pg` for instances of the model at `llmUrl` (shard locks expire after 6 s: takeovers are quick, yet an instance starved of CPU for a few seconds on a loaded machine keeps its shards). */
export const pgCluster = (
  pg: Postgres,
  database: string,
  llmUrl: string,
  extra: Record<string, string> = {}
): PgCluster => {
  const dir = mkdtempSync(join(tmpdir(), "react-pg-durable-"))
  const file = recordFile(dir)
  const url = pg.createDatabase(database)
  return {
    url,
    records: file.records,
    env: async (instance) => ({
      DATABASE_URL: url,
      CLUSTER_PORT: String(await freePort()),
      CLUSTER_SHARD_LOCK_EXPIRATION_MS: "6000",
      CLUSTER_SHARD_LOCK_REFRESH_MS: "1000",
      MCP_CONFIG: recorderConfig(dir, file, instance),
      RUN_DETACH_GRACE_MS: "120000",
      ...modelEnv(llmUrl),
      ...extra
    })
  }
}

/** Starts A then B (one after the other: the first start creates the tables). */
export const startTwo = async (c: PgCluster): Promise<readonly [ServerProcess, ServerProcess]> => {
  const a = await startServerProcess(await c.env("A"))
  try {
    return [a, await startServerProcess(await c.env("B"))]
  } catch (error) {
    await a.kill()
    throw error
  }
}

/** The instance a record line names (`start k0 A` → `A`). */
export const instanceOf = (line: string): string => line.split(" ")[2]

// ---------------------------------------------------------------------------
// Requests and messages

export const toolMessages = (body: any): Array<any> => (body?.messages ?? []).filter((m: any) => m.role === "tool")

/** Every assistant tool call of a request is followed by its tool message (what providers demand). */
export const assertPaired = (body: any) => {
  const messages: Array<any> = body?.messages ?? []
  messages.forEach((m, i) => {
    for (const call of m.tool_calls ?? []) {
      const answered = messages.slice(i + 1).some((n) => n.role === "tool" && n.tool_call_id === call.id)
      assert.isTrue(answered, `tool call ${call.id} unanswered in a request`)
    }
  })
}

/** Whether a request is the synthesis call (its trace is one user message). */
export const isSynthesis = (body: any): boolean =>
  String(body?.messages?.[0]?.content ?? "").startsWith("You write the final answer")

/**
 * A request's messages in short: `system,user,assistant[call_1_0],tool[call_1_0]`; the synthesis
 * call as `synthesis(slow,fast)` (the tools its trace names, `!` for an error).
 */
export const shape = (body: any): string =>
  isSynthesis(body)
    ? `synthesis(${
      [
        ...String(body.messages[body.messages.length - 1]?.content ?? "").matchAll(
          /Step \d+: \S+\nArguments: (.*)\n(Result|Error)/g
        )
      ]
        .map((m) => `${/"label":"([^"]*)"/.exec(m[1])?.[1] ?? "?"}${m[2] === "Error" ? "!" : ""}`).join(",")
    })`
    : (body?.messages ?? []).map((m: any) =>
      m.role === "assistant" && m.tool_calls?.length
        ? `assistant[${m.tool_calls.map((c: any) => c.id).join(" ")}]`
        : m.role === "tool"
        ? `tool[${m.tool_call_id}]`
        : m.role === "user" && String(m.content).startsWith("[USER INTERRUPT]")
        ? "user[interrupt]"
        : m.role
    ).join(",")

/** What identifies a message for a comparison of histories. */
const normal = (m: any) => ({
  role: m.role,
  content: m.content ?? null,
  tool_call_id: m.tool_call_id ?? null,
  tool_calls: (m.tool_calls ?? []).map((c: any) => ({
    id: c.id,
    name: c.function?.name,
    arguments: c.function?.arguments
  }))
})

/** The ids of the tool calls the fake's reply to a request gave (from its recorded JSON or SSE reply, as the test scripted it). */
export const assistantCallIds = (body: any): Array<string> =>
  (body?.messages ?? []).flatMap((m: any) => m.role === "assistant" ? (m.tool_calls ?? []).map((c: any) => c.id) : [])

// ---------------------------------------------------------------------------
// SSE

/**
 * Opens an SSE request and hands every event to `onEvent` until the stream ends, fails,
 * `signal` aborts it (the client hangs up) or `timeoutMs` passes. Never rejects: a stream
 * cut by a kill simply ends.
 */
export const followSse = async (url: string, options: {
  readonly body?: unknown
  readonly headers?: Record<string, string>
  readonly onEvent: (event: SseEvent) => void
  readonly signal?: AbortSignal
  readonly timeoutMs: number
}): Promise<{ readonly status: number | undefined; readonly error: unknown }> => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new Error(`SSE read timed out: ${url}`)), options.timeoutMs)
  const stop = () => controller.abort()
  options.signal?.addEventListener("abort", stop)
  let status: number | undefined
  try {
    const response = await fetch(url, {
      method: options.body === undefined ? "GET" : "POST",
      headers: { ...(options.body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: controller.signal
    })
    status = response.status
    if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      return { status, error: new Error(`not an event stream (${status}): ${await response.text()}`) }
    }
    const parser = createParser({
      onEvent: (message) => {
        let data: any = message.data
        try {
          data = JSON.parse(message.data)
        } catch {
          // keep the text
        }
        options.onEvent({ id: message.id, event: message.event ?? "message", data })
      }
    })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { status, error: undefined }
      parser.feed(decoder.decode(value, { stream: true }))
    }
  } catch (error) {
    return { status, error }
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener("abort", stop)
  }
}

/** Resumes from the last id; returns the events after it (to `done`). */
export const resume = async (url: string, conversation: string, lastId: string | undefined, timeoutMs = 90_000) =>
  (await openSse(`${url}/api/react/events?conversation_id=${conversation}`, {
    headers: lastId === undefined ? {} : { "last-event-id": lastId },
    timeoutMs
  })).events

export const isEvent = (e: SseEvent, event: string, fields: Record<string, unknown> = {}) =>
  e.event === event && Object.entries(fields).every(([k, v]) => e.data?.[k] === v)

export const answer = (events: ReadonlyArray<SseEvent>) =>
  events.filter((e) => e.event === "answer" && e.data.status === "delta").map((e) => e.data.content).join("")

/** Ids 1..N without gaps or repeats across the kill, exactly one `resumed` after it, `done` last. */
export const assertContinues = (before: ReadonlyArray<SseEvent>, after: ReadonlyArray<SseEvent>) => {
  const ids = [...before, ...after].map((e) => Number(e.id))
  ids.forEach((id, i) => assert.strictEqual(id, i + 1, `event ids continue: ${ids.join(",")}`))
  assert.strictEqual(after.filter((e) => isEvent(e, "phase", { phase: "resumed" })).length, 1, "one resumed")
  assert.strictEqual(
    before.filter((e) => isEvent(e, "phase", { phase: "resumed" })).length,
    0,
    "no resumed before the kill"
  )
  assert.strictEqual(after[after.length - 1]?.event, "done", "the run ends with done")
  assert.strictEqual([...before, ...after].filter((e) => e.event === "done").length, 1, "one done")
}

/** `1–8 ‖ 9–27 (resumed 10)`: the ids the client had at the kill, those after, where `resumed` came. */
export const describeIds = (before: ReadonlyArray<SseEvent>, after: ReadonlyArray<SseEvent>) => {
  const range = (events: ReadonlyArray<SseEvent>) =>
    events.length === 0 ? "–" : `${events[0].id}–${events[events.length - 1].id}`
  const resumed = after.find((e) => isEvent(e, "phase", { phase: "resumed" }))
  return `${range(before)} ‖ ${range(after)} (resumed ${resumed?.id ?? "none"})`
}

/**
 * The stored conversation after the run: pairing holds, the query is stored once,
 * and no assistant tool call or tool message is stored twice (nothing duplicated
 * by the replay), every tool call answered (nothing lost).
 */
export const assertStoredOnce = async (url: string, conversation: string, query = "record something") => {
  const stored = await getJson(`${url}/api/conversations/${conversation}`)
  const messages: Array<any> = stored.body.messages
  assertPaired({ messages })
  assert.strictEqual(
    messages.filter((m) => m.role === "user" && m.content === query).length,
    1,
    "the query is stored once"
  )
  const callIds = messages.flatMap((m) => (m.tool_calls ?? []).map((c: any) => c.id))
  const toolIds = messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)
  assert.strictEqual(new Set(callIds).size, callIds.length, `no tool call stored twice: ${callIds.join(",")}`)
  assert.deepStrictEqual([...toolIds].sort(), [...callIds].sort(), "one tool message per call")
  assert.strictEqual(messages[messages.length - 1].role, "assistant", "the turn ends with the answer")
  return messages
}

// ---------------------------------------------------------------------------
// What the kill left stored, and what the model is asked after it

/** What a kill test observed: the events and model requests on both sides of the kill. */
export interface KillObservation {
  /** Events the client had when the server was killed. */
  readonly before: ReadonlyArray<SseEvent>
  /** Events after resuming with the last id the client had (to `done`). */
  readonly after: ReadonlyArray<SseEvent>
  /** Model requests received before the kill (the one in flight included). */
  readonly requestsBefore: number
  readonly requests: ReadonlyArray<FakeOpenAi.RecordedHttpRequest>
}

/**
 * The events stored before the kill: those the client had, and those served after the
 * resume that come before `resumed` (stored but not delivered when the process died).
 */
export const storedBeforeKill = (o: Pick<KillObservation, "before" | "after">): Array<SseEvent> => {
  const resumed = o.after.findIndex((e) => isEvent(e, "phase", { phase: "resumed" }))
  return [...o.before, ...o.after.slice(0, Math.max(resumed, 0))]
}

/**
 * The model requests after the restart start from the stored history: the first one
 * (1) extends the last request before the kill (the history the run had established
 * is there, message for message), (2) carries the assistant message of every tool call
 * the run acted on before the kill (a `ToolStart` was stored) with the same id, name
 * and arguments, and the tool message of every tool result stored before the kill
 * (a `ToolDone`), and (3) carries no tool call the model had not given before the kill.
 * Asking the model again for a reply it gave shows up as (1)–(2) failing: a first
 * request of only `[system, user]`, or new ids.
 */
export const assertStartsFromStored = (o: KillObservation) => {
  assert.isAbove(o.requests.length, o.requestsBefore, "the model is asked after the restart")
  assert.isAbove(o.requestsBefore, 0, "the model was asked before the kill")
  const first = o.requests[o.requestsBefore].body
  const last = o.requests[o.requestsBefore - 1].body
  const context = `last before the kill: ${shape(last)}; first after: ${shape(first)}`
  const firstMessages: Array<any> = first?.messages ?? []
  const lastMessages: Array<any> = last?.messages ?? []
  // (1) the history the run had when it was killed is still there (the model never sees less)
  assert.isAtLeast(
    firstMessages.length,
    lastMessages.length,
    `the first request after the restart has the history: ${context}`
  )
  assert.deepStrictEqual(
    firstMessages.slice(0, lastMessages.length).map(normal),
    lastMessages.map(normal),
    `the history before the kill is a prefix of the first request after it: ${context}`
  )
  // (2) every call the run acted on and every tool result stored before the kill
  const stored = storedBeforeKill(o)
  if (isSynthesis(first)) {
    // the synthesis call: the trace of the tool steps is one user message
    const trace = String(firstMessages[firstMessages.length - 1]?.content ?? "")
    for (const start of stored.filter((e) => isEvent(e, "step", { type: "iteration", status: "start" }))) {
      assert.include(
        trace,
        `: ${start.data.tool_name}\n`,
        `the stored call ${start.data.tool_call_id} is in the synthesis trace: ${context}`
      )
    }
    for (const done of stored.filter((e) => isEvent(e, "step", { type: "iteration", status: "done" }))) {
      assert.include(
        trace,
        done.data.error === null ? `Result: ${done.data.observation}` : `Error: ${done.data.error}`,
        `the stored result of ${done.data.tool_call_id} is in the synthesis trace: ${context}`
      )
    }
    return
  }
  const calls = firstMessages.flatMap((m) => m.role === "assistant" ? (m.tool_calls ?? []) : [])
  for (const start of stored.filter((e) => isEvent(e, "step", { type: "iteration", status: "start" }))) {
    const call = calls.find((c: any) => c.id === start.data.tool_call_id)
    assert.isDefined(
      call,
      `the stored call ${start.data.tool_call_id} (${start.data.tool_name}) is in the first request after the restart: ${context}`
    )
    assert.strictEqual(call.function.name, start.data.tool_name)
    assert.deepStrictEqual(JSON.parse(call.function.arguments), start.data.tool_args)
  }
  for (const done of stored.filter((e) => isEvent(e, "step", { type: "iteration", status: "done" }))) {
    const tool = firstMessages.find((m) => m.role === "tool" && m.tool_call_id === done.data.tool_call_id)
    assert.isDefined(
      tool,
      `the stored result of ${done.data.tool_call_id} is in the first request after the restart: ${context}`
    )
    assert.include(String(tool.content), done.data.observation, "the stored result, as it was")
  }
  // (3) nothing the model had not said: every call id was given in a reply before the kill
  const given = new Set(
    Array.from({ length: o.requestsBefore }, (_, i) => i).flatMap((i) =>
      [0, 1, 2, 3].map((k) => FakeOpenAi.freshCallId(i, k))
    )
  )
  for (const id of assistantCallIds(first)) assert.isTrue(given.has(id), `${id} was given before the kill: ${context}`)
}

/**
 * Every tool call has one `ToolStart` and one `ToolDone` across the kill: a `done` the client
 * was shown is the call's outcome (stored before it went out), never followed by another one.
 */
export const assertOneOutcomePerCall = (events: ReadonlyArray<SseEvent>) => {
  const byCall = new Map<string, Array<string>>()
  for (const e of events) {
    if (!isEvent(e, "step", { type: "iteration" })) continue
    const seen = byCall.get(e.data.tool_call_id) ?? []
    seen.push(
      `${e.id}:${e.data.status}${e.data.status === "done" ? `(${String(e.data.observation).slice(0, 60)})` : ""}`
    )
    byCall.set(e.data.tool_call_id, seen)
  }
  for (const [id, seen] of byCall) {
    assert.deepStrictEqual(
      seen.map((x) => x.split(":")[1].split("(")[0]),
      ["start", "done"],
      `one start and one done for ${id}: ${seen.join(", ")}`
    )
  }
}

/** Lines of the record file: a label's `start` after the kill when its `end` was recorded before it is a completed tool run again. */
export const assertNoCompletedToolAgain = (recordsBefore: ReadonlyArray<string>, records: ReadonlyArray<string>) => {
  const label = (line: string) => line.split(" ")[1]
  const completed = new Set(recordsBefore.filter((l) => l.startsWith("end ")).map(label))
  const again = records.slice(recordsBefore.length).filter((l) => l.startsWith("start ") && completed.has(label(l)))
  assert.deepStrictEqual(again, [], `a tool that had completed before the kill ran again: ${records.join(" | ")}`)
  const ends = records.filter((l) => l.startsWith("end ")).map(label)
  assert.strictEqual(new Set(ends).size, ends.length, `no tool ran to its end twice: ${records.join(" | ")}`)
}

// ---------------------------------------------------------------------------
// The kill-point matrix: the run, the kill points, the report

/** Where the scripted run is slow: the step at the kill point hangs (or streams slowly) until the kill. */
export type SlowStep = "llm1" | "llm2" | "llm3" | "slowTool" | "fastTool" | "answer"

/**
 * The matrix's run, as its fake model scripts it: iteration 1 calls the slow tool
 * (`rec__record`, not idempotent: in flight at a crash it is answered with the restart
 * error), iteration 2 the fast tool (`rec__record_idem`, idempotent: in flight it runs
 * again), iteration 3 answers; the answer is then streamed by the synthesis call.
 * Before the kill the step named `slow` hangs (a model call never answers, a tool runs
 * for long, the answer streams slowly) so that the kill lands in it; after the kill
 * (`killed()`), every reply is quick.
 */
export const matrixModel = (options: {
  readonly slow: SlowStep | undefined
  readonly killed: () => boolean
  readonly words: ReadonlyArray<string>
  readonly slowToolMs?: number
  readonly fastToolMs?: number
}): FakeOpenAi.FakeResponder => {
  const holds = (step: SlowStep) => options.slow === step && !options.killed()
  return (body, index) => {
    if (body?.stream) {
      return FakeOpenAi.sse(
        [
          FakeOpenAi.chunk.role(),
          ...options.words.map((w) => FakeOpenAi.chunk.content(w)),
          FakeOpenAi.chunk.finish("stop")
        ],
        { chunkDelayMs: holds("answer") ? 300 : 5 }
      )
    }
    const tools = toolMessages(body).length
    if (tools === 0) {
      if (holds("llm1")) return FakeOpenAi.hang
      const ms = holds("slowTool") ? 30_000 : (options.slowToolMs ?? 1500)
      return FakeOpenAi.completion({
        toolCalls: [{
          id: FakeOpenAi.freshCallId(index),
          name: "rec__record",
          arguments: JSON.stringify({ label: "slow", ms })
        }],
        delayMs: 50
      })
    }
    if (tools === 1) {
      if (holds("llm2")) return FakeOpenAi.hang
      // idempotent: in flight at the kill it runs again after it, with the same arguments
      const ms = holds("fastTool") ? 3000 : (options.fastToolMs ?? 100)
      return FakeOpenAi.completion({
        toolCalls: [{
          id: FakeOpenAi.freshCallId(index),
          name: "rec__record_idem",
          arguments: JSON.stringify({ label: "fast", ms })
        }],
        delayMs: 50
      })
    }
    if (holds("llm3")) return FakeOpenAi.hang
    return FakeOpenAi.completion({ content: "done", delayMs: 50 })
  }
}

export const MATRIX_WORDS = Array.from({ length: 24 }, (_, i) => `a${i} `)
export const MATRIX_ANSWER = MATRIX_WORDS.join("")

/** What a kill point's trigger sees. */
export interface KillState {
  readonly events: ReadonlyArray<SseEvent>
  readonly requests: number
  readonly records: ReadonlyArray<string>
}

/** One row of the matrix. */
export interface KillPoint {
  readonly name: string
  /** The step that hangs until the kill. */
  readonly slow: SlowStep | undefined
  /** Kill as soon as this holds (checked on every event and every 25 ms). */
  readonly when: (s: KillState) => boolean
  /** Done between the trigger and the kill (e.g. queue an interrupt). */
  readonly beforeKill?: (url: string, conversation: string) => Promise<void>
  readonly env?: Record<string, string>
  /** Model requests before the kill (a list: either), and after it. */
  readonly expectRequests: { readonly before: number | ReadonlyArray<number>; readonly after: number }
  /** The record file at the end (labels in order; instance names left out). */
  readonly expectRecords: ReadonlyArray<string>
}

const toolStarted = (label: string) => (s: KillState) => s.records.some((l) => l.startsWith(`start ${label}`))
const eventSeen = (event: string, fields: Record<string, unknown>) => (s: KillState) =>
  s.events.some((e) => isEvent(e, event, fields))
const answerDeltas = (s: KillState) => s.events.filter((e) => isEvent(e, "answer", { status: "delta" })).length

const ALL = ["start slow", "end slow", "start fast", "end fast"]

/** The kill points of the matrix (SPEC §14; issue 26). */
export const KILL_POINTS: ReadonlyArray<KillPoint> = [
  {
    name: "during model call 1",
    slow: "llm1",
    when: (s) => s.requests >= 1,
    expectRequests: { before: 1, after: 4 },
    expectRecords: ALL
  },
  {
    name: "during the slow tool",
    slow: "slowTool",
    when: toolStarted("slow"),
    expectRequests: { before: 1, after: 3 },
    expectRecords: ["start slow", "start fast", "end fast"]
  },
  {
    name: "between the slow tool's end and model call 2",
    slow: "llm2",
    when: eventSeen("step", { type: "iteration", status: "done" }),
    // model call 2 may or may not have been sent when the process dies: its reply was not given either way
    expectRequests: { before: [1, 2], after: 3 },
    expectRecords: ALL
  },
  {
    name: "during model call 2",
    slow: "llm2",
    when: (s) => s.requests >= 2,
    expectRequests: { before: 2, after: 3 },
    expectRecords: ALL
  },
  {
    name: "during the fast tool (idempotent: runs again)",
    slow: "fastTool",
    when: toolStarted("fast"),
    expectRequests: { before: 2, after: 2 },
    expectRecords: ["start slow", "end slow", "start fast", "start fast", "end fast"]
  },
  {
    name: "during model call 3",
    slow: "llm3",
    when: (s) => s.requests >= 3,
    expectRequests: { before: 3, after: 2 },
    expectRecords: ALL
  },
  {
    name: "during the answer stream (synthesis)",
    slow: "answer",
    when: (s) => answerDeltas(s) >= 3,
    expectRequests: { before: 4, after: 1 },
    expectRecords: ALL
  },
  {
    name: "while an interrupt is queued (during model call 2)",
    slow: "llm2",
    when: (s) => s.requests >= 2,
    beforeKill: async (url, conversation) => {
      const queued = await fetch(`${url}/api/react/inject`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ conversation_id: conversation, content: "also note the time" })
      })
      assert.strictEqual(queued.status, 200, "the interrupt is queued")
    },
    expectRequests: { before: 2, after: 3 },
    expectRecords: ALL
  },
  {
    name: "while an approval waits (the fast tool)",
    slow: undefined,
    when: eventSeen("approval", { status: "requested" }),
    env: { REACT_APPROVAL_TOOLS: "rec__record_idem" },
    expectRequests: { before: 2, after: 2 },
    expectRecords: ALL
  }
]

/**
 * Starts the matrix's run (`POST url/api/react`) and follows it until `point.when` holds
 * (checked on every event and every 25 ms), then runs `point.beforeKill`, `kill()` and hangs
 * up. Returns the events the client had: the kill cuts the stream of a killed process; a
 * client of another instance hangs up right after the kill (a survivor emits nothing before it
 * takes the run over).
 *
 * `follow`: where the client should follow the run once that is known (the instance that
 * executes it: its events reach its own clients first): the client hangs up and resumes there
 * with its last event id.
 */
export const runToKillPoint = async (options: {
  readonly url: string
  readonly conversation: string
  readonly point: KillPoint
  readonly state: () => Omit<KillState, "events">
  readonly kill: () => Promise<void>
  readonly follow?: () => string | undefined
  readonly timeoutMs?: number
}): Promise<Array<SseEvent>> => {
  const timeoutMs = options.timeoutMs ?? 90_000
  const before: Array<SseEvent> = []
  let hangUp = new AbortController()
  let via = options.url
  let ended = false
  let kill: Promise<void> | undefined
  const check = () => {
    if (kill !== undefined || !options.point.when({ ...options.state(), events: before })) return
    kill = (async () => {
      await options.point.beforeKill?.(options.url, options.conversation)
      await options.kill()
      hangUp.abort()
    })()
  }
  // one stream at a time: events of a stream the client hung up on are dropped
  let generation = 0
  const open = (url: string, init: { readonly body?: unknown; readonly headers?: Record<string, string> }) => {
    const mine = ++generation
    const signal = hangUp.signal
    return followSse(url, {
      ...init,
      onEvent: (e) => {
        if (mine !== generation || signal.aborted) return
        before.push(e)
        check()
      },
      signal,
      timeoutMs
    }).then((result) => {
      if (mine === generation) ended = true
      return result
    })
  }
  let stream = open(`${options.url}/api/react`, {
    body: { query: "record something", conversation_id: options.conversation }
  })
  const poll = setInterval(() => {
    const next = kill === undefined ? options.follow?.() : undefined
    if (next !== undefined && next !== via && before.length > 0) {
      via = next
      hangUp.abort()
      hangUp = new AbortController()
      stream = open(`${next}/api/react/events?conversation_id=${options.conversation}`, {
        headers: { "last-event-id": before[before.length - 1].id! }
      })
    }
    check()
  }, 25)
  try {
    await waitUntil(() => kill !== undefined || ended, timeoutMs, `the kill point "${options.point.name}"`)
    assert.isDefined(
      kill,
      `the run ended before the kill point "${options.point.name}" (events ${
        before.map((e) => `${e.id}:${e.event}`).join(",")
      })`
    )
    await kill
  } finally {
    clearInterval(poll)
  }
  await stream
  return before
}

/** One line of the printed matrix. */
export interface MatrixRow {
  readonly point: string
  readonly requests: string
  readonly firstAfter: string
  readonly tools: string
  readonly ids: string
  readonly result: string
  readonly seconds: number
}

/** Collects the rows of a matrix and prints them (stdout, and a file: `KILL_MATRIX_REPORT_DIR` or the temporary directory). */
export const matrixReport = (title: string, file: string) => {
  const rows: Array<MatrixRow> = []
  return {
    add: (row: MatrixRow) => void rows.push(row),
    print: () => {
      const order = (point: string) => {
        const i = KILL_POINTS.findIndex((k) => point.startsWith(k.name))
        return i < 0 ? KILL_POINTS.length : i
      }
      const sorted = [...rows].sort((a, b) => order(a.point) - order(b.point))
      const lines = [
        `### ${title}`,
        "",
        "| kill point | model requests before / after (expected) | first request after the restart | tool executions (record file) | event ids before ‖ after | result | s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        ...sorted.map((r) =>
          `| ${r.point} | ${r.requests} | ${r.firstAfter} | ${r.tools} | ${r.ids} | ${r.result} | ${
            r.seconds.toFixed(1)
          } |`
        )
      ]
      const text = lines.join("\n")
      const path = join(process.env.KILL_MATRIX_REPORT_DIR ?? tmpdir(), file)
      writeFileSync(path, `${text}\n`)
      console.log(`${text}\n\n(written to ${path})`)
    }
  }
}

/** A short version of a record file: `slow: start end; fast: start start end`. */
export const describeRecords = (records: ReadonlyArray<string>) => {
  const byLabel = new Map<string, Array<string>>()
  for (const line of records) {
    const [what, label, instance] = line.split(" ")
    byLabel.set(label, [...(byLabel.get(label) ?? []), instance ? `${what}@${instance}` : what])
  }
  return [...byLabel].map(([label, lines]) => `${label}: ${lines.join(" ")}`).join("; ")
}

/** Checks what every kill point must hold, then the row's own expectations. */
export const assertKillPoint = async (
  point: KillPoint,
  o: KillObservation & {
    readonly url: string
    readonly conversation: string
    readonly recordsBefore: ReadonlyArray<string>
    readonly records: ReadonlyArray<string>
  }
) => {
  for (const r of o.requests) assertPaired(r.body)
  assertOneOutcomePerCall([...o.before, ...o.after])
  assertStartsFromStored(o)
  assertNoCompletedToolAgain(o.recordsBefore, o.records)
  assertContinues(o.before, o.after)
  const done = o.after[o.after.length - 1]
  assert.strictEqual(done.data.answer, MATRIX_ANSWER, "the answer")
  const stored = await assertStoredOnce(o.url, o.conversation)
  assert.strictEqual(stored[stored.length - 1].content, MATRIX_ANSWER, "the stored answer")
  assert.strictEqual(stored.filter((m) => m.role === "tool").length, 2, "two tool results stored")
  // the exact counts of the row
  const before = Array.isArray(point.expectRequests.before)
    ? point.expectRequests.before
    : [point.expectRequests.before]
  assert.include(
    before,
    o.requestsBefore,
    `model requests before the kill: ${o.requests.map((r) => shape(r.body)).join(" / ")}`
  )
  assert.strictEqual(
    o.requests.length - o.requestsBefore,
    point.expectRequests.after,
    `model requests after the restart: ${o.requests.slice(o.requestsBefore).map((r) => shape(r.body)).join(" / ")}`
  )
  assert.deepStrictEqual(
    o.records.map((l) => l.split(" ").slice(0, 2).join(" ")),
    point.expectRecords,
    "the record file"
  )
  // the kind of point
  const all = [...o.before, ...o.after]
  if (point.slow === "slowTool") {
    const slowDone = o.after.find((e) => isEvent(e, "step", { type: "iteration", status: "done" }))
    assert.include(
      slowDone?.data.error,
      "interrupted by a server restart; not retried",
      "the call in flight is answered with the restart error"
    )
  }
  if (point.slow === "answer") {
    const reset = o.after.findIndex((e) => isEvent(e, "answer", { status: "reset" }))
    assert.isAtLeast(reset, 0, "answer reset after the restart")
    assert.strictEqual(answer(o.after.slice(reset)), MATRIX_ANSWER, "the whole answer again")
  }
  if (point.beforeKill !== undefined) {
    assert.deepStrictEqual(
      all.filter((e) => e.event === "inject").map((e) => e.data.content),
      ["also note the time"],
      "the interrupt is taken in once"
    )
    const carried = o.requests.slice(o.requestsBefore).filter((r) =>
      (r.body?.messages ?? []).some((m: any) =>
        m.role === "user" && String(m.content).startsWith("[USER INTERRUPT]") &&
        String(m.content).includes("also note the time")
      )
    )
    assert.isAtLeast(carried.length, 1, "a model request after the restart carries the interrupt")
    assert.strictEqual(
      stored.filter((m) => m.role === "user" && String(m.content).includes("also note the time")).length,
      1,
      "the interrupt is stored once"
    )
  }
  if (point.env?.REACT_APPROVAL_TOOLS !== undefined) {
    const requested = all.filter((e) => isEvent(e, "approval", { status: "requested" }))
    assert.strictEqual(requested.length, 1, "one approval requested (the restarted run waits for the same one)")
    assert.isTrue(
      o.after.some((e) => isEvent(e, "approval", { status: "approved", approval_id: requested[0].data.approval_id }))
    )
  }
}

/**
 * The model requests of each test of a file, on both sides of its kill: `track(name, fake)`,
 * `killed()` when the server died, then the row is added when the test ends, passed or not
 * (`done(result)`). Printed and written like the matrix (`file` in `KILL_MATRIX_REPORT_DIR` or
 * the temporary directory).
 */
export const requestCountReport = (title: string, file: string) => {
  const rows: Array<{ name: string; before: number | undefined; after: number; firstAfter: string; result: string }> =
    []
  return {
    track: (name: string, fake: { readonly requests: ReadonlyArray<FakeOpenAi.RecordedHttpRequest> }) => {
      let before: number | undefined
      return {
        killed: () => {
          before = fake.requests.length
          return before
        },
        done: (result: string) =>
          void rows.push({
            name,
            before,
            after: fake.requests.length - (before ?? 0),
            firstAfter: before === undefined ? "" : shape(fake.requests[before]?.body),
            result
          })
      }
    },
    print: () => {
      const text = [
        `### ${title}`,
        "",
        "| test | model requests before the kill | after it | first request after it | result |",
        "| --- | --- | --- | --- | --- |",
        ...rows.map((r) => `| ${r.name} | ${r.before ?? "–"} | ${r.after} | \`${r.firstAfter}\` | ${r.result} |`)
      ].join("\n")
      const path = join(process.env.KILL_MATRIX_REPORT_DIR ?? tmpdir(), file)
      writeFileSync(path, `${text}\n`)
      console.log(`${text}\n\n(written to ${path})`)
    }
  }
}

/** Runs `body` and records how it ended in `row` (the first line of the error when it failed). */
export const reported = async <A>(
  row: { readonly done: (result: string) => void },
  body: () => Promise<A>
): Promise<A> => {
  try {
    const a = await body()
    row.done("pass")
    return a
  } catch (error) {
    row.done(
      `FAIL: ${
        String(error instanceof Error ? error.message : error).split("\n")[0].replaceAll("|", "\\|").slice(0, 160)
      }`
    )
    throw error
  }
}
