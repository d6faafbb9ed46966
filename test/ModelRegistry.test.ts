import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { Llm } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import { isLlmConfigured, makeUnsafe as make } from "../src/ModelRegistry.js"
import * as ModelRegistry from "../src/ModelRegistry.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const withEnv = (env: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const main = ScriptedLlm.makeUnsafe([], { model: "main-model" }).service
const fast = ScriptedLlm.makeUnsafe([], { model: "fast-model" }).service
const planner = ScriptedLlm.makeUnsafe([], { model: "planner-model" }).service

describe("ModelRegistry.make", () => {
  it("fast falls back to main", () => {
    const registry = make({ main })
    assert.strictEqual(registry.fast, main)
    assert.isFalse(registry.hasFast)
    assert.strictEqual(registry.resolve("fast"), main)
    assert.deepStrictEqual(registry.names, ["main"])
  })

  it("resolves hints; unknown hints give main", () => {
    const registry = make({ main, fast, planner })
    assert.isTrue(registry.hasFast)
    assert.strictEqual(registry.resolve("fast"), fast)
    assert.strictEqual(registry.resolve("planner"), planner)
    assert.strictEqual(registry.resolve("main"), main)
    assert.strictEqual(registry.resolve("nope"), main)
    assert.strictEqual(registry.resolve(), main)
    assert.deepStrictEqual(registry.names, ["main", "fast", "planner"])
  })

  it.effect("fromLlm uses the Llm in context; layerWithLlm provides both", () =>
    Effect.gen(function*() {
      const a = yield* Effect.provide(
        ModelRegistry.ModelRegistry,
        ModelRegistry.layerFromLlm.pipe(Layer.provide(Layer.succeed(Llm, main)))
      )
      assert.strictEqual(a.main, main)
      assert.strictEqual(a.fast, main)
      const [registry, llm] = yield* Effect.provide(
        Effect.all([ModelRegistry.ModelRegistry, Llm]),
        ModelRegistry.layer({ main, fast })
      )
      assert.strictEqual(llm, main)
      assert.strictEqual(registry.fast, fast)
    }))
})

describe("ModelRegistry.layerConfig", () => {
  const load = (env: Record<string, string>) =>
    Effect.provide(
      Effect.all([ModelRegistry.ModelRegistry, Llm]),
      ModelRegistry.layerConfig().pipe(Layer.provide(withEnv(env)))
    )

  it.effect("main only: fast = main, Llm = main", () =>
    Effect.gen(function*() {
      const [registry, llm] = yield* load({ LLM_MODEL: "big", LLM_BASE_URL: "http://127.0.0.1:1/v1" })
      assert.strictEqual(registry.main.model, "big")
      assert.strictEqual(registry.fast, registry.main)
      assert.isFalse(registry.hasFast)
      assert.strictEqual(llm, registry.main)
    }))

  it.effect("fast model shares the main settings", () =>
    Effect.gen(function*() {
      const [registry] = yield* load({
        LLM_MODEL: "big",
        FAST_LLM_MODEL: "small",
        LLM_CONTEXT_SIZE: "9000",
        LLM_JSON_MODE_ENABLED: "false"
      })
      assert.isTrue(registry.hasFast)
      assert.strictEqual(registry.fast.model, "small")
      assert.strictEqual(registry.resolve("fast").model, "small")
      assert.strictEqual(registry.fast.contextSize, 9000)
      assert.isFalse(registry.fast.abilities.jsonMode)
      assert.isFalse(registry.main.abilities.jsonMode)
    }))

  it.live("fast uses FAST_LLM_BASE_URL / FAST_LLM_API_KEY, else the main ones", () =>
    Effect.scoped(Effect.gen(function*() {
      const mainServer = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "from main server" }))
      const fastServer = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "from fast server" }))
      const request = { messages: [Message.user("hi")] }
      const [own] = yield* load({
        LLM_MODEL: "big",
        LLM_BASE_URL: mainServer.url,
        LLM_API_KEY: "main-key",
        FAST_LLM_MODEL: "small",
        FAST_LLM_BASE_URL: fastServer.url,
        FAST_LLM_API_KEY: "fast-key"
      })
      assert.strictEqual((yield* own.fast.chat(request)).content, "from fast server")
      assert.strictEqual(fastServer.requests[0].headers.authorization, "Bearer fast-key")
      assert.strictEqual(fastServer.requests[0].body.model, "small")
      assert.strictEqual((yield* own.main.chat(request)).content, "from main server")
      const [shared] = yield* load({
        LLM_MODEL: "big",
        LLM_BASE_URL: mainServer.url,
        LLM_API_KEY: "main-key",
        FAST_LLM_MODEL: "small"
      })
      assert.strictEqual((yield* shared.fast.chat(request)).content, "from main server")
      const last = mainServer.requests[mainServer.requests.length - 1]
      assert.strictEqual(last.body.model, "small")
      assert.strictEqual(last.headers.authorization, "Bearer main-key")
    })))

  it.live("options given as Configs win over LLM_* / FAST_LLM_*; the fast model shares the given main settings and URL", () =>
    Effect.scoped(Effect.gen(function*() {
      const mine = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "mine" }))
      const envs = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "the environment's" }))
      const [registry, llm] = yield* Effect.provide(
        Effect.all([ModelRegistry.ModelRegistry, Llm]),
        ModelRegistry.layerConfig({
          main: {
            model: Config.string("MY_MAIN"),
            baseURL: Config.succeed(mine.url),
            contextSize: Config.succeed(9000)
          },
          fast: { model: Config.succeed("small"), maxOutputTokens: Config.succeed(1000) }
        }).pipe(Layer.provide(withEnv({
          MY_MAIN: "big",
          LLM_MODEL: "env-model",
          LLM_BASE_URL: envs.url,
          LLM_CONTEXT_SIZE: "5000",
          FAST_LLM_MODEL: "env-small",
          LLM_JSON_MODE_ENABLED: "false"
        })))
      )
      assert.strictEqual(llm, registry.main)
      assert.deepStrictEqual([registry.main.model, registry.fast.model], ["big", "small"])
      assert.deepStrictEqual([registry.main.contextSize, registry.fast.contextSize], [9000, 9000])
      assert.deepStrictEqual([registry.main.maxOutputTokens, registry.fast.maxOutputTokens], [64000, 1000])
      assert.isFalse(registry.fast.abilities.jsonMode, "the variables still read")
      const request = { messages: [Message.user("hi")] }
      yield* registry.fast.chat(request)
      yield* registry.main.chat(request)
      assert.deepStrictEqual(mine.requests.map((r) => r.body.model), ["small", "big"])
      assert.strictEqual(envs.requests.length, 0)
    })))

  it.live("main model discovered from LLM_BASE_URL when LLM_MODEL is unset; fast still named", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([], { models: ["served-model"] })
      const [registry, llm] = yield* load({ LLM_BASE_URL: server.url, FAST_LLM_MODEL: "tiny" })
      assert.strictEqual(registry.main.model, "served-model")
      assert.strictEqual(llm.model, "served-model")
      assert.strictEqual(registry.fast.model, "tiny")
    })))

  it.effect("a bad fast URL or a missing LLM_MODEL fails naming the variable", () =>
    Effect.gen(function*() {
      const a = yield* Effect.exit(load({ LLM_MODEL: "big", FAST_LLM_MODEL: "s", FAST_LLM_BASE_URL: "ftp://x" }))
      assert.isTrue(Exit.isFailure(a) && String(a.cause).includes("FAST_LLM_BASE_URL"))
      const b = yield* Effect.exit(load({ FAST_LLM_MODEL: "s" }))
      assert.isTrue(Exit.isFailure(b) && String(b.cause).includes("LLM_MODEL"))
    }))

  it.effect("isLlmConfigured: LLM_MODEL or LLM_BASE_URL set and not empty", () =>
    Effect.gen(function*() {
      const check = (env: Record<string, string>) => Effect.provide(isLlmConfigured, withEnv(env))
      assert.isFalse(yield* check({}))
      assert.isFalse(yield* check({ LLM_MODEL: "  ", LLM_API_KEY: "k" }))
      assert.isTrue(yield* check({ LLM_MODEL: "m" }))
      assert.isTrue(yield* check({ LLM_BASE_URL: "http://localhost:11434/v1" }))
    }))
})
