/**
 * A server run's attachments: the query the model reads (its text, then its
 * files), and what the run was given read back (`react_run_attachments`: the
 * conversation's turns, the next turn's history, a fork).
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { Content, FileRef } from "../../Message.js"
import * as Message from "../../Message.js"

/** The run's query: its text, then its attachments (the text alone without any). */
export const query = (text: string, refs: ReadonlyArray<FileRef> | undefined): Content =>
  refs === undefined || refs.length === 0 ? text : [{ type: "text", text }, ...refs.map(Message.file)]

/** A turn's user message: its query, with the run's attachments when it had any. */
export const userMessage = (text: string, refs: ReadonlyArray<FileRef> | undefined): Message.UserMessage =>
  Message.user(query(text, refs))

const decodeRef = Schema.decodeUnknownEither(Schema.parseJson(Message.FileRef))

/**
 * The attachments of each of these runs (`react_run_attachments`), read with
 * the caller's `SqlClient`; empty when the table is not there (a database the
 * attachment store never opened).
 */
export const ofRuns = (
  sql: SqlClient.SqlClient,
  runIds: ReadonlyArray<string>
): Effect.Effect<ReadonlyMap<string, ReadonlyArray<FileRef>>> =>
  runIds.length === 0 ? Effect.succeed(new Map()) : sql<{ run_id: string; ref: string }>`SELECT run_id, ref
    FROM react_run_attachments WHERE ${sql.in("run_id", runIds)} ORDER BY run_id, position`.pipe(
    Effect.map((rows) => {
      const out = new Map<string, Array<FileRef>>()
      for (const row of rows) {
        const ref = decodeRef(row.ref)
        if (Either.isRight(ref)) out.set(row.run_id, [...out.get(row.run_id) ?? [], ref.right])
      }
      return out as ReadonlyMap<string, ReadonlyArray<FileRef>>
    }),
    Effect.orElseSucceed(() => new Map())
  )

/** What a stored turn says of its attachments (`turn_details[].attachments`): by hash, never the bytes. */
export const summary = (ref: FileRef) => ({
  name: ref.name,
  media_type: ref.media_type,
  ...(ref.size !== undefined ? { size: ref.size } : {}),
  ...(ref.sha256 !== undefined ? { sha256: ref.sha256 } : {}),
  ...(ref.url !== undefined && ref.sha256 === undefined ? { url: ref.url } : {})
})
