/**
 * Charging an account for what a call spent: the ledger settles the call's
 * reservation, and its cost (or that it had no price) is added to the account
 * and every account above it (a sub-agent's parents). `metered` reserves,
 * runs and charges one call that is not a model call (an embedding).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Account } from "../../Budget.js"
import { LlmError } from "../../Llm.js"
import * as Usage from "../../Usage.js"
import * as L from "./ledger.js"

/** Settles `reservation` with `usage` and adds its cost up the account chain. */
export const charge = (
  account: Account,
  reservation: L.Reservation,
  usage: Usage.Usage,
  outcome: NonNullable<L.Entry["outcome"]>
) => {
  if (account.ledger !== undefined) L.settle(account.ledger, reservation, usage, outcome)
  const cost = L.costOf(account.prices, reservation.model, usage)
  for (let a: Account | undefined = account; a !== undefined; a = a.parent) {
    if (cost === undefined) a.unpriced = true
    else a.cost += cost
  }
}

/** `Budget.embedding` on the fiber's account (none: `call` itself). */
export const metered = <A, E>(
  account: Account | undefined,
  model: string,
  estimate: number,
  call: Effect.Effect<{ readonly value: A; readonly tokens: number }, E>
): Effect.Effect<A, E | LlmError> => {
  if (account === undefined) return Effect.map(call, (r) => r.value)
  const r = account.ledger === undefined
    ? { call: 0, model, input: estimate, output: 0, usd: 0 }
    : L.reserve(account.ledger, model, estimate, 0)
  if (typeof r === "string") return Effect.fail(new LlmError({ reason: "Budget", message: r }))
  return call.pipe(
    Effect.onExit((exit) =>
      Effect.sync(() =>
        charge(
          account,
          r,
          Usage.make(exit._tag === "Success" ? exit.value.tokens : r.input, 0),
          exit._tag === "Success" ? "ok" : "failed"
        )
      )
    ),
    Effect.map((result) => result.value)
  )
}
