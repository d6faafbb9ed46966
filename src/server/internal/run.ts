/**
 * One server run: loads the conversation's history (compacted to budget), runs
 * the agent, turns its events into numbered SSE frames (replay buffer + PubSub),
 * stores the turn before `done` goes out, and guarantees the last frame is a
 * `done` — after an `error` frame when something failed, with `cancelled: true`
 * when the run was cancelled. LLM retries become `phase {phase:"retrying"}`
 * frames. It logs one line when the run starts and one when it ends.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Deferred from "effect/Deferred"
import * as DeferredM from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { InterruptsService } from "../../Interrupts.js"
import * as Llm from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import type { ReactAgentService } from "../../ReactAgent.js"
import type { Channel, RunEvent } from "../../RunEvent.js"
import { toWire } from "../../RunEvent.js"
import * as Usage from "../../Usage.js"
import type { ConversationStoreService, TurnRecord } from "../ConversationStore.js"
import type { ServerSettings } from "../ServerConfig.js"
import * as Sse from "../Sse.js"
import * as Transcript from "./transcript.js"

/** @internal */
export interface RunState {
  readonly id: string
  readonly conversationId: string
  readonly query: string
  readonly maxIterations?: number
  /** Replay buffer (bounded by `replayBufferSize`). */
  frames: Array<Sse.Frame>
  nextId: number
  /** Live subscribers, called synchronously for each new frame. */
  readonly listeners: Set<(frame: Sse.Frame) => void>
  running: boolean
  leases: number
  leaseGeneration: number
  doneSent: boolean
  readonly cancel: Deferred.Deferred<void>
  readonly finished: Deferred.Deferred<void>
  readonly transcript: Transcript.Transcript
  readonly startedAt: number
  /** Set when the run ended (ms since the epoch). */
  finishedAt?: number
}

/** @internal */
export interface RunDeps {
  readonly settings: ServerSettings
  readonly agent: ReactAgentService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
  readonly store: ConversationStoreService
}

// buffer then fan out, synchronously: a subscriber that snapshots the buffer and
// adds its listener in one synchronous step can neither miss nor repeat a frame
const emit = (run: RunState, channel: Channel, data: Record<string, unknown>, cap: number) =>
  Effect.sync(() => {
    const frame = Sse.frame(run.nextId++, channel, data)
    run.frames.push(frame)
    if (run.frames.length >= cap + 256) run.frames.splice(0, run.frames.length - cap)
    for (const listener of run.listeners) listener(frame)
  })

/** How long a cancelled run may take to send its own `Done` before it is cut. */
const CANCEL_GRACE = "2 seconds"

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** The run's end, for its log line. */
interface Outcome {
  iterations: number
  tokens: number
  llmCalls: number
  retries: number
}

const endLine = (run: RunState, outcome: Outcome, status: "done" | "cancelled" | "failed"): string => {
  const seconds = ((Date.now() - run.startedAt) / 1000).toFixed(2)
  const parts = [
    plural(outcome.iterations, "iteration"),
    `${outcome.tokens} tokens`,
    plural(outcome.llmCalls, "LLM call"),
    ...(outcome.retries === 0 ? [] : [outcome.retries === 1 ? "1 LLM retry" : `${outcome.retries} LLM retries`]),
    `${seconds} s`
  ]
  const failure = status === "failed" && run.transcript.failure !== undefined ? `: ${run.transcript.failure}` : ""
  return `run ${run.id} ${status} (conversation ${run.conversationId}): ${parts.join(", ")}${failure}`
}

const causeMessage = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  return failure instanceof Error ? failure.message : String(failure)
}

/** @internal */
export const execute = (run: RunState, deps: RunDeps): Effect.Effect<void> => {
  const cap = deps.settings.replayBufferSize
  const send = (channel: Channel, data: Record<string, unknown>) => emit(run, channel, data, cap)
  const outcome: Outcome = { iterations: 0, tokens: 0, llmCalls: 0, retries: 0 }

  const onRetry = (notice: Llm.RetryNotice): Effect.Effect<void> =>
    Effect.suspend(() => {
      outcome.retries++
      return send("phase", {
        phase: "retrying",
        attempt: notice.attempt,
        reason: notice.reason,
        delay_ms: Math.round(notice.delayMs)
      })
    })

  const persist = (turn: Omit<TurnRecord, "conversationId" | "query">) =>
    deps.store.appendTurn({ conversationId: run.conversationId, query: run.query, ...turn }).pipe(
      Effect.catchAll((error) => Effect.logError(`run ${run.id}: ${error.message}`))
    )

  const onEvent = (event: RunEvent): Effect.Effect<void> => {
    Transcript.observe(run.transcript, event)
    if (event._tag !== "Done") {
      const wire = toWire(event)
      return send(wire.channel, wire.data)
    }
    outcome.iterations = event.iterations
    outcome.tokens = event.usage.total_tokens
    outcome.llmCalls = event.usage.llm_calls
    return Effect.flatMap(DeferredM.isDone(run.cancel), (cancelled) => {
      const messages = Transcript.loopMessages(event.messages ?? Transcript.messagesFromEvents(run.transcript), run.query)
      // a cancelled run keeps what was already streamed of the answer
      const answer = event.answer === "" ? run.transcript.answer : event.answer
      return persist({
        answer,
        messages,
        usage: event.usage,
        status: cancelled ? "cancelled" : run.transcript.failure === undefined ? "completed" : "failed"
      }).pipe(
        Effect.zipRight(Effect.suspend(() => {
          run.doneSent = true
          return send("done", {
            ...toWire(event).data,
            answer,
            conversation_id: run.conversationId,
            ...(cancelled ? { cancelled: true } : {})
          })
        }))
      )
    })
  }

  const loadHistory: Effect.Effect<ReadonlyArray<ChatMessage>> = deps.store.history(run.conversationId).pipe(
    Effect.flatMap((history) =>
      history.length === 0
        ? Effect.succeed(history)
        : deps.guard.checkAndCompact(history, { hint: "general" }).pipe(
          Effect.tap((checked) =>
            checked.compacted
              ? send("compact", { original_messages: checked.originalMessages, kept_messages: checked.keptMessages })
              : Effect.void
          ),
          Effect.map((checked) => checked.messages)
        )
    ),
    Effect.catchAll((error) =>
      Effect.zipRight(
        Effect.logError(`run ${run.id}: ${error.message}; continuing without history`),
        Effect.succeed<ReadonlyArray<ChatMessage>>([])
      )
    )
  )

  const body = Effect.gen(function*() {
    yield* Effect.logInfo(`run ${run.id} started (conversation ${run.conversationId})`)
    const history = yield* loadHistory
    yield* deps.agent.run({
      query: run.query,
      conversationId: run.conversationId,
      history,
      ...(run.maxIterations !== undefined ? { maxIterations: run.maxIterations } : {}),
      // the agent stops at once and still ends with `Done` (usage, every tool call answered)
      cancel: DeferredM.await(run.cancel)
    }).pipe(
      Stream.runForEach(onEvent),
      // the LLM's retries inside the run (every fiber the agent forks inherits this)
      Llm.withRetryObserver(onRetry),
      // safety net: a run that does not end soon after the cancel is cut (`finish` sends `done`)
      Effect.raceFirst(Effect.zipRight(DeferredM.await(run.cancel), Effect.sleep(CANCEL_GRACE)))
    )
  })

  // the end of every run: unregister the interrupt queue; when no `done` went
  // out (cancelled, or a defect), store what happened and send `done`
  const finish = Effect.gen(function*() {
    const pending = yield* deps.interrupts.unregister(run.conversationId)
    const cancelled = yield* DeferredM.isDone(run.cancel)
    if (!run.doneSent) {
      const t = run.transcript
      outcome.iterations = t.iterations
      yield* persist({
        answer: t.answer,
        messages: Transcript.messagesFromEvents(t),
        status: cancelled ? "cancelled" : "failed"
      })
      run.doneSent = true
      yield* send("done", {
        answer: t.answer,
        iterations: t.iterations,
        usage: Usage.fromPhases({}),
        elapsed: (Date.now() - run.startedAt) / 1000,
        conversation_id: run.conversationId,
        pending_injections: pending.map((p) => ({ id: p.id, content: p.content })),
        ...(cancelled ? { cancelled: true } : {})
      })
    }
    const status = cancelled ? "cancelled" : run.transcript.failure === undefined ? "done" : "failed"
    yield* (status === "failed" ? Effect.logWarning : Effect.logInfo)(endLine(run, outcome, status))
    run.running = false
    run.finishedAt = Date.now()
    yield* DeferredM.succeed(run.finished, undefined)
  })

  return body.pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.zipRight(
          Effect.logError(`run ${run.id} failed`, cause),
          Effect.suspend(() => {
            run.transcript.failure = causeMessage(cause)
            return send("error", { message: `Internal error: ${causeMessage(cause)}`, retryable: false })
          })
        )
    ),
    Effect.onInterrupt(() => DeferredM.succeed(run.cancel, undefined)),
    Effect.ensuring(finish)
  )
}
