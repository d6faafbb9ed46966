/**
 * Agents with memory for the memory tests: one `Memory` shared by every agent
 * built here (a user's runs meet the same memory), an embedder that counts its
 * calls and can be taken down, scripted models that record every request.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { AgentOptions } from "../../src/AgentConfig.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Embedder from "../../src/Embedder.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as Memory from "../../src/Memory.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import type { RunEvent } from "../../src/RunEvent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import type { Tool } from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

/** An embedder that counts the texts it embeds and fails while `down` is set (as an endpoint that is down would). */
export const switchableEmbedder = (base: Embedder.EmbedderService = Embedder.makeLocal()) => {
  const state = { down: false, texts: [] as Array<string> }
  const service: Embedder.EmbedderService = {
    ...base,
    embed: (texts) =>
      Effect.suspend(() => {
        if (state.down) {
          return Effect.fail(new Embedder.EmbeddingError({ message: "503 embeddings are down", retryable: true }))
        }
        for (const text of texts) state.texts.push(text)
        return base.embed(texts)
      })
  }
  return { service, state }
}

export interface MemoryWorld {
  readonly memory: Memory.MemoryService
  readonly store: Memory.Store
  readonly embedder: ReturnType<typeof switchableEmbedder>
}

export const makeWorld = (options: Memory.Options = {}): MemoryWorld => {
  const store = Memory.makeStoreUnsafe()
  const embedder = switchableEmbedder()
  return { memory: Memory.makeUnsafe(store, embedder.service, options), store, embedder }
}

/** One run of an agent over `script` with the world's memory: its events and the model's requests. */
export const runOnce = (
  world: MemoryWorld | undefined,
  script: ReadonlyArray<ScriptedLlm.ScriptStep> | ScriptedLlm.Responder,
  input: ReactAgent.RunInput,
  options: { readonly tools?: ReadonlyArray<Tool>; readonly agent?: Partial<AgentOptions> } = {}
) =>
  Effect.gen(function*() {
    const llm = ScriptedLlm.makeUnsafe(script)
    const deps = Layer.mergeAll(
      llm.layer,
      Toolkit.layer(options.tools ?? []),
      Hooks.layerNoop,
      ContextGuard.layer(),
      Interrupts.layerMemory,
      world === undefined ? Layer.empty : Layer.succeed(Memory.Memory, world.memory)
    )
    const events = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => Stream.runCollect(agent.run(input))).pipe(
      Effect.provide(
        ReactAgent.layer({ synthesis: "auto", ...options.agent }).pipe(Layer.provideMerge(deps), Layer.orDie)
      )
    )
    const list = Chunk.toReadonlyArray(events)
    const done = list.find((e): e is Extract<RunEvent, { _tag: "Done" }> => e._tag === "Done")
    if (done === undefined) throw new Error("the run ended without Done")
    return { events: list, done, requests: llm.requests }
  })

/** Everything the model was sent in a request, as one string (system prompt, messages, tools). */
export const requestText = (request: ScriptedLlm.RecordedRequest): string => JSON.stringify(request.request)
