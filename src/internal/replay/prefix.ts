/**
 * A run continued from a stored prefix of another (a fork): under `withPrefix`
 * the wrapped model, tools and interrupt queues answer the steps the prefix
 * holds from it — a model request equal to a stored one (in `lenient` view)
 * gets its stored reply, a tool call that the prefix holds (same tool, call id
 * and arguments, asked for by a stored reply this run was given) its stored
 * outcome, the first drains what the stored ones took — and pass everything
 * else through to the live services. A live reply never gets a stored outcome,
 * even when its call id and arguments are those of a stored call (providers
 * that number their calls `call_0`, `call_1`… repeat ids).
 *
 * Matching is by what is asked, not by position: a durable run restarted
 * after a crash does not ask again for the steps it stored, so a counter
 * would be off; a stored request is unique within its run (it holds every
 * message so far). Each stored step answers once.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as Approvals from "../../Approvals.js"
import * as Cassette from "../../Cassette.js"
import type * as Interrupts from "../../Interrupts.js"
import type { ChatRequest, LlmService } from "../../Llm.js"
import { unwrapDeltas } from "../../Llm.js"
import { requestJson } from "../../Recorder.js"
import * as ToolModule from "../../Tool.js"
import type { Tool } from "../../Tool.js"
import { firstDifference, lenientView } from "./diff.js"
import { replayOutcome } from "./services.js"

/** A prefix being answered: its steps and which of them have answered. */
export interface PrefixState {
  readonly cassette: Cassette.Cassette
  readonly usedModelCalls: Set<number>
  readonly usedToolCalls: Set<number>
  readonly usedApprovals: Set<number>
  drains: number
  /** The call ids of the stored replies this run was given: only their calls are answered from the prefix. */
  readonly callIds: Set<string>
  /** Steps answered from the prefix so far (model calls, tool calls). */
  readonly answered: { modelCalls: number; toolCalls: number }
}

export const makeState = (cassette: Cassette.Cassette): PrefixState => ({
  cassette,
  usedModelCalls: new Set(),
  usedToolCalls: new Set(),
  usedApprovals: new Set(),
  drains: 0,
  callIds: new Set(),
  answered: { modelCalls: 0, toolCalls: 0 }
})

export const currentPrefix: FiberRef.FiberRef<Option.Option<PrefixState>> = globalValue(
  Symbol.for("effect-react-engine/Replay/currentPrefix"),
  // a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
  () => FiberRef.unsafeMake<Option.Option<PrefixState>>(Option.none())
)

/** A call the original run saw to its end (a stream cut by a cancel has no `Finish`; a chat cut has no reply). */
const finished = (call: Cassette.ModelCall): boolean =>
  call.error !== undefined ||
  (call.method === "chat" ? call.reply !== undefined : (call.deltas ?? []).some((d) => d._tag === "Finish"))

/** The stored call answering `request`, marked used; undefined when the prefix holds none. */
const take = (state: PrefixState, method: "chat" | "stream", request: ChatRequest): Cassette.ModelCall | undefined => {
  const actual = lenientView(requestJson(request))
  const index = state.cassette.model_calls.findIndex((call, i) =>
    !state.usedModelCalls.has(i) && call.method === method && finished(call) &&
    firstDifference(lenientView(call.request), actual) === undefined
  )
  if (index < 0) return undefined
  state.usedModelCalls.add(index)
  state.answered.modelCalls++
  const stored = state.cassette.model_calls[index]
  for (const call of stored.reply?.toolCalls ?? []) state.callIds.add(call.id)
  for (const delta of stored.deltas ?? []) {
    if (delta._tag === "ToolCall" && delta.id !== undefined) state.callIds.add(delta.id)
  }
  return stored
}

export const wrapLlm = (llm: LlmService): LlmService => ({
  ...llm,
  chat: (request) =>
    Effect.flatMap(FiberRef.get(currentPrefix), (prefix) => {
      const stored = Option.isSome(prefix) ? take(prefix.value, "chat", request) : undefined
      if (stored === undefined) return llm.chat(request)
      if (stored.error !== undefined) return Effect.fail(Cassette.toLlmError(stored.error))
      return Effect.succeed(stored.reply!)
    }),
  streamChat: (request) =>
    unwrapDeltas(Effect.map(FiberRef.get(currentPrefix), (prefix) => {
      const stored = Option.isSome(prefix) ? take(prefix.value, "stream", request) : undefined
      if (stored === undefined) return llm.streamChat(request)
      const deltas = Stream.fromIterable(stored.deltas ?? [])
      return stored.error === undefined ? deltas : Stream.concat(deltas, Stream.fail(Cassette.toLlmError(stored.error)))
    }))
})

export const wrapTool = (tool: Tool): Tool => ({
  ...tool,
  handler: (args: unknown) =>
    Effect.flatMap(Effect.zip(FiberRef.get(currentPrefix), FiberRef.get(ToolModule.currentCall)), ([prefix, call]) => {
      const live = Effect.suspend(() => ToolModule.runHandler(tool, args))
      if (Option.isNone(prefix)) return live
      const state = prefix.value
      const c = Option.getOrUndefined(call)
      const json = JSON.parse(JSON.stringify(args ?? {}))
      const index = state.cassette.tool_calls.findIndex((t, i) =>
        !state.usedToolCalls.has(i) && t.tool_name === tool.name && t.outcome._tag !== "Interrupted" &&
        (c?.toolCallId !== undefined
          ? state.callIds.has(c.toolCallId) && t.tool_call_id === c.toolCallId
          : state.answered.modelCalls > 0 && t.iteration === c?.iteration) &&
        firstDifference(t.args, json) === undefined
      )
      if (index < 0) return live
      state.usedToolCalls.add(index)
      state.answered.toolCalls++
      // a call the original never finished is never matched (above): it runs live
      return replayOutcome(state.cassette.tool_calls[index].outcome)
    }) as Effect.Effect<ToolModule.ToolOutput, ToolModule.ToolError>
})

export const wrapInterrupts = (interrupts: Interrupts.InterruptsService): Interrupts.InterruptsService => ({
  ...interrupts,
  drain: (conversationId, options) =>
    Effect.flatMap(FiberRef.get(currentPrefix), (prefix) => {
      if (Option.isNone(prefix)) return interrupts.drain(conversationId, options)
      const state = prefix.value
      const stored = state.cassette.drains[state.drains]
      if (stored === undefined) return interrupts.drain(conversationId, options)
      state.drains++
      return Effect.succeed(stored.items)
    })
})

/**
 * A call of a stored reply that waited for a person gets the stored decision
 * (announced as usual, then decided at once): nobody is asked again for a step
 * before the fork point.
 */
export const wrapApprovals = (approvals: Approvals.ApprovalsService): Approvals.ApprovalsService => ({
  ...approvals,
  request: (request) =>
    Effect.flatMap(FiberRef.get(currentPrefix), (prefix) => {
      if (Option.isNone(prefix)) return approvals.request(request)
      const state = prefix.value
      const ours = state.callIds.has(request.toolCallId)
      const index = state.cassette.approvals.findIndex((a, i) =>
        !state.usedApprovals.has(i) && (a.tool_name === undefined || a.tool_name === request.toolName) &&
        (a.tool_call_id !== undefined
          ? ours && a.tool_call_id === request.toolCallId
          : state.answered.modelCalls > 0 && a.iteration === request.iteration)
      )
      if (index < 0) return approvals.request(request)
      state.usedApprovals.add(index)
      const stored = state.cassette.approvals[index]
      return Effect.as(request.onStored ?? Effect.void, {
        approvalId: request.approvalId,
        argsHash: request.argsHash,
        decision: stored.decision,
        ...(stored.reason !== undefined ? { reason: stored.reason } : {})
      })
    })
})
