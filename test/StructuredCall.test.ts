import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import type { Abilities, ChatRequest } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import type { StructuredCallOptions } from "../src/StructuredCall.js"
import { structuredCall, structuredCallWith, StructuredOutputError } from "../src/StructuredCall.js"

const Selection = Schema.Struct({ tools: Schema.Array(Schema.String) })
type Selection = typeof Selection.Type

const all: Partial<Abilities> = { toolCall: true, toolChoice: true, jsonMode: true }
const jsonOnly: Partial<Abilities> = { toolCall: false, toolChoice: false, jsonMode: true }
const plainOnly: Partial<Abilities> = { toolCall: false, toolChoice: false, jsonMode: false }

const base: StructuredCallOptions<Selection, Selection> = {
  messages: [Message.system("You pick tools."), Message.user("weather in Paris?")],
  schema: Selection,
  functionName: "select_tools",
  functionDescription: "Pick the tools that answer the query"
}

const usage = { prompt: 10, completion: 5 }
const bad = (content = "I cannot do that") => ScriptedLlm.text(content, { usage })
const good = (tools: ReadonlyArray<string>) => ScriptedLlm.text(JSON.stringify({ tools }), { usage })

const run = (
  script: ReadonlyArray<ScriptedLlm.ScriptStep>,
  abilities: Partial<Abilities>,
  options: Partial<StructuredCallOptions<Selection, Selection>> = {}
) => {
  const llm = ScriptedLlm.makeUnsafe(script, { abilities })
  const effect = structuredCall({ ...base, ...options }).pipe(Effect.provide(llm.layer))
  return { llm, effect, requests: (): ReadonlyArray<ChatRequest> => llm.requests.map((r) => r.request) }
}

/** Runs once and returns the typed failure (fails the test on success). */
const failWith = <A>(effect: Effect.Effect<A, StructuredOutputError>) =>
  Effect.flatMap(
    Effect.exit(effect),
    (exit) => Exit.isFailure(exit) ? Effect.flip(exit) : Effect.dieMessage("expected a StructuredOutputError")
  )

const isForced = (r: ChatRequest) =>
  typeof r.toolChoice === "object" && r.toolChoice.function.name === "select_tools" &&
  r.tools?.length === 1 && r.tools[0]!.function.name === "select_tools"

const lastUserText = (r: ChatRequest) => textOf([...r.messages].reverse().find((m) => m.role === "user")?.content)

describe("structuredCall: call counts", () => {
  it.effect("all-capable model failing everywhere: 5 calls (1 + 2 + 2), then StructuredOutputError", () =>
    Effect.gen(function*() {
      const { effect, llm, requests } = run([bad("a"), bad("b"), bad("c"), bad("d"), bad("e")], all)
      const error = yield* Effect.flip(effect)
      assert.instanceOf(error, StructuredOutputError)
      assert.strictEqual(error.llmCalls, 5)
      assert.strictEqual(llm.calls, 5)
      assert.strictEqual(error.lastContent, "e")
      const [r1, r2, r3, r4, r5] = requests()
      // level 1: forced tool choice, no response format
      assert.isTrue(isForced(r1!))
      assert.isUndefined(r1!.responseFormat)
      // level 2: json_object, no tools; retry carries the bad reply + re-format request
      assert.deepStrictEqual(r2!.responseFormat, { type: "json_object" })
      assert.deepStrictEqual(r3!.responseFormat, { type: "json_object" })
      assert.isUndefined(r2!.tools)
      assert.strictEqual(r3!.messages.length, r2!.messages.length + 2)
      assert.deepStrictEqual(r3!.messages[r3!.messages.length - 2], Message.assistant("b"))
      assert.include(lastUserText(r3!), "could not be parsed as valid JSON matching the schema")
      // level 3: no format constraint at all
      for (const r of [r4!, r5!]) {
        assert.isUndefined(r.responseFormat)
        assert.isUndefined(r.tools)
        assert.isUndefined(r.toolChoice)
      }
      assert.deepStrictEqual(r5!.messages[r5!.messages.length - 2], Message.assistant("d"))
    }))

  it.effect("json-only model: 4 calls", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([bad(), bad(), bad(), bad()], jsonOnly)
      const error = yield* Effect.flip(effect)
      assert.strictEqual(error.llmCalls, 4)
      const rs = requests()
      assert.strictEqual(rs.length, 4)
      assert.isTrue(rs.every((r) => r.tools === undefined))
      assert.deepStrictEqual(rs.map((r) => r.responseFormat?.type), [
        "json_object",
        "json_object",
        undefined,
        undefined
      ])
    }))

  it.effect("plain-only model: 2 calls", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([bad(), bad()], plainOnly)
      const error = yield* Effect.flip(effect)
      assert.strictEqual(error.llmCalls, 2)
      assert.strictEqual(requests().length, 2)
    }))

  it.effect("tool calls without tool_choice skip the native level", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([good(["x"])], { toolCall: true, toolChoice: false, jsonMode: true })
      const result = yield* effect
      assert.strictEqual(result.level, "json")
      assert.strictEqual(requests().length, 1)
    }))
})

describe("structuredCall: levels", () => {
  it.effect("native ok: one call, arguments decoded", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([ScriptedLlm.toolCall("select_tools", { tools: ["weather"] }, { usage })], all)
      const result = yield* effect
      assert.deepStrictEqual(result.value, { tools: ["weather"] })
      assert.deepStrictEqual(result.raw, { tools: ["weather"] })
      assert.strictEqual(result.level, "native")
      assert.strictEqual(result.llmCalls, 1)
      const [r1] = requests()
      assert.isTrue(isForced(r1!))
      assert.strictEqual(r1!.tools![0]!.function.description, "Pick the tools that answer the query")
      assert.deepStrictEqual((r1!.tools![0]!.function.parameters as any).required, ["tools"])
      // the caller's messages are sent unchanged on the native level
      assert.deepStrictEqual(r1!.messages, base.messages)
    }))

  it.effect("native: invalid argument JSON is repaired by extractJson", () =>
    Effect.gen(function*() {
      const { effect } = run([ScriptedLlm.toolCall("select_tools", "{\"tools\": [\"\\alpha\"]}")], all)
      const result = yield* effect
      assert.deepStrictEqual(result.value, { tools: ["\\alpha"] })
      assert.strictEqual(result.level, "native")
    }))

  it.effect("native fails (no tool call) → json ok", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([bad(), good(["b"])], all)
      const result = yield* effect
      assert.strictEqual(result.level, "json")
      assert.deepStrictEqual(result.value, { tools: ["b"] })
      assert.strictEqual(result.llmCalls, 2)
      // the JSON Schema goes into the (existing) system message
      const sys = requests()[1]!.messages[0]!
      assert.strictEqual(sys.role, "system")
      assert.include(textOf(sys.content), "You pick tools.")
      assert.include(textOf(sys.content), "JSON Schema")
      assert.include(textOf(sys.content), "\"tools\"")
      assert.strictEqual(requests()[1]!.messages.length, base.messages.length)
    }))

  it.effect("schema decode failure downgrades (native args of the wrong shape)", () =>
    Effect.gen(function*() {
      const { effect } = run([ScriptedLlm.toolCall("select_tools", { tools: "weather" }), good(["w"])], all)
      const result = yield* effect
      assert.strictEqual(result.level, "json")
      assert.strictEqual(result.llmCalls, 2)
    }))

  it.effect("json fails once, the retry succeeds", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([bad("{\"tool\": 1}"), good(["c"])], jsonOnly)
      const result = yield* effect
      assert.strictEqual(result.level, "json")
      assert.strictEqual(result.llmCalls, 2)
      const retry = requests()[1]!
      assert.deepStrictEqual(retry.responseFormat, { type: "json_object" })
      assert.include(lastUserText(retry), "Reply with only the JSON object")
      assert.include(lastUserText(retry), "tools") // the decode problem is quoted
    }))

  it.effect("json fails twice → text ok (fenced JSON in prose)", () =>
    Effect.gen(function*() {
      const { effect, requests } = run(
        [bad(), bad(), ScriptedLlm.text("Sure!\n```json\n{\"tools\": [\"t\"]}\n```", { usage })],
        jsonOnly
      )
      const result = yield* effect
      assert.strictEqual(result.level, "text")
      assert.deepStrictEqual(result.value, { tools: ["t"] })
      assert.strictEqual(result.llmCalls, 3)
      const r3 = requests()[2]!
      assert.isUndefined(r3.responseFormat)
      // a fresh first attempt on the text level: schema instruction, no earlier bad replies
      assert.strictEqual(r3.messages.length, base.messages.length)
      assert.include(textOf(r3.messages[0]!.content), "JSON Schema")
    }))

  it.effect("text via regexFallback (extractJson finds nothing)", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const { effect } = run([ScriptedLlm.text("Tools: search, fetch")], plainOnly, {
        regexFallback: (text) => {
          seen.push(text)
          const m = /Tools:\s*(.+)/.exec(text)
          return m ? { tools: m[1]!.split(/,\s*/) } : undefined
        }
      })
      const result = yield* effect
      assert.strictEqual(result.level, "text")
      assert.deepStrictEqual(result.value, { tools: ["search", "fetch"] })
      assert.deepStrictEqual(result.raw, { tools: ["search", "fetch"] })
      assert.deepStrictEqual(seen, ["Tools: search, fetch"])
    }))

  it.effect("regexFallback is not used on the json level and its result is still decoded", () =>
    Effect.gen(function*() {
      let calls = 0
      const { effect } = run([bad("x"), bad("y"), bad("z"), bad("w")], jsonOnly, {
        regexFallback: () => {
          calls++
          return { tools: 42 } // does not decode
        }
      })
      const error = yield* Effect.flip(effect)
      assert.strictEqual(error.llmCalls, 4)
      assert.strictEqual(calls, 2) // only the two text-level attempts
    }))

  it.effect("a throwing regexFallback counts as no candidate", () =>
    Effect.gen(function*() {
      const { effect } = run([bad(), good(["ok"])], plainOnly, {
        regexFallback: () => {
          throw new Error("boom")
        }
      })
      const result = yield* effect
      assert.strictEqual(result.level, "text")
      assert.strictEqual(result.llmCalls, 2)
    }))

  it.effect("LLM errors downgrade like parse failures", () =>
    Effect.gen(function*() {
      const { effect, requests } = run([ScriptedLlm.fail("Server"), ScriptedLlm.fail("Timeout"), good(["z"])], all)
      const result = yield* effect
      assert.strictEqual(result.level, "json")
      assert.strictEqual(result.llmCalls, 3)
      // no bad reply to append after an error: the retry repeats the request
      assert.deepStrictEqual(requests()[2]!.messages, requests()[1]!.messages)
    }))

  it.effect("LLM errors everywhere: StructuredOutputError mentions the last error", () =>
    Effect.gen(function*() {
      const { effect } = run([ScriptedLlm.fail("Server"), ScriptedLlm.fail("RateLimited", "slow down")], plainOnly)
      const error = yield* failWith(effect)
      assert.strictEqual(error.llmCalls, 2)
      assert.strictEqual(error.lastContent, "")
      assert.include(error.message, "slow down")
    }))
})

describe("structuredCall: total failure", () => {
  it.effect("returns the default (level default) with calls and usage", () =>
    Effect.gen(function*() {
      const { effect } = run([bad(), bad()], plainOnly, { default: { tools: [] } })
      const result = yield* effect
      assert.strictEqual(result.level, "default")
      assert.deepStrictEqual(result.value, { tools: [] })
      assert.isUndefined(result.raw)
      assert.strictEqual(result.llmCalls, 2)
      assert.strictEqual(result.usage.total_tokens, 30)
    }))

  it.effect("an explicit undefined default is honoured", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([bad(), bad()], { abilities: plainOnly })
      const result = yield* structuredCallWith(llm.service, {
        ...base,
        schema: Schema.NullOr(Selection),
        default: undefined as unknown as Selection | null
      })
      assert.strictEqual(result.level, "default")
      assert.isUndefined(result.value)
    }))

  it.effect("the error carries the last content (first 200 chars) and summed usage", () =>
    Effect.gen(function*() {
      const { effect } = run([bad("x".repeat(500)), bad("y".repeat(500))], plainOnly)
      const error = yield* failWith(effect)
      assert.strictEqual(error._tag, "StructuredOutputError")
      assert.strictEqual(error.lastContent, "y".repeat(200))
      assert.strictEqual(error.llmCalls, 2)
      assert.deepStrictEqual(error.usage, { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30, llm_calls: 2 })
    }))

  it.effect("usage is summed over every attempt of every level", () =>
    Effect.gen(function*() {
      const { effect } = run([bad(), bad(), bad(), bad(), good(["u"])], all)
      const result = yield* effect
      assert.strictEqual(result.level, "text")
      assert.strictEqual(result.llmCalls, 5)
      assert.deepStrictEqual(result.usage, { prompt_tokens: 50, completion_tokens: 25, total_tokens: 75, llm_calls: 5 })
    }))
})

describe("structuredCallWith", () => {
  it.effect("uses the given service, not the Llm in context", () =>
    Effect.gen(function*() {
      const fast = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("select_tools", { tools: ["f"] })], { abilities: all })
      const main = ScriptedLlm.makeUnsafe([], { abilities: all })
      const result = yield* structuredCallWith(fast.service, base).pipe(Effect.provide(main.layer))
      assert.deepStrictEqual(result.value, { tools: ["f"] })
      assert.strictEqual(fast.calls, 1)
      assert.strictEqual(main.calls, 0)
    }))

  it.effect("prepends a system message when the conversation has none", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([good(["p"])], { abilities: plainOnly })
      yield* structuredCallWith(llm.service, { ...base, messages: [Message.user("q")] })
      const sent = llm.requests[0]!.request.messages
      assert.strictEqual(sent.length, 2)
      assert.strictEqual(sent[0]!.role, "system")
      assert.include(textOf(sent[0]!.content), "select_tools")
    }))
})
