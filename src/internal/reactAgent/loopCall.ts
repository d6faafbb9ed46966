/**
 * One loop LLM call as one journal activity, with the interrupt drains that
 * surround it carried in the same activity (a durable run stores one step for
 * both instead of two):
 *
 * - *before* the call, when a native tool round left the drain due: what the
 *   drain takes is the activity's whole result — the call is not made, the
 *   messages join the list (screened, `Inject` events) and the model is asked
 *   in an activity of its own (`<name>/drained`), so they are never read before
 *   the input guardrails passed them;
 * - *after* the call, where the loop drains right after a reply (JSON mode
 *   always; native mode when the reply calls no tool): what it takes is stored
 *   beside the reply and applied by the step after `ThinkingDone`, as before.
 *
 * The drains are keyed by the activity's idempotency key
 * (`InterruptsService.drain`): an activity re-run after a crash (its result
 * was never stored) gets again the messages its first attempt marked drained.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type { Injection } from "../../Interrupts.js"
import type { ChatRequest, ChatResponse } from "../../Llm.js"
import { ChatResponseSchema, LlmError } from "../../Llm.js"
import * as Telemetry from "../../Telemetry.js"
import type { LoopReply } from "./answerStream.js"
import { streamLoopCall } from "./answerStream.js"
import type { LoopEnv } from "./env.js"
import * as State from "./state.js"
import type { StateRef } from "./state.js"

/** What a drain took, as a durable run stores it. */
export const Injections = Schema.Array(Schema.Struct({ id: Schema.String, content: Schema.String }))

/**
 * What a loop call's activity stores: the reply (absent when the drain before
 * the call took messages in) and what its drains took (always present in what
 * this version stores). A reply stored by an earlier version — a bare
 * `ChatResponse`, or a streamed call's `{ response, shown }` — still decodes,
 * without `drained`; anything else fails to decode.
 */
export const StoredCall = Schema.Union(
  ChatResponseSchema,
  Schema.Struct({
    response: Schema.optional(ChatResponseSchema),
    shown: Schema.optional(Schema.Boolean),
    drained: Injections
  }),
  Schema.Struct({ response: ChatResponseSchema, shown: Schema.Boolean })
)

/** A loop call's outcome: the reply, or only the messages the drain before it took. */
export type LoopCall =
  | { readonly _tag: "Reply"; readonly reply: LoopReply }
  | { readonly _tag: "Drained"; readonly drained: ReadonlyArray<Injection> }

const copy = (items: ReadonlyArray<Injection>) => items.map((i) => ({ id: i.id, content: i.content }))

/**
 * The loop call `name` as one activity: drains first when `drainBefore`
 * (returning what it took, if anything, without calling the model), calls the
 * model (streamed when `stream`), drains after the reply where the loop does.
 */
export const loopCall = (
  env: LoopEnv,
  name: string,
  request: ChatRequest,
  iteration: number,
  options: { readonly stream: boolean; readonly drainBefore: boolean }
): Effect.Effect<LoopCall, LlmError> => {
  const key = env.journal.idempotencyKey?.(name)
  const drain = Effect.suspend(() => env.interrupts.drain(env.conversationId, { key }))
  const drainsAfter = (response: ChatResponse) => !env.native || response.toolCalls.length === 0
  const model: Effect.Effect<LoopReply, LlmError> = options.stream
    ? Effect.suspend(() => streamLoopCall(env.llm, request, iteration, env.journal.emit))
    : Effect.map(
      Effect.suspend(() => Telemetry.chat(env.llm, request, { phase: "loop", iteration })),
      (response) => ({ response, shown: false })
    )
  return env.journal.activity({
    name,
    success: StoredCall,
    error: LlmError,
    // a stream cut by a crash starts again: the client discards what it showed
    ...(options.stream ? { restartAware: true } : {}),
    execute: (attempt) =>
      Effect.gen(function*() {
        if (options.stream && attempt.shown === true) yield* env.journal.emit({ _tag: "AnswerReset" })
        if (options.drainBefore) {
          const taken = yield* drain
          if (taken.length > 0) return { drained: copy(taken) }
        }
        const { response, shown } = yield* model
        const drained = drainsAfter(response) ? copy(yield* drain) : []
        return { response, shown, drained }
      })
  }).pipe(Effect.map((stored): LoopCall => {
    // an earlier version's bare reply, and its `{ response, shown }`: no drain was carried
    if ("content" in stored) return { _tag: "Reply", reply: { response: stored, shown: false } }
    if (!("drained" in stored)) return { _tag: "Reply", reply: { response: stored.response, shown: stored.shown } }
    if (stored.response === undefined) return { _tag: "Drained", drained: stored.drained }
    return {
      _tag: "Reply",
      reply: { response: stored.response, shown: stored.shown ?? false, drained: stored.drained }
    }
  }))
}

/**
 * Takes drained messages in: each passes the input guardrails, then all become
 * ONE pinned user message starting `[USER INTERRUPT]`, plus one `Inject` event
 * per message. True when there was anything.
 */
export const takeIn = (env: LoopEnv, state: StateRef, items: ReadonlyArray<Injection>): Effect.Effect<boolean> =>
  items.length === 0 ? Effect.succeed(false) : Effect.zipRight(
    // every injected message passes the input guardrails before the model reads it
    Effect.forEach(items, (item) => env.screen(item.content), { discard: true }),
    Effect.zipRight(
      Ref.update(state, (s) => State.takeInterrupts(s, items.map((i) => i.content))),
      Effect.as(
        Effect.forEach(items, (item) => env.journal.emit({ _tag: "Inject", content: item.content, id: item.id }), {
          discard: true
        }),
        true
      )
    )
  )
