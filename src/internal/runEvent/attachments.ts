/**
 * What a run was given to read besides its text (re-exported by RunEvent.ts;
 * docs/attachments.md).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { agent } from "./fields.js"

/**
 * The run's attachments, by reference only: its first event when it has any.
 * `sha256` and `size` for a stored attachment, `url` for an image the caller
 * gave as a URL.
 *
 * @since 0.1.0
 * @category models
 */
export const AttachmentsReceived = Schema.TaggedStruct("AttachmentsReceived", {
  attachments: Schema.Array(Schema.Struct({
    name: Schema.String,
    media_type: Schema.String,
    size: Schema.optional(Schema.Number),
    sha256: Schema.optional(Schema.String),
    url: Schema.optional(Schema.String)
  })),
  agent
})
