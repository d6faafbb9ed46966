/**
 * The services a cassette is replayed with (`Replay.layer`): a model that
 * answers each request with the recorded reply, tools that answer with the
 * recorded outcomes (no handler runs) and interrupts that give each drain what
 * the recorded one took; every request compared with the recorded one.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as Cassette from "../../Cassette.js"
import * as Interrupts from "../../Interrupts.js"
import type { ChatRequest, LlmService } from "../../Llm.js"
import { independentCalls, LlmError, unwrapDeltas } from "../../Llm.js"
import { requestJson } from "../../Recorder.js"
import type { RunEvent } from "../../RunEvent.js"
import * as Tool from "../../Tool.js"
import * as Toolkit from "../../Toolkit.js"
import type { Difference } from "./diff.js"
import { firstDifference, lenientView } from "./diff.js"

/**
 * A recorded handler outcome as the handler's effect: its output, its
 * failure, its defect; a call the recording saw interrupted never ends (the
 * run's own timeout or cancellation ends it again).
 */
export const replayOutcome = (outcome: Cassette.ToolOutcome): Effect.Effect<unknown, Tool.ToolError> => {
  switch (outcome._tag) {
    case "Success":
      return Effect.succeed(outcome.output)
    case "Failure":
      return Effect.fail(new Tool.ToolError({ message: outcome.message }))
    case "Die":
      return Effect.die(new Error(outcome.message))
    case "Interrupted":
      return Effect.never
  }
}

const failedWith = (d: { readonly message: string }) => new LlmError({ reason: "BadRequest", message: d.message })

/**
 * The replayed model, tools and interrupts of `cassette`, and what the replay
 * saw so far. `divergenceOf` makes the error of a divergence (the first one is
 * kept).
 */
export const make = <D extends { readonly message: string }>(
  cassette: Cassette.Cassette,
  lenient: boolean,
  divergenceOf: (step: string, difference: Difference) => D
) =>
  Effect.gen(function*() {
    const first = yield* Ref.make(Option.none<D>())
    const modelCursor = yield* Ref.make(0)
    const drainCursor = yield* Ref.make(0)
    const usedTools = yield* Ref.make(new Set<number>())
    const diverge = (step: string, d: Difference) => {
      const divergence = divergenceOf(step, d)
      return Effect.as(Ref.update(first, (o) => (Option.isSome(o) ? o : Option.some(divergence))), divergence)
    }
    const calls = cassette.model_calls

    /** The recorded call for this request, or the divergence. */
    const take = (method: "chat" | "stream", request: ChatRequest) =>
      Effect.flatMap(Ref.getAndUpdate(modelCursor, (n) => n + 1), (index) => {
        const step = `model call ${index + 1} of ${calls.length} (${method})`
        const recorded = calls[index]
        if (recorded === undefined) {
          return Effect.flatMap(
            diverge(step, { path: "(call)", recorded: "(no more calls recorded)", actual: `a ${method} request` }),
            (d) => Effect.fail(failedWith(d))
          )
        }
        const actual = requestJson(request)
        const d = recorded.method !== method
          ? { path: "method", recorded: recorded.method, actual: method }
          : lenient
          ? firstDifference(lenientView(recorded.request), lenientView(actual))
          : firstDifference(recorded.request, actual)
        return d === undefined
          ? Effect.succeed(recorded)
          : Effect.flatMap(diverge(step, d), (e) => Effect.fail(failedWith(e)))
      })

    const llm: LlmService = {
      model: cassette.model.name,
      abilities: cassette.model.abilities,
      ...(cassette.model.context_size !== undefined ? { contextSize: cassette.model.context_size } : {}),
      oneCall: independentCalls,
      chat: (request) =>
        Effect.flatMap(take("chat", request), (recorded) =>
          recorded.error !== undefined
            ? Effect.fail(Cassette.toLlmError(recorded.error))
            : recorded.reply !== undefined
            ? Effect.succeed(recorded.reply)
            : Effect.fail(
              new LlmError({ reason: "Unknown", message: "The recorded call has no reply (the recording was cut)" })
            )),
      streamChat: (request) =>
        Stream.unwrap(Effect.map(take("stream", request), (recorded) => {
          const deltas = recorded.deltas ?? []
          return recorded.error === undefined
            ? unwrapDeltas(Effect.succeed(deltas))
            : Stream.concat(Stream.fromIterable(deltas), Stream.fail(Cassette.toLlmError(recorded.error)))
        }))
    }

    /** The recorded outcome of this call of `spec`. */
    const outcome = (spec: Cassette.ToolSpec, args: unknown) =>
      Effect.flatMap(
        Effect.flatMap(Tool.currentCall, (call) =>
          Ref.modify(usedTools, (used): readonly [readonly [number, Option.Option<Tool.CallContext>], Set<number>] => {
            const c = Option.getOrUndefined(call)
            const index = cassette.tool_calls.findIndex((t, i) =>
              !used.has(i) && t.tool_name === spec.name &&
              (c === undefined || (t.iteration === c.iteration && t.tool_call_id === c.toolCallId))
            )
            if (index >= 0) used.add(index)
            return [[index, call], used]
          })),
        ([index, call]) => {
          const c = Option.getOrUndefined(call)
          const step = `tool call ${spec.name}${c?.toolCallId !== undefined ? ` (${c.toolCallId})` : ""}${
            c !== undefined ? ` at iteration ${c.iteration}` : ""
          }`
          if (index < 0) {
            return Effect.flatMap(
              diverge(step, { path: "(call)", recorded: "(not recorded)", actual: args }),
              (d) =>
                Effect.fail(new Tool.ToolError({ message: d.message }))
            )
          }
          const recorded = cassette.tool_calls[index]
          const d = firstDifference(recorded.args, JSON.parse(JSON.stringify(args ?? {})), "args")
          if (d !== undefined) {
            return Effect.flatMap(diverge(step, d), (e) => Effect.fail(new Tool.ToolError({ message: e.message })))
          }
          // the run's timeout or cancellation ends a call the recording saw interrupted again
          return replayOutcome(recorded.outcome) as Effect.Effect<Tool.ToolOutput, Tool.ToolError>
        }
      )

    const asked = (toolCallId: string | undefined, iteration: number) =>
      cassette.events.some((e) =>
        e._tag === "ApprovalRequested" &&
        (toolCallId !== undefined ? e.tool_call_id === toolCallId : e.iteration === iteration)
      )

    const toolkit = Toolkit.makeUnsafe(cassette.input.tools.map((spec) =>
      Tool.fromJsonSchema({
        name: spec.name,
        description: spec.description,
        jsonSchema: spec.parameters,
        readOnly: spec.read_only,
        pinned: spec.pinned,
        idempotent: spec.idempotent,
        ...(spec.timeout_ms !== undefined ? { timeout: Duration.millis(spec.timeout_ms) } : {}),
        ...(spec.needs_approval === "always"
          ? { needsApproval: true }
          : spec.needs_approval === "conditional"
          ? { needsApproval: (_args, context) => Effect.succeed(asked(context.toolCallId, context.iteration)) }
          : {}),
        handler: (args) => outcome(spec, args)
      })
    ))

    const base = yield* Interrupts.make
    const done = cassette.events.find((e): e is Extract<RunEvent, { _tag: "Done" }> => e._tag === "Done")
    const interrupts: Interrupts.InterruptsService = {
      ...base,
      drain: (conversationId) =>
        Effect.flatMap(Ref.getAndUpdate(drainCursor, (n) => n + 1), (index) => {
          const recorded = cassette.drains[index]
          if (recorded === undefined) {
            return Effect.as(
              diverge(`interrupt drain ${index + 1} of ${cassette.drains.length}`, {
                path: "(drain)",
                recorded: "(no more drains recorded)",
                actual: `a drain of ${conversationId}`
              }),
              []
            )
          }
          return Effect.succeed(recorded.items)
        }),
      unregister: (conversationId) => Effect.as(base.unregister(conversationId), done?.pending_injections ?? [])
    }

    return { llm, toolkit, interrupts, divergence: Ref.get(first), modelCalls: Ref.get(modelCursor) }
  })
