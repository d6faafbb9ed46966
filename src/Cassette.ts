/**
 * Cassettes: one run as a versioned JSON document — its input (query,
 * history, options, the tools with their schemas), every model request and
 * reply, every tool call and its outcome, every interrupt drain, the approval
 * decisions and the events. `Recorder` writes them, `Replay` plays them back,
 * the server exports them (`GET /api/conversations/:id/runs/:run_id/cassette`).
 *
 * The format is forward-checked: `decode` reads every version it knows
 * (upgrading older ones) and refuses anything else with a `CassetteError`
 * saying which versions it reads.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Attachments from "./Attachments.js"
import { inRequestOrder } from "./internal/cassette/order.js"
import { ApprovalDecision, Drain, Json, ModelCall, ToolCall, ToolSpec } from "./internal/cassette/records.js"
import { scrubber } from "./internal/cassette/volatile.js"
import { Abilities, LlmError } from "./Llm.js"
import { Steps } from "./Memory.js"
import { ChatMessage, Content } from "./Message.js"
import { isEphemeral, RunEvent } from "./RunEvent.js"

/**
 * The version this engine writes.
 *
 * @since 0.1.0
 * @category constants
 */
export const CURRENT_VERSION = 1 as const

/**
 * The `format` field of every cassette.
 *
 * @since 0.1.0
 * @category constants
 */
export const FORMAT = "react-engine-cassette" as const

// ---------------------------------------------------------------------------
// the records a cassette lists (src/internal/cassette/records.ts)

export {
  /**
   * A person's decision on a call that waited for approval.
   *
   * @since 0.1.0
   * @category models
   */
  ApprovalDecision,
  /**
   * One piece of a streamed reply (`Llm.ChatDelta`).
   *
   * @since 0.1.0
   * @category models
   */
  ChatDelta,
  /**
   * A request as the model received it (`Llm.ChatRequest`).
   *
   * @since 0.1.0
   * @category models
   */
  ChatRequest,
  /**
   * What one drain of the interrupt queue took (every drain, empty ones too, in order).
   *
   * @since 0.1.0
   * @category models
   */
  Drain,
  /**
   * One model call: `chat` (a whole reply) or `stream` (its deltas, then
   * perhaps the error that cut the stream).
   *
   * @since 0.1.0
   * @category models
   */
  ModelCall,
  /**
   * A model call's failure.
   *
   * @since 0.1.0
   * @category models
   */
  ModelError,
  /**
   * One execution of a tool handler (calls blocked by a hook, denied or of an
   * unknown tool never reach a handler and are not here).
   *
   * @since 0.1.0
   * @category models
   */
  ToolCall,
  /**
   * How a tool handler ended, as a cassette stores it — the handler's `Exit`,
   * not the call's outcome (`Tool.ToolOutcome`, which the loop derives from it):
   * the handler's output as it returned it (unchecked: a replay checks it again
   * as the live run did), a `ToolError` message, a defect, or interrupted (a
   * timeout, a cancelled run).
   *
   * @since 0.1.0
   * @category models
   */
  ToolOutcome,
  /**
   * A tool as the run had it.
   *
   * @since 0.1.0
   * @category models
   */
  ToolSpec
} from "./internal/cassette/records.js"

/**
 * A cassette of version 1.
 *
 * @since 0.1.0
 * @category models
 */
export const Cassette = Schema.Struct({
  format: Schema.Literal(FORMAT),
  version: Schema.Literal(CURRENT_VERSION),
  /** The run's id (the server's; in process a fresh one). */
  run_id: Schema.String,
  recorded_at: Schema.String,
  /** Where it was recorded: `in-process` (a `Recorder`) or `server` (the durable run log). */
  source: Schema.Literal("in-process", "server"),
  model: Schema.Struct({ name: Schema.String, abilities: Abilities, context_size: Schema.optional(Schema.Number) }),
  input: Schema.Struct({
    query: Content,
    conversation_id: Schema.String,
    history: Schema.Array(ChatMessage),
    /** The agent options the run was made with (what `Replay.layerAgent` builds the agent with). */
    options: Schema.Record({ key: Schema.String, value: Json }),
    tools: Schema.Array(ToolSpec),
    max_iterations: Schema.optional(Schema.Number),
    user_id: Schema.optional(Schema.String)
  }),
  model_calls: Schema.Array(ModelCall),
  tool_calls: Schema.Array(ToolCall),
  drains: Schema.Array(Drain),
  approvals: Schema.Array(ApprovalDecision),
  events: Schema.Array(RunEvent),
  /** The attachments the run read (referred to by hash everywhere else), each once with its bytes. */
  attachments: Schema.optional(Schema.Array(Attachments.Embedded)),
  /** The run's memory steps (docs/memory.md), when it had a user. */
  memory: Schema.optional(Steps)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Cassette = typeof Cassette.Type
/**
 * @since 0.1.0
 * @category models
 */
export type CassetteJson = typeof Cassette.Encoded

/**
 * A document that is not a cassette this engine reads: not JSON, not a
 * cassette, a version it does not know, or a field that does not decode.
 *
 * @since 0.1.0
 * @category errors
 */
export class CassetteError extends Schema.TaggedError<CassetteError>()("CassetteError", {
  message: Schema.String
}) {}

const decodeCurrent = Schema.decodeUnknownEither(Cassette, { errors: "all", onExcessProperty: "ignore" })
const encodeCurrent = Schema.encodeSync(Cassette)

/**
 * Upgrades of older versions to the next one, by version. Version 1 is the
 * first; a later version adds its predecessor's upgrade here.
 */
const upgrades: Readonly<Record<number, (doc: Record<string, unknown>) => Record<string, unknown>>> = {}

/**
 * Reads a cassette from its JSON value (or text): the current version as is,
 * an older one upgraded, anything else refused with a `CassetteError` that
 * says what is wrong.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (input: unknown): Either.Either<Cassette, CassetteError> => {
  let doc: unknown = input
  if (typeof input === "string") {
    try {
      doc = JSON.parse(input)
    } catch (e) {
      return Either.left(new CassetteError({ message: `A cassette must be JSON: ${(e as Error).message}` }))
    }
  }
  if (
    typeof doc !== "object" || doc === null || Array.isArray(doc) || (doc as Record<string, unknown>).format !== FORMAT
  ) {
    return Either.left(new CassetteError({ message: `Not a cassette: expected an object with "format": "${FORMAT}"` }))
  }
  let current = doc as Record<string, unknown>
  const version = current.version
  if (typeof version !== "number" || !Number.isInteger(version)) {
    return Either.left(
      new CassetteError({
        message: `The cassette has no version (expected an integer "version", got ${JSON.stringify(version)})`
      })
    )
  }
  if (version > CURRENT_VERSION) {
    return Either.left(
      new CassetteError({
        message:
          `Cassette version ${version} is newer than this engine reads (versions 1 to ${CURRENT_VERSION}): upgrade effect-react-engine to replay it`
      })
    )
  }
  for (let v = version; v < CURRENT_VERSION; v++) {
    const upgrade = upgrades[v]
    if (upgrade === undefined) {
      return Either.left(
        new CassetteError({
          message: `Cassette version ${version} is not supported (this engine reads versions 1 to ${CURRENT_VERSION})`
        })
      )
    }
    current = { ...upgrade(current), version: v + 1 }
  }
  return Either.mapLeft(
    decodeCurrent(current),
    (e) =>
      new CassetteError({
        message: `Invalid cassette (version ${version}): ${ParseResult.TreeFormatter.formatErrorSync(e)}`
      })
  )
}

/**
 * `decode` as an effect.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEffect = (input: unknown): Effect.Effect<Cassette, CassetteError> =>
  Effect.suspend(() => decode(input))

/**
 * The cassette as a JSON value (what `JSON.stringify` writes to a file).
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode = (cassette: Cassette): CassetteJson => encodeCurrent(cassette)

/**
 * Event fields that differ between two runs of the same steps by nature, not
 * by behaviour: timings (`elapsed`, `iter_elapsed`), the idempotency keys,
 * approval ids and run ids (a server run's `done` carries its `run_id`, a
 * run in process none). `normalizeEvents` blanks them (approval ids become
 * their order of appearance, `run_id` is left out) so two runs can be
 * compared event by event.
 *
 * @since 0.1.0
 * @category utils
 */
export const volatileEventFields: ReadonlyArray<string> = [
  "elapsed",
  "iter_elapsed",
  "idempotency_key",
  "approval_id",
  "run_id"
]

const encodeEvent = Schema.encodeSync(RunEvent)

/**
 * The events in their Schema encoding (as a cassette stores them), without the
 * in-process-only `steps` and `messages` of `Done` (what a client receives
 * holds neither), with the volatile fields (`volatileEventFields`) replaced by
 * stable placeholders, and a parallel round's `ToolDone` events in the order
 * its calls started: what a replay must reproduce, whether the run was
 * recorded in process or by the server.
 *
 * @since 0.1.0
 * @category utils
 */
export const normalizeEvents = (events: ReadonlyArray<RunEvent>): ReadonlyArray<Record<string, unknown>> => {
  const scrub = scrubber()
  return inRequestOrder(
    events.filter((event) => !isEphemeral(event)).map((event) => {
      const encoded = encodeEvent(event) as Record<string, unknown>
      const { messages: _messages, steps: _steps, ...kept } = encoded
      // through JSON: a field set to `undefined` in process is absent in what was stored or sent
      return scrub(JSON.parse(JSON.stringify(event._tag === "Done" ? kept : encoded))) as Record<string, unknown>
    })
  )
}

/**
 * A model call's failure as a cassette stores it.
 *
 * @since 0.1.0
 * @category conversions
 */
export const errorOf = (e: LlmError): NonNullable<ModelCall["error"]> => ({
  reason: e.reason,
  message: e.message,
  ...(e.status !== undefined ? { status: e.status } : {})
})

/**
 * A stored failure as the `LlmError` a replay fails with.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toLlmError = (e: NonNullable<ModelCall["error"]>): LlmError =>
  new LlmError({ reason: e.reason, message: e.message, ...(e.status !== undefined ? { status: e.status } : {}) })
