/**
 * Tools: a name, a description, parameters as an Effect Schema (JSON Schema is
 * generated from it) and a handler Effect returning text or a rich result.
 * Arguments are decoded with the Schema before the handler runs: a decode failure
 * is a `ToolError` the model reads as an observation, never a defect.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as ErrorMessage from "./ErrorMessage.js"
import type { ToolUseContext } from "./Hooks.js"
import type { ToolOutput } from "./internal/tool/output.js"
import { ToolOutput as ToolOutputSchema } from "./internal/tool/output.js"
import * as JsonSchema from "./JsonSchema.js"
import type { JsonSchemaObject, ToolDefinition } from "./Llm.js"

export {
  /**
   * A file a tool produced, for the UI to preview or download.
   *
   * @since 0.1.0
   * @category models
   */
  Artifact,
  /**
   * @since 0.1.0
   * @category models
   */
  ContentType,
  /**
   * A tool result with a content type and artifacts (files the UI can preview or
   * download). `usage`: LLM usage the tool spent producing it (an agent used as a
   * tool reports its sub-run's); the run counts it in `by_phase.subagents`.
   * `files`: attachments the model is to see (an image, a screenshot: store the
   * bytes with `Attachments.put`, return `Message.file(ref)`), see docs/attachments.md.
   *
   * @since 0.1.0
   * @category models
   */
  RichResult,
  /**
   * How a tool call came out, as the loop, Post hooks and a durable run's
   * stored steps see it: the tool's checked output, or a failure message (the
   * tool failed, crashed, timed out; bad arguments, an unknown tool, a call
   * blocked or denied). The one outcome type of a call (`Hooks.ToolOutcome` is
   * this one).
   *
   * @since 0.1.0
   * @category models
   */
  ToolOutcome,
  /**
   * What a handler returns: text, or a rich result.
   *
   * @since 0.1.0
   * @category models
   */
  ToolOutput
} from "./internal/tool/output.js"

export {
  /**
   * @since 0.1.0
   * @category models
   */
  type CallContext,
  /**
   * @since 0.1.0
   * @category context
   */
  currentCall,
  /**
   * @since 0.1.0
   * @category utils
   */
  progress,
  /**
   * @since 0.1.0
   * @category context
   */
  withCall
} from "./internal/tool/call.js"

/**
 * @since 0.1.0
 * @category errors
 */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  message: Schema.String
}) {}

/**
 * A tool. `R`: the services its handler needs (its `dependencies`) until
 * `provide` (`Toolkit.layer` does it); the agent runs only tools that need nothing.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<out R = never> {
  readonly name: string
  readonly description: string
  /** The services the handler needs (the tags of `R`); absent when it needs none. */
  readonly dependencies?: ReadonlyArray<Context.Tag<any, any>>
  /** Decodes the model's arguments object. */
  readonly decode: (args: unknown) => Effect.Effect<unknown, ToolError>
  readonly jsonSchema: JsonSchemaObject
  readonly handler: (args: any) => Effect.Effect<ToolOutput, ToolError, R>
  /** False for tools that write or have side effects (the read-only hook blocks them). */
  readonly readOnly: boolean
  /** Always advertised, even when tool selection narrowed the set. */
  readonly pinned: boolean
  /** Per-tool timeout (unset: the agent's `toolTimeout` if it has one, else the run's deadline bounds the call). */
  readonly timeout?: Duration.DurationInput
  /**
   * Safe to run twice with the same arguments. A durable run re-runs an
   * idempotent call that was in flight when its process died; any other call is
   * answered with an error observation instead (it may have happened already).
   */
  readonly idempotent: boolean
  /**
   * A person approves each call before it runs: `true`, or a check of
   * the call's arguments (after the PreToolUse hooks). Absent: no approval
   * (unless the agent's `approvalTools` names the tool).
   */
  readonly needsApproval?:
    | true
    | ((args: Record<string, unknown>, context: ToolUseContext) => Effect.Effect<boolean, unknown>)
}

/**
 * When a call needs a person's approval: always (`true`), never (`false`), or
 * when the check of its decoded arguments says so. A check that fails asks.
 *
 * @since 0.1.0
 * @category models
 */
export type NeedsApproval<A> = boolean | ((args: A, context: ToolUseContext) => Effect.Effect<boolean, unknown>)

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions<A, I, Deps extends ReadonlyArray<Context.Tag<any, any>> = []> {
  readonly name: string
  readonly description: string
  readonly parameters: Schema.Schema<A, I, never>
  /** The tags of the services the handler needs (the tool's `R`; as `@effect/ai`'s `Tool.make`). */
  readonly dependencies?: Deps
  readonly handler: (args: A) => Effect.Effect<ToolOutput, ToolError, Context.Tag.Identifier<Deps[number]>>
  readonly readOnly?: boolean
  readonly pinned?: boolean
  readonly timeout?: Duration.DurationInput
  /** Default false: see `Tool.idempotent`. */
  readonly idempotent?: boolean
  /** Default false: see `Tool.needsApproval`. */
  readonly needsApproval?: NeedsApproval<A>
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * Defines a tool. The name must match `^[a-zA-Z0-9_-]{1,64}$` (what OpenAI accepts)
 * and the parameters must be an object schema; either mistake throws a clear
 * `Error` at definition time.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A, I, const Deps extends ReadonlyArray<Context.Tag<any, any>> = []>(
  options: ToolOptions<A, I, Deps>
): Tool<Context.Tag.Identifier<Deps[number]>> => {
  if (!NAME.test(options.name)) throw new Error(`Invalid tool name "${options.name}": use 1-64 of [a-zA-Z0-9_-]`)
  const jsonSchema = JsonSchema.make(options.parameters)
  if (!JsonSchema.isObjectRoot(jsonSchema)) {
    throw new Error(
      `Invalid parameters for tool "${options.name}": expected an object schema (Schema.Struct or Schema.Class), got ${
        JSON.stringify(jsonSchema).slice(0, 120)
      }`
    )
  }
  const decodeUnknown = Schema.decodeUnknown(options.parameters, { errors: "all", onExcessProperty: "ignore" })
  const decodeNow = Schema.decodeUnknownEither(options.parameters, { errors: "all", onExcessProperty: "ignore" })
  const rule = options.needsApproval
  return {
    name: options.name,
    description: options.description,
    jsonSchema,
    decode: (args) => {
      // arguments that decode at once cost one step; anything else (bad arguments, a schema that
      // decodes asynchronously) takes the effectful decoder, which says what is wrong
      const now = decodeNow(args)
      if (Either.isRight(now)) return Effect.succeed(now.right)
      return decodeUnknown(args).pipe(
        Effect.mapError((e) =>
          new ToolError({
            message: `Invalid arguments for ${options.name}: ${ParseResult.TreeFormatter.formatErrorSync(e)}`
          })
        )
      )
    },
    handler: options.handler as (
      args: any
    ) => Effect.Effect<ToolOutput, ToolError, Context.Tag.Identifier<Deps[number]>>,
    ...(options.dependencies !== undefined && options.dependencies.length > 0
      ? { dependencies: options.dependencies }
      : {}),
    readOnly: options.readOnly ?? true,
    pinned: options.pinned ?? false,
    idempotent: options.idempotent ?? false,
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
    ...(rule === true ? { needsApproval: true as const } : typeof rule === "function"
      ? {
        // arguments that do not decode never reach the handler: nothing to approve
        needsApproval: (args: Record<string, unknown>, context: ToolUseContext) =>
          Effect.matchEffect(decodeUnknown(args), {
            onFailure: () => Effect.succeed(false),
            onSuccess: (a) => rule(a, context)
          })
      }
      : {})
  }
}

/**
 * The tool with its handler's `dependencies` provided from `context`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const provide = <R>(tool: Tool<R>, context: Context.Context<R>): Tool => {
  // a tool that needs nothing stays as it is (providing costs a context switch per call)
  if (tool.dependencies === undefined) return tool as Tool
  const services = Context.pick(...tool.dependencies)(context as Context.Context<any>) as Context.Context<R>
  return {
    ...tool,
    handler: (args) => Effect.provide(runHandler(tool, args), services) as Effect.Effect<ToolOutput, ToolError>
  }
}

const AnyObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * Defines a tool from a ready JSON Schema (MCP tools, user JSON); arguments are
 * only checked to be an object.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromJsonSchema = (options: {
  readonly name: string
  readonly description: string
  readonly jsonSchema: JsonSchemaObject
  readonly handler: (args: Record<string, unknown>) => Effect.Effect<ToolOutput, ToolError>
  readonly readOnly?: boolean
  readonly pinned?: boolean
  readonly timeout?: Duration.DurationInput
  readonly idempotent?: boolean
  readonly needsApproval?: NeedsApproval<Record<string, unknown>>
}): Tool => {
  const tool = make({ ...options, parameters: AnyObject })
  const schema: Record<string, unknown> = { ...options.jsonSchema }
  delete schema.$schema
  if (schema.type === undefined) schema.type = "object"
  if (schema.properties === undefined) schema.properties = {}
  return { ...tool, jsonSchema: schema }
}

const decodeOutput = Schema.decodeUnknownEither(ToolOutputSchema, { onExcessProperty: "ignore" })

const invalidOutput = (tool: Tool, output: unknown): ToolError =>
  new ToolError({
    message: `Tool ${tool.name} returned an invalid result (expected text or {content, contentType, artifacts?}), got ${
      output === null ? "null" : Array.isArray(output) ? "an array" : typeof output
    }`
  })

const isThenable = (u: unknown): u is PromiseLike<unknown> =>
  typeof u === "object" && u !== null && typeof (u as { then?: unknown }).then === "function"

/**
 * Calls `tool`'s handler NOW (only inside a running effect: a handler that
 * throws is then a defect of that effect) and takes whatever it really
 * returns: an Effect as is; a Promise (a handler written as `async`) awaited,
 * its rejection a `ToolError`; anything else a `ToolError` saying so. The one
 * place a handler's result is looked at: the loop, a provided tool, the
 * recorder and a replayed prefix all call it.
 *
 * @since 0.1.0
 * @category utils
 */
export const runHandler = <R>(tool: Tool<R>, args: unknown): Effect.Effect<unknown, ToolError, R> => {
  const result: unknown = tool.handler(args)
  // a handler written in JavaScript may return a Promise or a plain value despite its type
  if (Effect.isEffect(result)) return result as Effect.Effect<unknown, ToolError, R>
  if (isThenable(result)) {
    return Effect.tryPromise({
      try: () => Promise.resolve(result),
      catch: (e) => new ToolError({ message: `Tool ${tool.name} failed: ${ErrorMessage.messageOf(e)}` })
    })
  }
  return Effect.fail(new ToolError({ message: `Tool ${tool.name}'s handler returned ${typeof result}, not an Effect` }))
}

/**
 * Decodes the arguments, runs the handler and checks its result: a result that
 * is neither text nor a well-formed rich result (e.g. a number, a BigInt in an
 * artifact) is a `ToolError`. Fields a rich result does not define are dropped.
 *
 * @since 0.1.0
 * @category utils
 */
export const execute = (tool: Tool, args: unknown): Effect.Effect<ToolOutput, ToolError> =>
  Effect.flatMap(executeUnchecked(tool, args), (output) => checkOutput(tool, output))

/**
 * `execute` without the check of the handler's result: what the handler gave,
 * to be checked with `checkOutput` (the loop checks it where it handles the
 * call's outcome, at no extra effect step).
 *
 * @since 0.1.0
 * @category utils
 */
export const executeUnchecked = (tool: Tool, args: unknown): Effect.Effect<unknown, ToolError> =>
  Effect.flatMap(tool.decode(args), (decoded) => runHandler(tool, decoded))

/**
 * A handler's result as a tool output: text, or a well-formed rich result
 * (fields it does not define dropped); anything else is a `ToolError`.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkOutput = (tool: Tool, output: unknown): Either.Either<ToolOutput, ToolError> => {
  if (typeof output === "string") return Either.right(output)
  const checked = decodeOutput(output)
  return Either.isRight(checked) ? Either.right(checked.right) : Either.left(invalidOutput(tool, output))
}

/**
 * The OpenAI function-tool definition.
 *
 * @since 0.1.0
 * @category utils
 */
export const toDefinition = (tool: Tool): ToolDefinition => ({
  type: "function",
  function: { name: tool.name, description: tool.description, parameters: tool.jsonSchema }
})

export {
  /**
   * Normalises a handler's output to a rich result.
   *
   * @since 0.1.0
   * @category utils
   */
  toRich
} from "./internal/tool/output.js"
