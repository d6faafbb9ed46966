/**
 * The `auto` mode router: one `structuredCall` on the fast model
 * chooses ReAct or DAG mode for a query; any failure chooses ReAct.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { LlmService } from "../../Llm.js"
import * as Message from "../../Message.js"
import { structuredCallWith } from "../../StructuredCall.js"
import * as Usage from "../../Usage.js"

const Route = Schema.Struct({
  mode: Schema.Literal("react", "dag"),
  reason: Schema.optional(Schema.NullOr(Schema.String))
})

const QUERY_MAX = 4000

const SYSTEM = [
  "You route a user's request to one of two agent modes.",
  "\"dag\": the request has several distinct parts that can be researched or done independently (in parallel) and then combined, e.g. comparing several items or gathering facts from different sources.",
  "\"react\": everything else, in particular simple questions, single tasks, conversation, and tightly coupled work where each action depends on the previous one.",
  "When unsure, choose \"react\"."
].join("\n")

/** @internal */
export const FUNCTION_NAME = "choose_mode"

/** The mode for `query` and the call's usage; never fails. */
export const route = (
  llm: LlmService,
  query: string
): Effect.Effect<{ readonly mode: "react" | "dag"; readonly usage: Usage.Usage }> =>
  structuredCallWith(llm, {
    messages: [
      Message.system(SYSTEM),
      Message.user(query.length > QUERY_MAX ? `${query.slice(0, QUERY_MAX)}…` : query)
    ],
    schema: Route,
    functionName: FUNCTION_NAME,
    functionDescription: "Choose the agent mode for the request.",
    phase: "routing"
  }).pipe(
    Effect.map((result) => ({ mode: result.value.mode, usage: result.usage })),
    Effect.catchTag("StructuredOutputError", (error) =>
      Effect.as(Effect.logWarning(`auto mode: the router failed (${error.message}); using react`), {
        mode: "react" as const,
        usage: error.usage ?? Usage.empty
      })),
    Effect.catchAllDefect((defect) =>
      Effect.as(Effect.logWarning(`auto mode: the router failed (${String(defect)}); using react`), {
        mode: "react" as const,
        usage: Usage.empty
      })
    ),
    Effect.withSpan("dag.route", { captureStackTrace: false })
  )
