/**
 * Replays a cassette: `Replay.layer(cassette)` provides an `Llm` that answers
 * each request with the recorded reply, a `Toolkit` whose tools answer with
 * the recorded outcomes (no handler runs: no side effects) and `Interrupts`
 * that give each drain what the recorded one took. The agent built on them
 * runs again deterministically, without network.
 *
 * Every request is compared with the recorded one. The first that differs
 * stops the replay with a `ReplayDivergence` naming the step and showing the
 * first difference. `lenient: true` goes on where only ignorable fields
 * differ (`ignorableFields`).
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Approvals from "./Approvals.js"
import * as Cassette from "./Cassette.js"
import * as ContextGuard from "./ContextGuard.js"
import * as Hooks from "./Hooks.js"
import { firstDifference, render } from "./internal/replay/diff.js"
import * as Prefix from "./internal/replay/prefix.js"
import * as Services from "./internal/replay/services.js"
import * as Interrupts from "./Interrupts.js"
import { Llm } from "./Llm.js"
import * as ReactAgent from "./ReactAgent.js"
import type { RunEvent, RunResult } from "./RunEvent.js"
import * as Toolkit from "./Toolkit.js"

/**
 * The replayed run asked for something the recorded one did not: `step`
 * names where (`model call 3 of 5 (chat)`, `tool call add (call_1) at
 * iteration 2`, `event 7`), `path` the first differing field and `diff` the
 * difference (`-` recorded, `+` actual).
 *
 * @since 0.1.0
 * @category errors
 */
export class ReplayDivergence extends Schema.TaggedError<ReplayDivergence>()("ReplayDivergence", {
  step: Schema.String,
  path: Schema.String,
  diff: Schema.String
}) {
  override get message(): string {
    return `Replay diverged at ${this.step}, ${this.path}:\n${this.diff}`
  }
}

/**
 * The request fields `lenient` mode ignores: the sampling settings
 * (`temperature`, `maxTokens`), the tools' descriptions
 * (`tools[].function.description`) and the messages' `pinned` flags (the
 * context guard's bookkeeping). Everything else — the messages' roles and
 * content, tool calls, the tool names and parameter schemas, `toolChoice`,
 * `responseFormat` — must match in both modes.
 *
 * @since 0.1.0
 * @category constants
 */
export const ignorableFields: ReadonlyArray<string> = [
  "temperature",
  "maxTokens",
  "tools[].function.description",
  "messages[].pinned"
]

/**
 * @since 0.1.0
 * @category models
 */
export interface ReplayOptions {
  /** Go on where only `ignorableFields` differ (default false: any difference diverges). */
  readonly lenient?: boolean
}

/**
 * What a replay knows: the cassette and the first divergence seen so far.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReplayService {
  readonly cassette: Cassette.Cassette
  readonly lenient: boolean
  /** The first divergence of the replay so far. */
  readonly divergence: Effect.Effect<Option.Option<ReplayDivergence>>
  /** Model calls answered so far. */
  readonly modelCalls: Effect.Effect<number>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Replay extends Context.Tag("effect-react-engine/Replay")<Replay, ReplayService>() {}

const make = (cassette: Cassette.Cassette, options: ReplayOptions) => {
  const lenient = options.lenient === true
  return Effect.map(
    Services.make(cassette, lenient, (step, d) => new ReplayDivergence({ step, path: d.path, diff: render(d) })),
    (replayed) => {
      const service: ReplayService = {
        cassette,
        lenient,
        divergence: replayed.divergence,
        modelCalls: replayed.modelCalls
      }
      return Context.make(Llm, replayed.llm).pipe(
        Context.add(Toolkit.Toolkit, replayed.toolkit),
        Context.add(Interrupts.Interrupts, replayed.interrupts),
        Context.add(Replay, service)
      )
    }
  )
}

/**
 * The model, the tools and the interrupts of `cassette` (plus the `Replay`
 * service). Each build of the layer replays from the start.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  cassette: Cassette.Cassette,
  options: ReplayOptions = {}
): Layer.Layer<Llm | Toolkit.Toolkit | Interrupts.Interrupts | Replay> => Layer.effectContext(make(cassette, options))

/**
 * The whole agent of `cassette`: `layer` plus the agent built with the
 * recorded options (`agent` options override them), no hooks unless given
 * and the default context guard unless given.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAgent = (
  cassette: Cassette.Cassette,
  options: ReplayOptions & {
    readonly agent?: ReactAgent.Options
    readonly hooks?: Layer.Layer<Hooks.Hooks>
    /** The context guard; it may use the replayed `Llm` (an LLM-compaction guard's calls are replayed too). */
    readonly guard?: Layer.Layer<ContextGuard.ContextGuard, never, Llm>
  } = {}
): Layer.Layer<ReactAgent.ReactAgent | Replay, ConfigError.ConfigError> => {
  const services = Layer.provideMerge(options.guard ?? ContextGuard.layer(), layer(cassette, options))
  return ReactAgent.layer({ ...(cassette.input.options as ReactAgent.Options), ...options.agent }).pipe(
    Layer.provideMerge(services),
    Layer.provide(options.hooks ?? Hooks.layerNoop)
  )
}

/**
 * The recorded run's input, for `agent.run`.
 *
 * @since 0.1.0
 * @category utils
 */
export const inputOf = (cassette: Cassette.Cassette): ReactAgent.RunInput => ({
  query: cassette.input.query,
  conversationId: cassette.input.conversation_id,
  history: cassette.input.history,
  ...(cassette.input.max_iterations !== undefined ? { maxIterations: cassette.input.max_iterations } : {})
})

/**
 * Runs `agent` (built on `layer`'s services) on the recorded input, answering
 * its approvals as the recorded person did. Fails with the first
 * `ReplayDivergence`: of a request, a tool call, a drain, or — unless
 * `lenient` — of the events (compared with `Cassette.normalizeEvents`).
 *
 * @since 0.1.0
 * @category utils
 */
export const run = (
  agent: ReactAgent.ReactAgentService,
  options: { readonly input?: Partial<ReactAgent.RunInput> } = {}
): Effect.Effect<{ readonly events: ReadonlyArray<RunEvent>; readonly result: RunResult }, ReplayDivergence, Replay> =>
  Effect.gen(function*() {
    const replay = yield* Replay
    const { cassette } = replay
    const input = { ...inputOf(cassette), ...options.input }
    const conversationId = input.conversationId ?? cassette.input.conversation_id
    let decisions = 0
    const answer = (event: RunEvent): Effect.Effect<void> => {
      if (event._tag !== "ApprovalRequested") return Effect.void
      const recorded = cassette.approvals.find((a) =>
        event.tool_call_id !== undefined ? a.tool_call_id === event.tool_call_id : a.iteration === event.iteration
      ) ?? cassette.approvals[decisions]
      decisions++
      if (recorded === undefined) {
        return Effect.void
      }
      return Effect.ignore(agent.approve({
        conversationId: input.approvalConversationId ?? conversationId,
        approvalId: event.approval_id,
        decision: recorded.decision,
        ...(recorded.reason !== undefined ? { reason: recorded.reason } : {})
      }))
    }
    const events = Chunk.toReadonlyArray(
      yield* Stream.runCollect(Stream.tap(agent.run({ ...input, conversationId }), answer))
    )
    const result = yield* ReactAgent.collect(Stream.fromIterable(events))
    const diverged = yield* replay.divergence
    if (Option.isSome(diverged)) {
      return yield* Effect.fail(diverged.value)
    }
    if (!replay.lenient) {
      const recorded = Cassette.normalizeEvents(cassette.events)
      const actual = Cassette.normalizeEvents(events)
      const d = firstDifference(recorded, actual, "events")
      if (d !== undefined) {
        const index = Number(/^events\[(\d+)\]/.exec(d.path)?.[1] ?? -1)
        return yield* Effect.fail(
          new ReplayDivergence({ step: `event ${index + 1} of ${recorded.length}`, path: d.path, diff: render(d) })
        )
      }
    }
    return { events, result }
  })

/**
 * Wraps the `Llm`, `Toolkit` and `Interrupts` it is given: a run under
 * `withPrefix` takes the steps of a stored prefix from it; outside one they
 * pass calls through. The server's agent is built on it (and on
 * `layerPrefixApprovals`): a fork continues from the original's stored steps.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPrefix: Layer.Layer<
  Llm | Toolkit.Toolkit | Interrupts.Interrupts,
  never,
  Llm | Toolkit.Toolkit | Interrupts.Interrupts
> = Layer.effectContext(Effect.gen(function*() {
  const toolkit = yield* Toolkit.Toolkit
  return Context.make(Llm, Prefix.wrapLlm(yield* Llm)).pipe(
    Context.add(Toolkit.Toolkit, Toolkit.makeUnsafe(toolkit.tools.map(Prefix.wrapTool))),
    Context.add(Interrupts.Interrupts, Prefix.wrapInterrupts(yield* Interrupts.Interrupts))
  )
}))

/**
 * Wraps the `Approvals` it is given: under `withPrefix`, a stored call that
 * waited for a person gets the stored decision instead of asking again.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPrefixApprovals: Layer.Layer<Approvals.Approvals, never, Approvals.Approvals> = Layer.effect(
  Approvals.Approvals,
  Effect.map(Approvals.Approvals, Prefix.wrapApprovals)
)

/**
 * Runs `self` continuing from the steps of `prefix` (a run cut at a fork
 * point): on `layerPrefix`'s services a model request equal to a stored one
 * (as `lenient` compares) gets its stored reply, a tool call the prefix holds
 * (same tool, call id, arguments) that a stored reply asked for its stored
 * outcome — the handler does not run — and the first drains what the stored
 * ones took. Every other step runs live. Each stored step answers once.
 *
 * @since 0.1.0
 * @category utils
 */
export const withPrefix =
  (prefix: Cassette.Cassette) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => Effect.locally(self, Prefix.currentPrefix, Option.some(Prefix.makeState(prefix))))
