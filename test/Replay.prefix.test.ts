/**
 * `Replay.withPrefix` on `Replay.layerPrefix`'s services (what a server fork
 * runs on): the steps of a stored prefix are answered from it — the model is
 * not asked again for them, the tool does not run — and the rest runs live.
 * The fake model gives every request fresh tool-call ids and is counted; the
 * tool counts its executions.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Approvals from "../src/Approvals.js"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import type * as Llm from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Recorder from "../src/Recorder.js"
import * as Replay from "../src/Replay.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import { countingTool, recordingAgent } from "./utils/replayLayers.js"

/** Looks `a` up, then `b`, then answers; fresh call ids per request. */
const responder: ScriptedLlm.Responder = (request, index, method) => {
  if (method === "stream") return ScriptedLlm.text("Final.")
  const done = request.messages.filter((m) => m.role === "tool").length
  if (done >= 2) return ScriptedLlm.text("done")
  return ScriptedLlm.toolCall("lookup", { key: done === 0 ? "a" : "b" }, { id: `call_${index}` })
}

/** An agent on `Replay.layerPrefix` over a fresh scripted model and a fresh counting tool. */
const prefixAgent = () => {
  const scripted = ScriptedLlm.makeUnsafe(responder)
  const counting = countingTool()
  const layer = ReactAgent.layer({ synthesis: "always" }).pipe(
    Layer.provideMerge(Layer.provideMerge(ContextGuard.layer(), Replay.layerPrefix)),
    Layer.provide(
      Layer.mergeAll(scripted.layer, Toolkit.layer([counting.tool]), Interrupts.layerMemory, Hooks.layerNoop)
    ),
    Layer.orDie
  )
  return { scripted, ran: counting.ran, layer }
}

describe("Replay.withPrefix", () => {
  it.effect("the prefix's steps come from storage, the rest runs live", () =>
    Effect.gen(function*() {
      // the original run, recorded
      const original = countingTool()
      const recording = recordingAgent(responder, { tools: [original.tool] })
      const { cassette } = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Recorder.record(agent, { query: "Look a and b up." })).pipe(
          Effect.provide(recording.layer)
        )
      assert.deepStrictEqual(original.ran, ["a", "b"])
      assert.strictEqual(cassette.model_calls.length, 4)

      // the prefix: the first model call and the `a` call (a fork after `a` ended)
      const prefix = {
        ...cassette,
        model_calls: cassette.model_calls.slice(0, 1),
        tool_calls: cassette.tool_calls.slice(0, 1)
      }
      const fork = prefixAgent()
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Replay.withPrefix(prefix)(agent.runCollect({ query: "Look a and b up.", conversationId: "fork" }))).pipe(
          Effect.provide(fork.layer)
        )
      assert.strictEqual(result.answer, "Final.")
      // `a` did not run again, `b` ran live
      assert.deepStrictEqual(fork.ran, ["b"])
      // the model was not asked for the first step again: each live request already has `a`'s result
      assert.deepStrictEqual(
        fork.scripted.requests.map((r) =>
          r.request.messages.filter((m) =>
            m.role === "tool"
          ).length
        ),
        [1, 2, 0]
      )
      // `a` keeps its stored call id; `b` has the live request's fresh one
      assert.deepStrictEqual(
        result.steps.map((s) => s.tool_call_id),
        [cassette.tool_calls[0].tool_call_id, "call_0"]
      )

      // outside `withPrefix` the same services run everything live
      const live = prefixAgent()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "Look a and b up." })).pipe(
        Effect.provide(live.layer)
      )
      assert.deepStrictEqual(live.ran, ["a", "b"])
      assert.strictEqual(live.scripted.requests.length, 4)
    }))

  it.effect("a request the prefix does not hold (another query) runs live", () =>
    Effect.gen(function*() {
      const original = countingTool()
      const recording = recordingAgent(responder, { tools: [original.tool] })
      const { cassette } = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Recorder.record(agent, { query: "Look a and b up." })).pipe(
          Effect.provide(recording.layer)
        )
      const fork = prefixAgent()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Replay.withPrefix(cassette)(agent.runCollect({ query: "Something else." }))).pipe(Effect.provide(fork.layer))
      assert.deepStrictEqual(fork.ran, ["a", "b"])
      assert.strictEqual(fork.scripted.requests.length, 4)
    }))

  it.live(
    "a stored call that waited for a person gets its stored decision: nobody is asked again before the fork point",
    () =>
      Effect.gen(function*() {
        const ran: Array<string> = []
        const tool = Tool.make({
          name: "lookup",
          description: "Looks a key up (a person approves each call)",
          parameters: Schema.Struct({ key: Schema.String }),
          needsApproval: true,
          handler: ({ key }) => Effect.sync(() => (ran.push(key), `value of ${key}`))
        })
        /** Approves every call waiting in `approvals`, counting them. */
        const approver = (approvals: Approvals.ApprovalsService, asked: Array<string>) =>
          Effect.forever(
            Effect.flatMap(approvals.pending(), (pending) =>
              Effect.forEach(pending, (p) =>
                Effect.zipRight(
                  Effect.sync(() => asked.push(String(p.args.key))),
                  Effect.ignore(
                    approvals.decide({
                      conversationId: p.conversationId,
                      approvalId: p.approvalId,
                      decision: "approve"
                    })
                  )
                ), { discard: true })).pipe(Effect.zipLeft(Effect.sleep("10 millis")))
          )
        const agentOn = <S>(
          approvals: Layer.Layer<Approvals.Approvals>,
          services: Layer.Layer<S | Llm.Llm | Toolkit.Toolkit | Interrupts.Interrupts>
        ) =>
          Layer.effect(
            ReactAgent.ReactAgent,
            Effect.flatMap(Approvals.Approvals, (a) => ReactAgent.make({ synthesis: "always", approvals: a }))
          ).pipe(
            Layer.provideMerge(Layer.mergeAll(Replay.layerPrefix, ContextGuard.layer(), approvals, Hooks.layerNoop)),
            Layer.provideMerge(services),
            Layer.orDie
          )
        const base = () =>
          Layer.mergeAll(ScriptedLlm.makeUnsafe(responder).layer, Toolkit.layer([tool]), Interrupts.layerMemory)
        const input = { query: "Look a and b up.", conversationId: "c" }
        /** Runs `self` on `agent` while a person approves every call that waits (counted). */
        const approving = <A, R>(self: (agent: ReactAgent.ReactAgentService) => Effect.Effect<A, never, R>) =>
          Effect.gen(function*() {
            const asked: Array<string> = []
            const agent = yield* ReactAgent.ReactAgent
            const decider = yield* Effect.fork(approver(agent.approvals, asked))
            const out = yield* self(agent)
            yield* Fiber.interrupt(decider)
            return { asked, out }
          })

        // recorded: both calls asked a person
        const first = yield* approving((agent) => Recorder.record(agent, input)).pipe(
          Effect.provide(agentOn(Approvals.layerMemory, Recorder.layer.pipe(Layer.provide(base()))))
        )
        assert.deepStrictEqual([first.asked, ran], [["a", "b"], ["a", "b"]])
        const cassette = first.out.cassette
        assert.deepStrictEqual(cassette.approvals.map((a) => a.decision), ["approve", "approve"])

        // forked after `a`: `a` is approved from storage (nobody asked) and not run; `b` asks and runs live
        ran.length = 0
        const prefix = {
          ...cassette,
          model_calls: cassette.model_calls.slice(0, 1),
          tool_calls: cassette.tool_calls.slice(0, 1),
          approvals: cassette.approvals.slice(0, 1)
        }
        const fork = yield* approving((agent) => Replay.withPrefix(prefix)(agent.runCollect(input))).pipe(
          Effect.provide(agentOn(Layer.provide(Replay.layerPrefixApprovals, Approvals.layerMemory), base()))
        )
        assert.strictEqual(fork.out.answer, "Final.")
        assert.deepStrictEqual(fork.asked, ["b"])
        assert.deepStrictEqual(ran, ["b"])
        // both were approved, as the events say
        assert.deepStrictEqual(fork.out.steps.map((st) => st.error ?? null), [null, null])
      }),
    30_000
  )

  it.live(
    "a step the original never finished (a tool call cut by a cancel) runs live: forking a stopped run at its end goes on",
    () =>
      Effect.gen(function*() {
        const ran: Array<string> = []
        // `b` hangs in the original (the run is stopped while it runs); in the fork it answers at once
        let slow = true
        const tool = Tool.make({
          name: "lookup",
          description: "Looks a key up",
          parameters: Schema.Struct({ key: Schema.String }),
          handler: ({ key }) =>
            Effect.zipRight(
              Effect.sync(() => ran.push(key)),
              key === "b" && slow ? Effect.never : Effect.succeed(`value of ${key}`)
            )
        })
        const recording = recordingAgent(responder, { tools: [tool] })
        const cancel = yield* Effect.makeLatch(false)
        const stopper = yield* Effect.fork(Effect.zipRight(
          Effect.repeat(Effect.sync(() => ran.includes("b")), {
            until: (b) => b,
            schedule: Schedule.spaced("5 millis")
          }),
          cancel.open
        ))
        const { cassette, result } = yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => Recorder.record(agent, { query: "Look a and b up.", cancel: cancel.await })
        ).pipe(Effect.provide(recording.layer))
        yield* Fiber.join(stopper)
        assert.strictEqual(result.answer, "")
        assert.deepStrictEqual(cassette.tool_calls.map((t) => t.outcome._tag), ["Success", "Interrupted"])

        // the whole run as the prefix (a fork at its `done`): `a` from storage, `b` live, the run goes on to its answer
        ran.length = 0
        slow = false
        const fork = prefixAgent()
        const forked = yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => Replay.withPrefix(cassette)(agent.runCollect({ query: "Look a and b up." }))
        ).pipe(
          Effect.provide(
            ReactAgent.layer({ synthesis: "always" }).pipe(
              Layer.provideMerge(Layer.provideMerge(ContextGuard.layer(), Replay.layerPrefix)),
              Layer.provide(
                Layer.mergeAll(fork.scripted.layer, Toolkit.layer([tool]), Interrupts.layerMemory, Hooks.layerNoop)
              ),
              Layer.orDie
            )
          ),
          Effect.timeout("10 seconds")
        )
        assert.strictEqual(forked.answer, "Final.")
        assert.deepStrictEqual(ran, ["b"])
        // the stored requests were answered from storage: the live ones have both results (and the synthesis)
        assert.deepStrictEqual(
          fork.scripted.requests.map((r) => r.request.messages.filter((m) => m.role === "tool").length),
          [2, 0]
        )
      }),
    30_000
  )
})
