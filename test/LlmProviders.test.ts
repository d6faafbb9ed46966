/**
 * `LLM_PROVIDER` / `FAST_LLM_PROVIDER` through `ModelRegistry.layerConfig`, from a
 * config map (no process): each model talks to the fake of its own wire protocol
 * (the Anthropic fake, the OpenAI-compatible fake), keys and URLs resolved as
 * documented, refused providers and bad values are `ConfigError`s that say why,
 * and `prompt_cache_key` is one per conversation.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Message from "../src/Message.js"
import * as ModelRegistry from "../src/ModelRegistry.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as FakeAnthropic from "./utils/fakeAnthropicServer.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const registry = (env: Record<string, string>) =>
  Effect.flatMap(
    Layer.build(
      ModelRegistry.layerConfig().pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
      )
    ),
    (context) =>
      Effect.succeed(context.unsafeMap.get(ModelRegistry.ModelRegistry.key) as ModelRegistry.ModelRegistryService)
  )

const ask = (q: string) => ({ messages: [Message.system("Be terse."), Message.user(q)] })

describe("LlmProviders (LLM_PROVIDER, FAST_LLM_PROVIDER)", () => {
  it.scopedLive("anthropic main (a pasted /v1 dropped, ANTHROPIC_API_KEY) and an OpenAI-compatible fast model", () =>
    Effect.gen(function*() {
      const claude = yield* FakeAnthropic.scoped(() => FakeAnthropic.text("from claude"))
      const local = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "from the fast model" }))
      const models = yield* registry({
        LLM_PROVIDER: "anthropic",
        LLM_MODEL: "claude-test",
        LLM_BASE_URL: `${claude.url}/v1`,
        ANTHROPIC_API_KEY: "sk-ant-main",
        LLM_MAX_OUTPUT_TOKENS: "2048",
        FAST_LLM_PROVIDER: "openai-compatible",
        FAST_LLM_MODEL: "small",
        FAST_LLM_BASE_URL: local.url,
        FAST_LLM_API_KEY: "sk-local"
      })
      assert.strictEqual(models.main.model, "claude-test")
      assert.strictEqual(models.main.contextSize, 200_000)
      assert.isFalse(models.main.abilities.jsonMode, "no JSON mode through @effect/ai")
      assert.strictEqual((yield* models.main.chat(ask("hi"))).content, "from claude")
      assert.strictEqual((yield* models.fast.chat(ask("hi"))).content, "from the fast model")
      assert.strictEqual(claude.requests[0].path.split("?")[0], "/v1/messages")
      assert.strictEqual(claude.requests[0].headers["x-api-key"], "sk-ant-main")
      assert.strictEqual(claude.requests[0].body.max_tokens, 2048)
      assert.strictEqual(local.requests[0].headers.authorization, "Bearer sk-local")
      assert.notProperty(local.requests[0].body, "prompt_cache_key", "not OpenAI's own endpoint: no prompt_cache_key")
    }))

  it.scopedLive("a fast Anthropic model falls back to the main one's key and URL; LLM_API_KEY is read when ANTHROPIC_API_KEY is unset", () =>
    Effect.gen(function*() {
      const claude = yield* FakeAnthropic.scoped(() => FakeAnthropic.text("ok"))
      const models = yield* registry({
        LLM_PROVIDER: "anthropic",
        LLM_MODEL: "big",
        LLM_API_KEY: "sk-shared",
        ANTHROPIC_BASE_URL: claude.url,
        FAST_LLM_MODEL: "small"
      })
      yield* models.fast.chat(ask("hi"))
      yield* models.main.chat(ask("hi"))
      assert.deepStrictEqual(claude.requests.map((r) => [r.body.model, r.headers["x-api-key"]]), [[
        "small",
        "sk-shared"
      ], ["big", "sk-shared"]])
    }))

  it.scopedLive("ModelRegistry.layerConfig options: a given provider, model, key and settings win over the variables", () =>
    Effect.gen(function*() {
      const claude = yield* FakeAnthropic.scoped(() => FakeAnthropic.text("from claude"))
      const context = yield* Layer.build(
        ModelRegistry.layerConfig({
          main: {
            provider: Config.succeed("anthropic" as const),
            model: Config.string("MY_MODEL"),
            baseURL: Config.succeed(claude.url),
            apiKey: Config.redacted("MY_KEY"),
            maxOutputTokens: Config.succeed(777)
          },
          fast: { model: Config.succeed("claude-small") }
        }).pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
          new Map(Object.entries({
            MY_MODEL: "claude-given",
            MY_KEY: "sk-given",
            LLM_PROVIDER: "openai-compatible",
            LLM_MODEL: "env-model",
            LLM_API_KEY: "sk-env",
            LLM_MAX_OUTPUT_TOKENS: "2048"
          }))
        ))))
      )
      const models = context.unsafeMap.get(ModelRegistry.ModelRegistry.key) as ModelRegistry.ModelRegistryService
      assert.deepStrictEqual([models.main.model, models.fast.model], ["claude-given", "claude-small"])
      yield* models.main.chat(ask("hi"))
      yield* models.fast.chat(ask("hi"))
      // the fast model of the same provider falls back to the main model's key and URL (the given ones),
      // and shares the given main settings
      assert.deepStrictEqual(
        claude.requests.map((r) => [r.body.model, r.headers["x-api-key"], r.body.max_tokens]),
        [["claude-given", "sk-given", 777], ["claude-small", "sk-given", 777]]
      )
    }))

  it.scopedLive("refused providers, unknown values, a missing model or key: ConfigErrors that say what to do", () =>
    Effect.gen(function*() {
      const error = (env: Record<string, string>) => Effect.map(Effect.flip(registry(env)), String)
      const openrouter = yield* error({ LLM_PROVIDER: "openrouter", LLM_MODEL: "m" })
      assert.include(openrouter, "LLM_PROVIDER=openrouter is not supported")
      assert.include(openrouter, "@effect/ai-openrouter (latest 0.10.1) requires @effect/ai ^0.35")
      assert.include(yield* error({ LLM_PROVIDER: "bedrock", LLM_MODEL: "m" }), "@effect/ai-amazon-bedrock")
      assert.include(
        yield* error({ LLM_PROVIDER: "claude", LLM_MODEL: "m" }),
        "Expected one of openai-compatible, anthropic, openai"
      )
      assert.include(yield* error({ LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "k" }), "LLM_MODEL")
      assert.include(yield* error({ LLM_PROVIDER: "anthropic", LLM_MODEL: "m" }), "ANTHROPIC_API_KEY")
      assert.include(yield* error({ LLM_PROVIDER: "openai", LLM_MODEL: "m" }), "OPENAI_API_KEY")
      assert.include(
        yield* error({ LLM_MODEL: "m", FAST_LLM_PROVIDER: "google", FAST_LLM_MODEL: "f" }),
        "FAST_LLM_PROVIDER=google"
      )
      assert.include(yield* error({ LLM_MODEL: "m", LLM_PROMPT_CACHE: "sometimes" }), "LLM_PROMPT_CACHE")
    }))

  it.live("LLM_PROVIDER alone counts as configuring a model (no silent demo fallback)", () =>
    Effect.gen(function*() {
      const configured = (env: Record<string, string>) =>
        Effect.withConfigProvider(ModelRegistry.isLlmConfigured, ConfigProvider.fromMap(new Map(Object.entries(env))))
      assert.isTrue(yield* configured({ LLM_PROVIDER: "anthropic" }))
      assert.isFalse(yield* configured({ LLM_PROVIDER: "openai-compatible" }))
      assert.isFalse(yield* configured({}))
    }))

  it.scopedLive("prompt_cache_key: one per conversation, the same on every request of it", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "ok" }))
      const llm = OpenAiLlm.makeUnsafe({ model: "m", baseURL: server.url, apiKey: "k", promptCacheKey: true })
      const first = [Message.system("Rules."), Message.user("Plan my trip")]
      yield* llm.chat({ messages: first })
      yield* llm.chat({ messages: [...first, Message.assistant("Where to?"), Message.user("Oslo")] })
      yield* llm.chat({ messages: [Message.system("Rules."), Message.user("Another conversation")] })
      const keys = server.requests.map((r) => r.body.prompt_cache_key)
      assert.match(keys[0], /^ere-[0-9a-f]{8}$/)
      assert.strictEqual(keys[1], keys[0])
      assert.notStrictEqual(keys[2], keys[0])
    }))
})
