/**
 * The API's errors about users (docs/memory.md): an invalid user id (400
 * `invalid_user_id`) and a conversation of another user (409
 * `conversation_user_mismatch`). Re-exported by `ApiError`.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * 400: a `user_id` (`user` on `/v1/chat/completions`) that is not 1–128
 * characters of letters, digits and `. _ : @ -`.
 */
export class InvalidUserId extends Schema.TaggedError<InvalidUserId>()("InvalidUserId", { field: Schema.String }) {
  override get message(): string {
    return `${this.field}: expected 1-128 characters of letters, digits, '.', '_', ':', '@', '-'`
  }
}

/** 409: the conversation belongs to another user (or to nobody, or to a user when the request has none). */
export class ConversationUserMismatch
  extends Schema.TaggedError<ConversationUserMismatch>()("ConversationUserMismatch", {
    conversationId: Schema.String
  })
{
  override get message(): string {
    return "This conversation belongs to another user"
  }
}

export const toResponse = (error: InvalidUserId | ConversationUserMismatch): HttpServerResponse.HttpServerResponse =>
  error._tag === "InvalidUserId"
    ? HttpServerResponse.unsafeJson({ error: "invalid_user_id", message: error.message, field: error.field }, {
      status: 400
    })
    : HttpServerResponse.unsafeJson(
      { error: "conversation_user_mismatch", message: error.message, conversation_id: error.conversationId },
      { status: 409 }
    )

/** A request's user id (`field` names it in the error): absent stays absent; anything but a valid id is `InvalidUserId`. */
export const userIdOf = (value: unknown, field = "user_id"): Effect.Effect<string | undefined, InvalidUserId> =>
  value === undefined || value === null
    ? Effect.succeed(undefined)
    : typeof value === "string" && /^[A-Za-z0-9._:@-]{1,128}$/.test(value)
    ? Effect.succeed(value)
    : Effect.fail(new InvalidUserId({ field }))

/**
 * Fails with `ConversationUserMismatch` unless a run of `userId` (undefined: of
 * nobody) may continue the conversation; a new conversation with a user id
 * becomes that user's (`ConversationStore.claim`). Without a conversation
 * store there is nothing to check.
 */
export const claim = (
  store: {
    readonly claim: (
      id: string,
      userId: string | undefined,
      query: string
    ) => Effect.Effect<boolean, { readonly message: string }>
  } | undefined,
  conversationId: string,
  userId: string | undefined,
  query: string
): Effect.Effect<void, ConversationUserMismatch> =>
  store === undefined ? Effect.void : Effect.flatMap(
    Effect.orDie(Effect.mapError(store.claim(conversationId, userId, query), (e) => new Error(e.message))),
    (ok) => (ok ? Effect.void : Effect.fail(new ConversationUserMismatch({ conversationId })))
  )
