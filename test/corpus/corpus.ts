/**
 * The transcript corpus (issue 44 item 5): a fixed set of scenarios played against a
 * real server process — tools, parallel calls, errors, interrupts, a recall, a cancel,
 * approvals, a DAG run, resumes with `Last-Event-ID` and `after=`, two clients on one
 * run, a client that hangs up and comes back, the AI SDK chat stream, the OpenAI
 * chunks, and three `kill -9`s followed by a restart — recording the raw bytes of every
 * response (status, the headers that matter, the body as it came: ids, frames, order).
 *
 * ```sh
 * npx tsx test/corpus/corpus.ts record <dir> [--tree <checkout>]   # play and save one file per scenario
 * npx tsx test/corpus/corpus.ts compare <dirA> <dirB>               # normalise both and compare byte for byte
 * ```
 *
 * `--tree` plays against another checkout's server (its `src/app/main.ts`, run with
 * this checkout's `tsx`): record the old server and the new one, then compare.
 *
 * What `compare` normalises — only what is random or clock-made in any build:
 * - UUIDs (run ids `run_…`, generated conversation ids, `x-request-id`s) → `<uuid:n>`;
 * - idempotency keys `ik_<32 hex>` (a hash of the run id) → `<ik:n>`; approval ids
 *   `apr_<32 hex>` (a hash over the run id) → `<apr:n>`; injection ids `inj_<16 hex>` →
 *   `<inj:n>`; OpenAI completion ids `chatcmpl-<32 hex>` → `<chatcmpl:n>`;
 *   (`n` numbers each distinct value in order of first appearance in the file, so
 *   "the same id again" is still compared);
 * - the values of `elapsed` and `iter_elapsed` (seconds measured by the clock) and of
 *   `created` (the OpenAI chunk's Unix time) → `<t>`.
 * Nothing else: event ids, channels, payload text and key order, frame boundaries,
 * heartbeats and the order of frames are compared as they are.
 *
 * The fake model (in this process) decides each reply from the request's content, never
 * from timing; tool calls get ids from the conversation's progress (`call_<scenario>_<n>`).
 * Timing-sensitive steps wait for what they need (a tool's `start` line in the record
 * file, an event) before they act.
 */
import { createParser } from "eventsource-parser"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { freePort } from "../utils/serverProcess.js"

const here = fileURLToPath(new URL(".", import.meta.url))
const ownTree = resolve(here, "../..")
const tsx = join(ownTree, "node_modules", "tsx", "dist", "loader.mjs")

const RECORDER = join(ownTree, "test/utils/recorderMcp.ts")

/** A file the recording MCP tools append `start <label>` / `end <label>` to. */
const recordFile = (dir: string) => {
  const path = join(dir, "records.txt")
  writeFileSync(path, "")
  return { path, records: () => readFileSync(path, "utf8").split("\n").filter((l) => l !== "") }
}

/** An MCP config with the recorder as server `rec` (`rec__record`, not idempotent; `rec__record_idem`). */
const recorderConfig = (dir: string, file: ReturnType<typeof recordFile>): string => {
  const path = join(dir, "mcp.json")
  writeFileSync(
    path,
    JSON.stringify({
      mcpServers: {
        rec: { command: process.execPath, args: ["--import", tsx, RECORDER], env: { RECORD_FILE: file.path } }
      }
    })
  )
  return path
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

const waitUntil = async (predicate: () => boolean, timeoutMs: number, what: string) => {
  const started = Date.now()
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(20)
  }
}

// ---------------------------------------------------------------------------
// The fake model

const textOf = (body: any): string =>
  (body?.messages ?? []).map((m: any) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "")))
    .join("\n")
const toolCount = (body: any): number => (body?.messages ?? []).filter((m: any) => m.role === "tool").length
const forced = (body: any): string | undefined => body?.tool_choice?.function?.name
const scenarioOf = (body: any): string => /corpus ([\w-]+)/.exec(textOf(body))?.[1] ?? "none"
const stepOf = (body: any): string | undefined => /Your task \(step (\w+)\)/.exec(textOf(body))?.[1]

const call = (scenario: string, n: number, k: number, name: string, args: unknown) => ({
  id: `call_${scenario}_${n}_${k}`,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args)
})
const tools = (scenario: string, n: number, calls: ReadonlyArray<readonly [string, unknown]>) =>
  FakeOpenAi.completion({
    toolCalls: calls.map(([name, args], k) => call(scenario, n, k, name, args)),
    usage: { prompt: 100 + n, completion: 10 }
  })
const say = (content: string) => FakeOpenAi.completion({ content, usage: { prompt: 50, completion: 5 } })

/** The loop's (non-streamed) replies of each scenario, by how many tool results the request carries. */
const loop: Record<string, (n: number, body: any) => FakeOpenAi.FakeReply> = {
  plain: () => say("Hello there."),
  calc: (n) => (n === 0 ? tools("calc", n, [["calculator", { expression: "6 * 7" }]]) : say("It is 42.")),
  parallel: (n) =>
    n === 0
      ? tools("parallel", n, [["calculator", { expression: "1 + 1" }], ["rec__record_idem", { label: "p", ms: 300 }]])
      : say("Both done."),
  sequence: (
    n
  ) => (n < 3 ? tools("sequence", n, [["rec__record_idem", { label: `s${n}`, ms: 10 }]]) : say("Three recorded.")),
  toolerrors: (n) =>
    n === 0
      ? tools("toolerrors", n, [["no_such_tool", {}], ["calculator", "{not json"], ["calculator", {
        expression: "1 / / 2"
      }]])
      : say("Errors seen."),
  inject: (n, body) =>
    n === 0
      ? tools("inject", n, [["rec__record_idem", { label: "inject", ms: 1500 }]])
      : textOf(body).includes("also say bye")
      ? say("Recorded, and bye.")
      : say("Recorded."),
  recall: (n, body) =>
    n === 0
      ? tools("recall", n, [["rec__record_idem", { label: "recall", ms: 1500 }]])
      : say(
        textOf(body).includes("kept message") && !textOf(body).includes("recalled message")
          ? "Kept only."
          : "Unexpected."
      ),
  cancel: (n) => (n === 0 ? tools("cancel", n, [["rec__record_idem", { label: "cancel", ms: 4000 }]]) : say("Never.")),
  approve: (
    n
  ) => (n === 0 ? tools("approve", n, [["rec__record", { label: "approved", ms: 10 }]]) : say("Approved and done.")),
  deny: (
    n
  ) => (n === 0 ? tools("deny", n, [["rec__record", { label: "denied", ms: 10 }]]) : say("Denied, so not done.")),
  maxiter: (n) => tools("maxiter", n, [["calculator", { expression: `${n} + 1` }]]),
  modelerror: () => FakeOpenAi.error(400, "The model refuses this request"),
  rejoin: (
    n
  ) => (n === 0 ? tools("rejoin", n, [["rec__record_idem", { label: "rejoin", ms: 1500 }]]) : say("Rejoined.")),
  twoclients: (
    n
  ) => (n === 0 ? tools("twoclients", n, [["rec__record_idem", { label: "two", ms: 1500 }]]) : say("Both saw it.")),
  chat: (n) => (n === 0 ? tools("chat", n, [["calculator", { expression: "2 + 3" }]]) : say("Five.")),
  chatresume: (
    n
  ) => (n === 0
    ? tools("chatresume", n, [["rec__record_idem", { label: "chatresume", ms: 1500 }]])
    : say("Resumed chat.")),
  openai: (n) => (n === 0 ? tools("openai", n, [["calculator", { expression: "3 * 3" }]]) : say("Nine.")),
  killtool: (
    n
  ) => (n === 0 ? tools("killtool", n, [["rec__record", { label: "killtool", ms: 20_000 }]]) : say("After the crash.")),
  killidem: (
    n
  ) => (n === 0 ? tools("killidem", n, [["rec__record_idem", { label: "killidem", ms: 2500 }]]) : say("Ran again.")),
  killanswer: (n) => (n === 0 ? tools("killanswer", n, [["calculator", { expression: "5 + 5" }]]) : say("Ten."))
}

/** The streamed synthesis answers (REACT_SYNTHESIS=always). */
const answers: Record<string, string> = {
  killanswer: "The answer is ten and it is streamed slowly so that the server dies in the middle of it."
}

const DAG_PLAN = {
  steps: [
    { id: "A", task: "Compute 2 + 2", dependencies: [] },
    { id: "B", task: "Record the result", dependencies: ["A"] }
  ]
}

const responder = (killAnswer: { armed: boolean }): FakeOpenAi.FakeResponder => (body) => {
  // DAG mode (one DAG scenario at a time): the planner, the analysis, the steps
  if (forced(body) === "create_plan") {
    return FakeOpenAi.completion({
      toolCalls: [{ id: "call_dag_plan", name: "create_plan", arguments: JSON.stringify(DAG_PLAN) }]
    })
  }
  if (forced(body) === "report_analysis") {
    return FakeOpenAi.completion({
      toolCalls: [{
        id: "call_dag_analysis",
        name: "report_analysis",
        arguments: JSON.stringify({ achieved: true, confidence: 1, reasoning: "done" })
      }]
    })
  }
  const step = stepOf(body)
  if (step !== undefined) {
    if (body?.stream) return FakeOpenAi.sseText(`Step ${step} is finished.`)
    if (toolCount(body) > 0) return say(`Step ${step} done.`)
    return step === "A"
      ? tools("dagA", 0, [["calculator", { expression: "2 + 2" }]])
      : tools("dagB", 0, [["rec__record_idem", { label: "dag", ms: 10 }]])
  }
  const scenario = scenarioOf(body)
  if (body?.stream) {
    const text = answers[scenario] ?? `Answer of ${scenario}.`
    if (scenario === "killanswer" && killAnswer.armed) {
      // slow enough for the kill to land between two chunks
      return FakeOpenAi.sseText(text, { chunkDelayMs: 400 })
    }
    return FakeOpenAi.sseText(text)
  }
  const reply = loop[scenario]
  return reply === undefined ? say(`No script for ${scenario}.`) : reply(toolCount(body), body)
}

// ---------------------------------------------------------------------------
// The server process (any checkout)

interface Server {
  readonly url: string
  readonly kill: () => Promise<void>
  readonly restart: () => Promise<Server>
  readonly output: () => string
}

const startServer = async (tree: string, env: Record<string, string>): Promise<Server> => {
  const port = Number(env.PORT ?? (await freePort()))
  const own = { ...env, PORT: String(port) }
  const base: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("LLM_") || key.startsWith("FAST_LLM_") || key === "DATABASE_URL") continue
    base[key] = value
  }
  const child: ChildProcess = spawn(process.execPath, ["--import", tsx, join(tree, "src/app/main.ts")], {
    cwd: tree,
    env: { ...base, HOST: "127.0.0.1", ...own },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  let output = ""
  child.stdout!.on("data", (d) => (output += d.toString()))
  child.stderr!.on("data", (d) => (output += d.toString()))
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  const kill = async () => {
    try {
      process.kill(-child.pid!, "SIGKILL")
    } catch {
      // gone
    }
    await exited
  }
  process.once("exit", () => {
    try {
      process.kill(-child.pid!, "SIGKILL")
    } catch {
      // gone
    }
  })
  const url = `http://127.0.0.1:${port}`
  const started = Date.now()
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited while starting:\n${output}`)
    if (Date.now() - started > 90_000) {
      await kill()
      throw new Error(`server did not start:\n${output}`)
    }
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    if (ok) break
    await sleep(100)
  }
  return { url, kill, restart: () => startServer(tree, own), output: () => output }
}

// ---------------------------------------------------------------------------
// Recording raw responses

const KEPT_HEADERS = [
  "content-type",
  "x-conversation-id",
  "cache-control",
  "x-vercel-ai-ui-message-stream",
  "retry-after"
]

/** One recorded exchange: what was asked, the status, the kept headers and the body bytes as they came. */
const section = (title: string, status: number, headers: Headers, body: Uint8Array) => {
  const kept = KEPT_HEADERS.flatMap((h) => (headers.get(h) === null ? [] : [`${h}: ${headers.get(h)}`]))
  return `### ${title}\nstatus ${status}\n${kept.join("\n")}\n---\n${Buffer.from(body).toString("utf8")}\n`
}

interface StreamOptions {
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** Called for each parsed event; returns true to hang up after it. */
  readonly onEvent?: (event: { id?: string; event?: string; data: string }) => boolean | void | Promise<boolean | void>
  readonly timeoutMs?: number
}

/** Reads a response to its end (or until `onEvent` says stop, or the connection dies) and records it. */
const exchange = async (
  transcript: Array<string>,
  url: string,
  path: string,
  title: string,
  options: StreamOptions = {}
) => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 60_000)
  const parts: Array<Uint8Array> = []
  let status = 0
  let headers = new Headers()
  const events: Array<{ id?: string; event?: string; data: string }> = []
  try {
    const response = await fetch(`${url}${path}`, {
      method: options.body === undefined ? "GET" : "POST",
      headers: { ...(options.body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: controller.signal
    })
    status = response.status
    headers = response.headers
    const pending: Array<{ id?: string; event?: string; data: string }> = []
    const parser = createParser({ onEvent: (e) => void pending.push({ id: e.id, event: e.event, data: e.data }) })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let stop = false
    while (!stop) {
      const { done, value } = await reader.read()
      if (done) break
      parts.push(value)
      parser.feed(decoder.decode(value, { stream: true }))
      while (pending.length > 0 && !stop) {
        const e = pending.shift()!
        events.push(e)
        if ((await options.onEvent?.(e)) === true) stop = true
      }
    }
    if (stop) {
      await reader.cancel().catch(() => undefined)
      controller.abort()
    }
  } catch {
    // a connection cut by a kill ends the transcript where it was
  } finally {
    clearTimeout(timer)
  }
  const body = Buffer.concat(parts)
  transcript.push(section(title, status, headers, body))
  return { status, events, lastId: [...events].reverse().find((e) => e.id !== undefined)?.id }
}

const postJson = async (transcript: Array<string>, url: string, path: string, body: unknown) => {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const bytes = new Uint8Array(await response.arrayBuffer())
  transcript.push(section(`POST ${path} ${JSON.stringify(body)}`, response.status, response.headers, bytes))
  return JSON.parse(Buffer.from(bytes).toString("utf8") || "null")
}

const isToolStart = (e: { event?: string; data: string }) =>
  e.event === "step" && e.data.includes("\"type\":\"iteration\"") && e.data.includes("\"status\":\"start\"")

// ---------------------------------------------------------------------------
// Scenarios

interface Ctx {
  readonly server: Server
  readonly records: () => ReadonlyArray<string>
  readonly transcript: Array<string>
}

const react = (ctx: Ctx, scenario: string, extra: Record<string, unknown> = {}, options: StreamOptions = {}) =>
  exchange(ctx.transcript, ctx.server.url, "/api/react", `POST /api/react ${scenario}`, {
    body: { query: `corpus ${scenario}: please help`, conversation_id: `corpus-${scenario}`, ...extra },
    ...options
  })

/** Every stored event again, from the start (what a client resuming from 0 gets), then 204 past the end. */
const replay = async (ctx: Ctx, scenario: string, lastId: string | undefined) => {
  await exchange(
    ctx.transcript,
    ctx.server.url,
    `/api/react/events?conversation_id=corpus-${scenario}&after=0`,
    "GET events after=0"
  )
  if (lastId !== undefined) {
    await exchange(
      ctx.transcript,
      ctx.server.url,
      `/api/react/events?conversation_id=corpus-${scenario}`,
      `GET events last-event-id ${lastId}`,
      {
        headers: { "last-event-id": lastId }
      }
    )
  }
}

const simple = (scenario: string, extra: Record<string, unknown> = {}) => async (ctx: Ctx) => {
  const run = await react(ctx, scenario, extra)
  await replay(ctx, scenario, run.lastId)
}

const scenarios: Record<string, (ctx: Ctx) => Promise<void>> = {
  plain: simple("plain"),
  calc: simple("calc"),
  parallel: simple("parallel"),
  sequence: simple("sequence"),
  toolerrors: simple("toolerrors"),
  maxiter: simple("maxiter", { max_iterations: 2 }),
  modelerror: simple("modelerror"),
  dag: async (ctx) => {
    const run = await exchange(ctx.transcript, ctx.server.url, "/api/react", "POST /api/react dag", {
      body: { query: "corpus dag: compute then record", conversation_id: "corpus-dag", mode: "dag" }
    })
    await replay(ctx, "dag", run.lastId)
  },
  inject: async (ctx) => {
    const run = await react(ctx, "inject", {}, {
      onEvent: async (e) => {
        if (isToolStart(e)) {
          await postJson(ctx.transcript, ctx.server.url, "/api/react/inject", {
            conversation_id: "corpus-inject",
            content: "also say bye"
          })
        }
      }
    })
    await replay(ctx, "inject", run.lastId)
  },
  recall: async (ctx) => {
    const run = await react(ctx, "recall", {}, {
      onEvent: async (e) => {
        if (!isToolStart(e)) return
        const first = await postJson(ctx.transcript, ctx.server.url, "/api/react/inject", {
          conversation_id: "corpus-recall",
          content: "recalled message"
        })
        await postJson(ctx.transcript, ctx.server.url, "/api/react/inject", {
          conversation_id: "corpus-recall",
          content: "kept message"
        })
        await postJson(ctx.transcript, ctx.server.url, "/api/react/inject/recall", {
          conversation_id: "corpus-recall",
          id: first.id
        })
      }
    })
    await replay(ctx, "recall", run.lastId)
  },
  cancel: async (ctx) => {
    const run = await react(ctx, "cancel", {}, {
      onEvent: async (e) => {
        if (isToolStart(e)) {
          await waitUntil(() => ctx.records().includes("start cancel"), 10_000, "the cancel tool")
          await postJson(ctx.transcript, ctx.server.url, "/api/react/cancel", { conversation_id: "corpus-cancel" })
        }
      }
    })
    await replay(ctx, "cancel", run.lastId)
  },
  approve: async (ctx) => {
    const run = await react(ctx, "approve", {}, {
      onEvent: async (e) => {
        if (e.event === "approval" && e.data.includes("\"status\":\"requested\"")) {
          const data = JSON.parse(e.data)
          await postJson(ctx.transcript, ctx.server.url, "/api/react/approve", {
            conversation_id: "corpus-approve",
            approval_id: data.approval_id,
            decision: "approve"
          })
        }
      }
    })
    await replay(ctx, "approve", run.lastId)
  },
  deny: async (ctx) => {
    const run = await react(ctx, "deny", {}, {
      onEvent: async (e) => {
        if (e.event === "approval" && e.data.includes("\"status\":\"requested\"")) {
          const data = JSON.parse(e.data)
          await postJson(ctx.transcript, ctx.server.url, "/api/react/approve", {
            conversation_id: "corpus-deny",
            approval_id: data.approval_id,
            decision: "deny",
            reason: "not today"
          })
        }
      }
    })
    await replay(ctx, "deny", run.lastId)
  },
  rejoin: async (ctx) => {
    // the client hangs up during the tool and comes back with its last id: the rest, live
    const first = await react(ctx, "rejoin", {}, { onEvent: (e) => isToolStart(e) })
    const rest = await exchange(
      ctx.transcript,
      ctx.server.url,
      "/api/react/events?conversation_id=corpus-rejoin",
      `GET events last-event-id ${first.lastId}`,
      {
        headers: { "last-event-id": first.lastId! }
      }
    )
    await replay(ctx, "rejoin", rest.lastId)
  },
  twoclients: async (ctx) => {
    // a second client joins from 0 while the run executes: the stored events, then live, to done
    let second: Promise<unknown> | undefined
    const second_: Array<string> = []
    const run = await react(ctx, "twoclients", {}, {
      onEvent: (e) => {
        if (isToolStart(e) && second === undefined) {
          second = exchange(
            second_,
            ctx.server.url,
            "/api/react/events?conversation_id=corpus-twoclients",
            "GET events (second client, from 0)"
          )
        }
      }
    })
    await second
    for (const frame of second_) ctx.transcript.push(frame)
    await replay(ctx, "twoclients", run.lastId)
  },
  afterparam: async (ctx) => {
    const run = await react(ctx, "calc", { conversation_id: "corpus-afterparam" })
    await exchange(
      ctx.transcript,
      ctx.server.url,
      "/api/react/events?conversation_id=corpus-afterparam&after=3",
      "GET events after=3"
    )
    await exchange(
      ctx.transcript,
      ctx.server.url,
      "/api/react/events?conversation_id=corpus-afterparam",
      "GET events last-event-id 2 (header)",
      {
        headers: { "last-event-id": "2" }
      }
    )
    await exchange(
      ctx.transcript,
      ctx.server.url,
      `/api/react/events?conversation_id=corpus-afterparam&after=${run.lastId}`,
      "GET events after=last (204)"
    )
  },
  chat: async (ctx) => {
    await exchange(ctx.transcript, ctx.server.url, "/api/chat", "POST /api/chat", {
      body: {
        id: "corpus-chat",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "corpus chat: add" }] }]
      }
    })
    await exchange(
      ctx.transcript,
      ctx.server.url,
      "/api/chat/corpus-chat/stream",
      "GET /api/chat/:id/stream (no active run: 204)"
    )
  },
  chatresume: async (ctx) => {
    let resumed: Promise<unknown> | undefined
    const second: Array<string> = []
    await exchange(ctx.transcript, ctx.server.url, "/api/chat", "POST /api/chat", {
      body: {
        id: "corpus-chatresume",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "corpus chatresume: wait" }] }]
      },
      onEvent: (e) => {
        if (resumed === undefined && e.data.includes("tool-input-available")) {
          resumed = exchange(
            second,
            ctx.server.url,
            "/api/chat/corpus-chatresume/stream",
            "GET /api/chat/:id/stream (resume, replays from the start)"
          )
        }
      }
    })
    await resumed
    for (const frame of second) ctx.transcript.push(frame)
  },
  openai: async (ctx) => {
    await exchange(ctx.transcript, ctx.server.url, "/v1/chat/completions", "POST /v1/chat/completions stream", {
      body: {
        model: "react-agent",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "corpus openai: square" }]
      }
    })
  }
}

/** Kill -9 scenarios: each on its own database and process. */
const killScenarios: Record<string, (ctx: Ctx, killAnswer: { armed: boolean }) => Promise<void>> = {
  killtool: async (ctx) => {
    // a tool that is not idempotent is in flight: after the restart it is answered as interrupted
    const before = await react(ctx, "killtool", {}, {
      onEvent: async (e) => {
        if (isToolStart(e)) {
          await waitUntil(() => ctx.records().includes("start killtool"), 10_000, "the tool to start")
          await ctx.server.kill()
          return true
        }
      }
    })
    const second = await ctx.server.restart()
    const after = await exchange(
      ctx.transcript,
      second.url,
      "/api/react/events?conversation_id=corpus-killtool",
      `GET events last-event-id ${before.lastId} (after the restart)`,
      {
        headers: { "last-event-id": before.lastId! },
        timeoutMs: 90_000
      }
    )
    await replay({ ...ctx, server: second }, "killtool", after.lastId)
    await second.kill()
  },
  killidem: async (ctx) => {
    // an idempotent tool in flight runs again after the restart
    const before = await react(ctx, "killidem", {}, {
      onEvent: async (e) => {
        if (isToolStart(e)) {
          await waitUntil(() => ctx.records().includes("start killidem"), 10_000, "the tool to start")
          await ctx.server.kill()
          return true
        }
      }
    })
    const second = await ctx.server.restart()
    const after = await exchange(
      ctx.transcript,
      second.url,
      "/api/react/events?conversation_id=corpus-killidem",
      `GET events last-event-id ${before.lastId} (after the restart)`,
      {
        headers: { "last-event-id": before.lastId! },
        timeoutMs: 90_000
      }
    )
    await replay({ ...ctx, server: second }, "killidem", after.lastId)
    await second.kill()
  },
  killanswer: async (ctx, killAnswer) => {
    // the synthesis stream is cut: after the restart `answer reset`, then the answer from its first token
    killAnswer.armed = true
    let deltas = 0
    const before = await react(ctx, "killanswer", {}, {
      onEvent: async (e) => {
        if (e.event === "answer" && e.data.includes("\"status\":\"delta\"") && ++deltas === 3) {
          await ctx.server.kill()
          return true
        }
      }
    })
    killAnswer.armed = false
    const second = await ctx.server.restart()
    const after = await exchange(
      ctx.transcript,
      second.url,
      "/api/react/events?conversation_id=corpus-killanswer",
      `GET events last-event-id ${before.lastId} (after the restart)`,
      {
        headers: { "last-event-id": before.lastId! },
        timeoutMs: 90_000
      }
    )
    await replay({ ...ctx, server: second }, "killanswer", after.lastId)
    await second.kill()
  }
}

// ---------------------------------------------------------------------------
// Record, normalise, compare

const baseEnv = (dir: string, llmUrl: string, file: ReturnType<typeof recordFile>): Record<string, string> => ({
  DATABASE_PATH: join(dir, "react.sqlite"),
  MCP_CONFIG: recorderConfig(dir, file),
  RUN_DETACH_GRACE_MS: "60000",
  SSE_HEARTBEAT_MS: "600000",
  REACT_APPROVAL_TOOLS: "rec__record",
  LLM_BASE_URL: llmUrl,
  LLM_MODEL: "fake-model",
  LLM_API_KEY: "test",
  LLM_MAX_RETRIES: "0",
  REACT_COMPLETION_CHECK_MIN_TOOLS: "10",
  REACT_SYNTHESIS: "always"
})

const record = async (out: string, tree: string, only: ReadonlyArray<string> | undefined) => {
  mkdirSync(out, { recursive: true })
  const killAnswer = { armed: false }
  const fake = await FakeOpenAi.start(responder(killAnswer))
  const wanted = (name: string) => only === undefined || only.includes(name)
  try {
    const dir = mkdtempSync(join(tmpdir(), "react-corpus-"))
    const file = recordFile(dir)
    const server = await startServer(tree, baseEnv(dir, fake.url, file))
    try {
      for (const [name, play] of Object.entries(scenarios)) {
        if (!wanted(name)) continue
        const transcript: Array<string> = []
        const started = Date.now()
        await play({ server, records: file.records, transcript })
        writeFileSync(join(out, `${name}.txt`), transcript.join("\n"))
        console.log(`${name}: ${transcript.length} responses, ${Date.now() - started} ms`)
      }
    } finally {
      await server.kill()
    }
    for (const [name, play] of Object.entries(killScenarios)) {
      if (!wanted(name)) continue
      const killDir = mkdtempSync(join(tmpdir(), "react-corpus-kill-"))
      const killFile = recordFile(killDir)
      // no approvals here: the killed tool runs at once
      const { REACT_APPROVAL_TOOLS: _, ...env } = baseEnv(killDir, fake.url, killFile)
      const first = await startServer(tree, env)
      const transcript: Array<string> = []
      const started = Date.now()
      await play({ server: first, records: killFile.records, transcript }, killAnswer)
      writeFileSync(join(out, `${name}.txt`), transcript.join("\n"))
      console.log(`${name}: ${transcript.length} responses, ${Date.now() - started} ms`)
    }
  } finally {
    await fake.close()
  }
}

/** See the module comment: what is random or clock-made, numbered by first appearance. */
export const normalise = (text: string): string => {
  const seen = new Map<string, string>()
  const counters = new Map<string, number>()
  const token = (kind: string) => (value: string) => {
    const key = `${kind}:${value}`
    let name = seen.get(key)
    if (name === undefined) {
      const n = (counters.get(kind) ?? 0) + 1
      counters.set(kind, n)
      name = `<${kind}:${n}>`
      seen.set(key, name)
    }
    return name
  }
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, token("uuid"))
    .replace(/ik_[0-9a-f]{32}/g, token("ik"))
    .replace(/apr_[0-9a-f]{32}/g, token("apr"))
    .replace(/inj_[0-9a-f]{16}/g, token("inj"))
    .replace(/chatcmpl-[0-9a-f]{32}/g, token("chatcmpl"))
    .replace(/"(elapsed|iter_elapsed|created)":\d+(\.\d+)?(e-?\d+)?/g, (_, key: string) => `"${key}":<t>`)
}

const compare = (a: string, b: string): boolean => {
  const names = [...new Set([...readdirSync(a), ...readdirSync(b)])].filter((n) => n.endsWith(".txt")).sort()
  let same = true
  for (const name of names) {
    let left: string
    let right: string
    try {
      left = normalise(readFileSync(join(a, name), "utf8"))
      right = normalise(readFileSync(join(b, name), "utf8"))
    } catch {
      console.log(`${name}: missing on one side`)
      same = false
      continue
    }
    if (left === right) {
      console.log(`${name}: identical (${Buffer.byteLength(left)} bytes)`)
      continue
    }
    same = false
    const l = left.split("\n")
    const r = right.split("\n")
    const i = l.findIndex((line, k) => line !== r[k])
    console.log(`${name}: DIFFERS at line ${i + 1}\n  - ${l[i]}\n  + ${r[i]}`)
  }
  return same
}

const [command, ...args] = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(name)
  return i < 0 ? undefined : args[i + 1]
}
if (command === "record" && args[0] !== undefined) {
  const only = flag("--only")?.split(",")
  record(resolve(args[0]), resolve(flag("--tree") ?? ownTree), only).then(() => process.exit(0), (e) => {
    console.error(e)
    process.exit(1)
  })
} else if (command === "compare" && args[0] !== undefined && args[1] !== undefined) {
  process.exit(compare(resolve(args[0]), resolve(args[1])) ? 0 : 1)
} else {
  console.error("usage: corpus.ts record <dir> [--tree <checkout>] [--only a,b] | compare <dirA> <dirB>")
  process.exit(2)
}
