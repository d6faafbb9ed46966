import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as DagAgent from "../src/DagAgent.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { doneOf, makeDag, planReply, requestsOf } from "./utils/dagLayers.js"

const withEnv = (entries: ReadonlyArray<readonly [string, string]>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(entries)))

const run = (mode: DagAgent.Mode) =>
  Effect.gen(function*() {
    const dag = yield* DagAgent.DagAgent
    const react = yield* ReactAgent.make({ completionCheck: false })
    return Chunk.toArray(
      yield* Stream.runCollect(DagAgent.runWithMode({ react, dag }, mode, { query: "q", conversationId: "m" }))
    )
  })

describe("DagAgent: modes", () => {
  const script = {
    plan: () => planReply([{ id: 1, task: "t" }]),
    react: () => ScriptedLlm.text("react answer")
  }

  it.effect("react and dag dispatch to their agent", () => {
    const h = makeDag(script)
    return Effect.gen(function*() {
      const react = yield* run("react")
      assert.isUndefined(react.find((e) => e._tag === "DagPlan"))
      assert.strictEqual(doneOf(react).answer, "react answer")
      const dag = yield* run("dag")
      assert.isDefined(dag.find((e) => e._tag === "DagPlan"))
      assert.strictEqual(doneOf(dag).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("auto: the router on the fast model picks DAG mode; its usage is in done.usage (routing)", () => {
    const h = makeDag(script, { models: ["fast"] })
    return Effect.gen(function*() {
      const events = yield* run("auto")
      assert.isDefined(events.find((e) => e._tag === "DagPlan"))
      const route = requestsOf(h).filter((r) => r.kind._tag === "Route")
      assert.deepStrictEqual(route.map((r) => r.model), ["fast"])
      const done = doneOf(events)
      assert.strictEqual(done.usage.by_phase.routing?.llm_calls, 1)
      assert.strictEqual(done.usage.llm_calls, requestsOf(h).length)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("auto: a router that fails chooses ReAct mode", () => {
    const h = makeDag({ ...script, route: () => ScriptedLlm.fail("Server") })
    return Effect.gen(function*() {
      const events = yield* run("auto")
      assert.isUndefined(events.find((e) => e._tag === "DagPlan"))
      assert.strictEqual(doneOf(events).answer, "react answer")
    }).pipe(Effect.provide(h.layer))
  })
})

describe("DagAgent: configuration", () => {
  it.effect("config reads DAG_* (defaults when unset)", () =>
    Effect.gen(function*() {
      const unset = yield* DagAgent.config
      assert.deepStrictEqual(
        { ...unset, stepTimeout: String(unset.stepTimeout) },
        { maxConcurrency: 5, maxRounds: 3, replanStopConfidence: 0.8, stepTimeout: "Duration(10m)" }
      )
      const set = yield* DagAgent.config.pipe(withEnv([
        ["DAG_MAX_CONCURRENCY", "2"],
        ["DAG_STEP_TIMEOUT_MS", "1500"],
        ["DAG_MAX_REPLAN_ROUNDS", "5"],
        ["DAG_REPLAN_STOP_CONFIDENCE", "0.6"]
      ]))
      assert.deepStrictEqual(
        { ...set, stepTimeout: String(set.stepTimeout) },
        { maxConcurrency: 2, maxRounds: 5, replanStopConfidence: 0.6, stepTimeout: "Duration(1s 500ms)" }
      )
      const bad = yield* Effect.exit(DagAgent.config.pipe(withEnv([["DAG_REPLAN_STOP_CONFIDENCE", "2"]])))
      assert.isTrue(Exit.isFailure(bad))
    }))

  it.effect("REACT_DEFAULT_MODE: react by default, validated", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* DagAgent.modeConfig, "react")
      assert.strictEqual(yield* DagAgent.modeConfig.pipe(withEnv([["REACT_DEFAULT_MODE", "auto"]])), "auto")
      assert.isTrue(
        Exit.isFailure(yield* Effect.exit(DagAgent.modeConfig.pipe(withEnv([["REACT_DEFAULT_MODE", "graph"]]))))
      )
    }))

  it.effect("layerConfig applies the environment (DAG_MAX_CONCURRENCY=1 runs steps one at a time)", () => {
    const h = makeDag({ plan: () => planReply([{ id: 1, task: "a" }, { id: 2, task: "b" }]) })
    const layer = DagAgent.layerConfig().pipe(Layer.provide([h.layer, NodeFileSystem.layer]), Layer.orDie)
    return Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      const events = Chunk.toArray(yield* Stream.runCollect(agent.run({ query: "q" })))
      const trail = events.flatMap((e) => (e._tag === "DagStep" ? [e.status] : []))
      assert.deepStrictEqual(trail, ["start", "done", "start", "done"])
    }).pipe(Effect.provide(layer), withEnv([["DAG_MAX_CONCURRENCY", "1"]]))
  })

  it.effect("an invalid explicit option is a ConfigError naming it", () => {
    const h = makeDag({ plan: () => planReply([{ id: 1, task: "a" }]) })
    return Effect.gen(function*() {
      const exit = yield* Effect.exit(DagAgent.make({ maxConcurrency: 0 }))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(exit), "maxConcurrency")
      const timeout = yield* Effect.exit(DagAgent.make({ stepTimeout: -5 }))
      assert.include(String(timeout), "stepTimeout")
    }).pipe(Effect.provide(h.layer))
  })
})
