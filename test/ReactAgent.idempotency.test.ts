/**
 * Idempotency keys of tool calls, in process: every call carries one in
 * `Tool.currentCall` and on its `iteration start` event; it is derived from the
 * run id and the call's step name (the same for a replayed attempt of the
 * call, different for every other call and every other run), and a durable
 * host is told which calls are exclusive (claimed before they run again).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { toWire } from "../src/server/EventWire.js"
import * as Tool from "../src/Tool.js"
import { jsonLlm, makeAgent } from "./utils/agentLayers.js"

const KEY = /^ik_[0-9a-f]{32}$/

/** Tools that record the call context their handler ran with. */
const keyedTools = () => {
  const seen: Array<Tool.CallContext> = []
  const handler = () =>
    Effect.map(FiberRef.get(Tool.currentCall), (call) => {
      if (Option.isSome(call)) seen.push(call.value)
      return "ok"
    })
  const parameters = Schema.Struct({ n: Schema.Number })
  return {
    seen,
    tools: [
      Tool.make({
        name: "keyed",
        description: "Records its call (safe to repeat)",
        parameters,
        idempotent: true,
        handler
      }),
      Tool.make({ name: "once", description: "Records its call (a side effect)", parameters, readOnly: false, handler })
    ]
  }
}

type ToolStart = Extract<RunEvent, { _tag: "ToolStart" }>
const starts = (events: ReadonlyArray<RunEvent>): Array<ToolStart> =>
  events.filter((e): e is ToolStart => e._tag === "ToolStart")

const runEvents = (input: ReactAgent.RunInput) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => Effect.map(Stream.runCollect(agent.run(input)), Chunk.toArray))

/** Runs the agent through `journal`, collecting its events. */
const execute = (
  input: ReactAgent.RunInput,
  journal: (emit: (e: RunEvent) => Effect.Effect<void>) => RunJournal.RunJournal
) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => {
    const events: Array<RunEvent> = []
    return Effect.as(agent.execute(input, journal((e) => Effect.sync(() => void events.push(e)))), events)
  })

describe("idempotency keys", () => {
  it.effect("each call has its own key, in Tool.currentCall and on its iteration start event; a second run has other keys", () => {
    const { seen, tools } = keyedTools()
    const script = [
      ScriptedLlm.toolCalls([{ id: "a", name: "keyed", arguments: { n: 1 } }, {
        id: "b",
        name: "once",
        arguments: { n: 2 }
      }]),
      // the same call id in the next iteration is another call
      ScriptedLlm.toolCalls([{ id: "a", name: "keyed", arguments: { n: 3 } }]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ]
    const h = makeAgent([...script, ...script], { tools, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const first = starts(yield* runEvents({ query: "q", conversationId: "c" }))
      assert.deepStrictEqual(first.map((s) => [s.iteration, s.tool_call_id]), [[1, "a"], [1, "b"], [2, "a"]])
      const keys = first.map((s) => s.idempotency_key ?? "")
      for (const key of keys) assert.match(key, KEY)
      assert.strictEqual(new Set(keys).size, 3, "distinct within a round and across iterations")
      // the handler got its event's key
      assert.deepStrictEqual(
        seen.map((c) => [c.iteration, c.toolCallId, c.idempotencyKey]),
        first.map((s) => [s.iteration, s.tool_call_id, s.idempotency_key])
      )
      // on the wire: the `step` iteration start payload
      const wire = toWire(first[0])
      assert.deepStrictEqual(wire, {
        channel: "step",
        data: {
          type: "iteration",
          status: "start",
          iteration: 1,
          tool_name: "keyed",
          tool_args: { n: 1 },
          tool_call_id: "a",
          idempotency_key: keys[0]
        }
      })
      // the same conversation, the same call ids: another run, other keys
      const second = starts(yield* runEvents({ query: "q", conversationId: "c" }))
      assert.deepStrictEqual(second.map((s) => [s.iteration, s.tool_call_id]), [[1, "a"], [1, "b"], [2, "a"]])
      for (const s of second) assert.notInclude(keys, s.idempotency_key)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("each run has an id: done carries run_id (given in RunInput.runId or a fresh one), and its calls' keys derive from it", () => {
    const { tools } = keyedTools()
    const script = [
      ScriptedLlm.toolCall("keyed", { n: 1 }, { id: "call_x" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ]
    const h = makeAgent([...script, ...script, ...script], { tools, agent: { completionCheck: false } })
    type Done = Extract<RunEvent, { _tag: "Done" }>
    const doneOf = (events: ReadonlyArray<RunEvent>) => events.find((e): e is Done => e._tag === "Done")!
    return Effect.gen(function*() {
      const given = yield* runEvents({ query: "q", runId: "run_given" })
      assert.strictEqual(doneOf(given).run_id, "run_given")
      assert.strictEqual(starts(given)[0].idempotency_key, RunJournal.makeIdempotencyKey("run_given", "tool/1/call_x"))
      const a = doneOf(yield* runEvents({ query: "q" })).run_id
      const collected = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "q" }))
      const b = collected.runId
      assert.match(a ?? "", /^run_[0-9a-f-]{36}$/)
      assert.match(b ?? "", /^run_[0-9a-f-]{36}$/)
      assert.notStrictEqual(a, b, "two runs, two ids")
    }).pipe(Effect.provide(h.layer))
  })

  it("the documented form: ik_ and the first 32 hex digits of the SHA-256 of <run id> NUL <step name>", () => {
    // an independent computation of the documented derivation (RunJournal.makeIdempotencyKey): keys stored by a
    // durable run or sent to an MCP server must not change with how the engine computes them
    const expected = (runId: string, name: string) =>
      `ik_${createHash("sha256").update(`${runId}\u0000${name}`).digest("hex").slice(0, 32)}`
    for (
      const [runId, name] of [["run_1", "tool/1/call_x"], ["r\u00e9sum\u00e9 \u{1F600}", "dag/2/step/3/tool/4/json"], [
        "",
        ""
      ]]
    ) {
      assert.strictEqual(RunJournal.makeIdempotencyKey(runId, name), expected(runId, name))
      assert.match(RunJournal.makeIdempotencyKey(runId, name), KEY)
    }
  })

  it("keys already handed out stay byte for byte the same (fixed vectors)", () => {
    // stored runs, their ToolStart events and the backends that deduplicated on them hold these keys
    assert.strictEqual(RunJournal.makeIdempotencyKey("run_1", "tool/1/call_x"), "ik_980afe4e585804c6c14c708266fc55fa")
    assert.strictEqual(
      RunJournal.makeIdempotencyKey("run_0b6f0c1e-3f5e-4d0f-9a55-2f1c7d0b9e11", "tool/3/call_ab12"),
      "ik_9bc6eb7ededffe12d05e6010dd79ef28"
    )
    assert.strictEqual(
      RunJournal.makeIdempotencyKey("run_1", "dag/2/step/3/tool/4/json"),
      "ik_6a11aa9c2c28d25537fd6d5ca901f0bc"
    )
  })

  it.effect("derived from the run id and the call's step name (prefixed in a nested journal); JSON mode too", () => {
    const { seen, tools } = keyedTools()
    const script = [
      ScriptedLlm.toolCall("keyed", { n: 1 }, { id: "call_x" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ]
    const agent = { completionCheck: false }
    const native = makeAgent([...script, ...script], { tools, agent })
    const json = makeAgent([
      ScriptedLlm.jsonToolCall("keyed", { n: 1 }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("answer")
    ], {
      tools,
      agent,
      llm: jsonLlm
    })
    return Effect.gen(function*() {
      const plain = starts(yield* execute({ query: "q" }, (emit) => RunJournal.passThrough(emit, { runId: "run_1" })))
      assert.strictEqual(plain[0].idempotency_key, RunJournal.makeIdempotencyKey("run_1", "tool/1/call_x"))
      const nested = starts(
        yield* execute(
          { query: "q" },
          (emit) => RunJournal.nested(RunJournal.passThrough(emit, { runId: "run_1" }), { prefix: "dag/1/step/2/" })
        )
      )
      assert.strictEqual(
        nested[0].idempotency_key,
        RunJournal.makeIdempotencyKey("run_1", "dag/1/step/2/tool/1/call_x")
      )
      assert.deepStrictEqual(seen.map((c) => c.idempotencyKey), [plain[0].idempotency_key, nested[0].idempotency_key])
      const inJson = starts(
        yield* Effect.provide(
          execute({ query: "q" }, (emit) => RunJournal.passThrough(emit, { runId: "run_2" })),
          json.layer
        )
      )
      assert.strictEqual(inJson[0].idempotency_key, RunJournal.makeIdempotencyKey("run_2", "tool/1/json"))
      assert.strictEqual(seen[2].idempotencyKey, inJson[0].idempotency_key)
      // a journal that gives no keys: the calls carry none
      const keyless = starts(
        yield* Effect.provide(
          execute({ query: "q" }, (emit) => ({ activity: (o) => o.execute({ restarted: false }), emit })),
          makeAgent(script, { tools, agent }).layer
        )
      )
      assert.isUndefined(keyless[0].idempotency_key)
      assert.notProperty(seen[3], "idempotencyKey")
    }).pipe(Effect.provide(native.layer))
  })

  it.effect("a replayed run (a durable journal resumed after a crash during the call) runs the call again with the same key", () => {
    const { seen, tools } = keyedTools()
    // the model is asked once: its reply is stored, as the tool calls' outcomes are once stored
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "a", name: "keyed", arguments: { n: 1 } }, {
        id: "b",
        name: "once",
        arguments: { n: 2 }
      }]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools, agent: { completionCheck: false } })
    const stored = new Map<string, unknown>()
    const options = new Map<string, RunJournal.ActivityOptions<any, any, any, any>>()
    /** A journal that stores results by name; `crash` dies in place of storing the result of the activity it names. */
    const durable =
      (crash: string | undefined) => (emit: (e: RunEvent) => Effect.Effect<void>): RunJournal.RunJournal => ({
        activity: (o) =>
          Effect.suspend(() => {
            options.set(o.name, o)
            if (stored.has(o.name)) return Effect.succeed(stored.get(o.name) as any)
            return Effect.flatMap(o.execute({ restarted: false }), (result) =>
              o.name === crash
                ? Effect.dieMessage("the process died")
                : Effect.sync(() => (stored.set(o.name, result), result)))
          }),
        emit,
        idempotencyKey: (name) => RunJournal.makeIdempotencyKey("run_r", name)
      })
    return Effect.gen(function*() {
      const before = starts(yield* execute({ query: "q" }, durable("tool/1/a")))
      const after = starts(yield* execute({ query: "q" }, durable(undefined)))
      assert.strictEqual(
        h.requests().filter((r) => r.method === "chat").length,
        2,
        "the model's first reply was replayed, not asked again"
      )
      // `a` ran twice (its outcome was never stored); `b` ran alongside it (once or twice: the crash may cut it)
      const a = seen.filter((c) => c.toolCallId === "a").map((c) => c.idempotencyKey)
      const b = seen.filter((c) => c.toolCallId === "b").map((c) => c.idempotencyKey)
      assert.strictEqual(a.length, 2)
      assert.strictEqual(a[0], a[1], "both attempts of a call have its key")
      assert.isTrue(b.every((key) => key === b[0]) && b[0] !== a[0])
      assert.deepStrictEqual(
        after.map((s) => s.idempotency_key),
        before.map((s) => s.idempotency_key),
        "the replayed events carry the same keys"
      )
      assert.deepStrictEqual(before.map((s) => s.idempotency_key), [a[0], b[0]])
      // the idempotent call is claimed before it runs again; the other is answered with an error instead
      assert.strictEqual(options.get("tool/1/a")?.exclusive, true)
      assert.isUndefined(options.get("tool/1/a")?.onRestart)
      assert.isUndefined(options.get("tool/1/b")?.exclusive)
      assert.isDefined(options.get("tool/1/b")?.onRestart)
    }).pipe(Effect.provide(h.layer))
  })
})
