/**
 * Answer synthesis: one streaming call that reads the whole run — the
 * question and every tool call with its arguments and its result (cut to
 * `toolObsTruncation` chars, JSON-mode observations included) — and writes the
 * user-facing answer. Deltas are forwarded as they arrive (no buffering).
 *
 * Fallback rule (the user always gets an answer, and a fallback is never an error):
 * - the stream fails (or ends empty) before its first token → the loop's own
 *   answer is emitted instead, as deltas whose concatenation is the text intact;
 * - it fails midway after sending `sent` → if the loop answer starts with `sent`,
 *   only the rest of the loop answer is sent; otherwise a separator
 *   (`"\n\n---\n\n"`) and the whole loop answer are sent. Nothing already sent is
 *   sent again.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Budget from "./Budget.js"
import * as Json from "./Json.js"
import type { LlmService } from "./Llm.js"
import * as Message from "./Message.js"
import type { RunEvent, Step } from "./RunEvent.js"
import * as Telemetry from "./Telemetry.js"
import * as Usage from "./Usage.js"

/**
 * The synthesiser's system prompt.
 *
 * @since 0.1.0
 * @category constants
 */
export const SYNTHESIS_SYSTEM_PROMPT =
  `You write the final answer to the user's question from the execution trace of an agent that used tools to work on it.
Answer directly and completely, using Markdown where it helps. Present the results themselves: no meta-commentary such as "based on the tool output" or "the agent found".
If the trace shows errors or missing information, say plainly what could not be determined.
Answer in the same language as the question.`

/**
 * @since 0.1.0
 * @category models
 */
export interface SynthesisInput {
  readonly question: Message.Content
  /** Every tool step of the run, in order. */
  readonly steps: ReadonlyArray<Step>
  /** The tool loop's answer (used as the draft, and as the fallback). */
  readonly loopAnswer: string
  /** Earlier turns of the conversation (user/assistant text is kept). */
  readonly history?: ReadonlyArray<Message.ChatMessage>
  /** User messages injected during the run. */
  readonly interrupts?: ReadonlyArray<string>
  /** Tool results are cut to this many chars (default 2000). */
  readonly toolObsTruncation?: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface SynthesisResult {
  /** The complete answer the user received. */
  readonly answer: string
  readonly usage: Usage.Usage
  readonly fallback: "none" | "before_first_token" | "midway"
}

/**
 * Separator between a partial synthesised answer and the loop answer.
 *
 * @since 0.1.0
 * @category constants
 */
export const FALLBACK_SEPARATOR = "\n\n---\n\n"

const cut = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… [truncated, ${text.length - max} more chars]`

const showArgs = (args: unknown): string => (typeof args === "string" ? args : Json.stringify(args, "{}"))

/**
 * The synthesis prompt: the synthesiser system prompt, the earlier turns, and one
 * user message with the question and the full execution trace.
 *
 * @since 0.1.0
 * @category constructors
 */
export const buildMessages = (input: SynthesisInput): Array<Message.ChatMessage> => {
  const max = input.toolObsTruncation ?? 2000
  const parts: Array<string> = [`Question:\n${Message.textOf(input.question)}`, ""]
  if (input.steps.length === 0) {
    parts.push("Execution trace: no tools were used.")
  } else {
    parts.push("Execution trace:")
    input.steps.forEach((s, i) => {
      parts.push(`Step ${i + 1}: ${s.tool_name}`, `Arguments: ${cut(showArgs(s.tool_args ?? {}), max)}`)
      parts.push(s.error === null ? `Result: ${cut(s.observation, max)}` : `Error: ${cut(s.error, max)}`, "")
    })
  }
  if (input.interrupts && input.interrupts.length > 0) {
    parts.push("", "Messages the user sent during the work:")
    for (const c of input.interrupts) parts.push(`- ${c}`)
  }
  if (input.loopAnswer !== "") parts.push("", `Draft answer:\n${input.loopAnswer}`)
  parts.push("", "Write the final answer to the question.")
  const text = parts.join("\n")
  const images = typeof input.question === "string" ? [] : input.question.filter((p) => p.type !== "text")
  const messages: Array<Message.ChatMessage> = [Message.system(SYNTHESIS_SYSTEM_PROMPT)]
  for (const m of input.history ?? []) {
    if (m.role === "user" || (m.role === "assistant" && m.content)) {
      messages.push(m.role === "user" ? Message.user(Message.textOf(m.content)) : Message.assistant(m.content))
    }
  }
  messages.push(Message.user(images.length > 0 ? [{ type: "text", text }, ...images] : text))
  return messages
}

/** Splits a text into word-sized chunks whose concatenation is the text. */
const chunks = (text: string): Array<string> => text.match(/\S+\s*|\s+/g) ?? []

/**
 * Emits a text the run already has as the answer: `AnswerStart`, word-sized
 * `AnswerDelta`s whose concatenation is the text, `AnswerDone`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const emitAnswer = (text: string, emit: (event: RunEvent) => Effect.Effect<void>): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* emit({ _tag: "AnswerStart" })
    for (const chunk of chunks(text)) yield* emit({ _tag: "AnswerDelta", content: chunk })
    yield* emit({ _tag: "AnswerDone" })
  })

/**
 * A synthesis result, as a schema (how a durable run stores it).
 *
 * @since 0.1.0
 * @category models
 */
export const SynthesisResultSchema = Schema.Struct({
  answer: Schema.String,
  usage: Usage.Usage,
  fallback: Schema.Literal("none", "before_first_token", "midway")
})

/**
 * Streams the answer: emits `AnswerStart`, one `AnswerDelta` per chunk as it
 * arrives, `AnswerDone` (never an error event), and returns the full answer and
 * the call's usage.
 *
 * @since 0.1.0
 * @category constructors
 */
export const streamAnswer = (
  llm: LlmService,
  input: SynthesisInput,
  emit: (event: RunEvent) => Effect.Effect<void>
): Effect.Effect<SynthesisResult> => streamWithFallback(llm, buildMessages(input), input.loopAnswer, emit)

/**
 * The streaming and fallback rule of `streamAnswer` for any synthesis prompt (DAG
 * mode writes its own): streams `messages`, emitting `AnswerStart`, one
 * `AnswerDelta` per chunk as it arrives, `AnswerDone`; when the stream fails
 * before its first token (or ends empty) `fallback` is emitted instead, when it
 * fails midway the answer is completed from `fallback` without repeating what
 * was sent (see the module documentation). Never fails.
 *
 * @since 0.1.0
 * @category constructors
 */
export const streamWithFallback = (
  llm: LlmService,
  messages: ReadonlyArray<Message.ChatMessage>,
  fallback: string,
  emit: (event: RunEvent) => Effect.Effect<void>
): Effect.Effect<SynthesisResult> =>
  Effect.gen(function*() {
    let sent = ""
    let usage: Usage.Usage | undefined
    let finishReason: string | null = null
    yield* emit({ _tag: "AnswerStart" })
    const request = { messages }
    const account = yield* FiberRef.get(Budget.currentAccount)
    const streamed = Stream.runForEach(Budget.streamChatWith(account, llm, request), (delta) => {
      if (delta._tag === "Content") {
        if (delta.text === "") return Effect.void
        sent += delta.text
        return emit({ _tag: "AnswerDelta", content: delta.text })
      }
      if (delta._tag === "Usage") usage = usage ? Usage.add(usage, delta.usage) : delta.usage
      else if (delta._tag === "Finish") finishReason = delta.reason
      return Effect.void
    })
    const ok = yield* Telemetry.chatSpan(llm.model, request, { phase: "synthesis", stream: true }, streamed, () => ({
      content: sent,
      finishReason,
      usage: usage ?? Usage.make(0, 0)
    })).pipe(
      Effect.as(true),
      Effect.catchAll(() => Effect.succeed(false)),
      Effect.catchAllDefect(() => Effect.succeed(false))
    )
    let rest = ""
    let kind: SynthesisResult["fallback"] = "none"
    if (sent === "") {
      rest = fallback
      kind = "before_first_token"
    } else if (!ok) {
      kind = "midway"
      rest = fallback.startsWith(sent)
        ? fallback.slice(sent.length)
        : fallback === ""
        ? ""
        : FALLBACK_SEPARATOR + fallback
    }
    for (const chunk of chunks(rest)) yield* emit({ _tag: "AnswerDelta", content: chunk })
    yield* emit({ _tag: "AnswerDone" })
    return { answer: sent + rest, usage: usage ?? Usage.make(0, 0), fallback: kind }
  })
