/**
 * Prompt texts and request builders for `StructuredCall`.
 *
 * @internal
 */
import type { ChatRequest, JsonSchemaObject, ToolDefinition } from "../../Llm.js"
import * as Message from "../../Message.js"
import type { ChatMessage } from "../../Message.js"
import { allowsStrict } from "./strict.js"

/** @internal */
export interface Target {
  readonly functionName: string
  readonly functionDescription?: string | undefined
  readonly jsonSchema: JsonSchemaObject
}

/** @internal */
export const toolDefinition = (target: Target): ToolDefinition => ({
  type: "function",
  function: {
    name: target.functionName,
    description: target.functionDescription ?? `Return the result as the arguments of ${target.functionName}.`,
    parameters: target.jsonSchema
  }
})

/** Level 1: the one function, forced. @internal */
export const nativeRequest = (messages: ReadonlyArray<ChatMessage>, target: Target): ChatRequest => ({
  messages,
  tools: [toolDefinition(target)],
  toolChoice: { type: "function", function: { name: target.functionName } }
})

/** Level 0: the caller's messages, `response_format: json_schema` (strict when the schema allows it). @internal */
export const schemaRequest = (messages: ReadonlyArray<ChatMessage>, target: Target): ChatRequest => ({
  messages,
  responseFormat: {
    type: "json_schema",
    json_schema: { name: target.functionName, schema: target.jsonSchema, strict: allowsStrict(target.jsonSchema) }
  }
})

/** The instruction telling the model the shape of the answer (levels 2 and 3). @internal */
export const schemaInstruction = (target: Target): string =>
  `Respond with a single JSON object only (no prose, no Markdown code fences): the result of ` +
  `\`${target.functionName}\`` +
  (target.functionDescription ? ` (${target.functionDescription})` : "") +
  `. The object must match this JSON Schema:\n` +
  JSON.stringify(target.jsonSchema)

/**
 * Adds the schema instruction to the conversation: appended to the leading
 * system message when there is one, otherwise as a new leading system message.
 *
 * @internal
 */
export const withSchemaInstruction = (
  messages: ReadonlyArray<ChatMessage>,
  target: Target
): ReadonlyArray<ChatMessage> => {
  const instruction = schemaInstruction(target)
  const first = messages[0]
  if (first !== undefined && first.role === "system") {
    return [{ ...first, content: `${first.content}\n\n${instruction}` }, ...messages.slice(1)]
  }
  return [Message.system(instruction), ...messages]
}

const MAX_PROBLEM = 300

/** The re-format request sent after a reply that did not parse or decode. @internal */
export const reformatRequest = (problem: string): string =>
  "Your previous response could not be parsed as valid JSON matching the schema" +
  (problem ? ` (${problem.length > MAX_PROBLEM ? problem.slice(0, MAX_PROBLEM) + "…" : problem})` : "") +
  ". Reply with only the JSON object, nothing else."

/**
 * The messages of a retry: the bad reply (when there was one) and the re-format
 * request appended to the first attempt's messages.
 *
 * @internal
 */
export const retryMessages = (
  messages: ReadonlyArray<ChatMessage>,
  badReply: string | undefined,
  problem: string
): ReadonlyArray<ChatMessage> =>
  badReply === undefined
    ? messages
    : [...messages, Message.assistant(badReply), Message.user(reformatRequest(problem))]
