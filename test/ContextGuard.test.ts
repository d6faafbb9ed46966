import { assert, describe, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Layer } from "effect"
import * as fc from "effect/FastCheck"
import type { CompactHint, ContextGuardService } from "../src/ContextGuard.js"
import * as ContextGuardModule from "../src/ContextGuard.js"

import type { ChatRequest } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import * as ModelRegistry from "../src/ModelRegistry.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { estimateMessages } from "../src/TokenEstimator.js"
import * as Usage from "../src/Usage.js"

// ---------------------------------------------------------------------------
// helpers

const config = (entries: ReadonlyArray<readonly [string, string]> = []) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)))

const guardFrom = <E>(layer: Layer.Layer<ContextGuardModule.ContextGuard, E>) =>
  Effect.provide(ContextGuardModule.ContextGuard, layer)

/** A ReAct-shaped history: system, pinned query, then `rounds` tool rounds of `size` chars each. */
const history = (rounds: number, size = 800): Array<ChatMessage> => {
  const out: Array<ChatMessage> = [
    Message.system("You are a helpful agent."),
    Message.user("What is the weather in Paris?", { pinned: true })
  ]
  for (let i = 0; i < rounds; i++) {
    out.push(
      Message.assistant(`Step ${i}: calling a tool`, {
        toolCalls: [Message.toolCall(`c${i}`, "search", `{"q":"paris ${i}"}`)]
      })
    )
    out.push(Message.tool(`c${i}`, `result ${i}: ` + "r".repeat(size), "search"))
  }
  return out
}

/** Checks the structural invariants; returns the problem or undefined. */
const problems = (result: ReadonlyArray<ChatMessage>): string | undefined => {
  let i = 0
  while (i < result.length && result[i].role === "system") i++
  if (i < result.length && result[i].role === "assistant") return `starts with an assistant message at ${i}`
  for (let k = 0; k < result.length; k++) {
    const m = result[k]
    if (m.role === "system" && k > 0 && result[k - 1].role !== "system") return `system message after others at ${k}`
    if (m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0) {
      const ids = m.tool_calls.map((c) => c.id)
      for (let j = 0; j < ids.length; j++) {
        const t = result[k + 1 + j]
        if (t === undefined || t.role !== "tool" || !ids.includes(t.tool_call_id)) {
          return `tool_calls of ${k} missing their tool messages`
        }
      }
      k += ids.length
    } else if (m.role === "tool") {
      return `orphan tool message at ${k}`
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------
// arbitraries: valid message lists

const textOfSize = (size: number, seed: number) =>
  seed % 3 === 0 ? "数据".repeat(Math.ceil(size / 2)).slice(0, size) : `v${seed} `.padEnd(size, "x")

const size = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: 1, max: 600 }) },
  { weight: 6, arbitrary: fc.integer({ min: 600, max: 8000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 40000, max: 60000 }) }
)

type Turn =
  | { readonly kind: "user"; readonly size: number; readonly pinned: boolean }
  | { readonly kind: "assistant"; readonly size: number }
  | { readonly kind: "tools"; readonly size: number; readonly results: ReadonlyArray<number> }
  /** A tool message whose call is not in the assistant message right before it (invalid input). */
  | { readonly kind: "dangling"; readonly size: number; readonly reuse: number }

const turn: fc.Arbitrary<Turn> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("user" as const),
      size,
      pinned: fc.integer({ min: 0, max: 9 }).map((n) => n < 3)
    })
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("assistant" as const), size }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("tools" as const),
      size,
      results: fc.array(size, { minLength: 1, maxLength: 3 })
    })
  }
)

/**
 * A dangling tool message: an id never called (`dangling_<n>`), or (`reuse` > 0) the
 * id of a call answered earlier, unless that call is in the group right before it
 * (there it would be a second answer of a call, not an orphan).
 */
const dangling = fc.record({ kind: fc.constant("dangling" as const), size, reuse: fc.integer({ min: 0, max: 5 }) })

const buildList = ({ query, system, turns }: { system: number; query: number; turns: ReadonlyArray<Turn> }) => {
  const out: Array<ChatMessage> = [
    Message.system(textOfSize(system, 1)),
    Message.user(textOfSize(query, 2), { pinned: true })
  ]
  let id = 0
  let lastGroup: ReadonlyArray<string> = []
  turns.forEach((t, n) => {
    if (t.kind === "user") out.push(Message.user(textOfSize(t.size, n), { pinned: t.pinned }))
    else if (t.kind === "assistant") out.push(Message.assistant(textOfSize(t.size, n)))
    else if (t.kind === "dangling") {
      const reused = t.reuse > 0 && id > 0 ? `call_${(t.reuse * 7) % id}` : undefined
      const toolCallId = reused !== undefined && !lastGroup.includes(reused) ? reused : `dangling_${n}`
      out.push(Message.tool(toolCallId, textOfSize(t.size, n), "search"))
    } else {
      const calls = t.results.map(() =>
        Message.toolCall(`call_${id++}`, "search", JSON.stringify({ q: textOfSize(t.size % 300, n) }))
      )
      out.push(Message.assistant(n % 2 === 0 ? null : "thinking", { toolCalls: calls }))
      calls.forEach((c, k) => out.push(Message.tool(c.id, textOfSize(t.results[k], n + k), "search")))
    }
    lastGroup = t.kind === "tools" ? groupIds(out) : []
  })
  return out
}

/** The call ids of the tool-call group the list ends with (none when it ends otherwise). */
const groupIds = (list: ReadonlyArray<ChatMessage>): Array<string> => {
  let i = list.length - 1
  while (i >= 0 && list[i].role === "tool") i--
  const m = list[i]
  return m?.role === "assistant" && m.tool_calls ? m.tool_calls.map((c) => c.id) : []
}

/** Well-paired lists: what the loop builds. */
const messageList = fc.record({
  system: fc.integer({ min: 1, max: 3000 }),
  query: fc.integer({ min: 1, max: 1500 }),
  turns: fc.array(turn, { maxLength: 30 })
}).map(buildList)

/** Lists with at least one dangling tool message, anywhere between units (first, last, after a group…). */
const danglingList = fc.record({
  system: fc.integer({ min: 1, max: 3000 }),
  query: fc.integer({ min: 1, max: 1500 }),
  turns: fc.array(fc.oneof({ weight: 4, arbitrary: turn }, { weight: 1, arbitrary: dangling }), { maxLength: 30 }),
  extra: dangling,
  at: fc.nat()
}).map(({ at, extra, turns, ...rest }) => {
  const position = turns.length === 0 ? 0 : at % (turns.length + 1)
  return buildList({ ...rest, turns: [...turns.slice(0, position), extra, ...turns.slice(position)] })
})

const budget = fc.oneof(fc.integer({ min: 200, max: 6000 }), fc.integer({ min: 6000, max: 80000 }))

const step: fc.Arbitrary<ScriptedLlm.ScriptStep> = fc.oneof(
  fc.integer({ min: 1, max: 3000 }).map((n) =>
    ScriptedLlm.text("summary: " + "s".repeat(n), { usage: { prompt: 100, completion: 20 } })
  ),
  fc.integer({ min: 20000, max: 80000 }).map((n) => ScriptedLlm.text("huge " + "h".repeat(n))),
  fc.constant(ScriptedLlm.text("   ")),
  fc.constant(ScriptedLlm.fail("Server")),
  fc.constant(ScriptedLlm.fail("ContextOverflow"))
)

const checkInvariants = (guard: ContextGuardService, input: ReadonlyArray<ChatMessage>, limit: number) =>
  Effect.gen(function*() {
    const result = yield* guard.checkAndCompact(input, { budget: limit, hint: "react_iteration" })
    const out = result.messages
    assert.include(out, input[0], "system prompt survives")
    assert.include(out, input[1], "pinned query survives")
    for (const m of input) {
      if (m.pinned && JSON.stringify(m).length < 50000) assert.include(out, m, "pinned message survives")
    }
    for (const m of out) assert.isAtMost(Message.textOf(m.content).length, 50000)
    const fixed = estimateMessages(input.filter((m) => m.role === "system" || m.pinned === true))
    if (fixed <= limit) assert.isAtMost(estimateMessages(out), limit, "within budget")
    const hugeOne = input.some((m) => Message.textOf(m.content).length > 50000)
    if (problems(input) === undefined) assert.isUndefined(problems(out))
    else if ((!hugeOne && estimateMessages(input) > limit) || out.length !== input.length) {
      // an invalid input (dangling tool messages) that fits comes back as it is (below); once the
      // guard has to drop or summarise anything, no orphan is left
      assert.isUndefined(problems(out), `orphan kept: ${problems(out)}`)
      for (const m of out) if (m.role === "tool") assert.notMatch(m.tool_call_id, /^dangling_/)
    }
    if (!hugeOne && estimateMessages(input) <= limit) {
      assert.strictEqual(out, input, "same array when under budget")
      assert.isFalse(result.compacted)
    }
    assert.strictEqual(result.originalMessages, input.length)
    assert.strictEqual(result.keptMessages, out.length)
    assert.strictEqual(result.compacted, out !== input)
  })

// ---------------------------------------------------------------------------

/** A registry over one scripted model (with no context size: the budget comes from config or the default). */
const fromLlm = (llm: ScriptedLlm.ScriptedLlm) => ModelRegistry.layerFromLlm.pipe(Layer.provide(llm.layer))
const noModels = ModelRegistry.layer({ main: ScriptedLlm.makeUnsafe([]).service })

describe("ContextGuard invariants (property)", () => {
  it.effect.prop(
    "heuristic layer",
    { input: messageList, limit: budget },
    ({ input, limit }) =>
      Effect.gen(function*() {
        const guard = yield* guardFrom(
          ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
            Layer.provide(Layer.merge(config(), noModels))
          )
        )
        yield* checkInvariants(guard, input, limit)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 100 } }
  )

  it.effect.prop(
    "LLM layer with random summaries and errors",
    { input: messageList, limit: budget, steps: fc.array(step, { minLength: 1, maxLength: 4 }) },
    ({ input, limit, steps }) =>
      Effect.gen(function*() {
        const llm = ScriptedLlm.makeUnsafe((_request, i) => steps[i % steps.length])
        const guard = yield* guardFrom(
          ContextGuardModule.layerConfig().pipe(Layer.provide(Layer.merge(config(), fromLlm(llm))))
        )
        yield* checkInvariants(guard, input, limit)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 100 } }
  )

  it.effect.prop("heuristic layer, lists with dangling tool messages: a compacted list keeps no orphan", {
    input: danglingList,
    limit: budget
  }, ({ input, limit }) =>
    Effect.gen(function*() {
      assert.isDefined(problems(input), "the generator made an orphan")
      const guard = yield* guardFrom(
        ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
          Layer.provide(Layer.merge(config(), noModels))
        )
      )
      yield* checkInvariants(guard, input, limit)
    }), { timeout: 120_000, fastCheck: { numRuns: 100 } })

  it.effect.prop(
    "LLM layer, lists with dangling tool messages: a compacted list keeps no orphan",
    { input: danglingList, limit: budget, steps: fc.array(step, { minLength: 1, maxLength: 4 }) },
    ({ input, limit, steps }) =>
      Effect.gen(function*() {
        const llm = ScriptedLlm.makeUnsafe((_request, i) => steps[i % steps.length])
        const guard = yield* guardFrom(
          ContextGuardModule.layerConfig().pipe(Layer.provide(Layer.merge(config(), fromLlm(llm))))
        )
        yield* checkInvariants(guard, input, limit)
      }),
    { timeout: 120_000, fastCheck: { numRuns: 100 } }
  )
})

describe("ContextGuard and orphan tool messages (fixed cases)", () => {
  /** `history(6)` with a tool message answering no call among the newest messages, then a user message. */
  const withOrphan = (): Array<ChatMessage> => [
    ...history(6),
    Message.tool("orphan_1", "a result whose call is gone", "search"),
    Message.user("And tomorrow?")
  ]
  const orphans = (out: ReadonlyArray<ChatMessage>) =>
    out.filter((m) => m.role === "tool" && m.tool_call_id === "orphan_1")

  it.effect("heuristic truncation drops an orphan even inside the window of newest messages it keeps", () =>
    Effect.gen(function*() {
      const input = withOrphan()
      const result = yield* ContextGuardModule.makeUnsafe({ budget: 1200 }).checkAndCompact(input)
      const out = result.messages
      assert.isTrue(result.compacted)
      assert.deepStrictEqual(orphans(out), [])
      assert.isUndefined(problems(out))
      // the orphan was not dropped for lack of room: its neighbours on both sides are kept
      assert.include(out, input[input.length - 1])
      assert.include(out, input[input.length - 3])
      assert.include(out, input[input.length - 4])
    }))

  it.effect("LLM compaction drops an orphan from the recent window it keeps verbatim", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("Earlier: the agent searched Paris weather.")])
      const input = withOrphan()
      const result = yield* ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 1200, keepRecent: 4 })
        .checkAndCompact(input)
      const out = result.messages
      assert.strictEqual(llm.calls, 1)
      assert.match(Message.textOf(out[1].content), /^\[Conversation summary\]/)
      assert.deepStrictEqual(orphans(out), [])
      assert.isUndefined(problems(out))
      assert.include(out, input[input.length - 1])
      assert.include(out, input[input.length - 3])
    }))

  it.effect("a list that fits comes back unchanged, orphan included (the guard only drops it when it compacts)", () =>
    Effect.gen(function*() {
      const input = withOrphan()
      const result = yield* ContextGuardModule.makeUnsafe({ budget: 100000 }).checkAndCompact(input)
      assert.strictEqual(result.messages, input)
      assert.isFalse(result.compacted)
    }))
})

describe("ContextGuard.fits", () => {
  it.effect.prop("a list that fits comes back from checkAndCompact unchanged, with no LLM call", {
    input: messageList,
    limit: budget
  }, ({ input, limit }) =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("summary")], { onExhausted: "repeatLast" })
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: limit, maxMsgChars: 400 })
      if (guard.fits?.(input) !== true) return
      const result = yield* guard.checkAndCompact(input)
      assert.strictEqual(result.messages, input)
      assert.isFalse(result.compacted)
      assert.strictEqual(llm.calls, 0)
    }), { fastCheck: { numRuns: 200 } })

  it.effect("an over-long message or a list over the budget does not fit", () =>
    Effect.sync(() => {
      const guard = ContextGuardModule.makeUnsafe({ budget: 1000, maxMsgChars: 100 })
      assert.isTrue(guard.fits?.([{ role: "user", content: "short" }]))
      assert.isFalse(guard.fits?.([{ role: "user", content: "x".repeat(101) }]))
      assert.isFalse(guard.fits?.([{ role: "user", content: "word ".repeat(20) }], { budget: 5 }))
    }))
})

describe("ContextGuard behaviour", () => {
  const summaryLlm = (text = "The agent searched Paris weather: 18°C, id W-42.") =>
    ScriptedLlm.makeUnsafe([ScriptedLlm.text(text, { usage: { prompt: 321, completion: 12 } })])

  it.effect("under budget: same array, not compacted, no LLM call", () =>
    Effect.gen(function*() {
      const llm = summaryLlm()
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 100000 })
      const input = history(5)
      const result = yield* guard.checkAndCompact(input)
      assert.strictEqual(result.messages, input)
      assert.isFalse(result.compacted)
      assert.deepStrictEqual(result.usage, Usage.empty)
      assert.strictEqual(llm.calls, 0)
    }))

  it.effect("summary message placed after the system messages, recent and pinned kept verbatim", () =>
    Effect.gen(function*() {
      const llm = summaryLlm()
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 1500, keepRecent: 4 })
      const input = history(10)
      const result = yield* guard.checkAndCompact(input, { hint: "react_iteration" })
      const out = result.messages
      assert.isTrue(result.compacted)
      assert.strictEqual(out[0], input[0])
      assert.strictEqual(out[1].role, "user")
      assert.isTrue(Message.textOf(out[1].content).startsWith("[Conversation summary]"))
      assert.include(Message.textOf(out[1].content), "W-42")
      assert.strictEqual(out[2], input[1])
      assert.deepStrictEqual(out.slice(3), input.slice(-4))
      assert.strictEqual(result.keptMessages, 7)
      assert.strictEqual(result.originalMessages, 22)
      assert.deepStrictEqual(result.usage, Usage.make(321, 12))
      // the summarised part reached the model, the recent part did not
      const prompt = Message.textOf(llm.requests[0].request.messages[1].content)
      assert.include(prompt, "Step 0: calling a tool")
      assert.include(prompt, "result 7:")
      assert.notInclude(prompt, "result 8:")
      assert.notInclude(prompt, "What is the weather in Paris?")
    }))

  it.effect("the recent window is extended backwards rather than split a tool-call group", () =>
    Effect.gen(function*() {
      const llm = summaryLlm()
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 2500, keepRecent: 2 })
      const input: Array<ChatMessage> = [
        ...history(6),
        Message.assistant(null, { toolCalls: ["a", "b", "c"].map((id) => Message.toolCall(id, "search", "{}")) }),
        Message.tool("a", "A"),
        Message.tool("b", "B"),
        Message.tool("c", "C")
      ]
      const out = (yield* guard.checkAndCompact(input)).messages
      assert.deepStrictEqual(out.slice(-4), input.slice(-4))
      assert.isUndefined(problems(out))
    }))

  const hints: ReadonlyArray<readonly [CompactHint, string]> = [
    ["react_iteration", "reasoning chain"],
    ["planner_input", "planner"],
    ["step_dependency", "earlier steps"],
    ["general", "questions still open"]
  ]
  for (const [hint, phrase] of hints) {
    it.effect(`hint ${hint} uses its own prompt`, () =>
      Effect.gen(function*() {
        const llm = summaryLlm()
        const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 1500 })
        yield* guard.checkAndCompact(history(10), { hint })
        const request: ChatRequest = llm.requests[0].request
        const system = Message.textOf(request.messages[0].content)
        assert.include(system, phrase)
        for (const [other, otherPhrase] of hints) if (other !== hint) assert.notInclude(system, otherPhrase)
        assert.include(system, "same language as the conversation")
        assert.include(system, "numbers")
        assert.include(system, "file paths")
        assert.include(system, "error messages")
      }))
  }

  it.effect("compaction failure falls back to heuristic truncation", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.fail("Server")])
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 1000 })
      const input = history(10)
      const result = yield* guard.checkAndCompact(input)
      assert.strictEqual(llm.calls, 1)
      assert.isTrue(result.compacted)
      assert.isFalse(result.messages.some((m) => Message.textOf(m.content).startsWith("[Conversation summary]")))
      assert.strictEqual(result.messages[0], input[0])
      assert.strictEqual(result.messages[1], input[1])
      assert.deepStrictEqual(result.messages.slice(-2), input.slice(-2))
      assert.isAtMost(estimateMessages(result.messages), 1000)
      assert.deepStrictEqual(result.usage, Usage.empty)
      assert.isUndefined(problems(result.messages))
    }))

  it.effect("a summary that does not fit still falls back to truncation (usage kept)", () =>
    Effect.gen(function*() {
      const llm = summaryLlm("long ".repeat(3000))
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 1500 })
      const result = yield* guard.checkAndCompact(history(10))
      assert.isAtMost(estimateMessages(result.messages), 1500)
      assert.deepStrictEqual(result.usage, Usage.make(321, 12))
      assert.isUndefined(problems(result.messages))
    }))

  it.effect("heuristic layer: truncation keeps system, pinned and the newest groups that fit", () =>
    Effect.gen(function*() {
      const guard = yield* guardFrom(
        ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
          Layer.provide(Layer.merge(config([["CONTEXT_GUARD_DEFAULT_BUDGET", "700"]]), noModels))
        )
      )
      const input = [
        ...history(10),
        Message.user("[USER INTERRUPT] also Lyon", { pinned: true }),
        ...history(3).slice(2)
      ]
      const result = yield* guard.checkAndCompact(input)
      const out = result.messages
      assert.strictEqual(guard.budget, 700)
      assert.strictEqual(out[0], input[0])
      assert.strictEqual(out[1], input[1])
      assert.include(out, input[22])
      assert.deepStrictEqual(out.slice(-2), input.slice(-2))
      assert.isAtMost(estimateMessages(out), 700)
      assert.isUndefined(problems(out))
    }))

  it.effect("truncation is rare: it leaves room, so a list that keeps growing is not cut again on the next calls (a stable prompt prefix)", () =>
    Effect.gen(function*() {
      const guard = ContextGuardModule.makeUnsafe({ budget: 2000 })
      let list: Array<ChatMessage> = [Message.system("sys"), Message.user("question", { pinned: true })]
      const cuts: Array<number> = []
      for (let call = 0; call < 40; call++) {
        list = [
          ...list,
          Message.assistant(`step ${call} ${"a".repeat(200)}`),
          Message.user(`result ${call} ${"r".repeat(200)}`)
        ]
        const result = yield* guard.checkAndCompact(list)
        if (result.compacted) cuts.push(call)
        list = [...result.messages]
        assert.isAtMost(estimateMessages(list), 2000)
      }
      assert.isAbove(cuts.length, 0, "the list outgrew the budget")
      // each cut frees a quarter of the budget (≈ 500 tokens ≈ 4 calls of ≈ 120 tokens): never two calls in a row
      for (let i = 1; i < cuts.length; i++) {
        assert.isAtLeast(cuts[i] - cuts[i - 1], 3, `cuts at calls ${cuts.join(", ")}`)
      }
    }))

  it.effect("truncation never starts with an assistant message", () =>
    Effect.gen(function*() {
      const guard = ContextGuardModule.makeUnsafe({ budget: 120 })
      const input: Array<ChatMessage> = [
        Message.system("sys"),
        Message.user("x".repeat(2000)),
        Message.assistant("short answer"),
        Message.user("ok")
      ]
      const out = (yield* guard.checkAndCompact(input)).messages
      assert.deepStrictEqual(out, [input[0], input[3]])
    }))

  it.effect("JSON mode: an action and its observation are kept or dropped together", () =>
    Effect.gen(function*() {
      const input: Array<ChatMessage> = [Message.system("sys"), Message.user("question", { pinned: true })]
      for (let i = 0; i < 3; i++) {
        input.push(Message.assistant(`{"type":"tool_call","tool_name":"search","tool_args":{"q":"${i}"}}`))
        input.push(Message.user(`Observation: ${"o".repeat(400)}`))
      }
      const pair = estimateMessages(input.slice(-2))
      const limit = estimateMessages(input.slice(0, 2)) + Math.floor(pair * 1.5)
      const out = (yield* ContextGuardModule.makeUnsafe({ budget: limit }).checkAndCompact(input)).messages
      assert.deepStrictEqual(out, [input[0], input[1], input[6], input[7]])
    }))

  it.effect("a pinned assistant message first gets a note before it, within budget", () =>
    Effect.gen(function*() {
      const pinnedAnswer: ChatMessage = { role: "assistant", content: "Earlier answer: 42", pinned: true }
      const input: Array<ChatMessage> = [
        Message.system("sys"),
        Message.user("x".repeat(4000)),
        pinnedAnswer,
        Message.user("y".repeat(200)),
        Message.user("z".repeat(200))
      ]
      const limit = estimateMessages([input[0], input[2], input[4]]) + 12
      const out = (yield* ContextGuardModule.makeUnsafe({ budget: limit }).checkAndCompact(input)).messages
      assert.strictEqual(out[0], input[0])
      assert.strictEqual(out[1].role, "user")
      assert.include(Message.textOf(out[1].content), "truncated")
      assert.strictEqual(out[2], pinnedAnswer)
      assert.isAtMost(estimateMessages(out), limit)
      assert.isUndefined(problems(out))
    }))

  it.effect("per-message hard cut: only the oversized messages are replaced", () =>
    Effect.gen(function*() {
      const guard = yield* guardFrom(
        ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
          Layer.provide(
            Layer.merge(
              config([["CONTEXT_GUARD_MAX_MSG_CHARS", "1000"], ["CONTEXT_GUARD_DEFAULT_BUDGET", "100000"]]),
              noModels
            )
          )
        )
      )
      const input = history(3)
      const big = Message.tool("c9", "z".repeat(5000), "search")
      const list = [
        ...input.slice(0, 6),
        Message.assistant(null, { toolCalls: [Message.toolCall("c9", "search", "{}")] }),
        big
      ]
      const result = yield* guard.checkAndCompact(list)
      assert.isTrue(result.compacted)
      for (let i = 0; i < 7; i++) assert.strictEqual(result.messages[i], list[i])
      const cut = result.messages[7]
      assert.strictEqual(cut.role, "tool")
      assert.strictEqual(cut.role === "tool" && cut.tool_call_id, "c9")
      assert.isTrue(Message.textOf(cut.content).endsWith("[Truncated]"))
      assert.strictEqual(Message.textOf(cut.content).length, 1000)
      // idempotent: the cut list passes unchanged
      const again = yield* guard.checkAndCompact(result.messages)
      assert.strictEqual(again.messages, result.messages)
      assert.isFalse(again.compacted)
    }))

  it.effect("a runaway summary obeys the per-message cut too", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("h".repeat(60000))])
      const guard = ContextGuardModule.makeUnsafe({
        llm: llm.service,
        budget: 60000,
        keepRecent: 2,
        maxMsgChars: 50000
      })
      const input = history(200, 2000)
      const result = yield* guard.checkAndCompact(input, { hint: "react_iteration" })
      assert.isTrue(result.compacted)
      const summary = result.messages.find((m) => Message.textOf(m.content).startsWith("[Conversation summary]"))
      assert.isDefined(summary)
      assert.strictEqual(Message.textOf(summary!.content).length, 50000)
      assert.isTrue(Message.textOf(summary!.content).endsWith("[Truncated]"))
    }))

  it.effect("the default 50000-char limit applies", () =>
    Effect.gen(function*() {
      const guard = ContextGuardModule.makeUnsafe({ budget: 10 ** 6 })
      const result = yield* guard.checkAndCompact([Message.system("s"), Message.user("q".repeat(60000))])
      assert.strictEqual(Message.textOf(result.messages[1].content).length, 50000)
    }))
})

describe("ContextGuard budget", () => {
  const budgetOf = <E>(layer: Layer.Layer<ContextGuardModule.ContextGuard, E>) =>
    Effect.map(guardFrom(layer), (g) => g.budget)

  it.effect("CONTEXT_GUARD_DEFAULT_BUDGET wins", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([], { contextSize: 128000, maxOutputTokens: 64000 })
      const b = yield* budgetOf(
        ContextGuardModule.layerConfig().pipe(
          Layer.provide(Layer.merge(fromLlm(llm), config([["CONTEXT_GUARD_DEFAULT_BUDGET", "9000"]])))
        )
      )
      assert.strictEqual(b, 9000)
    }))

  it.effect("layerConfig's Config.Wrap wins over CONTEXT_GUARD_*: the caller's own variable, or a fixed value", () =>
    Effect.gen(function*() {
      const env = config([["CONTEXT_GUARD_DEFAULT_BUDGET", "9000"], ["MY_GUARD_BUDGET", "5000"]])
      const with_ = (wrapped: Parameters<typeof ContextGuardModule.layerConfig>[0]) =>
        budgetOf(ContextGuardModule.layerConfig(wrapped).pipe(Layer.provide(Layer.merge(noModels, env))))
      assert.strictEqual(yield* with_({}), 9000)
      assert.strictEqual(yield* with_({ budget: Config.integer("MY_GUARD_BUDGET") }), 5000)
      assert.strictEqual(yield* with_(Config.succeed({ budget: 3000 })), 3000)
    }))

  it.effect("else the model's context size minus max output (floor 4000)", () =>
    Effect.gen(function*() {
      const big = ScriptedLlm.makeUnsafe([], { contextSize: 128000, maxOutputTokens: 64000 })
      assert.strictEqual(
        yield* budgetOf(
          ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
            Layer.provide(Layer.merge(fromLlm(big), config()))
          )
        ),
        64000
      )
      const small = ScriptedLlm.makeUnsafe([], { contextSize: 8000, maxOutputTokens: 6000 })
      assert.strictEqual(
        yield* budgetOf(ContextGuardModule.layerConfig().pipe(Layer.provide(Layer.merge(fromLlm(small), config())))),
        4000
      )
      // the registry's fast model is smaller: the loop may use it
      const fast = ScriptedLlm.makeUnsafe([], { contextSize: 32000, maxOutputTokens: 8000 })
      const registry = ModelRegistry.layer({ main: big.service, fast: fast.service })
      assert.strictEqual(
        yield* budgetOf(ContextGuardModule.layerConfig().pipe(Layer.provide(Layer.merge(registry, config())))),
        24000
      )
    }))

  it.effect("32000 when nothing is known", () =>
    Effect.gen(function*() {
      assert.strictEqual(
        yield* budgetOf(
          ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
            Layer.provide(Layer.merge(config(), noModels))
          )
        ),
        32000
      )
      const llm = ScriptedLlm.makeUnsafe([])
      assert.strictEqual(
        yield* budgetOf(ContextGuardModule.layerConfig().pipe(Layer.provide(Layer.merge(fromLlm(llm), config())))),
        32000
      )
    }))

  it.effect("an invalid setting is a clear ConfigError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        budgetOf(
          ContextGuardModule.layerConfig().pipe(
            Layer.provide(Layer.merge(config([["CONTEXT_GUARD_KEEP_RECENT", "-1"]]), noModels))
          )
        )
      )
      assert.include(String(error), "CONTEXT_GUARD_KEEP_RECENT")
    }))

  it.effect("the LLM layer compacts with the registry's fast model", () =>
    Effect.gen(function*() {
      const main = ScriptedLlm.makeUnsafe([ScriptedLlm.text("from main")])
      const fast = ScriptedLlm.makeUnsafe([ScriptedLlm.text("from fast")])
      const guard = yield* guardFrom(
        ContextGuardModule.layerConfig().pipe(
          Layer.provide(Layer.merge(ModelRegistry.layer({ main: main.service, fast: fast.service }), config()))
        )
      )
      const result = yield* guard.checkAndCompact(history(10), { budget: 1500 })
      assert.strictEqual(fast.calls, 1)
      assert.strictEqual(main.calls, 0)
      assert.include(Message.textOf(result.messages[1].content), "from fast")
    }))

  it.effect("compaction: \"heuristic\" never calls the registry's models, whatever the budget", () =>
    Effect.gen(function*() {
      const main = ScriptedLlm.makeUnsafe([ScriptedLlm.text("from main")])
      const fast = ScriptedLlm.makeUnsafe([ScriptedLlm.text("from fast")])
      const guard = yield* guardFrom(
        ContextGuardModule.layerConfig({ compaction: Config.succeed("heuristic") }).pipe(
          Layer.provide(Layer.merge(ModelRegistry.layer({ main: main.service, fast: fast.service }), config()))
        )
      )
      const result = yield* guard.checkAndCompact(history(10), { budget: 1500 })
      assert.strictEqual(fast.calls + main.calls, 0)
      assert.isBelow(result.messages.length, history(10).length)
    }))

  it.effect("a per-check budget overrides the configured one", () =>
    Effect.gen(function*() {
      const guard = ContextGuardModule.makeUnsafe({ budget: 100000 })
      const input = history(10)
      assert.strictEqual((yield* guard.checkAndCompact(input)).messages, input)
      const half = yield* guard.checkAndCompact(input, { budget: 800 })
      assert.isAtMost(estimateMessages(half.messages), 800)
    }))
})
