/**
 * The ReAct agent: a tool loop (native function calling or the JSON protocol)
 * followed by one streaming answer-synthesis call, emitted as a `Stream` of
 * `RunEvent`s that always ends with `Done`.
 *
 * CONTRACT: the server codes against `ReactAgent`, `RunInput` and `collect`.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const agent = yield* ReactAgent
 *   yield* agent.run({ query: "What is 2+2?" }).pipe(
 *     Stream.runForEach((event) => Console.log(event._tag))
 *   )
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Channel from "effect/Channel"
import * as Context from "effect/Context"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { AgentOptions } from "./AgentConfig.js"
import * as AgentConfig from "./AgentConfig.js"
import { ContextGuard } from "./ContextGuard.js"
import { Hooks } from "./Hooks.js"
import { execute } from "./internal/reactAgent/run.js"
import { drainChunks } from "./internal/reactAgent/drainChunks.js"
import { Interrupts } from "./Interrupts.js"
import { Llm } from "./Llm.js"
import type { ChatMessage, Content } from "./Message.js"
import { ModelRegistry } from "./ModelRegistry.js"
import type { RunEvent, RunResult } from "./RunEvent.js"
import { Tools } from "./Toolkit.js"

/** @since 0.1.0 @category models */
export interface RunInput {
  /** The user's query (text or multimodal content). */
  readonly query: Content
  /** Conversation id (interrupt queue key); a fresh id when absent. */
  readonly conversationId?: string
  /** Earlier turns of the conversation (user/assistant messages), oldest first. */
  readonly history?: ReadonlyArray<ChatMessage>
  /** Overrides the agent's max iterations for this run. */
  readonly maxIterations?: number
  /**
   * Cancellation: when this effect completes, the run stops at once (LLM request
   * aborted, tools interrupted, every tool call already sent answered with
   * `Error: interrupted` in `Done.messages`) and the stream ends with `Done`
   * (answer `""`, no `RunFailed`). E.g. `Deferred.await(cancelled)`.
   */
  readonly cancel?: Effect.Effect<void>
}

/** @since 0.1.0 @category models */
export interface ReactAgentService {
  /** Runs the agent. The stream never fails: failures become `RunFailed` then `Done`. */
  readonly run: (input: RunInput) => Stream.Stream<RunEvent>
  /** Runs and collects the result. */
  readonly runCollect: (input: RunInput) => Effect.Effect<RunResult>
}

/**
 * Collects a run's events into its result (the `Done` payload, plus the
 * `RunFailed` message when the run failed).
 *
 * @since 0.1.0 @category utils
 */
export const collect = (events: Stream.Stream<RunEvent>): Effect.Effect<RunResult> =>
  Effect.suspend(() => {
    const collector = makeCollector()
    return Effect.zipRight(
      drainChunks(events, (chunk) => {
        for (const event of chunk) collector.push(event)
      }),
      Effect.sync(collector.result)
    )
  })

/** Folds events as they are emitted; `result()` builds the run's result. */
interface Collector {
  readonly push: (event: RunEvent) => void
  readonly result: () => RunResult
}

const makeCollector = (): Collector => {
  let done: Extract<RunEvent, { _tag: "Done" }> | undefined
  let error: RunResult["error"]
  return {
    push: (event) => {
      if (event._tag === "Done") done = event
      else if (event._tag === "RunFailed") error = { message: event.message, retryable: event.retryable }
    },
    result: (): RunResult => {
      if (done === undefined) {
        return {
          answer: "",
          steps: [],
          iterations: 0,
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, llm_calls: 0, by_phase: {} },
          messages: [],
          elapsed: 0,
          pendingInjections: [],
          error: error ?? { message: "The run ended without a result", retryable: true }
        }
      }
      return {
        answer: done.answer,
        steps: done.steps ?? [],
        iterations: done.iterations,
        usage: done.usage,
        messages: done.messages ?? [],
        elapsed: done.elapsed,
        pendingInjections: done.pending_injections,
        ...(error ? { error } : {})
      }
    }
  }
}

/**
 * Builds the agent from its services. Options: explicit values, else `REACT_*`
 * environment variables, else defaults (see `AgentConfig`).
 *
 * @since 0.1.0 @category constructors
 */
export const make = (
  options?: Partial<AgentOptions>
): Effect.Effect<ReactAgentService, ConfigError.ConfigError, Llm | Tools | Hooks | ContextGuard | Interrupts> =>
  Effect.gen(function*() {
    const resolved = yield* AgentConfig.load(options)
    const services = {
      options: resolved,
      llm: yield* Llm,
      toolkit: yield* Tools,
      hooks: yield* Hooks,
      guard: yield* ContextGuard,
      interrupts: yield* Interrupts,
      fast: Option.map(yield* Effect.serviceOption(ModelRegistry), (r) => r.fast)
    }
    // The run's fiber starts when the stream is pulled and is interrupted (and
    // awaited) when the consumer stops; its events are read from the mailbox by
    // chunks. One acquire/use/release channel: cheaper than `Stream.unwrapScoped`.
    const run = (input: RunInput): Stream.Stream<RunEvent> =>
      Stream.fromChannel(Channel.acquireUseRelease(
        Effect.flatMap(Mailbox.make<RunEvent>(), (mailbox) =>
          Effect.map(
            // `acquire` runs uninterruptibly and a fork inherits that: the run itself must stay interruptible.
            Effect.forkDaemon(Effect.interruptible(
              Effect.ensuring(execute(services, input, (event) => void mailbox.unsafeOffer(event)), mailbox.end)
            )),
            (fiber) => ({ mailbox, fiber })
          )),
        ({ mailbox }) => Mailbox.toChannel(mailbox),
        ({ fiber }) => Fiber.interrupt(fiber)
      ))
    // In-process collection needs no event stream: the run folds its events as it
    // emits them. Same result as `collect(run(input))`: a failure escaping the run
    // (a defect, a self-interruption) just ends it, and the result says so; an
    // interruption from outside interrupts the run.
    const runCollect = (input: RunInput): Effect.Effect<RunResult> =>
      Effect.suspend(() => {
        const collector = makeCollector()
        return Effect.zipRight(
          Effect.catchAllCause(execute(services, input, collector.push), () => Effect.void),
          Effect.sync(collector.result)
        )
      })
    return { run, runCollect }
  })

/** @since 0.1.0 @category Context */
export class ReactAgent extends Context.Tag("react-engine/ReactAgent")<ReactAgent, ReactAgentService>() {
  /**
   * The agent over `Llm`, `Tools`, `Hooks`, `ContextGuard` and `Interrupts` (and the
   * optional `ModelRegistry`, whose `fast` model does tool selection).
   *
   * @since 0.1.0
   */
  static readonly layer = (
    options?: Partial<AgentOptions>
  ): Layer.Layer<ReactAgent, ConfigError.ConfigError, Llm | Tools | Hooks | ContextGuard | Interrupts> =>
    Layer.effect(ReactAgent, make(options))
}
