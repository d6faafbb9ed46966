/**
 * Over budget, attachments give way before any text is compacted: the oldest
 * first, each replaced by a note naming it, until the list fits. Messages keep
 * their roles, ids, tool calls and `pinned` flags (the pairing holds).
 *
 * @internal
 */
import * as Attachments from "../../Attachments.js"
import type { ChatMessage, ContentPart, FileRef } from "../../Message.js"
import { estimateMessage } from "../../TokenEstimator.js"

/** What the model reads instead of an attachment the guard left out. */
export const note = (ref: FileRef | undefined): string =>
  ref === undefined
    ? "[An image was left out to fit the context.]"
    : `[Attachment ${Attachments.describe(ref)} was left out to fit the context.]`

/** True for a note `note` wrote (in a message's content where an attachment was). */
export const isNote = (text: string): boolean =>
  text === note(undefined) || (text.startsWith("[Attachment ") && text.endsWith(" was left out to fit the context.]"))

const hasAttachment = (m: ChatMessage): boolean =>
  (m.role === "tool" && m.files !== undefined && m.files.length > 0) ||
  (m.role === "user" && typeof m.content !== "string" && m.content.some((p) => p.type !== "text"))

/** The message without its first attachment (a note in its place). */
const withoutFirst = (m: ChatMessage): ChatMessage => {
  if (m.role === "tool") {
    const [first, ...rest] = m.files ?? []
    const { files: _files, ...message } = m
    const content = `${m.content}\n${note(first?.file)}`
    return rest.length > 0 ? { ...message, content, files: rest } : { ...message, content }
  }
  if (m.role !== "user" || typeof m.content === "string") return m
  const index = m.content.findIndex((p) => p.type !== "text")
  const part = m.content[index]
  const replaced: ContentPart = { type: "text", text: note(part.type === "file" ? part.file : undefined) }
  return { ...m, content: [...m.content.slice(0, index), replaced, ...m.content.slice(index + 1)] }
}

/**
 * The list with its oldest attachments replaced by notes until its estimate is
 * within `limit` (or none is left); `undefined` when it has no attachment.
 */
export const lighten = (
  messages: ReadonlyArray<ChatMessage>,
  total: number,
  limit: number
): ReadonlyArray<ChatMessage> | undefined => {
  let out: Array<ChatMessage> | undefined
  let tokens = total
  for (let i = 0; i < messages.length && tokens > limit; i++) {
    let m = messages[i]
    while (tokens > limit && hasAttachment(m)) {
      const next = withoutFirst(m)
      tokens += estimateMessage(next) - estimateMessage(m)
      m = next
    }
    if (m !== messages[i]) {
      out ??= messages.slice()
      out[i] = m
    }
  }
  return out
}
