/**
 * Fault tests: tool handlers that hang are cut by a declared timeout (the tool's
 * own, else the agent option `toolTimeout`, env `REACT_TOOL_TIMEOUT_MS`, default
 * none) and answered as errors — the rest of the round and the run go on; a
 * tool without one is bounded by the run's deadline (`runTimeout`, env
 * `REACT_RUN_TIMEOUT_MS`, default 1 hour), which ends the run with `RunFailed`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as AgentConfig from "../../src/AgentConfig.js"
import type { AgentOptions } from "../../src/AgentConfig.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

const Empty = Schema.Struct({})

const hangNever = Tool.make({
  name: "hang_never",
  description: "Never returns.",
  parameters: Empty,
  handler: () => Effect.never
})
const hangPromise = Tool.make({
  name: "hang_promise",
  description: "Awaits a promise that never settles.",
  parameters: Empty,
  handler: () => Effect.promise(() => new Promise<string>(() => {}))
})
const hangOwnTimeout = Tool.make({
  name: "hang_own_timeout",
  description: "Never returns; has its own 30 ms timeout.",
  parameters: Empty,
  timeout: Duration.millis(30),
  handler: () => Effect.never
})
const quick = Tool.make({
  name: "quick",
  description: "Returns at once.",
  parameters: Empty,
  handler: () => Effect.succeed("quick ok")
})

const run = (script: ReadonlyArray<ScriptedLlm.ScriptStep>, options: Partial<AgentOptions>) =>
  Effect.gen(function*() {
    const llm = ScriptedLlm.makeUnsafe(script)
    const layer = ReactAgent.layer({ completionCheck: false, ...options }).pipe(
      Layer.provide(Layer.mergeAll(
        llm.layer,
        Toolkit.layer([hangNever, hangPromise, hangOwnTimeout, quick]),
        Hooks.layerNoop,
        ContextGuard.layer(),
        Interrupts.layerMemory
      ))
    )
    const started = Date.now()
    const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "go" })).pipe(
      Effect.provide(layer)
    )
    return { result, ms: Date.now() - started, llm }
  })

describe("tool timeouts", () => {
  it("the documented defaults: no per-call timer, a run deadline of 1 hour", () => {
    assert.isUndefined(AgentConfig.defaults.toolTimeout)
    assert.strictEqual(Duration.toMillis(Duration.decode(AgentConfig.defaults.runTimeout)), 3_600_000)
  })

  it.live("a hanging tool without a declared timeout is bounded by the run's deadline: RunFailed, then Done", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const { ms, result } = yield* run([
        ScriptedLlm.toolCalls([{ id: "a", name: "hang_never" }, { id: "b", name: "quick" }]),
        ScriptedLlm.text("never asked"),
        ScriptedLlm.text("never asked")
      ], { runTimeout: Duration.millis(300) }).pipe(
        Effect.tap(({ llm }) => Effect.sync(() => ran.push(`${llm.requests.length}`)))
      )
      assert.strictEqual(result.error?.message, "The run timed out after 300ms")
      assert.isFalse(result.error?.retryable)
      assert.strictEqual(result.answer, "")
      // the model was asked once: the round never ended
      assert.deepStrictEqual(ran, ["1"])
      assert.isAtLeast(ms, 290)
      assert.isBelow(ms, 5_000)
    }))

  it.live("hanging handlers in a parallel round are cut by the agent's timeout; the other call and the run go on", () =>
    Effect.gen(function*() {
      const { llm, ms, result } = yield* run([
        ScriptedLlm.toolCalls([
          { id: "a", name: "hang_never" },
          { id: "b", name: "quick" },
          { id: "c", name: "hang_promise" }
        ]),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("done")
      ], { toolTimeout: Duration.millis(80) })
      assert.isUndefined(result.error)
      assert.strictEqual(result.answer, "done")
      const byId = new Map(result.steps.map((s) => [s.tool_call_id, s]))
      assert.match(byId.get("a")?.error ?? "", /timed out/)
      assert.match(byId.get("c")?.error ?? "", /timed out/)
      assert.isTrue(byId.has("b"))
      assert.isNull(byId.get("b")!.error)
      assert.strictEqual(byId.get("b")!.observation, "quick ok")
      assert.isBelow(ms, 5_000)
      // the model saw an error observation for each cut call, right after its assistant message
      const second = llm.requests[1].request.messages
      const toolMessages = second.filter((m) => m.role === "tool")
      assert.deepStrictEqual(toolMessages.map((m) => (m.role === "tool" ? m.tool_call_id : "")), ["a", "b", "c"])
      assert.match(String(toolMessages[0].content), /^Error: .*timed out/)
    }))

  it.live("a tool's own timeout wins over the agent's", () =>
    Effect.gen(function*() {
      const { ms, result } = yield* run([
        ScriptedLlm.toolCall("hang_own_timeout", {}, { id: "x" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("done")
      ], { toolTimeout: Duration.seconds(30) })
      assert.match(result.steps[0]?.error ?? "", /timed out/)
      assert.isBelow(ms, 5_000)
    }))
})
