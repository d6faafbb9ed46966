/**
 * The Vercel AI SDK (`ai@6`) in the latency benchmark: `streamText` with tools and
 * `stopWhen: stepCountIs(10)`; time to first answer token = the first `text-delta`
 * part of `fullStream`.
 *
 * The model: no OpenAI-compatible AI SDK provider is installed in this project
 * (`@ai-sdk/openai` / `@ai-sdk/openai-compatible` are not dependencies; only
 * `@ai-sdk/provider` and `@ai-sdk/provider-utils` come with `ai`). So this file
 * implements the AI SDK's `LanguageModelV3` interface over the real `openai` SDK
 * (chat completions): `doStream` opens a streaming request
 * (`stream_options.include_usage`) and maps its chunks to V3 stream parts as they
 * arrive (`text-start/delta/end`, `tool-input-start/delta/end`, `tool-call`,
 * `finish` with usage); `doGenerate` makes a non-streaming request. It converts
 * what the AI SDK hands it (system/user/assistant/tool messages, function tools,
 * tool choice) to the chat-completions wire format and nothing more — no retries,
 * no extra validation — so it adds less work than a full provider would.
 *
 * @since 0.1.0
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3Usage
} from "@ai-sdk/provider"
import { jsonSchema, stepCountIs, streamText, tool } from "ai"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool
} from "openai/resources/chat/completions"
import type { LatencyEngine } from "./engine.js"
import { SYSTEM_PROMPT } from "./scenarios.js"

const toolOutputText = (output: LanguageModelV3ToolResultOutput): string => {
  switch (output.type) {
    case "text":
    case "error-text":
      return output.value
    case "json":
    case "error-json":
      return JSON.stringify(output.value)
    case "execution-denied":
      return output.reason ?? "Tool execution denied."
    case "content":
      return output.value.map((p) => (p.type === "text" ? p.text : "")).join("")
  }
}

const toMessages = (prompt: LanguageModelV3Prompt): Array<ChatCompletionMessageParam> => {
  const out: Array<ChatCompletionMessageParam> = []
  for (const m of prompt) {
    switch (m.role) {
      case "system":
        out.push({ role: "system", content: m.content })
        break
      case "user":
        out.push({
          role: "user",
          content: m.content.map((p) => {
            if (p.type !== "text") throw new Error("file parts are not supported by this benchmark model")
            return p.text
          }).join("")
        })
        break
      case "assistant": {
        let text = ""
        const calls: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }> = []
        for (const p of m.content) {
          if (p.type === "text") text += p.text
          else if (p.type === "tool-call") {
            calls.push({
              id: p.toolCallId,
              type: "function",
              function: { name: p.toolName, arguments: JSON.stringify(p.input) }
            })
          }
        }
        out.push({
          role: "assistant",
          content: text === "" ? null : text,
          ...(calls.length > 0 ? { tool_calls: calls } : {})
        })
        break
      }
      case "tool":
        for (const p of m.content) {
          if (p.type === "tool-result") {
            out.push({ role: "tool", tool_call_id: p.toolCallId, content: toolOutputText(p.output) })
          }
        }
        break
    }
  }
  return out
}

const toParams = (modelId: string, options: LanguageModelV3CallOptions): ChatCompletionCreateParamsBase => {
  const tools: Array<ChatCompletionTool> = []
  for (const t of options.tools ?? []) {
    if (t.type !== "function") throw new Error(`provider tool ${t.name} is not supported by this benchmark model`)
    tools.push({
      type: "function",
      function: {
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.inputSchema as Record<string, unknown>
      }
    })
  }
  const choice = options.toolChoice
  return {
    model: modelId,
    messages: toMessages(options.prompt),
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && choice !== undefined
      ? {
        tool_choice: choice.type === "tool" ? { type: "function", function: { name: choice.toolName } } : choice.type
      }
      : {}),
    ...(options.maxOutputTokens !== undefined ? { max_tokens: options.maxOutputTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {})
  }
}

const finishReason = (raw: string | null | undefined): LanguageModelV3FinishReason => ({
  unified: raw === "stop"
    ? "stop"
    : raw === "tool_calls" || raw === "function_call"
    ? "tool-calls"
    : raw === "length"
    ? "length"
    : raw === "content_filter"
    ? "content-filter"
    : "other",
  raw: raw ?? undefined
})

const usageOf = (
  u: { prompt_tokens?: number; completion_tokens?: number } | null | undefined
): LanguageModelV3Usage => ({
  inputTokens: { total: u?.prompt_tokens, noCache: u?.prompt_tokens, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: u?.completion_tokens, text: u?.completion_tokens, reasoning: undefined }
})

/** An AI SDK `LanguageModelV3` over the `openai` SDK's chat completions. @since 0.1.0 */
export class OpenAiChatModelV3 implements LanguageModelV3 {
  readonly specificationVersion = "v3" as const
  readonly provider = "bench.openai-chat"
  readonly supportedUrls = {}
  constructor(readonly modelId: string, private readonly client: OpenAI) {}

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const body = await this.client.chat.completions.create(
      { ...toParams(this.modelId, options), stream: false },
      options.abortSignal ? { signal: options.abortSignal } : {}
    )
    const choice = body.choices[0]
    const content: Array<LanguageModelV3Content> = []
    if (choice?.message.content) content.push({ type: "text", text: choice.message.content })
    for (const c of choice?.message.tool_calls ?? []) {
      if (c.type === "function") {
        content.push({ type: "tool-call", toolCallId: c.id, toolName: c.function.name, input: c.function.arguments })
      }
    }
    return { content, finishReason: finishReason(choice?.finish_reason), usage: usageOf(body.usage), warnings: [] }
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const chunks = await this.client.chat.completions.create(
      { ...toParams(this.modelId, options), stream: true, stream_options: { include_usage: true } },
      options.abortSignal ? { signal: options.abortSignal } : {}
    )
    const iterator: AsyncIterator<ChatCompletionChunk> = chunks[Symbol.asyncIterator]()
    const calls = new Map<number, { id: string; name: string; arguments: string }>()
    let textOpen = false
    let reason: string | null = null
    let usage: ChatCompletionChunk["usage"] = null
    let started = false
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start: (controller) => controller.enqueue({ type: "stream-start", warnings: [] }),
      // Each pull forwards chunks until one yields a part (a pull that enqueues
      // nothing is not called again) or the stream ends.
      pull: async (controller) => {
        let emitted = false
        const emit = (part: LanguageModelV3StreamPart) => {
          emitted = true
          controller.enqueue(part)
        }
        try {
          while (!emitted) {
            const next = await iterator.next()
            if (next.done) {
              if (textOpen) emit({ type: "text-end", id: "text-0" })
              for (const c of calls.values()) {
                emit({ type: "tool-input-end", id: c.id })
                emit({
                  type: "tool-call",
                  toolCallId: c.id,
                  toolName: c.name,
                  input: c.arguments === "" ? "{}" : c.arguments
                })
              }
              emit({ type: "finish", usage: usageOf(usage), finishReason: finishReason(reason) })
              controller.close()
              return
            }
            const chunk = next.value
            if (!started) {
              started = true
              emit({
                type: "response-metadata",
                id: chunk.id,
                modelId: chunk.model,
                timestamp: new Date(chunk.created * 1000)
              })
            }
            if (chunk.usage) usage = chunk.usage
            const choice = chunk.choices[0]
            if (choice === undefined) continue
            if (choice.finish_reason) reason = choice.finish_reason
            const delta = choice.delta
            if (delta.content) {
              if (!textOpen) {
                textOpen = true
                emit({ type: "text-start", id: "text-0" })
              }
              emit({ type: "text-delta", id: "text-0", delta: delta.content })
            }
            for (const d of delta.tool_calls ?? []) {
              let call = calls.get(d.index)
              if (call === undefined) {
                call = { id: d.id ?? `call_${d.index}`, name: d.function?.name ?? "", arguments: "" }
                calls.set(d.index, call)
                emit({ type: "tool-input-start", id: call.id, toolName: call.name })
              }
              const piece = d.function?.arguments ?? ""
              if (piece !== "") {
                call.arguments += piece
                emit({ type: "tool-input-delta", id: call.id, delta: piece })
              }
            }
          }
        } catch (error) {
          controller.enqueue({ type: "error", error })
          controller.close()
        }
      },
      cancel: async () => {
        await iterator.return?.()
      }
    })
    return { stream }
  }
}

/** @since 0.1.0 */
export const engine: LatencyEngine = {
  name: "Vercel AI SDK (streamText)",
  prepare: async (scenario, baseURL) => {
    const client = new OpenAI({ baseURL, apiKey: "bench", maxRetries: 0 })
    const model = new OpenAiChatModelV3("fake-model", client)
    // The same tool definitions as ours (JSON Schema from the same `Tool`); the
    // handler is the same Effect, run as a promise.
    const tools = Object.fromEntries(scenario.tools.map((t) => [
      t.name,
      tool({
        description: t.description,
        inputSchema: jsonSchema<Record<string, unknown>>(t.jsonSchema as Parameters<typeof jsonSchema>[0]),
        execute: async (args: Record<string, unknown>) => {
          const output = await Effect.runPromise(t.handler(args))
          return typeof output === "string" ? output : JSON.stringify(output)
        }
      })
    ]))
    return {
      run: async (marks) => {
        const result = streamText({
          model,
          system: SYSTEM_PROMPT,
          prompt: scenario.query,
          tools,
          stopWhen: stepCountIs(10)
        })
        let answer = ""
        for await (const part of result.fullStream) {
          if (part.type === "text-delta") {
            if (part.text === "") continue
            answer += part.text
            marks.answerToken()
          } else if (part.type === "error") {
            throw part.error instanceof Error ? part.error : new Error(String(part.error))
          }
        }
        const steps = await result.steps
        const usage = await result.totalUsage
        let toolCalls = 0
        for (const s of steps) toolCalls += s.toolResults.length
        return { answer, toolCalls, reportedOutputTokens: usage.outputTokens, reportedCalls: steps.length }
      },
      close: async () => {}
    }
  }
}
