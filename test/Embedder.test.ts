/**
 * The embedders against an OpenAI-compatible `POST /embeddings` on a local
 * port (test/utils/fakeEmbeddingsServer.ts: refuses what the real API
 * refuses): `Embedder.layer` through the real `openai` SDK (base64 vectors
 * decoded, the billed tokens reported, an outage an `EmbeddingError`), and
 * `EffectAiEmbedder.layer` over the real `@effect/ai-openai`
 * `EmbeddingModel`. Both give the vectors the server sent.
 */
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiEmbeddingModel from "@effect/ai-openai/OpenAiEmbeddingModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as EffectAiEmbedder from "../src/EffectAiEmbedder.js"
import * as Embedder from "../src/Embedder.js"
import * as FakeEmbeddings from "./utils/fakeEmbeddingsServer.js"

// billed one token a character: not what the embedder would estimate
const server = Effect.acquireRelease(
  Effect.promise(() => FakeEmbeddings.start({ tokensOf: (t) => t.length })),
  (s) => Effect.promise(() => s.close())
)
const texts = ["my dog is called Biscuit", "what is my dog called?"]
const expected = Effect.runSync(Embedder.makeLocal({ dimensions: 256 }).embed(texts)).vectors

const assertVectors = (got: ReadonlyArray<Float32Array>) => {
  assert.strictEqual(got.length, expected.length)
  got.forEach((v, i) => assert.deepStrictEqual(Array.from(v), Array.from(expected[i])))
}

describe("Embedder", () => {
  it.scoped("openai SDK: the server's vectors and billed tokens; an outage is a retryable EmbeddingError", () =>
    Effect.gen(function*() {
      const fake = yield* server
      const embedder = yield* Effect.provide(
        Embedder.Embedder,
        Embedder.layer({ baseURL: fake.url, apiKey: "test", model: "fake-embed" })
      )
      const result = yield* embedder.embed(texts)
      assertVectors(result.vectors)
      assert.strictEqual(result.tokens, texts.reduce((sum, t) => sum + t.length, 0))
      assert.deepStrictEqual(fake.requests.map((r) => r.model), ["fake-embed"])
      fake.down = true
      const failed = yield* Effect.flip(embedder.embed(["anything"]))
      assert.strictEqual(failed._tag, "EmbeddingError")
      assert.isTrue(failed.retryable)
      assert.include(failed.message, "503")
    }))

  it.scoped("@effect/ai EmbeddingModel (@effect/ai-openai): the server's vectors", () =>
    Effect.gen(function*() {
      const fake = yield* server
      const model = OpenAiEmbeddingModel.layerBatched({ model: "fake-embed" }).pipe(
        Layer.provide(OpenAiClient.layer({ apiUrl: fake.url, apiKey: Redacted.make("test") })),
        Layer.provide(FetchHttpClient.layer)
      )
      const embedder = yield* Effect.provide(
        Embedder.Embedder,
        EffectAiEmbedder.layer({ model: "fake-embed" }).pipe(Layer.provide(model))
      )
      assert.strictEqual(embedder.model, "fake-embed")
      const result = yield* embedder.embed(texts)
      assertVectors(result.vectors)
      assert.isAbove(result.tokens, 0)
      assert.deepStrictEqual(fake.texts(), texts)
      fake.down = true
      const failed = yield* Effect.flip(embedder.embed(["anything"]))
      assert.strictEqual(failed._tag, "EmbeddingError")
    }))
})
