/**
 * The files a tool returned (a rich result's `files`: attachments the model is
 * to see), as they go into the tool message (native mode) or the observation
 * (JSON mode).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Content, FilePart, UserMessage } from "../../Message.js"
import * as Message from "../../Message.js"
import type { RunJournal } from "../../RunJournal.js"
import type { CallOutcome } from "./toolCall.js"

/** The files of a call's outcome (none for a failure or a text result). */
export const filesOf = (o: CallOutcome): ReadonlyArray<FilePart> =>
  o.outcome._tag === "Success" && typeof o.outcome.output !== "string" ? o.outcome.output.files ?? [] : []

/** A JSON-mode observation: its text, then the files the tool returned. */
export const observation = (text: string, o: CallOutcome): UserMessage => {
  const files = filesOf(o)
  return Message.user(files.length === 0 ? text : [{ type: "text", text }, ...files])
}

/** The run's first event when its query has attachments: what it was given, by reference. */
export const announce = (journal: RunJournal, query: Content): Effect.Effect<void> => {
  const files = Message.filesOf(query)
  if (files.length === 0) return Effect.void
  return journal.emit({
    _tag: "AttachmentsReceived",
    attachments: files.map(({ file }) => ({
      name: file.name,
      media_type: file.media_type,
      ...(file.size !== undefined ? { size: file.size } : {}),
      ...(file.sha256 !== undefined ? { sha256: file.sha256 } : {}),
      ...(file.url !== undefined && file.sha256 === undefined ? { url: file.url } : {})
    }))
  })
}
