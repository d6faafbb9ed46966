import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fc from "effect/FastCheck"
import * as Layer from "effect/Layer"
import { readFileSync } from "node:fs"
import * as Cassette from "../src/Cassette.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Recorder from "../src/Recorder.js"
import * as Replay from "../src/Replay.js"
import type { ScriptStep } from "../src/ScriptedLlm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import {
  addTool,
  bigTool,
  crashTool,
  echoTool,
  failTool,
  hangTool,
  injectNow,
  makeInterrupts
} from "./utils/agentLayers.js"
import { countingTool, llmGuard, recordingAgent } from "./utils/replayLayers.js"

const recordRun = (
  script: ReadonlyArray<ScriptStep> | ScriptedLlm.Responder,
  options: Parameters<typeof recordingAgent>[1],
  input: ReactAgent.RunInput
) => {
  const h = recordingAgent(script, options)
  return Effect.provide(
    Effect.flatMap(ReactAgent.ReactAgent, (agent) => Recorder.record(agent, input, { agentOptions: h.agentOptions })),
    h.layer
  ).pipe(Effect.map((recorded) => ({ ...recorded, harness: h })))
}

const replayRun = (cassette: Cassette.Cassette, options: Parameters<typeof Replay.layerAgent>[1] = {}) =>
  Effect.provide(
    Effect.flatMap(ReactAgent.ReactAgent, (agent) => Replay.run(agent)),
    Replay.layerAgent(cassette, { guard: llmGuard(), ...options }).pipe(Layer.orDie)
  )

const lookupScript = (): ReadonlyArray<ScriptStep> => [
  ScriptedLlm.toolCalls([{ name: "lookup", arguments: { key: "alpha" } }, { name: "add", arguments: { a: 2, b: 3 } }]),
  ScriptedLlm.toolCall("lookup", { key: "beta" }),
  ScriptedLlm.text("done looking"),
  // the completion checklist asks once more (three tool calls)
  ScriptedLlm.text("verified"),
  ScriptedLlm.text("alpha is 35, beta is 28")
]

describe("Recorder and Replay", () => {
  it.effect("a recorded run replays with the same events and runs no tool", () =>
    Effect.gen(function*() {
      const counting = countingTool()
      const recorded = yield* recordRun(lookupScript(), { tools: [counting.tool, addTool] }, {
        query: "look up alpha and beta"
      })
      assert.deepStrictEqual(counting.ran, ["alpha", "beta"])
      const c = recorded.cassette
      assert.strictEqual(c.model_calls.length, 5)
      assert.strictEqual(c.tool_calls.length, 3)
      assert.deepStrictEqual(c.tool_calls.map((t) => t.tool_name).sort(), ["add", "lookup", "lookup"])
      assert.deepStrictEqual(c.input.tools.map((t) => t.name), ["lookup", "add"])
      // the cassette survives JSON
      const decoded = Cassette.decode(JSON.parse(JSON.stringify(Cassette.encode(c))))
      assert.isTrue(Either.isRight(decoded))
      const replayed = yield* replayRun(Either.getOrThrow(decoded))
      assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), Cassette.normalizeEvents(recorded.events))
      assert.strictEqual(replayed.result.answer, "alpha is 35, beta is 28")
      // no handler ran again
      assert.deepStrictEqual(counting.ran, ["alpha", "beta"])
    }))

  it.effect("a changed prompt diverges at the first model call, with a readable diff", () =>
    Effect.gen(function*() {
      const counting = countingTool()
      const recorded = yield* recordRun(lookupScript(), { tools: [counting.tool, addTool] }, { query: "look up alpha" })
      const error = yield* Effect.flip(
        replayRun(recorded.cassette, { agent: { systemPrompt: "Always answer in French." } })
      )
      assert.strictEqual(error._tag, "ReplayDivergence")
      assert.strictEqual(error.step, "model call 1 of 5 (chat)")
      assert.strictEqual(error.path, "messages[0].content")
      assert.match(error.diff, /^\+ .*Always answer in French\./m)
      assert.include(error.message, "Replay diverged at model call 1 of 5 (chat), messages[0].content")
    }))

  it.effect("a different tool result in the cassette diverges at the next request", () =>
    Effect.gen(function*() {
      const counting = countingTool()
      const recorded = yield* recordRun(lookupScript(), { tools: [counting.tool, addTool] }, { query: "q" })
      const c = recorded.cassette
      const edited: Cassette.Cassette = {
        ...c,
        tool_calls: c.tool_calls.map((t) =>
          t.tool_name === "add" ? { ...t, outcome: { _tag: "Success" as const, output: "6" } } : t
        )
      }
      const error = yield* Effect.flip(replayRun(edited))
      assert.strictEqual(error.step, "model call 2 of 5 (chat)")
      assert.match(error.path, /^messages\[\d+\]\.content$/)
      assert.include(error.diff, "- 5")
      assert.include(error.diff, "+ 6")
    }))

  it.effect("lenient mode goes on past a changed tool description; strict mode does not", () =>
    Effect.gen(function*() {
      const counting = countingTool()
      const recorded = yield* recordRun(lookupScript(), { tools: [counting.tool, addTool] }, { query: "q" })
      const c = recorded.cassette
      const edited: Cassette.Cassette = {
        ...c,
        input: {
          ...c.input,
          tools: c.input.tools.map((t) => (t.name === "add" ? { ...t, description: "Sums two numbers" } : t))
        }
      }
      const strict = yield* Effect.flip(replayRun(edited))
      assert.strictEqual(strict.path, "tools[1].function.description")
      assert.include(strict.diff, "- Adds two numbers\n+ Sums two numbers")
      const lenient = yield* replayRun(edited, { lenient: true })
      assert.strictEqual(lenient.result.answer, "alpha is 35, beta is 28")
      // a change in the messages is never ignorable
      const prompt = yield* Effect.flip(replayRun(edited, { lenient: true, agent: { systemPrompt: "Be terse." } }))
      assert.strictEqual(prompt.path, "messages[0].content")
    }))

  it.live("interrupts, failing and crashing tools and a timeout replay from the cassette", () =>
    Effect.gen(function*() {
      const irq = makeInterrupts()
      const script: ScriptedLlm.Responder = (_req, i) => {
        if (i === 1) injectNow(irq, "c1", "also check echo")
        return [
          ScriptedLlm.toolCalls([{ name: "fail", arguments: {} }, { name: "crash", arguments: {} }]),
          ScriptedLlm.toolCall("hang", {}),
          ScriptedLlm.toolCall("echo", { text: "hi" }),
          ScriptedLlm.text("final"),
          ScriptedLlm.text("the answer")
        ][i] ?? ScriptedLlm.fail("Unknown", "exhausted")
      }
      const recorded = yield* recordRun(script, { tools: [failTool, crashTool, hangTool, echoTool], interrupts: irq }, {
        query: "q",
        conversationId: "c1"
      })
      const c = recorded.cassette
      assert.isTrue(c.events.some((e) => e._tag === "Inject"))
      assert.isTrue(c.drains.some((d) => d.items.length === 1))
      assert.deepStrictEqual(c.tool_calls.map((t) => t.outcome._tag).sort(), [
        "Die",
        "Failure",
        "Interrupted",
        "Success"
      ])
      const replayed = yield* replayRun(c)
      assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), Cassette.normalizeEvents(recorded.events))
    }))
})

describe("Cassette versions", () => {
  const fixture = readFileSync(new URL("./fixtures/cassette-v1.json", import.meta.url), "utf8")

  it.effect("the committed version-1 cassette is read and replays to its recorded events", () =>
    Effect.gen(function*() {
      const cassette = yield* Cassette.decodeEffect(fixture)
      assert.strictEqual(cassette.version, 1)
      const replayed = yield* replayRun(cassette)
      assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), Cassette.normalizeEvents(cassette.events))
    }))

  it("an unknown version is refused with a clear error", () => {
    const doc = JSON.parse(fixture)
    const newer = Cassette.decode({ ...doc, version: 2 })
    assert.isTrue(Either.isLeft(newer))
    if (Either.isLeft(newer)) {
      assert.strictEqual(
        newer.left.message,
        "Cassette version 2 is newer than this engine reads (versions 1 to 1): upgrade effect-react-engine to replay it"
      )
    }
    const older = Cassette.decode({ ...doc, version: 0 })
    assert.isTrue(Either.isLeft(older))
    if (Either.isLeft(older)) {
      assert.strictEqual(older.left.message, "Cassette version 0 is not supported (this engine reads versions 1 to 1)")
    }
    const none = Cassette.decode({ ...doc, version: "1" })
    if (Either.isLeft(none)) assert.include(none.left.message, "The cassette has no version")
    else assert.fail("a string version was accepted")
    const notOne = Cassette.decode("{\"hello\": 1}")
    if (Either.isLeft(notOne)) assert.include(notOne.left.message, "Not a cassette")
    else assert.fail("a random object was accepted")
    const broken = Cassette.decode({ ...doc, model_calls: [{ method: "chat" }] })
    if (Either.isLeft(broken)) assert.include(broken.left.message, "Invalid cassette (version 1)")
    else assert.fail("a broken cassette was accepted")
  })
})

// ---------------------------------------------------------------------------
// property: record then replay gives the same events

const toolName = fc.constantFrom("add", "echo", "fail", "lookup", "big", "nope")
const argsOf = (name: string) =>
  name === "add"
    ? fc.record({ a: fc.integer({ min: -50, max: 50 }), b: fc.integer({ min: -50, max: 50 }) })
    : name === "big"
    ? fc.record({ size: fc.integer({ min: 500, max: 6000 }) })
    : name === "lookup"
    ? fc.record({ key: fc.string({ maxLength: 6 }) })
    : fc.record({ text: fc.string({ maxLength: 30 }) })
const call = toolName.chain((name) =>
  argsOf(name).map((args) => ({ name, arguments: args as Record<string, unknown> }))
)
const step: fc.Arbitrary<ScriptStep> = fc.oneof(
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map((t) => ScriptedLlm.text(t)) },
  // parallel rounds
  { weight: 4, arbitrary: fc.array(call, { minLength: 1, maxLength: 3 }).map((calls) => ScriptedLlm.toolCalls(calls)) },
  { weight: 1, arbitrary: fc.constant(ScriptedLlm.fail("BadRequest")) }
)

/** What the generated runs covered (checked after the property: a generator that never compacts proves nothing). */
const covered = { compaction: 0, interrupts: 0, parallel: 0, failed: 0, runs: 0 }

describe("Replay properties", () => {
  afterAll(() => {
    assert.isAbove(covered.compaction, 0, "no generated run compacted")
    assert.isAbove(covered.interrupts, 0, "no generated run took an interrupt")
    assert.isAbove(covered.parallel, 0, "no generated run had a parallel round")
    assert.isAbove(covered.failed, 0, "no generated run failed")
  })

  it.effect.prop(
    "recording then replaying a generated run (tools, parallel rounds, interrupts, compaction) gives the same events",
    [
      fc.array(step, { maxLength: 7 }),
      fc.array(fc.integer({ min: 0, max: 8 }), { maxLength: 3 }),
      fc.constantFrom(undefined, 1500),
      fc.constantFrom("auto" as const, "always" as const)
    ],
    ([script, injectAt, budget, synthesis]) =>
      Effect.gen(function*() {
        const irq = makeInterrupts()
        const counting = countingTool()
        const responder: ScriptedLlm.Responder = (req, i) => {
          for (const at of injectAt) if (at === i) injectNow(irq, "prop", `interrupt at ${i}`)
          // a compaction request gets a summary; the loop gets the script
          const system = req.messages[0]
          if (system?.role === "system" && system.content.includes("summar")) return ScriptedLlm.text(`summary ${i}`)
          return script.shift() ?? ScriptedLlm.text(`fallback ${i}`)
        }
        const recorded = yield* recordRun(responder, {
          tools: [addTool, echoTool, failTool, bigTool, counting.tool],
          interrupts: irq,
          agent: { maxIterations: 6, synthesis },
          ...(budget !== undefined ? { budget } : {})
        }, { query: "property run", conversationId: "prop" })
        const ran = counting.ran.length
        const es = recorded.events
        covered.runs++
        if (es.some((e) => e._tag === "Compact")) covered.compaction++
        if (es.some((e) => e._tag === "Inject")) covered.interrupts++
        if (es.some((e) => e._tag === "RunFailed")) covered.failed++
        if (recorded.cassette.model_calls.some((m) => (m.reply?.toolCalls.length ?? 0) > 1)) covered.parallel++
        const replayed = yield* replayRun(recorded.cassette, {
          guard: llmGuard(budget)
        })
        assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), Cassette.normalizeEvents(recorded.events))
        assert.strictEqual(counting.ran.length, ran)
      }),
    {
      fastCheck: {
        numRuns: 40,
        // fixed cases first, so that every kind the afterAll checks is met whatever the seed (40
        // random runs once produced no compaction): a parallel round with a big result under a
        // small budget and an interrupt (synthesis `always`: the loop's calls are plain chats,
        // whose stored replies show the round), then a model failure
        examples: [
          [
            [
              ScriptedLlm.toolCalls([{ name: "big", arguments: { size: 6000 } }, {
                name: "add",
                arguments: { a: 1, b: 2 }
              }]),
              ScriptedLlm.toolCalls([{ name: "big", arguments: { size: 6000 } }]),
              ScriptedLlm.text("done")
            ],
            [1],
            1500,
            "always"
          ],
          [
            [ScriptedLlm.toolCalls([{ name: "echo", arguments: { text: "x" } }]), ScriptedLlm.fail("BadRequest")],
            [],
            undefined,
            "always"
          ]
        ]
      }
    }
  )
})
