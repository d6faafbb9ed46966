/**
 * The typed answer of a ReAct run (`RunInput.output`, see `Output`): under
 * synthesis policy `auto` the model's own final reply when it already is a
 * value of the schema (no call), else one structured answer call on the
 * synthesis prompt, stored as the run's `output` step. A value that does not
 * validate after the retries fails the run with `OutputInvalid`
 * (`RunFailed.code` `output_invalid`); an answer call that failed, with
 * `OutputUnavailable`.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type * as Schema from "effect/Schema"
import type { SynthesisInput } from "../../AnswerSynthesis.js"
import { buildMessages } from "../../AnswerSynthesis.js"
import * as Output from "../../Output.js"
import type { LoopEnv } from "./env.js"
import * as State from "./state.js"
import type { StateRef } from "./state.js"

/** Writes the typed answer; returns the value (encoded), or fails the run. */
export const typedAnswer = (
  env: LoopEnv,
  ref: StateRef,
  schema: Schema.Schema<any, any>,
  synthesis: SynthesisInput,
  policy: "auto" | "always"
): Effect.Effect<unknown, Output.OutputInvalid | Output.OutputUnavailable> =>
  Effect.gen(function*() {
    const { journal } = env
    const state = yield* Ref.get(ref)
    // `auto`: the model's own final reply, when it already is the value, is the answer
    const own = policy === "auto" && state.stop === "answer"
      ? Output.fromReply(schema, state.answer, journal.emit)
      : undefined
    const result = own !== undefined ? yield* own : yield* journal.activity({
      name: "output",
      success: Output.TypedAnswer,
      restartAware: true,
      // a stream cut by a crash starts again: the client discards what it showed
      execute: ({ shown }) =>
        Effect.zipRight(
          shown === true ? journal.emit({ _tag: "AnswerReset" }) : Effect.void,
          Output.answer({
            llm: env.llm,
            schema,
            messages: buildMessages(synthesis),
            retries: env.options.outputRetries,
            emit: journal.emit
          })
        )
    })
    yield* Ref.update(ref, (s) => State.addUsage(s, "synthesis", result.usage))
    switch (result._tag) {
      case "Answered":
        yield* Ref.update(ref, (s) => State.setAnswer(s, result.answer))
        return result.output
      case "Invalid":
        return yield* Effect.fail(new Output.OutputInvalid({ message: result.message, value: result.value }))
      case "Failed":
        return yield* Effect.fail(
          new Output.OutputUnavailable({ message: result.message, retryable: result.retryable })
        )
    }
  })
