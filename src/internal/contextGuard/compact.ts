/**
 * The pure parts of the context guard: the per-message hard cut, the split of a
 * message list into atomic units (a tool-call group is one unit), heuristic
 * truncation, and the plan / assembly of an LLM compaction.
 *
 * @internal
 */
import type { ChatMessage, ContentPart } from "../../Message.js"
import { estimateMessage } from "../../TokenEstimator.js"
import { isNote } from "./attachments.js"

/** The suffix of a message cut by the per-message limit. @internal */
export const TRUNCATED_SUFFIX = "\n[Truncated]"

/** The first words of the summary message. @internal */
export const SUMMARY_PREFIX = "[Conversation summary]"

/** Inserted (only) when a pinned assistant message would otherwise open the list. @internal */
export const TRUNCATION_NOTE = "[Earlier conversation truncated]"

// ---------------------------------------------------------------------------
// per-message hard cut

const contentChars = (message: ChatMessage): number => {
  const content = message.content
  if (content === null) return 0
  if (typeof content === "string") return content.length
  let chars = 0
  for (const part of content) if (part.type === "text") chars += part.text.length
  return chars
}

/** Does the message's text exceed `max` characters? @internal */
export const exceeds = (message: ChatMessage, max: number): boolean => contentChars(message) > max

/** Cuts a string to at most `max` UTF-16 units, never inside a surrogate pair. */
const cutString = (text: string, max: number): string => {
  let end = Math.max(0, max)
  if (end > 0 && end < text.length && (text.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--
  return text.slice(0, end)
}

/**
 * Cuts the message's text so that it is at most `max` characters including the
 * `[Truncated]` suffix (so a cut message is not cut again). Other fields (role,
 * pinned, tool ids, tool calls, images) are kept.
 *
 * @internal
 */
export const truncateMessage = <M extends ChatMessage>(message: M, max: number): M => {
  const room = Math.max(0, max - TRUNCATED_SUFFIX.length)
  const content = message.content
  if (content === null) return message
  if (typeof content === "string") return { ...message, content: cutString(content, room) + TRUNCATED_SUFFIX }
  const parts: Array<ContentPart> = []
  let left = room
  let done = false
  for (const part of content) {
    if (part.type !== "text") {
      parts.push(part)
      continue
    }
    if (done) continue
    if (part.text.length <= left) {
      parts.push(part)
      left -= part.text.length
    } else {
      parts.push({ type: "text", text: cutString(part.text, left) + TRUNCATED_SUFFIX })
      done = true
    }
  }
  return { ...message, content: parts }
}

// ---------------------------------------------------------------------------
// units

/**
 * An atomic run of messages: one message, an assistant message with
 * `tool_calls` plus the tool messages answering it, or (JSON mode) an assistant
 * message plus the `Observation:` user message right after it. `orphan` marks a tool message
 * without its assistant message (invalid input; never kept by compaction).
 *
 * @internal
 */
export interface Unit {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tokens: number
  readonly pinned: boolean
  readonly orphan: boolean
  /** The first message is an assistant message. */
  readonly assistantFirst: boolean
}

/** @internal */
export interface Split {
  readonly systems: ReadonlyArray<ChatMessage>
  readonly units: ReadonlyArray<Unit>
  readonly systemTokens: number
}

/**
 * A JSON-mode observation: an unpinned user message starting `Observation:` —
 * plain text, or (when the tool returned files) that text then the files (or
 * the notes that took their place).
 */
const isObservation = (m: ChatMessage | undefined): boolean => {
  if (m === undefined || m.role !== "user" || m.pinned === true) return false
  if (typeof m.content === "string") return m.content.startsWith("Observation:")
  const [first, ...rest] = m.content
  return first?.type === "text" && first.text.startsWith("Observation:") && rest.length > 0 &&
    rest.every((p) => p.type === "file" || (p.type === "text" && isNote(p.text)))
}

const unit = (messages: ReadonlyArray<ChatMessage>, orphan: boolean): Unit => {
  let tokens = 0
  let pinned = false
  for (const m of messages) {
    tokens += estimateMessage(m)
    if (m.pinned === true) pinned = true
  }
  return { messages, tokens, pinned, orphan, assistantFirst: messages[0].role === "assistant" }
}

/**
 * System messages (wherever they are) and the units of everything else, in order.
 *
 * @internal
 */
export const split = (messages: ReadonlyArray<ChatMessage>): Split => {
  const systems: Array<ChatMessage> = []
  const rest: Array<ChatMessage> = []
  let systemTokens = 0
  for (const m of messages) {
    if (m.role === "system") {
      systems.push(m)
      systemTokens += estimateMessage(m)
    } else rest.push(m)
  }
  const units: Array<Unit> = []
  let i = 0
  while (i < rest.length) {
    const m = rest[i]
    if (m.role === "assistant" && m.tool_calls !== undefined && m.tool_calls.length > 0) {
      const ids = new Set(m.tool_calls.map((c) => c.id))
      let j = i + 1
      while (j < rest.length) {
        const next = rest[j]
        if (next.role !== "tool" || !ids.has(next.tool_call_id)) break
        j++
      }
      units.push(unit(rest.slice(i, j), false))
      i = j
    } else if (m.role === "assistant" && isObservation(rest[i + 1])) {
      // JSON mode: an action and its observation travel together
      units.push(unit(rest.slice(i, i + 2), false))
      i += 2
    } else {
      units.push(unit([m], m.role === "tool"))
      i++
    }
  }
  return { systems, units, systemTokens }
}

const flatten = (
  systems: ReadonlyArray<ChatMessage>,
  units: Iterable<Unit>,
  extra?: ChatMessage
): Array<ChatMessage> => {
  const out: Array<ChatMessage> = [...systems]
  if (extra !== undefined) out.push(extra)
  for (const u of units) for (const m of u.messages) out.push(m)
  return out
}

/** Tokens of the system messages and the pinned units. @internal */
export const baseTokens = (s: Split): number => {
  let tokens = s.systemTokens
  for (const u of s.units) if (u.pinned) tokens += u.tokens
  return tokens
}

// ---------------------------------------------------------------------------
// heuristic truncation

/**
 * Keeps the system messages and the pinned units, then the newest units that fit
 * (a contiguous window: it stops at the first unit that does not fit). Orphan
 * tool messages are dropped. The first message after the system messages is
 * never an assistant message: an unpinned leading assistant unit is dropped; a
 * pinned one gets a short user note before it.
 *
 * @internal
 */
export const heuristic = (messages: ReadonlyArray<ChatMessage>, budget: number): Array<ChatMessage> => {
  const s = split(messages)
  const keep = new Array<boolean>(s.units.length).fill(false)
  let used = baseTokens(s)
  s.units.forEach((u, i) => {
    if (u.pinned && !u.orphan) keep[i] = true
  })
  for (let i = s.units.length - 1; i >= 0; i--) {
    const u = s.units[i]
    if (u.pinned || u.orphan) continue
    if (used + u.tokens > budget) break
    keep[i] = true
    used += u.tokens
  }
  let note: ChatMessage | undefined
  for (let i = 0; i < s.units.length; i++) {
    if (!keep[i]) continue
    const u = s.units[i]
    if (!u.assistantFirst) break
    if (u.pinned) {
      note = { role: "user", content: TRUNCATION_NOTE }
      used += estimateMessage(note)
      break
    }
    keep[i] = false
    used -= u.tokens
  }
  // the note's room comes from the oldest unpinned units kept
  for (let i = 0; i < s.units.length && used > budget && note !== undefined; i++) {
    if (keep[i] && !s.units[i].pinned) {
      keep[i] = false
      used -= s.units[i].tokens
    }
  }
  return flatten(s.systems, s.units.filter((_, i) => keep[i]), note)
}

// ---------------------------------------------------------------------------
// LLM compaction: plan and assembly

/** @internal */
export interface CompactionPlan {
  readonly split: Split
  /** The units to summarise (oldest, unpinned, outside the recent window). */
  readonly old: ReadonlyArray<Unit>
  /** Index of the first unit of the recent window. */
  readonly recentStart: number
}

/**
 * Chooses what to summarise: everything unpinned before the recent window. The
 * window holds at least `keepRecent` messages as whole units (it is extended
 * backwards over a tool-call group rather than split it), but only as many of
 * the newest units as fit beside the system messages, pinned messages and the
 * summary allowance. `undefined` when there is nothing to summarise or the
 * fixed part alone leaves no room for a summary.
 *
 * @internal
 */
export const planCompaction = (
  messages: ReadonlyArray<ChatMessage>,
  budget: number,
  keepRecent: number,
  summaryTokens: number
): CompactionPlan | undefined => {
  const s = split(messages)
  let room = budget - baseTokens(s) - summaryTokens
  if (room < 0) return undefined
  let count = 0
  let recentStart = s.units.length
  while (recentStart > 0 && count < keepRecent) {
    const u = s.units[recentStart - 1]
    if (!u.pinned) {
      if (u.tokens > room) break
      room -= u.tokens
    }
    count += u.messages.length
    recentStart--
  }
  const old = s.units.slice(0, recentStart).filter((u) => !u.pinned)
  if (old.length === 0) return undefined
  return { split: s, old, recentStart }
}

/**
 * The compacted list: system messages, the summary (cut to `maxMsgChars`), then
 * the pinned units before the window and the recent window, in their original
 * order (orphans dropped).
 *
 * @internal
 */
export const assemble = (plan: CompactionPlan, summary: string, maxMsgChars: number): Array<ChatMessage> => {
  const { split: s, recentStart } = plan
  const kept = s.units.filter((u, i) => !u.orphan && (u.pinned || i >= recentStart))
  // the summary obeys the per-message cut like every other message (a runaway model may write a novel)
  const message: ChatMessage = { role: "user", content: `${SUMMARY_PREFIX}\n${summary}` }
  return flatten(s.systems, kept, exceeds(message, maxMsgChars) ? truncateMessage(message, maxMsgChars) : message)
}

/** Same list (same length, same message objects)? @internal */
export const sameMessages = (a: ReadonlyArray<ChatMessage>, b: ReadonlyArray<ChatMessage>): boolean => {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
