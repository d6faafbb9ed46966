/**
 * Guardrails in a run (see `Guardrail`): the input check that runs beside the
 * first model call, the gate that holds back everything the run would show or
 * do until it passed, the screening of injected messages, and the output
 * check that retracts a tripped answer.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { emitAnswer } from "../../AnswerSynthesis.js"
import type { Guardrail, GuardrailOptions } from "../../Guardrail.js"
import { DEFAULT_REFUSAL, firstTripped, fromSpec } from "../../Guardrail.js"
import type { LlmService } from "../../Llm.js"
import type { RunJournal } from "../../RunJournal.js"
import * as Usage from "../../Usage.js"

/** A tripped guardrail. */
export interface Trip {
  readonly stage: "input" | "output"
  readonly name: string
  readonly reason: string
}

/** The run's guardrails, built. */
export interface RunGuardrails {
  readonly input: ReadonlyArray<Guardrail>
  readonly output: ReadonlyArray<Guardrail>
  readonly refusal: string
  /** What the guardrails' model calls used (a classifier's). */
  usage: Usage.Usage
}

export const build = (options: GuardrailOptions | undefined, llm: LlmService): RunGuardrails | undefined => {
  if (options === undefined) return undefined
  const input = (options.input ?? []).map((g) => fromSpec(g, llm))
  const output = (options.output ?? []).map((g) => fromSpec(g, llm))
  if (input.length === 0 && output.length === 0) return undefined
  return { input, output, refusal: options.refusal ?? DEFAULT_REFUSAL, usage: Usage.empty }
}

/** A check as a durable run stores it (a restarted run does not ask a classifier again). */
const Checked = Schema.Struct({
  tripped: Schema.optional(Schema.Struct({ name: Schema.String, reason: Schema.String })),
  usage: Usage.Usage
})

/** Runs `guardrails` on `text` as the journal activity `name`. */
const checked = (journal: RunJournal, name: string, guardrails: ReadonlyArray<Guardrail>, text: string) =>
  journal.activity({ name, success: Checked, execute: () => firstTripped(guardrails, text) })

/** Events the run may send while its input is being checked: nothing the user reads, no tool. */
const ungated = new Set(["ThinkingStart", "PhaseChange", "LlmRetry", "Compact"])

/** The input side of a run: a gate that opens when the query passed, a trip that ends the run. */
export interface InputScreen {
  /** The journal whose events (besides "thinking", phases) wait for the query's check. */
  readonly journal: RunJournal
  /** Checks the query; forked beside the run's first model call. */
  readonly checkQuery: Effect.Effect<void>
  /** Checks an injected message: a trip ends the run (this effect then never returns). */
  readonly screen: (text: string) => Effect.Effect<void>
  /** Completes when a guardrail trips. */
  readonly tripped: Effect.Effect<Trip>
  /** Whether answer text is showing (to retract on a trip). */
  readonly shown: () => boolean
}

export const inputScreen = (guards: RunGuardrails, journal: RunJournal, query: string): Effect.Effect<InputScreen> =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const trip = yield* Deferred.make<Trip>()
    let screened = 0
    const check = (name: string, text: string) =>
      Effect.flatMap(checked(journal, name, guards.input, text), (result) => {
        guards.usage = Usage.add(guards.usage, result.usage)
        return result.tripped === undefined
          ? Effect.succeed(true)
          : Effect.as(Deferred.succeed(trip, { stage: "input" as const, ...result.tripped }), false)
      })
    let shown = false
    return {
      journal: {
        ...journal,
        emit: (event, options) => {
          if (ungated.has(event._tag)) return journal.emit(event, options)
          return Effect.zipRight(
            Deferred.await(gate),
            Effect.suspend(() => {
              const own = !("agent" in event) || event.agent === undefined
              if (own && (event._tag === "AnswerStart" || event._tag === "AnswerDelta")) shown = true
              else if (own && event._tag === "AnswerReset") shown = false
              return journal.emit(event, options)
            })
          )
        }
      },
      shown: () => shown,
      checkQuery: Effect.flatMap(
        check("guardrail/input", query),
        (ok) => (ok ? Deferred.succeed(gate, undefined) : Effect.void)
      ),
      // injected messages are taken in one after the other: their checks are numbered in that order
      screen: (text) =>
        Effect.flatMap(
          Effect.suspend(() => check(`guardrail/inject/${++screened}`, text)),
          (ok) => (ok ? Effect.void : Effect.never)
        ),
      tripped: Deferred.await(trip)
    }
  })

/** Ends a run on a trip: `GuardrailTripped`, the refusal as the answer (after retracting what was shown). */
export const refuse = (journal: RunJournal, guards: RunGuardrails, trip: Trip, shown: boolean): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.zipRight(
      shown ? journal.emit({ _tag: "AnswerReset" }) : Effect.void,
      journal.emit({ _tag: "GuardrailTripped", ...trip })
    ),
    // before the loop ended (the query, an injected message) nothing said the answer comes now: the
    // refusal is the answer (a consumer that holds back unsettled answer text shows it)
    Effect.zipRight(
      trip.stage === "input" ? journal.emit({ _tag: "AnswerSignal" }) : Effect.void,
      emitAnswer(guards.refusal, journal.emit)
    )
  )

/** Checks the answer against the output guardrails; the trip, if one tripped. */
export const checkOutput = (
  journal: RunJournal,
  guards: RunGuardrails,
  answer: string
): Effect.Effect<Trip | undefined> =>
  guards.output.length === 0 ?
    Effect.succeed(undefined) :
    Effect.map(checked(journal, "guardrail/output", guards.output, answer), (result) => {
      guards.usage = Usage.add(guards.usage, result.usage)
      return result.tripped === undefined ? undefined : { stage: "output" as const, ...result.tripped }
    })
