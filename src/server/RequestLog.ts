/**
 * What the server records about each HTTP request — the request log line and
 * the `http.server` span — with credentials redacted: the values of
 * credential-like query parameters (`access_token`, the documented `EventSource`
 * route, `token`, `api_key`, `secret`, `password`, …), user info in an absolute
 * URL, and credential headers (`authorization`, `proxy-authorization`, `cookie`,
 * `x-api-key`, plus the names in `Headers.currentRedactedNames`).
 *
 * The platform's own logger and tracer write the raw URL (`http.url`, `url.full`,
 * `url.query`); `Server.serve` uses these instead.
 *
 * @since 0.1.0
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/**
 * Query parameter names whose values are credentials.
 *
 * @since 0.1.0
 * @category constants
 */
export const CREDENTIAL_PARAM = /(token|key|secret|passw(or)?d|auth(orization)?|sig(nature)?|credentials?)$/i

/**
 * Header names redacted besides `Headers.currentRedactedNames`.
 *
 * @since 0.1.0
 * @category constants
 */
export const CREDENTIAL_HEADERS: ReadonlyArray<string | RegExp> = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "x-api-key"
]

const REDACTED = "REDACTED"

const paramName = (part: string): string => {
  const raw = part.split("=", 1)[0].replace(/\+/g, " ")
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

/**
 * A request URL (path + query, or absolute) with the values of credential-like
 * query parameters and any user info replaced by `REDACTED`; everything else is
 * kept byte for byte.
 *
 * @since 0.1.0
 * @category utils
 */
export const redactUrl = (url: string): string => {
  const withoutUser = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, `$1${REDACTED}@`)
  const q = withoutUser.indexOf("?")
  if (q < 0) return withoutUser
  const hash = withoutUser.indexOf("#", q)
  const query = withoutUser.slice(q + 1, hash < 0 ? undefined : hash)
  const redacted = query
    .split("&")
    .map((
      part
    ) => (part !== "" && CREDENTIAL_PARAM.test(paramName(part)) ? `${part.split("=", 1)[0]}=${REDACTED}` : part))
    .join("&")
  return withoutUser.slice(0, q + 1) + redacted + (hash < 0 ? "" : withoutUser.slice(hash))
}

/**
 * The request log line (`Sent HTTP response`, annotated with `http.method`,
 * `http.url` redacted, `http.status`), like the platform's `HttpMiddleware.logger`.
 * Honours `HttpMiddleware.withLoggerDisabled`.
 *
 * @since 0.1.0
 * @category middleware
 */
export const logger = HttpMiddleware.make((app) => {
  let counter = 0
  return Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    return Effect.withLogSpan(
      Effect.flatMap(Effect.exit(app), (exit) => {
        if (fiber.getFiberRef(HttpMiddleware.loggerDisabled)) return exit
        const annotations = (status: number) => ({
          "http.method": request.method,
          "http.url": redactUrl(request.url),
          "http.status": status
        })
        if (exit._tag === "Failure") {
          const [response, cause] = HttpServerError.causeResponseStripped(exit.cause)
          return Effect.zipRight(
            Effect.annotateLogs(
              Effect.log(cause._tag === "Some" ? cause.value : "Sent HTTP Response"),
              annotations(response.status)
            ),
            exit
          )
        }
        return Effect.zipRight(
          Effect.annotateLogs(Effect.log("Sent HTTP response"), annotations(exit.value.status)),
          exit
        )
      }),
      `http.span.${++counter}`
    )
  })
})

/**
 * The `http.server` span of each request, with the attributes of the platform's
 * tracer (`url.full`, `url.path`, `url.query`, request and response headers…),
 * URL and headers redacted. Serve with the platform's tracer disabled
 * (`HttpMiddleware.withTracerDisabledWhen(() => true)`), as `Server.serve` does.
 *
 * @since 0.1.0
 * @category middleware
 */
export const tracer = HttpMiddleware.make((app) =>
  Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const url = Option.getOrUndefined(HttpServerRequest.toURL(request.modify({ url: redactUrl(request.url) })))
    const names = [...fiber.getFiberRef(Headers.currentRedactedNames), ...CREDENTIAL_HEADERS]
    const spanName = Context.get(fiber.currentContext, HttpMiddleware.SpanNameGenerator)(request)
    return Effect.useSpan(
      spanName,
      {
        parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)),
        kind: "server",
        captureStackTrace: false
      },
      (span) => {
        span.attribute("http.request.method", request.method)
        if (url !== undefined) {
          if (url.username !== "" || url.password !== "") {
            url.username = REDACTED
            url.password = ""
          }
          span.attribute("url.full", url.toString())
          span.attribute("url.path", url.pathname)
          if (url.search.length > 1) span.attribute("url.query", url.search.slice(1))
          span.attribute("url.scheme", url.protocol.slice(0, -1))
        }
        const userAgent = request.headers["user-agent"]
        if (userAgent !== undefined) span.attribute("user_agent.original", userAgent)
        for (const [name, value] of Object.entries(Headers.redact(request.headers, names))) {
          span.attribute(`http.request.header.${name}`, String(value))
        }
        if (request.remoteAddress._tag === "Some") span.attribute("client.address", request.remoteAddress.value)
        return Effect.flatMap(Effect.exit(Effect.withParentSpan(app, span)), (exit) => {
          const response = HttpServerError.exitResponse(exit)
          span.attribute("http.response.status_code", response.status)
          for (const [name, value] of Object.entries(Headers.redact(response.headers, names))) {
            span.attribute(`http.response.header.${name}`, String(value))
          }
          return exit
        })
      }
    )
  })
)
