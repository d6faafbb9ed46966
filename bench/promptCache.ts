/**
 * Prompt caching measured (SPEC §20): a 20-turn conversation, 2 tool rounds per
 * turn, 40 tools, against the fake Anthropic Messages API, which caches prefixes
 * honestly (test/utils/fakeAnthropicServer.ts: a read only where the request's
 * prefix up to a breakpoint equals one written before, ≥ 1,024 tokens, 5 minutes).
 *
 * - ours: the real `ReactAgent` over `EffectAiLlm` and the real
 *   `@effect/ai-anthropic` client, with `LLM_PROMPT_CACHE=auto` (breakpoints on
 *   the system prompt and the newest message) and `off` (no breakpoints: the
 *   uncached baseline). History between turns is each turn's query and answer,
 *   as the server keeps it. Tool selection is off (all 40 tools every call).
 * - the AI SDK's Anthropic provider (`@ai-sdk/anthropic` 3.x, `ai@6`) with its
 *   documented caching (`providerOptions.anthropic.cacheControl` on the system
 *   message and on the turn's user message), when the package is installed.
 *
 * Figures: input tokens (all: uncached + read + written), the share read from
 * the cache, and the billed input with Anthropic's weights (read 0.1×, write
 * 1.25×) relative to the same conversation without caching.
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import * as Llm from "../src/Llm.js"
import type { ChatMessage } from "../src/Message.js"
import * as Message from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import { anthropicLlm } from "../test/utils/anthropicLlm.js"
import * as FakeAnthropic from "../test/utils/fakeAnthropicServer.js"

/** The conversation's shape. @since 0.1.0 */
export const TURNS = 20
/** @since 0.1.0 */
export const ROUNDS = 2
/** @since 0.1.0 */
export const TOOLS = 40

const SYSTEM = [
  "You are the operations assistant of a logistics company. You answer questions about shipments,",
  "warehouses, carriers and invoices by calling the tools; you never invent figures. When a tool fails,",
  "say so and try another way. Keep answers short: the figures first, then one sentence of context."
].join(" ")

/** One figure row. @since 0.1.0 */
export interface CacheFigures {
  readonly engine: string
  readonly requests: number
  /** Every input token (uncached + read + written). */
  readonly inputTokens: number
  readonly readTokens: number
  readonly writeTokens: number
  /** read ÷ input. */
  readonly readShare: number
  /** uncached + 0.1 × read + 1.25 × written. */
  readonly billedInput: number
  /** billed ÷ the same conversation's input without caching. */
  readonly billedVsUncached: number
  readonly error?: string
}

/** @since 0.1.0 */
export interface PromptCacheResults {
  readonly turns: number
  readonly rounds: number
  readonly tools: number
  readonly uncachedInputTokens: number
  readonly engines: ReadonlyArray<CacheFigures>
}

const toolNames = Array.from({ length: TOOLS }, (_, i) => `ops_tool_${String(i).padStart(2, "0")}`)

const tools = toolNames.map((name, i) =>
  Tool.make({
    name,
    description: `Operations lookup #${i}: returns the records of one ${
      ["shipment", "warehouse", "carrier", "invoice"][i % 4]
    } by id, with status, dates and amounts.`,
    parameters: Schema.Struct({
      id: Schema.String.annotations({ description: "The record id, e.g. SHP-1042" }),
      fields: Schema.optional(Schema.Array(Schema.String)).annotations({
        description: "Fields to return (default: all)"
      })
    }),
    handler: ({ id }) =>
      Effect.succeed(`${name}(${id}): status=ok, updated=2026-11-0${i % 9 + 1}, amount=${(i * 37) % 1000}.00 EUR`)
  })
)

/** The model: in turn t, round r calls tool (t*2+r) mod 40, then answers. */
const model = (body: any): FakeAnthropic.FakeAnthropicReply => {
  const messages: Array<any> = body.messages
  const texts = (
    m: any
  ) => (typeof m.content === "string"
    ? [m.content]
    : m.content.filter((c: any) => c.type === "text").map((c: any) => c.text))
  const at = messages.map((m) => m.role === "user" && texts(m).some((t: string) => t.startsWith("Turn "))).lastIndexOf(
    true
  )
  const turn = Number(/Turn (\d+)/.exec(texts(messages[at]).join(" "))?.[1] ?? 0)
  const done =
    messages.slice(at).filter((m) => m.role === "assistant" && m.content.some((c: any) => c.type === "tool_use")).length
  if (done < ROUNDS) {
    return FakeAnthropic.toolUse([{
      name: toolNames[(turn * ROUNDS + done) % TOOLS],
      input: { id: `SHP-${1000 + turn * 10 + done}` }
    }])
  }
  return FakeAnthropic.text(`Turn ${turn}: both records are in order; shipment SHP-${1000 + turn * 10} left on time.`)
}

const query = (turn: number) =>
  `Turn ${turn}: check shipment SHP-${1000 + turn * 10} and its carrier, and tell me if anything is late.`

const figures = (
  engine: string,
  requests: ReadonlyArray<FakeAnthropic.RecordedRequest>,
  uncached: number
): CacheFigures => {
  let input = 0
  let read = 0
  let write = 0
  for (const r of requests) {
    const u = r.usage
    if (u === undefined) continue
    input += u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    read += u.cache_read_input_tokens
    write += u.cache_creation_input_tokens
  }
  const billed = input - read - write + 0.1 * read + 1.25 * write
  return {
    engine,
    requests: requests.length,
    inputTokens: input,
    readTokens: read,
    writeTokens: write,
    readShare: input > 0 ? read / input : 0,
    billedInput: billed,
    billedVsUncached: uncached > 0 ? billed / uncached : Number.NaN
  }
}

const runOurs = (cache: boolean) =>
  Effect.promise(async () => {
    const fake = await FakeAnthropic.start(model)
    try {
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const llm = yield* anthropicLlm(fake.url, { cacheBreakpoints: cache ? "anthropic" : "none" })
        const agent = yield* Effect.provide(
          ReactAgent.ReactAgent,
          ReactAgent.layer({ systemPrompt: SYSTEM, toolSelectionThreshold: 1000 }).pipe(
            Layer.provideMerge(Layer.mergeAll(
              Layer.succeed(Llm.Llm, llm),
              Toolkit.layer(tools),
              Hooks.layerNoop,
              ContextGuard.layer(),
              Interrupts.layerMemory
            )),
            Layer.orDie
          )
        )
        let history: Array<ChatMessage> = []
        for (let t = 0; t < TURNS; t++) {
          const events = Chunk.toArray(
            yield* Stream.runCollect(agent.run({ query: query(t), history, conversationId: "bench" }))
          )
          const done = events.at(-1)
          const answer = done?._tag === "Done" ? done.answer : ""
          if (answer === "") throw new Error(`turn ${t} ended without an answer`)
          history = [...history, Message.user(query(t)), Message.assistant(answer)]
        }
      })))
      return [...fake.requests]
    } finally {
      await fake.close()
    }
  })

/** The AI SDK's Anthropic provider with its documented cache settings, when `@ai-sdk/anthropic` is installed. */
const runAiSdk = async (): Promise<ReadonlyArray<FakeAnthropic.RecordedRequest> | string> => {
  let anthropicPkg: any
  try {
    anthropicPkg = await import("@ai-sdk/anthropic" as string)
  } catch {
    return "not measured: @ai-sdk/anthropic is not installed (add it as a devDependency: the 3.0.x line, for ai@6)"
  }
  const ai: any = await import("ai") // its per-call warnings (unknown model "claude-test", a system message in `messages`,
   // which is where its docs put the cache breakpoint) would bury the bench's output
  ;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false
  const { z } = await import("zod")
  const fake = await FakeAnthropic.start(model)
  try {
    const provider = anthropicPkg.createAnthropic({ baseURL: `${fake.url}/v1`, apiKey: "sk-ant-bench" })
    const cache = { anthropic: { cacheControl: { type: "ephemeral" } } }
    const sdkTools = Object.fromEntries(tools.map((t) => [
      t.name,
      ai.tool({
        description: t.description,
        inputSchema: z.object({
          id: z.string().describe("The record id, e.g. SHP-1042"),
          fields: z.array(z.string()).optional()
        }),
        execute: async (args: unknown) =>
          Effect.runPromise(Effect.map(t.handler(args), (o) => (typeof o === "string" ? o : JSON.stringify(o))))
      })
    ]))
    const history: Array<any> = []
    for (let t = 0; t < TURNS; t++) {
      const result = await ai.generateText({
        model: provider("claude-test"),
        messages: [
          { role: "system", content: SYSTEM, providerOptions: cache },
          ...history,
          { role: "user", content: query(t), providerOptions: cache }
        ],
        tools: sdkTools,
        stopWhen: ai.stepCountIs(ROUNDS + 1)
      })
      history.push({ role: "user", content: query(t) }, { role: "assistant", content: result.text })
    }
    return [...fake.requests]
  } finally {
    await fake.close()
  }
}

/**
 * Runs the conversation with each engine.
 *
 * @since 0.1.0
 */
export const run = async (): Promise<PromptCacheResults> => {
  const off = await Effect.runPromise(runOurs(false))
  const uncached = figures("ours, LLM_PROMPT_CACHE=off", off, 0).inputTokens
  const on = await Effect.runPromise(runOurs(true))
  const engines: Array<CacheFigures> = [
    figures("ours (EffectAiLlm + @effect/ai-anthropic), LLM_PROMPT_CACHE=auto", on, uncached),
    { ...figures("ours, LLM_PROMPT_CACHE=off", off, uncached) }
  ]
  try {
    const sdk = await runAiSdk()
    engines.push(
      typeof sdk === "string"
        ? { ...emptyFigures("AI SDK (@ai-sdk/anthropic), documented cacheControl"), error: sdk }
        : figures("AI SDK (@ai-sdk/anthropic), documented cacheControl", sdk, uncached)
    )
  } catch (e) {
    engines.push({
      ...emptyFigures("AI SDK (@ai-sdk/anthropic), documented cacheControl"),
      error: e instanceof Error ? e.message : String(e)
    })
  }
  return { turns: TURNS, rounds: ROUNDS, tools: TOOLS, uncachedInputTokens: uncached, engines }
}

const emptyFigures = (engine: string): CacheFigures => ({
  engine,
  requests: 0,
  inputTokens: 0,
  readTokens: 0,
  writeTokens: 0,
  readShare: 0,
  billedInput: 0,
  billedVsUncached: Number.NaN
})

const pct = (x: number) => (Number.isNaN(x) ? "n/a" : `${(100 * x).toFixed(1)} %`)
const int = (x: number) => Math.round(x).toLocaleString("en-US")

/**
 * The section's table (markdown).
 *
 * @since 0.1.0
 */
export const render = (r: PromptCacheResults): string => {
  const head =
    "| engine | requests | input tokens | cache read | cache written | read share | billed input | billed ÷ uncached |\n|---|---:|---:|---:|---:|---:|---:|---:|"
  const rows = r.engines.map((e) =>
    e.error !== undefined
      ? `| ${e.engine} | ${e.error} | | | | | | |`
      : `| ${e.engine} | ${e.requests} | ${int(e.inputTokens)} | ${int(e.readTokens)} | ${int(e.writeTokens)} | ${
        pct(e.readShare)
      } | ${int(e.billedInput)} | ${pct(e.billedVsUncached)} |`
  )
  return [head, ...rows].join("\n")
}
