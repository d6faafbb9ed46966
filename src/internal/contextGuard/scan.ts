/**
 * The incremental part of a check: the per-message hard cut and the token total of
 * a list, resumed from what the guard saw on an earlier check so that the common
 * check (the loop's list, a few messages appended since) costs O(new messages).
 *
 * A scanner remembers, for a list it checked and found with no over-long message:
 * its length, the estimated tokens of those messages, and (for the same array) its
 * first and last message. A later check resumes after that prefix when
 *
 * - the list is the SAME array, it has not shrunk, and its first message and the
 *   message at the old last position are the same objects (the loop appends to its
 *   list and may replace the system prompt at index 0 in place — detected); O(1);
 * - or it is a DIFFERENT array whose first messages are, object for object, the
 *   messages of the most recent list checked through this path (the scanner keeps
 *   its own copy, so later edits of the caller's array cannot fool it); a pointer
 *   comparison per message, no estimate and no character count.
 *
 * Otherwise the whole list is walked (per-message estimates stay cached by
 * `TokenEstimator`). The result is the same as a full walk's in every case where
 * the same array is only appended to, or has its first message replaced, between
 * checks; an array edited in place elsewhere must be passed as a new array.
 *
 * @internal
 */
import type { ChatMessage } from "../../Message.js"
import { estimateMessage } from "../../TokenEstimator.js"
import { exceeds, truncateMessage } from "./compact.js"

/** What a scan found. @internal */
export interface Scan {
  /** A copy with the over-long messages cut, `undefined` when none was. */
  readonly cut: Array<ChatMessage> | undefined
  /** Estimated tokens of `cut ?? messages`. */
  readonly total: number
  /** Messages walked (estimated and measured): the new suffix, or the whole list. */
  readonly walked: number
}

interface Seen {
  readonly length: number
  readonly total: number
  readonly first: ChatMessage | undefined
  readonly last: ChatMessage | undefined
}

interface Recent {
  /** The scanner's own copy of the messages (only ever appended to while current). */
  readonly elements: Array<ChatMessage>
  readonly length: number
  readonly total: number
}

/** A scanner for one guard (`maxMsgChars` fixed). @internal */
export type Scanner = (messages: ReadonlyArray<ChatMessage>) => Scan

const samePrefix = (
  messages: ReadonlyArray<ChatMessage>,
  elements: ReadonlyArray<ChatMessage>,
  length: number
): boolean => {
  for (let i = 0; i < length; i++) if (messages[i] !== elements[i]) return false
  return true
}

/** @internal */
export const makeScanner = (maxMsgChars: number): Scanner => {
  const byList = new WeakMap<ReadonlyArray<ChatMessage>, Seen>()
  let recent: Recent | undefined

  return (messages) => {
    const length = messages.length
    let start = 0
    let total = 0
    let fromRecent = false
    const seen = byList.get(messages)
    if (
      seen !== undefined && length >= seen.length &&
      (seen.length === 0 || (messages[0] === seen.first && messages[seen.length - 1] === seen.last))
    ) {
      start = seen.length
      total = seen.total
    } else if (
      recent !== undefined && length >= recent.length && samePrefix(messages, recent.elements, recent.length)
    ) {
      start = recent.length
      total = recent.total
      fromRecent = true
    }
    let cut: Array<ChatMessage> | undefined
    for (let i = start; i < length; i++) {
      let message = messages[i]
      if (exceeds(message, maxMsgChars)) {
        cut ??= messages.slice()
        message = truncateMessage(message, maxMsgChars)
        cut[i] = message
      }
      total += estimateMessage(message)
    }
    if (cut === undefined) {
      byList.set(messages, { length, total, first: messages[0], last: messages[length - 1] })
      if (fromRecent && recent !== undefined) {
        const elements = recent.elements
        elements.length = recent.length
        for (let i = recent.length; i < length; i++) elements.push(messages[i])
        recent = { elements, length, total }
      } else if (start === 0) {
        recent = { elements: messages.slice(), length, total }
      }
    }
    return { cut, total, walked: length - start }
  }
}
