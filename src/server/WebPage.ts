/**
 * The web page: `GET /` serves `src/web/index.html`, `GET /assets/*` serves the
 * page's script, stylesheet and the markdown-it browser bundle (no CDN: the
 * machines that run this have no internet).
 *
 * Files are read once, when the layer is built, and answered from memory with
 * an `ETag`; the page's own files are revalidated on every load (`no-cache`),
 * the vendored markdown-it bundle is cached for a day.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { readdirSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { extname, join } from "node:path"
import { fileURLToPath } from "node:url"

/**
 * A file the page needs could not be read when the server started.
 *
 * @since 0.1.0
 * @category errors
 */
export class WebAssetError extends Schema.TaggedError<WebAssetError>()("WebAssetError", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * One file served by the page routes.
 *
 * @since 0.1.0
 * @category models
 */
export interface WebAsset {
  readonly route: string
  readonly file: string
  readonly contentType: string
  readonly cacheControl: string
}

const WEB_DIR = fileURLToPath(new URL("../web/", import.meta.url))

const markdownItBundle = (): string =>
  // the package's `./browser` export resolves to the UMD bundle under the `require` condition
  createRequire(import.meta.url).resolve("markdown-it/browser")

const REVALIDATE = "no-cache"
const VENDOR = "public, max-age=86400"

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png"
}

/**
 * The files served by {@link WebPageRoutes}: `index.html` at `/`, every other file
 * of `src/web/` at `/assets/<name>`, the markdown-it browser bundle at
 * `/assets/markdown-it.min.js` and the icon at `/favicon.svg`.
 *
 * @since 0.1.0
 * @category constants
 */
export const webAssets = (): ReadonlyArray<WebAsset> => {
  const assets: Array<WebAsset> = [
    { route: "/", file: join(WEB_DIR, "index.html"), contentType: CONTENT_TYPES[".html"], cacheControl: REVALIDATE },
    {
      route: "/favicon.svg",
      file: join(WEB_DIR, "favicon.svg"),
      contentType: CONTENT_TYPES[".svg"],
      cacheControl: VENDOR
    },
    {
      route: "/assets/markdown-it.min.js",
      file: markdownItBundle(),
      contentType: CONTENT_TYPES[".js"],
      cacheControl: VENDOR
    }
  ]
  for (const name of readdirSync(WEB_DIR).sort()) {
    const type = CONTENT_TYPES[extname(name)]
    if (name === "index.html" || type === undefined) continue
    assets.push({ route: `/assets/${name}`, file: join(WEB_DIR, name), contentType: type, cacheControl: REVALIDATE })
  }
  return assets
}

const loadAsset = (asset: WebAsset) =>
  Effect.tryPromise({
    try: () => readFile(asset.file),
    catch: (cause) =>
      new WebAssetError({ path: asset.file, message: `cannot read web asset ${asset.file}: ${String(cause)}` })
  }).pipe(
    Effect.map((body) => ({
      ...asset,
      body: new Uint8Array(body),
      etag: `"${createHash("sha1").update(body).digest("base64url").slice(0, 20)}"`
    }))
  )

// No other site may frame the page (clickjacking): `frame-ancestors` below, and
// X-Frame-Options for browsers that predate it.
const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
} as const

// The page runs only its own scripts; previews of artifacts live in sandboxed srcdoc
// iframes; no page may embed it.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "frame-src 'self' about: data: blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join("; ")

/**
 * Routes for the web page: `GET /` and `GET /assets/*`. Add it next to the API
 * routes and serve both with `HttpLayerRouter.serve`.
 *
 * @since 0.1.0
 * @category layers
 */
export const WebPageRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const list = yield* Effect.try({
      try: webAssets,
      catch: (cause) => new WebAssetError({ path: WEB_DIR, message: `cannot list web assets: ${String(cause)}` })
    })
    const assets = yield* Effect.forEach(list, loadAsset)
    for (const asset of assets) {
      yield* router.add(
        "GET",
        asset.route as `/${string}`,
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const headers: Record<string, string> = {
            ...SECURITY_HEADERS,
            "cache-control": asset.cacheControl,
            etag: asset.etag
          }
          if (asset.route === "/") headers["content-security-policy"] = CSP
          if (request.headers["if-none-match"] === asset.etag) {
            return HttpServerResponse.empty({ status: 304, headers })
          }
          return HttpServerResponse.uint8Array(asset.body, { contentType: asset.contentType, headers })
        })
      )
    }
  })
)
