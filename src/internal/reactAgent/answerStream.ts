/**
 * Synthesis policy `auto`, native mode: a loop call streamed, its text shown to
 * the user as the answer while the model writes it. The reply is assembled from
 * the stream into the same `ChatResponse` a non-streamed call returns, so the
 * loop goes on exactly as it would have.
 *
 * The text is shown provisionally: when the reply turns out to call tools, or
 * the answer is suppressed (an interrupt arrived), the caller retracts it with
 * `AnswerReset`. A stream that fails after showing text is retracted here, and
 * the call is made again without streaming, so a broken stream costs the user
 * the preview, never the run. Stream and fallback are one logical call
 * (`Llm.oneCall`): the fallback counts as one of its retries, and they share one
 * deadline — `LLM_MAX_RETRIES` and `LLM_TOTAL_TIMEOUT_MS` bound the whole.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Budget from "../../Budget.js"
import type { Injection } from "../../Interrupts.js"
import type { ChatDelta, ChatRequest, ChatResponse, LlmService, ResponseToolCall } from "../../Llm.js"
import { LlmError, oneCall, parseToolArguments } from "../../Llm.js"
import type { RunEvent } from "../../RunEvent.js"
import * as Telemetry from "../../Telemetry.js"
import * as Usage from "../../Usage.js"

/** A loop reply and whether its text already reached the user as answer deltas. */
export interface LoopReply {
  readonly response: ChatResponse
  readonly shown: boolean
  /**
   * What the interrupt drain right after the reply took, where the loop drains
   * there (`loopCall.ts`); absent in a reply stored by an earlier version, whose
   * drain is a step of its own.
   */
  readonly drained?: ReadonlyArray<Injection>
}

interface PartialCall {
  id: string
  name: string
  arguments: string
}

/** Folds stream deltas into a reply. */
class Assembler {
  content = ""
  reasoning = ""
  calls: Array<PartialCall> = []
  usage: Usage.Usage | undefined
  finishReason: string | null = null

  add(delta: ChatDelta): void {
    switch (delta._tag) {
      case "Content":
        this.content += delta.text
        return
      case "Reasoning":
        this.reasoning += delta.text
        return
      case "ToolCall": {
        const call = (this.calls[delta.index] ??= { id: "", name: "", arguments: "" })
        if (delta.id) call.id = delta.id
        if (delta.name) call.name += delta.name
        if (delta.arguments) call.arguments += delta.arguments
        return
      }
      case "Usage":
        this.usage = this.usage ? Usage.add(this.usage, delta.usage) : delta.usage
        return
      case "Finish":
        this.finishReason = delta.reason
        return
    }
  }

  response(): ChatResponse {
    // indices a provider skipped leave holes: only calls that arrived count
    const toolCalls: Array<ResponseToolCall> = this.calls.filter((c) => c !== undefined).map((c) => ({
      id: c.id,
      name: c.name,
      arguments: c.arguments,
      parsed: parseToolArguments(c.arguments)
    }))
    return {
      content: this.content,
      ...(this.reasoning !== "" ? { reasoning: this.reasoning } : {}),
      toolCalls,
      finishReason: this.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
      usage: this.usage ?? Usage.make(0, 0)
    }
  }
}

/**
 * One loop call streamed: `AnswerStart` before the first text, one
 * `AnswerDelta` per text chunk as it arrives. Fails only as the non-streamed
 * call would (a context overflow before any text is left to the caller's
 * recovery).
 */
export const streamLoopCall = (
  llm: LlmService,
  request: ChatRequest,
  iteration: number,
  emit: (event: RunEvent) => Effect.Effect<void>
): Effect.Effect<LoopReply, LlmError> =>
  // one logical call: the stream's retries and the fallback share one retry budget and one deadline
  oneCall(llm, (again) =>
    Effect.suspend(() => {
      const reply = new Assembler()
      let shown = false
      // a chunk at a time: its deltas folded into the reply, then its text's events in order (none: no effect)
      const onChunk = (chunk: Chunk.Chunk<ChatDelta>): Effect.Effect<void> => {
        let events: Array<RunEvent> | undefined
        for (const delta of chunk) {
          reply.add(delta)
          if (delta._tag !== "Content" || delta.text === "") continue
          events ??= []
          if (!shown) {
            shown = true
            events.push({ _tag: "AnswerStart" })
          }
          events.push({ _tag: "AnswerDelta", content: delta.text })
        }
        if (events === undefined) return Effect.void
        return events.length === 1 ? emit(events[0]) : Effect.forEach(events, emit, { discard: true })
      }
      // the account read first: a run without one runs the model's stream as it is
      const streamed = Effect.map(
        Effect.flatMap(FiberRef.get(Budget.currentAccount), (account) =>
          // run as a whole: its executor's fiber is where a run whose consumer left learns it, within the iteration
          Stream.runForEachChunk(Budget.streamChatWith(account, llm, request), onChunk)),
        (): LoopReply => ({ response: reply.response(), shown })
      )
      const plain = Telemetry.chat(llm, request, { phase: "loop", iteration })
      const recover = (error: unknown): Effect.Effect<LoopReply, LlmError> => {
        // nothing shown: an overflow goes to the loop's recovery, anything else is asked again without streaming
        if (!shown && error instanceof LlmError && error.reason === "ContextOverflow") return Effect.fail(error)
        const retract = shown ? emit({ _tag: "AnswerReset" }) : Effect.void
        // the fallback is a retry of the call: it needs one left in the budget, and the time
        const failed = error instanceof LlmError ? error : new LlmError({ reason: "Unknown", message: String(error) })
        return retract.pipe(
          Effect.zipRight(again(failed)),
          Effect.zipRight(Effect.map(plain, (response): LoopReply => ({ response, shown: false })))
        )
      }
      // a failure or a defect is recovered from; an interruption goes on
      return Effect.catchAllCause(
        Telemetry.chatSpan(llm.model, request, { phase: "loop", iteration, stream: true }, streamed, (r) => r.response),
        (cause) => {
          const failure = Cause.failureOption(cause)
          if (Option.isSome(failure)) return recover(failure.value)
          const defect = Cause.dieOption(cause)
          return Option.isSome(defect) ? recover(defect.value) : Effect.failCause(cause)
        }
      )
    }))
