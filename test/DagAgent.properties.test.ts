import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { dagEvents, makeDag, planReply, stepText } from "./utils/dagLayers.js"

type Outcome = "answer" | "tool" | "slow" | "fail"

/** A random valid DAG: step i may depend on any earlier step; ids and plan order shuffled. */
const dag = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.record({
    deps: fc.tuple(...Array.from({ length: n }, (_, i) => fc.subarray(Array.from({ length: i }, (_, j) => j)))),
    outcomes: fc.array(fc.constantFrom<Outcome>("answer", "tool", "slow", "fail"), { minLength: n, maxLength: n }),
    ids: fc.shuffledSubarray(["a", "b", "7", "10", "x2", "3", "zz", "1"], { minLength: n, maxLength: n }),
    order: fc.shuffledSubarray(Array.from({ length: n }, (_, i) => i), { minLength: n, maxLength: n }),
    maxConcurrency: fc.integer({ min: 1, max: 5 }),
    sleeps: fc.array(fc.integer({ min: 1, max: 2000 }), { minLength: n, maxLength: n })
  })
)

describe("DagAgent properties", () => {
  it.effect.prop(
    "any valid DAG with any step outcomes ends with one Done and never starts a step before its dependencies",
    [dag],
    ([g]) => {
      const n = g.ids.length
      const idOf = (i: number) => g.ids[i]
      const index = new Map(g.ids.map((id, i) => [id, i]))
      const h = makeDag({
        plan: () =>
          planReply(g.order.map((i) => ({ id: idOf(i), task: `task ${idOf(i)}`, dependencies: g.deps[i].map(idOf) }))),
        step: (id, turn) => {
          const i = index.get(id)!
          switch (g.outcomes[i]) {
            case "fail":
              return ScriptedLlm.fail("BadRequest", `step ${id} broke`)
            case "tool":
              return turn === 0 ? ScriptedLlm.toolCall("add", { a: i, b: 1 }) : stepText(`r${id}`)
            case "slow":
              return turn === 0 ? ScriptedLlm.toolCall("sleep", { ms: g.sleeps[i] }) : stepText(`r${id}`)
            case "answer":
              return stepText(`r${id}`)
          }
        }
      }, { dag: { maxConcurrency: g.maxConcurrency } })
      return Effect.gen(function*() {
        const fiber = yield* Effect.fork(dagEvents({ query: "goal", conversationId: "prop" }))
        yield* TestClock.adjust("1 hour")
        const events = yield* Fiber.join(fiber)
        assert.strictEqual(events[events.length - 1]._tag, "Done")
        assert.strictEqual(events.filter((e) => e._tag === "Done").length, 1)
        const position = new Map<string, number>()
        const settled = new Map<string, string>()
        let running = 0
        events.forEach((e, at) => {
          if (e._tag !== "DagStep") return
          if (e.status === "start") {
            const i = index.get(e.step_id)!
            for (const d of g.deps[i]) {
              const dep = idOf(d)
              assert.strictEqual(settled.get(dep), "done", `${e.step_id} started before its dependency ${dep} was done`)
              assert.isBelow(position.get(dep)!, at)
            }
            running++
            assert.isAtMost(running, g.maxConcurrency)
          } else {
            assert.isFalse(settled.has(e.step_id), `${e.step_id} settled twice`)
            settled.set(e.step_id, e.status)
            position.set(e.step_id, at)
            if (e.error === undefined || !e.error.startsWith("Not run")) running--
          }
        })
        // every step settled; the status follows from its outcome and its dependencies
        const expected = new Map<string, string>()
        const statusOf = (i: number): string => {
          const known = expected.get(idOf(i))
          if (known !== undefined) return known
          const status = g.deps[i].some((d) => statusOf(d) !== "done") || g.outcomes[i] === "fail" ? "failed" : "done"
          expected.set(idOf(i), status)
          return status
        }
        for (let i = 0; i < n; i++) assert.strictEqual(settled.get(idOf(i)), statusOf(i), `status of ${idOf(i)}`)
      }).pipe(Effect.provide(h.layer))
    },
    { fastCheck: { numRuns: 60 } }
  )
})
