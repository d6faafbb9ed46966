/**
 * Built-in hooks: result truncator (Post), read-only mode (Pre), rate
 * limiter (Pre, per tool name, sliding window) and audit log (Post).
 *
 * Default priorities put policy first and bookkeeping last: read-only mode -200,
 * rate limiter -100 (user hooks default to 0), result truncator 900, audit log 1000
 * (so the audit records what the model will see). Each accepts `name` and
 * `priority` overrides.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Matcher, PostToolUseHook, PreToolUseHook, ToolOutcome, ToolUseContext } from "./Hooks.js"
import * as Hooks from "./Hooks.js"
import type { ToolOutput } from "./Tool.js"

/**
 * Name and priority overrides shared by the built-ins.
 *
 * @since 0.1.0
 * @category models
 */
export interface BuiltinOptions {
  readonly name?: string
  readonly priority?: number
  /** Tool-name glob(s) the hook applies to (default: every tool). */
  readonly matcher?: Matcher
}

const invalid = (message: string): never => {
  throw new Hooks.InvalidHook({ message })
}

const positiveInt = (value: unknown, what: string): number =>
  typeof value === "number" && Number.isInteger(value) && value > 0
    ? value
    : invalid(`${what} must be a positive integer, got ${String(value)}`)

const withMatcher = (options: BuiltinOptions) => (options.matcher !== undefined ? { matcher: options.matcher } : {})

// ---------------------------------------------------------------------------
// Result truncator

/**
 * @since 0.1.0
 * @category models
 */
export interface ResultTruncatorOptions extends BuiltinOptions {
  /** Longest observation content kept, in characters (the notice comes on top). */
  readonly maxChars: number
}

/**
 * Cuts a content longer than `maxChars` and appends `[truncated N chars]`. Rich
 * results keep their shape and artifacts; truncated `json` content becomes `text`
 * (it is no longer valid JSON). A surrogate pair is never split.
 *
 * @since 0.1.0
 * @category utils
 */
export const truncateOutput = (output: ToolOutput, maxChars: number): ToolOutput => {
  const content = typeof output === "string" ? output : output.content
  if (content.length <= maxChars) return output
  let cut = maxChars
  const last = content.charCodeAt(cut - 1)
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1
  const truncated = `${content.slice(0, cut)}\n\n[truncated ${content.length - cut} chars]`
  if (typeof output === "string") return truncated
  return { ...output, content: truncated, contentType: output.contentType === "json" ? "text" : output.contentType }
}

/**
 * Post hook: truncates long successful observations (failures pass unchanged).
 *
 * @since 0.1.0
 * @category constructors
 */
export const resultTruncator = (options: ResultTruncatorOptions): PostToolUseHook => {
  const maxChars = positiveInt(options?.maxChars, "resultTruncator: maxChars")
  return Hooks.post({
    name: options.name ?? "result-truncator",
    priority: options.priority ?? 900,
    ...withMatcher(options),
    run: (_, outcome) =>
      Effect.sync(() => {
        if (outcome._tag !== "Success") return undefined
        const output = truncateOutput(outcome.output, maxChars)
        return output === outcome.output ? undefined : { _tag: "Success", output } as const
      })
  })
}

// ---------------------------------------------------------------------------
// Read-only mode

/**
 * @since 0.1.0
 * @category models
 */
export interface ReadOnlyModeOptions extends BuiltinOptions {
  /**
   * Whether read-only mode is on (default true). An Effect is evaluated on every
   * call to a writing tool (e.g. reading a `Ref` or a feature flag); if it fails,
   * the call is blocked (fail closed).
   */
  readonly enabled?: boolean | Effect.Effect<boolean, unknown>
}

/**
 * The reason given to the model.
 *
 * @since 0.1.0
 * @category utils
 */
export const readOnlyReason = (toolName: string): string =>
  `The organization is in read-only mode: ${toolName} writes and is blocked`

/**
 * Pre hook: blocks tools whose `readOnly` is false. Unknown tools (no `tool` in the
 * context) are left to the loop, which reports them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const readOnlyMode = (options: ReadOnlyModeOptions = {}): PreToolUseHook => {
  const enabled = options.enabled ?? true
  if (typeof enabled !== "boolean" && !Effect.isEffect(enabled)) {
    invalid("readOnlyMode: enabled must be a boolean or an Effect<boolean>")
  }
  const block = (context: ToolUseContext) => ({ allow: false, reason: readOnlyReason(context.toolName) } as const)
  return Hooks.pre({
    name: options.name ?? "read-only-mode",
    priority: options.priority ?? -200,
    ...withMatcher(options),
    run: (context) => {
      if (context.tool === undefined || context.tool.readOnly !== false) return Effect.void
      if (typeof enabled === "boolean") return Effect.succeed(enabled ? block(context) : undefined)
      return Effect.map(enabled, (on) => (on === true ? block(context) : undefined))
    }
  })
}

// ---------------------------------------------------------------------------
// Rate limiter

/**
 * @since 0.1.0
 * @category models
 */
export interface RateLimiterOptions extends BuiltinOptions {
  /** Calls allowed per window (per key). */
  readonly limit: number
  readonly window: Duration.DurationInput
  /** What is limited separately (default: the tool name). */
  readonly key?: (context: ToolUseContext) => string
}

const decodeWindow = (input: unknown): Duration.Duration => {
  let duration: Duration.Duration | undefined
  try {
    duration = Duration.decode(input as Duration.DurationInput)
  } catch {
    duration = undefined
  }
  if (duration === undefined || !Duration.isFinite(duration) || Duration.toMillis(duration) <= 0) {
    return invalid(`rateLimiter: window must be a positive finite duration, got ${String(input)}`)
  }
  return duration
}

/**
 * Pre hook: at most `limit` calls per tool name within any sliding `window`,
 * measured on the Effect `Clock` (so `TestClock` drives it). Blocked calls are not
 * counted; the reason says when the next call is possible. The counters live in the
 * hook value: build one limiter per agent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const rateLimiter = (options: RateLimiterOptions): PreToolUseHook => {
  const limit = positiveInt(options?.limit, "rateLimiter: limit")
  const window = decodeWindow(options.window)
  const windowMs = Duration.toMillis(window)
  const keyOf = options.key ?? ((context: ToolUseContext) => context.toolName)
  const calls = new Map<string, Array<number>>()
  return Hooks.pre({
    name: options.name ?? "rate-limiter",
    priority: options.priority ?? -100,
    ...withMatcher(options),
    run: (context) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          const key = keyOf(context)
          const previous = calls.get(key) ?? []
          let first = 0
          while (first < previous.length && previous[first] <= now - windowMs) first++
          const recent = first === 0 ? previous : previous.slice(first)
          if (recent.length >= limit) {
            calls.set(key, recent)
            const resetsAt = recent[0] + windowMs
            const wait = Duration.format(Duration.millis(Math.max(1, resetsAt - now)))
            return {
              allow: false,
              reason: `Rate limit reached for ${context.toolName}: at most ${limit} call(s) per ${
                Duration.format(window)
              }. The limit resets in ${wait} (at ${new Date(resetsAt).toISOString()}).`
            } as const
          }
          recent.push(now)
          calls.set(key, recent)
          return undefined
        }))
  })
}

// ---------------------------------------------------------------------------
// Audit log

/**
 * One audited tool call.
 *
 * @since 0.1.0
 * @category models
 */
export interface AuditEntry {
  readonly toolName: string
  readonly args: Record<string, unknown>
  readonly toolCallId?: string
  readonly conversationId: string
  readonly iteration: number
  readonly ok: boolean
  /** The failure message when `ok` is false. */
  readonly error?: string
  /** Length of what the model will read (content or error message). */
  readonly observationChars: number
  /** ISO-8601 time from the Effect `Clock`. */
  readonly at: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface AuditLogOptions extends BuiltinOptions {
  /** Where entries go (default: `logAuditEntry`). A failing sink is logged, never fatal. */
  readonly sink?: (entry: AuditEntry) => Effect.Effect<void, unknown>
}

/**
 * Builds the audit entry of a call.
 *
 * @since 0.1.0
 * @category utils
 */
export const auditEntry = (context: ToolUseContext, outcome: ToolOutcome, at: Date): AuditEntry => ({
  toolName: context.toolName,
  args: context.args,
  ...(context.toolCallId !== undefined ? { toolCallId: context.toolCallId } : {}),
  conversationId: context.conversationId,
  iteration: context.iteration,
  ok: outcome._tag === "Success",
  ...(outcome._tag === "Failure" ? { error: outcome.message } : {}),
  observationChars: outcome._tag === "Success"
    ? (typeof outcome.output === "string" ? outcome.output : outcome.output.content).length
    : outcome.message.length,
  at: at.toISOString()
})

const MAX_LOGGED_ARGS = 2000

/**
 * The default sink: one `Effect.logInfo("tool call")` line annotated with the entry
 * (arguments as JSON, capped at 2000 characters).
 *
 * @since 0.1.0
 * @category utils
 */
export const logAuditEntry = (entry: AuditEntry): Effect.Effect<void> => {
  let args: string
  try {
    args = JSON.stringify(entry.args) ?? "undefined"
  } catch {
    args = "[unserialisable arguments]"
  }
  if (args.length > MAX_LOGGED_ARGS) args = `${args.slice(0, MAX_LOGGED_ARGS)}…`
  return Effect.logInfo("tool call").pipe(
    Effect.annotateLogs({
      audit: true,
      toolName: entry.toolName,
      args,
      toolCallId: entry.toolCallId ?? "",
      conversationId: entry.conversationId,
      iteration: entry.iteration,
      ok: entry.ok,
      ...(entry.error !== undefined ? { error: entry.error } : {}),
      observationChars: entry.observationChars,
      at: entry.at
    })
  )
}

/**
 * Post hook: sends an `AuditEntry` per completed call to the sink; never changes the
 * outcome. Calls blocked by a Pre hook never reach Post hooks and are not audited.
 *
 * @since 0.1.0
 * @category constructors
 */
export const auditLog = (options: AuditLogOptions = {}): PostToolUseHook => {
  const sink = options.sink ?? logAuditEntry
  if (typeof sink !== "function") invalid("auditLog: sink must be a function returning an Effect")
  return Hooks.post({
    name: options.name ?? "audit-log",
    priority: options.priority ?? 1000,
    ...withMatcher(options),
    run: (context, outcome) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => sink(auditEntry(context, outcome, new Date(now))))
  })
}
