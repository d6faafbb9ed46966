/**
 * A whole reply as the deltas a stream would have carried (for endpoints
 * without streaming): shared by the LLM layers.
 *
 * @internal
 */
import type { ChatDelta, ChatResponse } from "../../Llm.js"

export const responseToDeltas = (response: ChatResponse): Array<ChatDelta> => {
  const out: Array<ChatDelta> = []
  if (response.reasoning) out.push({ _tag: "Reasoning", text: response.reasoning })
  if (response.content !== "") out.push({ _tag: "Content", text: response.content })
  response.toolCalls.forEach((c, index) =>
    out.push({ _tag: "ToolCall", index, id: c.id, name: c.name, arguments: c.arguments })
  )
  out.push({ _tag: "Finish", reason: response.finishReason }, { _tag: "Usage", usage: response.usage })
  return out
}
