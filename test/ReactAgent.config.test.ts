import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as AgentConfig from "../src/AgentConfig.js"
import * as Interrupts from "../src/Interrupts.js"
import * as ModelRegistry from "../src/ModelRegistry.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Toolkit from "../src/Toolkit.js"
import { echoTool, noHooks, recordingGuard } from "./utils/agentLayers.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("AgentConfig", () => {
  it.effect("defaults", () =>
    Effect.gen(function*() {
      const o = yield* AgentConfig.load().pipe(withEnv({}))
      assert.strictEqual(o.maxIterations, 50)
      assert.strictEqual(o.cycleDetectionThreshold, 3)
      assert.strictEqual(o.selfReflectionInterval, 6)
      assert.strictEqual(o.completionCheckMinTools, 3)
      assert.strictEqual(o.toolSelectionThreshold, 12)
      assert.strictEqual(o.toolSelectionMax, 6)
      assert.strictEqual(o.toolResultBudget, 40000)
      assert.strictEqual(o.maxTurnTokens, 0)
      assert.strictEqual(o.toolObsTruncation, 2000)
      // no per-call timer unless declared; a run deadline of an hour
      assert.isUndefined(o.toolTimeout)
      assert.strictEqual(Duration.toMillis(Duration.decode(o.runTimeout)), 3_600_000)
      assert.isTrue(o.useNativeTools && o.completionCheck)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("REACT_* variables are read; explicit options win", () =>
    Effect.gen(function*() {
      const env = {
        REACT_MAX_ITERATIONS: "7",
        REACT_CYCLE_DETECTION_THRESHOLD: "4",
        REACT_SELF_REFLECTION_INTERVAL: "0",
        REACT_COMPLETION_CHECK_MIN_TOOLS: "1",
        REACT_TOOL_SELECTION_THRESHOLD: "20",
        REACT_TOOL_SELECTION_MAX: "3",
        REACT_TOOL_RESULT_BUDGET: "1000",
        REACT_MAX_TURN_TOKENS: "5000",
        REACT_TOOL_OBS_TRUNCATION: "500",
        REACT_TOOL_TIMEOUT_MS: "1500",
        REACT_RUN_TIMEOUT_MS: "90000"
      }
      const o = yield* AgentConfig.load().pipe(withEnv(env))
      assert.deepStrictEqual(
        [o.maxIterations, o.cycleDetectionThreshold, o.selfReflectionInterval, o.completionCheckMinTools],
        [7, 4, 0, 1]
      )
      assert.deepStrictEqual([o.toolSelectionThreshold, o.toolSelectionMax, o.toolResultBudget, o.maxTurnTokens], [
        20,
        3,
        1000,
        5000
      ])
      assert.strictEqual(o.toolObsTruncation, 500)
      assert.strictEqual(Duration.toMillis(Duration.decode(o.toolTimeout!)), 1500)
      assert.strictEqual(Duration.toMillis(Duration.decode(o.runTimeout)), 90_000)
      const explicit = yield* AgentConfig.load({ maxIterations: 9, toolTimeout: "2 seconds", runTimeout: "5 minutes" })
        .pipe(withEnv(env))
      assert.strictEqual(explicit.maxIterations, 9)
      assert.strictEqual(Duration.toMillis(Duration.decode(explicit.toolTimeout!)), 2000)
      assert.strictEqual(Duration.toMillis(Duration.decode(explicit.runTimeout)), 300_000)
      // 0: no deadline
      const none = yield* AgentConfig.load().pipe(withEnv({ REACT_RUN_TIMEOUT_MS: "0" }))
      assert.isFalse(Duration.isFinite(Duration.decode(none.runTimeout)))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("an invalid variable is a ConfigError naming it", () =>
    Effect.gen(function*() {
      for (
        const [name, value] of [["REACT_MAX_ITERATIONS", "lots"], ["REACT_MAX_ITERATIONS", "0"], [
          "REACT_TOOL_TIMEOUT_MS",
          "-5"
        ], ["REACT_RUN_TIMEOUT_MS", "-1"]]
      ) {
        const exit = yield* Effect.exit(AgentConfig.load().pipe(withEnv({ [name]: value })))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) assert.include(String(exit.cause), name)
      }
      const bad = yield* Effect.exit(AgentConfig.load({ maxIterations: 0 }))
      assert.isTrue(Exit.isFailure(bad) && String(bad.cause).includes("maxIterations"))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("ReactAgent.layerConfig fails with the ConfigError; ReactAgent.layer does not read the environment", () =>
    Effect.gen(function*() {
      const services = Layer.mergeAll(
        ScriptedLlm.layer([]),
        Toolkit.layerNoop,
        noHooks,
        recordingGuard().layer,
        Interrupts.layerMemory,
        ModelRegistry.layer({ main: ScriptedLlm.makeUnsafe([]).service }),
        NodeFileSystem.layer
      )
      const env = withEnv({ REACT_CYCLE_DETECTION_THRESHOLD: "x" })
      const exit = yield* Effect.exit(
        Effect.provide(ReactAgent.ReactAgent, ReactAgent.layerConfig().pipe(Layer.provide(services))).pipe(env)
      )
      assert.isTrue(Exit.isFailure(exit) && String(exit.cause).includes("REACT_CYCLE_DETECTION_THRESHOLD"))
      const explicit = yield* Effect.exit(
        Effect.provide(ReactAgent.ReactAgent, ReactAgent.layer().pipe(Layer.provide(services))).pipe(env)
      )
      assert.isTrue(Exit.isSuccess(explicit))
      const invalid = yield* Effect.exit(
        Effect.provide(ReactAgent.ReactAgent, ReactAgent.layer({ maxIterations: 0 }).pipe(Layer.provide(services)))
      )
      assert.isTrue(Exit.isFailure(invalid) && String(invalid.cause).includes("maxIterations"))
    }))

  it.effect("ReactAgent.layerConfig takes a Config.Wrap: the caller's Configs win over REACT_*, the rest still comes from it", () =>
    Effect.gen(function*() {
      // a model that calls a tool forever: the run stops at maxIterations (then synthesis answers)
      const iterationsWith = (config?: Parameters<typeof ReactAgent.layerConfig>[0]) => {
        const llm = ScriptedLlm.makeUnsafe((request) =>
          (request.tools ?? []).length === 0 ? ScriptedLlm.text("answer") : ScriptedLlm.toolCall("echo", { text: "x" })
        )
        const services = Layer.mergeAll(
          llm.layer,
          Toolkit.layer([echoTool]),
          noHooks,
          recordingGuard().layer,
          Interrupts.layerMemory,
          ModelRegistry.layer({ main: llm.service }),
          NodeFileSystem.layer
        )
        return Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "q" })).pipe(
          Effect.provide(ReactAgent.layerConfig(config).pipe(Layer.provide(services))),
          withEnv({ REACT_MAX_ITERATIONS: "3", MY_MAX_STEPS: "1", REACT_SYNTHESIS: "always" }),
          Effect.map((result) => result.iterations)
        )
      }
      assert.strictEqual(yield* iterationsWith(), 3)
      assert.strictEqual(yield* iterationsWith({ maxIterations: Config.integer("MY_MAX_STEPS") }), 1)
      assert.strictEqual(yield* iterationsWith(Config.succeed({ maxIterations: 2 })), 2)
      // a Config of the caller's that fails is the layer's ConfigError, naming its variable
      const missing = yield* Effect.exit(iterationsWith({ maxIterations: Config.integer("NOT_SET") }))
      assert.isTrue(Exit.isFailure(missing) && String(missing.cause).includes("NOT_SET"))
    }))
})
