/**
 * The REAL HTTP server (API routes + web page, run registry, SQLite store in
 * memory) over a scripted model with delays, for the page's browser tests.
 * Only the LLM is scripted; the agent loop, tools, interrupts, SSE and storage
 * are the production ones.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted, Schema, Stream } from "effect"
import { createServer } from "node:http"
import type { AgentOptions } from "../../src/AgentConfig.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as DagAgent from "../../src/DagAgent.js"
import * as Embedder from "../../src/Embedder.js"
import * as Hooks from "../../src/Hooks.js"
import type { ChatRequest, LlmService } from "../../src/Llm.js"
import * as Llm from "../../src/Llm.js"
import * as Memory from "../../src/Memory.js"
import type { ChatMessage } from "../../src/Message.js"
import * as ModelRegistry from "../../src/ModelRegistry.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Recorder from "../../src/Recorder.js"
import * as Replay from "../../src/Replay.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as AppInfo from "../../src/server/AppInfo.js"
import * as Server from "../../src/server/Server.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlApprovals from "../../src/server/SqlApprovals.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import { dagReply } from "./webDagScript.js"

/** Tools with real work and real time, so runs take visible time in the browser. */
export const webTools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: "calculator",
    description: "Adds two numbers",
    parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
    handler: ({ a, b }) => Effect.as(Effect.sleep("250 millis"), String(a + b))
  }),
  Tool.make({
    name: "lookup",
    description: "Looks a topic up (slowly)",
    parameters: Schema.Struct({ topic: Schema.String, ms: Schema.optional(Schema.Number) }),
    handler: ({ topic, ms }) => Effect.as(Effect.sleep(ms ?? 400), `Facts about ${topic}: it is well documented.`)
  }),
  Tool.make({
    name: "deploy",
    description: "Deploys to a target (a person approves each call)",
    parameters: Schema.Struct({ target: Schema.String }),
    readOnly: false,
    needsApproval: true,
    handler: ({ target }) => Effect.as(Effect.sleep("150 millis"), `Deployed to ${target}.`)
  }),
  Tool.make({
    name: "chart",
    description: "Renders an HTML chart",
    parameters: Schema.Struct({ title: Schema.String }),
    handler: ({ title }) =>
      Effect.succeed({
        content: `<h3>${title}</h3><div style="display:flex;gap:6px;align-items:flex-end;height:90px">` +
          [40, 75, 55, 90].map((v) =>
            `<div style="width:36px;height:${v}%;background:#6366f1;border-radius:4px"></div>`
          ).join("") +
          `</div>`,
        contentType: "html" as const,
        artifacts: [{ name: "chart.html", mimeType: "text/html", size: 300 }]
      })
  })
]

const lastQuery = (messages: ReadonlyArray<ChatMessage>): { readonly query: string; readonly index: number } => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (m.role === "user" && typeof m.content === "string" && !m.content.startsWith("[USER INTERRUPT]")) {
      return { query: m.content, index: i }
    }
  }
  return { query: "", index: 0 }
}

const interruptsIn = (messages: ReadonlyArray<ChatMessage>): Array<string> =>
  messages.flatMap((
    m
  ) => (m.role === "user" && typeof m.content === "string" && m.content.startsWith("[USER INTERRUPT]")
    ? [m.content]
    : [])
  )

const synthesisFor = (request: ChatRequest): string => {
  const text = request.messages.map((m) => (typeof m.content === "string" ? m.content : "")).join("\n")
  const q = text.toLowerCase()
  if (q.includes("hostile")) return "Here: <img src=x onerror=alert(1)> and <script>alert(2)</script> and **bold**."
  const follow = /also mention ([a-z ]+)/i.exec(text)
  return `France has about **123 people per km²**.\n\n| Measure | Value |\n|---|---|\n| Population | 67.97 M |\n| Area | 551,695 km² |\n\n` +
    `The sum is \`5\`.${follow ? ` You also asked about ${follow[1]}: noted.` : ""}`
}

/** The first word of the query the request works on. */
const firstWord = (messages: ReadonlyArray<ChatMessage>): string | undefined =>
  /^[a-z]+/.exec(lastQuery(messages).query.trim().toLowerCase())?.[0]

/**
 * The model's script, chosen by the query's first word:
 * - `full`: reasoning, two parallel tool calls, an HTML chart, then the answer;
 * - `slow`: six slow lookups in a row (for stop, reload and follow-ups), then the answer;
 * - `hostile`: one lookup, then an answer full of HTML;
 * - `approve`: two `deploy` calls in one round, each waiting for the user's approval;
 * - `dag`, `dagreplan`: DAG mode (test/utils/webDagScript.ts).
 * - `think`: the first model call takes 20 s (for a stop while thinking);
 * - `slowanswer`: one lookup, then an answer streamed slowly (for a stop during the answer);
 * - `fail`: the model fails (a run that ends with an error);
 * - `busy`: the first call is retried once by the LLM layer (see `retrying`);
 * - `preamble`: text streamed before a tool call (retracted under synthesis `auto`), then the answer.
 *
 * The final loop reply is the answer text itself, so the page shows the same
 * answer under either synthesis policy (`auto`: that reply streams as the
 * answer; `always`: the synthesis stream writes it).
 */
export const responder: ScriptedLlm.Responder = (request, _index, method) => {
  const dag = dagReply(request, method)
  if (dag !== undefined) return dag
  // a typed answer (the composer's answer schema): the value, streamed slowly enough to see it grow
  if (request.responseFormat?.type === "json_schema") {
    const json =
      `{"city": "Paris", "population": 2102650, "landmarks": ["Eiffel Tower", "Louvre", "Notre-Dame"], "capital": true}`
    return ScriptedLlm.text(json, { chunks: json.match(/.{1,8}/gs) ?? [json], chunkDelay: "60 millis" })
  }
  const synthesis = request.tools === undefined || request.tools.length === 0
  const word = firstWord(request.messages)
  if (word === "fail") return ScriptedLlm.fail("Server", "the model is down (scripted)")
  if (synthesis && lastQuery(request.messages).query.includes("slowanswer:")) {
    return ScriptedLlm.text(Array.from({ length: 60 }, (_, i) => `word${i}`).join(" "), { chunkDelay: "150 millis" })
  }
  if (synthesis) return ScriptedLlm.text(synthesisFor(request), { chunkDelay: "30 millis", delay: "100 millis" })
  const { index, query } = lastQuery(request.messages)
  /** The final loop reply: the answer, streamed like a synthesis. */
  const answer = (delay: `${number} millis`) =>
    query.includes("slowanswer:")
      ? ScriptedLlm.text(Array.from({ length: 60 }, (_, i) => `word${i}`).join(" "), { chunkDelay: "150 millis" })
      : ScriptedLlm.text(synthesisFor(request), { chunkDelay: "30 millis", delay })
  const done =
    request.messages.slice(index).filter((m) => m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0)
      .length
  if (word === "think") return ScriptedLlm.text("Done.", { delay: "20 seconds" })
  // `progress`: an MCP tool that reports its progress (test/web/output.test.ts gives the server one)
  if (word === "progress" && done === 0) {
    return ScriptedLlm.toolCall("lab__work", { steps: 5, ms: 400 }, { id: "call_work", delay: "100 millis" })
  }
  if (word === "slowanswer" && done === 0) {
    return ScriptedLlm.toolCall("lookup", { topic: "x", ms: 50 }, { id: "call_sa" })
  }
  if (word === "full") {
    if (done === 0) {
      return ScriptedLlm.toolCalls([
        { id: "call_sum", name: "calculator", arguments: { a: 2, b: 3 } },
        { id: "call_facts", name: "lookup", arguments: { topic: "France" } }
      ], { reasoning: "I need a sum and some facts; both at once.", delay: "300 millis" })
    }
    if (done === 1) {
      return ScriptedLlm.toolCall("chart", { title: "Density by region" }, { id: "call_chart", delay: "250 millis" })
    }
    return answer("200 millis")
  }
  if (word === "slow") {
    const interrupts = interruptsIn(request.messages)
    if (done < 6 && !(interrupts.length > 0 && done >= 3)) {
      return ScriptedLlm.toolCall("lookup", { topic: `part ${done + 1}`, ms: 700 }, {
        id: `call_slow_${done + 1}`,
        delay: "150 millis"
      })
    }
    return answer("150 millis")
  }
  if (word === "approve" && done === 0) {
    // two calls that wait for the user (the page's Approve / Deny), in one round
    return ScriptedLlm.toolCalls([
      { id: "call_stage", name: "deploy", arguments: { target: "staging" } },
      { id: "call_prod", name: "deploy", arguments: { target: "production" } }
    ], { delay: "100 millis" })
  }
  if (word === "hostile" && done === 0) {
    return ScriptedLlm.toolCall("lookup", { topic: "<b>bold</b>" }, {
      id: "call_h",
      delay: "100 millis",
      reasoning: "<img src=x onerror=alert(3)>"
    })
  }
  if (word === "preamble" && done === 0) {
    // the model says what it will do, slowly enough to be seen, then calls the tool
    return ScriptedLlm.toolCall("lookup", { topic: "France" }, {
      id: "call_pre",
      content: "Let me look that up first.",
      chunks: ["Let ", "me ", "look ", "that ", "up ", "first."],
      chunkDelay: "150 millis"
    })
  }
  return answer("100 millis")
}

/**
 * The scripted model as an LLM layer that retries, like `OpenAiLlm`: the first
 * loop call of a `busy` query "fails" and is announced with `Llm.notifyRetry`
 * (rate limited, 1.5 s), then goes on.
 */
const retrying = (service: LlmService): LlmService => {
  const retried = new Set<string>()
  /** The failed first attempt of a `busy` query: it takes a moment (a real one is an HTTP round trip), then the retry is announced. */
  const firstAttempt = (request: ChatRequest): Effect.Effect<void> =>
    Effect.suspend(() => {
      const query = lastQuery(request.messages).query
      if (firstWord(request.messages) !== "busy" || retried.has(query)) return Effect.void
      retried.add(query)
      return Effect.sleep("50 millis").pipe(
        Effect.zipRight(Llm.notifyRetry({ attempt: 1, reason: "RateLimited", delayMs: 1500 })),
        Effect.zipRight(Effect.sleep("1500 millis"))
      )
    })
  return {
    ...service,
    chat: (request) => Effect.zipRight(firstAttempt(request), service.chat(request)),
    streamChat: (request) => Stream.unwrap(Effect.as(firstAttempt(request), service.streamChat(request)))
  }
}

/** The base URL of the server under test. */
export class WebAppUrl extends Context.Tag("test/WebAppUrl")<WebAppUrl, string>() {}

/** The real server on a random port for the test's scope. */
export const webAppServer = (options: {
  readonly demo?: boolean
  readonly detachGraceMs?: number
  readonly apiToken?: string
  readonly defaultMode?: DagAgent.Mode
  /** Where the tools come from, as `AppInfo` reports it (`GET /api/tools`). */
  readonly mcp?: AppInfo.AppInfoShape["mcp"]
  /** More options of the ReAct agent (a budget, guardrails). */
  readonly agent?: Partial<AgentOptions>
  /** Runs executing at once (`REACT_MAX_ACTIVE_RUNS`; a further run waits for a free slot). */
  readonly maxActiveRuns?: number
  /** More tools (e.g. an MCP server's). */
  readonly tools?: ReadonlyArray<Tool.Tool>
  /** The users' memory, in process with the local embedder (runs with a user id use it). */
  readonly memory?: boolean
} = {}) => {
  const llm = ScriptedLlm.makeUnsafe(responder, { model: options.demo ? "demo" : "scripted-test" })
  const agentOptions = { completionCheck: false, selfReflectionInterval: 0 }
  // one Approvals for both agents (the server's, in its database), as the App wires them
  const agents = Layer.unwrapEffect(Effect.map(SqlApprovals.make, (approvals) =>
    Layer.mergeAll(
      // the ReAct agent on the default synthesis policy (auto); the DAG script answers a step's `stream` call as its synthesis
      ReactAgent.layer({ ...agentOptions, ...options.agent, approvals }),
      DagAgent.layer({ agent: { ...agentOptions, synthesis: "always" }, approvals })
    )))
  const agent = agents.pipe(
    // as the App wires them: each run's model calls and tool outcomes go to its cassette
    Layer.provideMerge(Recorder.layer),
    // and a fork's run takes the original's steps before the fork point from storage
    Layer.provideMerge(Replay.layerPrefix),
    Layer.provideMerge(Layer.mergeAll(
      Layer.succeed(Llm.Llm, retrying(llm.service)),
      ModelRegistry.layer({ main: retrying(llm.service) }),
      Toolkit.layer([...webTools, ...(options.tools ?? [])]),
      Hooks.layerNoop,
      ContextGuard.layer(),
      SqlInterrupts.layer,
      options.memory ? Memory.layerMemory().pipe(Layer.provide(Embedder.layerLocal())) : Layer.empty
    ))
  )
  const settings = ServerConfig.layer({
    detachGraceMs: options.detachGraceMs ?? 10_000,
    ...(options.maxActiveRuns !== undefined ? { maxActiveRuns: options.maxActiveRuns } : {}),
    ...(options.defaultMode !== undefined ? { defaultMode: options.defaultMode } : {}),
    apiToken: options.apiToken === undefined ? Option.none() : Option.some(Redacted.make(options.apiToken))
  })
  const app = Server.serve({ disableLogger: true }).pipe(
    Layer.provide(agent),
    Layer.provide(AppInfo.layer({
      model: options.demo ? "demo" : "scripted-test",
      demo: options.demo ?? false,
      ...(options.mcp ? { mcp: options.mcp } : {})
    })),
    Layer.provide(Server.storage({ _tag: "Sqlite", filename: ":memory:" })),
    Layer.provide(settings),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    // the server's run log lines stay out of the test output
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )
  return Effect.gen(function*() {
    const context = yield* Layer.build(app)
    const server = Context.get(context, HttpServer.HttpServer)
    const address = server.address
    if (address._tag !== "TcpAddress") return yield* Effect.die(new Error("expected a TCP address"))
    return { url: `http://127.0.0.1:${address.port}`, llm }
  })
}
