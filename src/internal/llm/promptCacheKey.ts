/**
 * The prompt-cache key of a request (OpenAI's `prompt_cache_key`): the same for
 * every request of one conversation — its system prompt, tool names and first
 * user message do not change — so they land on the same cache.
 *
 * @internal
 */
import type { ChatRequest } from "../../Llm.js"

const fnv1a = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, "0")
}

export const promptCacheKey = (request: ChatRequest): string => {
  const system = request.messages.find((m) => m.role === "system")?.content ?? ""
  const firstUser = request.messages.find((m) => m.role === "user")?.content ?? ""
  const tools = (request.tools ?? []).map((t) => t.function.name)
  return `ere-${fnv1a(JSON.stringify([system, tools, firstUser]))}`
}
