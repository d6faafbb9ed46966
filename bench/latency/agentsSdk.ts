/**
 * The OpenAI Agents SDK (`@openai/agents-core@0.14`) in the latency benchmark: an
 * `Agent` run by `Runner.run(agent, query, { stream: true })` (tracing off); time to
 * first answer token = the first `raw_model_stream_event` whose data is an
 * `output_text_delta`.
 *
 * The model: `@openai/agents-openai` (the SDK's OpenAI provider) is not installed
 * in this project, so this file implements agents-core's `Model` interface over
 * the real `openai` SDK (chat completions): `getStreamedResponse` opens a
 * streaming request (`stream_options.include_usage`) and yields
 * `response_started`, one `output_text_delta` per content chunk as it arrives,
 * and `response_done` with the message / function-call output items and usage;
 * `getResponse` makes a non-streaming request. It converts what the runner hands
 * it (instructions, user/assistant messages, function calls and their results,
 * function tools, tool choice) to the chat-completions wire format and nothing
 * more — so it adds less work than the SDK's own provider would.
 *
 * @since 0.1.0
 */
import type { AgentInputItem, Model, ModelRequest, ModelResponse, protocol, StreamEvent } from "@openai/agents-core"
import { Agent, Runner, setTracingDisabled, tool, Usage } from "@openai/agents-core"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption
} from "openai/resources/chat/completions"
import type { LatencyEngine } from "./engine.js"
import { SYSTEM_PROMPT } from "./scenarios.js"

setTracingDisabled(true)

const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === "object" && typeof p.text === "string" ? p.text : "")).join("")
  }
  if (content && typeof content === "object" && typeof (content as { text?: unknown }).text === "string") {
    return (content as { text: string }).text
  }
  return ""
}

const toMessages = (request: ModelRequest): Array<ChatCompletionMessageParam> => {
  const out: Array<ChatCompletionMessageParam> = []
  if (request.systemInstructions) out.push({ role: "system", content: request.systemInstructions })
  if (typeof request.input === "string") {
    out.push({ role: "user", content: request.input })
    return out
  }
  // Consecutive assistant text and function calls become one assistant message.
  let assistant: ChatCompletionAssistantMessageParam | undefined
  const flush = () => {
    if (assistant) out.push(assistant)
    assistant = undefined
  }
  for (const item of request.input as ReadonlyArray<AgentInputItem>) {
    const type = "type" in item ? item.type : "message"
    if (type === "message" || type === undefined) {
      const m = item as { role: string; content: unknown }
      if (m.role === "assistant") {
        flush()
        assistant = { role: "assistant", content: textOf(m.content) || null }
      } else {
        flush()
        out.push(
          m.role === "system"
            ? { role: "system", content: textOf(m.content) }
            : { role: "user", content: textOf(m.content) }
        )
      }
    } else if (type === "function_call") {
      const c = item as { callId: string; name: string; arguments: string }
      assistant ??= { role: "assistant", content: null }
      assistant.tool_calls = [...(assistant.tool_calls ?? []), {
        id: c.callId,
        type: "function",
        function: { name: c.name, arguments: c.arguments }
      }]
    } else if (type === "function_call_result") {
      flush()
      const r = item as { callId: string; output: unknown }
      out.push({ role: "tool", tool_call_id: r.callId, content: textOf(r.output) })
    } else if (type !== "reasoning") {
      throw new Error(`input item ${type} is not supported by this benchmark model`)
    }
  }
  flush()
  return out
}

const toParams = (modelId: string, request: ModelRequest): ChatCompletionCreateParamsBase => {
  const tools: Array<ChatCompletionTool> = []
  for (const t of request.tools) {
    if (t.type !== "function") throw new Error(`tool ${t.name} (${t.type}) is not supported by this benchmark model`)
    tools.push({
      type: "function",
      function: {
        name: t.name,
        description: t.description,
        parameters: t.parameters as Record<string, unknown>,
        strict: t.strict
      }
    })
  }
  const choice = request.modelSettings.toolChoice
  const toolChoice: ChatCompletionToolChoiceOption | undefined = choice === undefined
    ? undefined
    : choice === "auto" || choice === "required" || choice === "none"
    ? (choice as "auto" | "required" | "none")
    : { type: "function", function: { name: choice } }
  return {
    model: modelId,
    messages: toMessages(request),
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(request.modelSettings.temperature !== undefined ? { temperature: request.modelSettings.temperature } : {}),
    ...(request.modelSettings.maxTokens !== undefined ? { max_tokens: request.modelSettings.maxTokens } : {})
  }
}

const outputItems = (
  id: string,
  text: string,
  calls: ReadonlyArray<{ id: string; name: string; arguments: string }>
): Array<protocol.OutputModelItem> => {
  const out: Array<protocol.OutputModelItem> = []
  if (text !== "") {
    out.push({ type: "message", id, role: "assistant", status: "completed", content: [{ type: "output_text", text }] })
  }
  for (const c of calls) {
    out.push({ type: "function_call", id, callId: c.id, name: c.name, arguments: c.arguments, status: "completed" })
  }
  return out
}

/** An agents-core `Model` over the `openai` SDK's chat completions. @since 0.1.0 */
export class OpenAiChatModel implements Model {
  constructor(private readonly modelId: string, private readonly client: OpenAI) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const body = await this.client.chat.completions.create(
      { ...toParams(this.modelId, request), stream: false },
      request.signal ? { signal: request.signal } : {}
    )
    const message = body.choices[0]?.message
    const calls = (message?.tool_calls ?? []).flatMap((c) =>
      c.type === "function" ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : []
    )
    return {
      responseId: body.id,
      usage: new Usage({
        requests: 1,
        inputTokens: body.usage?.prompt_tokens ?? 0,
        outputTokens: body.usage?.completion_tokens ?? 0,
        totalTokens: body.usage?.total_tokens ?? 0
      }),
      output: outputItems(body.id, message?.content ?? "", calls)
    }
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const chunks = await this.client.chat.completions.create(
      { ...toParams(this.modelId, request), stream: true, stream_options: { include_usage: true } },
      request.signal ? { signal: request.signal } : {}
    )
    let id = ""
    let text = ""
    let usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
    const calls = new Map<number, { id: string; name: string; arguments: string }>()
    for await (const chunk of chunks) {
      if (id === "") {
        id = chunk.id
        yield { type: "response_started" }
      }
      if (chunk.usage) usage = chunk.usage
      const delta = chunk.choices[0]?.delta
      if (delta === undefined) continue
      if (delta.content) {
        text += delta.content
        yield { type: "output_text_delta", delta: delta.content }
      }
      for (const d of delta.tool_calls ?? []) {
        let call = calls.get(d.index)
        if (call === undefined) {
          call = { id: d.id ?? `call_${d.index}`, name: "", arguments: "" }
          calls.set(d.index, call)
        }
        call.name += d.function?.name ?? ""
        call.arguments += d.function?.arguments ?? ""
      }
    }
    yield {
      type: "response_done",
      response: {
        id,
        usage: {
          requests: 1,
          inputTokens: usage.prompt_tokens,
          outputTokens: usage.completion_tokens,
          totalTokens: usage.total_tokens
        },
        output: outputItems(id, text, [...calls.values()])
      }
    }
  }
}

/** @since 0.1.0 */
export const engine: LatencyEngine = {
  name: "OpenAI Agents SDK (streamed run)",
  prepare: async (scenario, baseURL) => {
    const client = new OpenAI({ baseURL, apiKey: "bench", maxRetries: 0 })
    // The same tool definitions as ours (JSON Schema from the same `Tool`, not
    // strict: some catalogue tools have optional parameters); the handler is the
    // same Effect, run as a promise.
    const tools = scenario.tools.map((t) =>
      tool({
        name: t.name,
        description: t.description,
        parameters: t.jsonSchema as any,
        strict: false,
        execute: async (args: unknown) => {
          const output = await Effect.runPromise(t.handler(args))
          return typeof output === "string" ? output : JSON.stringify(output)
        }
      })
    )
    const agent = new Agent({
      name: "bench",
      instructions: SYSTEM_PROMPT,
      model: new OpenAiChatModel("fake-model", client),
      tools
    })
    const runner = new Runner({ tracingDisabled: true })
    return {
      run: async (marks) => {
        const result = await runner.run(agent, scenario.query, { stream: true, maxTurns: 10 })
        let answer = ""
        for await (const event of result) {
          if (
            event.type === "raw_model_stream_event" && event.data.type === "output_text_delta" &&
            event.data.delta !== ""
          ) {
            answer += event.data.delta
            marks.answerToken()
          }
        }
        await result.completed
        if (result.error) throw result.error instanceof Error ? result.error : new Error(String(result.error))
        let toolCalls = 0
        for (const item of result.newItems) if (item.type === "tool_call_output_item") toolCalls++
        const usage = result.state.usage
        return { answer, toolCalls, reportedOutputTokens: usage.outputTokens, reportedCalls: usage.requests }
      },
      close: async () => {}
    }
  }
}
