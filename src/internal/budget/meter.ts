/**
 * The model-call seam (`Budget.chat`, `Budget.streamChat`, `Budget.streamChatWith`):
 * a call reserves its worst case on the account's ledger before it is made —
 * waiting for calls in flight to settle when it does not fit yet — is sent with
 * `maxTokens` lowered to what it was granted, is charged the input of every
 * failed attempt, and settles with the usage it reported (or, cut, with what
 * it read and wrote so far).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Stream from "effect/Stream"
import type { Account } from "../../Budget.js"
import type { ChatDelta, ChatRequest, ChatResponse, LlmService } from "../../Llm.js"
import { currentRetryObserver, LlmError } from "../../Llm.js"
import * as TokenEstimator from "../../TokenEstimator.js"
import * as Usage from "../../Usage.js"
import * as Charges from "./charges.js"
import * as L from "./ledger.js"

/**
 * The estimated input tokens of a request (messages and advertised tools).
 *
 * @since 0.1.0
 * @category utils
 */
export const estimateInput = (request: ChatRequest): number =>
  TokenEstimator.estimateMessages(request.messages) +
  (request.tools !== undefined && request.tools.length > 0
    ? TokenEstimator.estimateText(JSON.stringify(request.tools))
    : 0)

const reserveFor = (account: Account, llm: LlmService, request: ChatRequest): L.Reservation | LlmError => {
  const input = estimateInput(request)
  if (account.ledger === undefined) return { call: 0, model: llm.model, input, output: 0, usd: 0 }
  // the worst case is the output the request may ask for: its own maxTokens, else the budget's
  // reserve (never over what the model can write); it is sent as the request's max_tokens
  const wanted = request.maxTokens ?? account.ledger.reserveOutput
  const r = L.reserve(account.ledger, llm.model, input, Math.min(wanted, llm.maxOutputTokens ?? Infinity))
  return typeof r === "string" ? new LlmError({ reason: "Budget", message: r }) : r
}

/**
 * When calls in flight hold reservations on the run's ledger (parallel calls, sub-agents),
 * waits for the next of them to settle — each spends at most what it reserved, usually
 * less — and succeeds with true; false at once when none is in flight (waiting cannot help).
 *
 * @since 0.1.0
 * @category utils
 */
export const roomFreed = (ledger: L.Ledger): Effect.Effect<boolean> =>
  ledger.open <= 0 ? Effect.succeed(false) : Effect.as(
    Effect.async<void>((resume) => {
      const wake = () => resume(Effect.void)
      ledger.waiters.add(wake)
      return Effect.sync(() => void ledger.waiters.delete(wake))
    }),
    true
  )

/** Reserves the call; a refusal while other calls hold reservations waits for them to settle and tries again. */
const reserveWaiting = (
  account: Account,
  llm: LlmService,
  request: ChatRequest
): Effect.Effect<L.Reservation, LlmError> =>
  Effect.suspend(() => {
    const r = reserveFor(account, llm, request)
    if (!(r instanceof LlmError)) return Effect.succeed(r)
    if (account.ledger === undefined) return Effect.fail(r)
    return Effect.flatMap(
      roomFreed(account.ledger),
      (freed) => (freed ? reserveWaiting(account, llm, request) : Effect.fail(r))
    )
  })

const capped = (request: ChatRequest, account: Account, r: L.Reservation): ChatRequest =>
  account.ledger === undefined ? request : { ...request, maxTokens: r.output }

/** A retry: the failed attempt is charged its input (the provider may have read the prompt). */
const chargingRetries = (account: Account, r: L.Reservation) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    FiberRef.get(currentRetryObserver),
    (observe) =>
      Effect.locally(self, currentRetryObserver, (notice) =>
        Effect.zipRight(
          Effect.sync(() => {
            if (account.ledger !== undefined) {
              account.ledger.spentTokens += r.input
              account.ledger.spentUsd += L.costOf(account.prices, r.model, Usage.make(r.input, 0)) ?? 0
            }
          }),
          observe(notice)
        ))
  )

/** `Budget.chat` with the fiber's account read (none: `llm.chat(request)` itself). */
export const chat = (
  account: Account | undefined,
  llm: LlmService,
  request: ChatRequest
): Effect.Effect<ChatResponse, LlmError> => {
  if (account === undefined) return llm.chat(request)
  return Effect.flatMap(reserveWaiting(account, llm, request), (r) =>
    llm.chat(capped(request, account, r)).pipe(
      chargingRetries(account, r),
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (exit._tag === "Success") Charges.charge(account, r, exit.value.usage, "ok")
          else {Charges.charge(
              account,
              r,
              Usage.make(r.input, 0),
              Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "failed"
            )}
        })
      )
    ))
}

/**
 * `streamChat` with the account already read (`currentAccount`): without one it
 * is `llm.streamChat(request)` itself, no stream around it.
 *
 * @since 0.1.0
 * @category metering
 */
export const streamChatWith = (
  account: Account | undefined,
  llm: LlmService,
  request: ChatRequest
): Stream.Stream<ChatDelta, LlmError> =>
  account === undefined ?
    llm.streamChat(request) :
    Stream.unwrapScoped(Effect.flatMap(reserveWaiting(account, llm, request), (r) => {
      let usage: Usage.Usage | undefined
      let seen = 0
      return Effect.as(
        Effect.addFinalizer((exit) =>
          Effect.sync(() => {
            const outcome = exit._tag === "Success"
              ? "ok"
              : Cause.isInterruptedOnly(exit.cause)
              ? "interrupted"
              : "failed"
            Charges.charge(account, r, usage ?? Usage.make(r.input, seen), outcome)
          })
        ),
        Stream.map(llm.streamChat(capped(request, account, r)), (delta) => {
          if (delta._tag === "Usage") usage = usage === undefined ? delta.usage : Usage.add(usage, delta.usage)
          else if (delta._tag === "Content" || delta._tag === "Reasoning") {
            seen += TokenEstimator.estimateText(delta.text)
          } else if (delta._tag === "ToolCall") seen += TokenEstimator.estimateText(delta.arguments ?? "")
          return delta
        })
      )
    }))
