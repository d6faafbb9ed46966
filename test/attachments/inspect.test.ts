/**
 * What an attachment's bytes are (SPEC §24 "Types"): the five binary formats by
 * their magic numbers, dimensions and page counts read for token estimates,
 * text types checked, a declared type the bytes contradict refused, sizes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Attachments from "../../src/Attachments.js"
import * as TokenEstimator from "../../src/TokenEstimator.js"
import * as Files from "../utils/attachmentFiles.js"

const refOf = (bytes: Uint8Array, options: Attachments.PutOptions & { maxBytes?: number } = {}) => {
  const checked = Attachments.inspect(bytes, options)
  if (Either.isLeft(checked)) throw new Error(`refused: ${checked.left.message}`)
  return checked.right
}
const refusal = (bytes: Uint8Array, options: Attachments.PutOptions & { maxBytes?: number } = {}) => {
  const checked = Attachments.inspect(bytes, options)
  if (Either.isRight(checked)) throw new Error(`accepted as ${checked.right.media_type}`)
  return checked.left
}

describe("Attachments.inspect", () => {
  it("recognises each image format by its bytes and reads its dimensions", () => {
    const cases: ReadonlyArray<readonly [Uint8Array, string, number, number]> = [
      [Files.png(37, 21), "image/png", 37, 21],
      [Files.jpegHeader(1024, 768), "image/jpeg", 1024, 768],
      [Files.gifHeader(300, 200), "image/gif", 300, 200],
      [Files.webpHeader("VP8 ", 640, 480), "image/webp", 640, 480],
      [Files.webpHeader("VP8L", 1000, 17), "image/webp", 1000, 17],
      [Files.webpHeader("VP8X", 4000, 3000), "image/webp", 4000, 3000]
    ]
    for (const [bytes, type, width, height] of cases) {
      const ref = refOf(bytes)
      assert.deepInclude(ref, { media_type: type, width, height, size: bytes.length }, type)
      assert.match(ref.sha256 ?? "", /^[0-9a-f]{64}$/)
    }
  })

  it("counts a PDF's pages", () => {
    assert.deepInclude(refOf(Files.pdf(3), { name: "r.pdf" }), {
      media_type: "application/pdf",
      pages: 3,
      name: "r.pdf"
    })
    assert.strictEqual(refOf(Files.pdf(1)).pages, 1)
  })

  it("refuses a declared type the bytes contradict, naming both (415)", () => {
    const e = refusal(Files.png(2, 2), { mediaType: "image/jpeg", field: "attachments.0.media_type" })
    assert.strictEqual(e.code, "unsupported_media_type")
    assert.strictEqual(e.message, "attachments.0.media_type: declared image/jpeg, but the bytes are a PNG image")
    assert.strictEqual(
      refusal(Files.pdf(1), { mediaType: "text/plain" }).message,
      "declared text/plain, but the bytes are a PDF"
    )
    assert.strictEqual(
      refusal(new Uint8Array([1, 2, 3]), { mediaType: "application/pdf" }).message,
      "declared application/pdf, but the bytes are not a PDF"
    )
    assert.include(
      refusal(Buffer.from("{not json"), { mediaType: "application/json" }).message,
      "not UTF-8 text that parses as JSON"
    )
    assert.include(refusal(new Uint8Array([0xff, 0xfe, 0x00]), { mediaType: "text/plain" }).message, "not UTF-8 text")
  })

  it("refuses types it does not take, and bytes it cannot recognise without a type (415)", () => {
    assert.include(
      refusal(Buffer.from("<p>hi</p>"), { mediaType: "text/html" }).message,
      "text/html is not a supported type"
    )
    assert.include(refusal(new Uint8Array([1, 2, 3, 4])).message, "could not be recognised")
    // a name says nothing of an image's bytes
    assert.include(refusal(Buffer.from("not a picture"), { name: "fake.png" }).message, "could not be recognised")
  })

  it("takes text types as declared, or by the name's extension", () => {
    assert.strictEqual(
      refOf(Buffer.from("a,b\n1,2\n"), { mediaType: "text/csv; charset=utf-8" }).media_type,
      "text/csv"
    )
    assert.strictEqual(refOf(Buffer.from("# Notes"), { name: "notes.md" }).media_type, "text/markdown")
    assert.strictEqual(refOf(Files.png(1, 1), { mediaType: "application/octet-stream" }).media_type, "image/png")
    assert.strictEqual(refOf(Files.jpegHeader(1, 1), { mediaType: "image/jpg" }).media_type, "image/jpeg")
  })

  it("refuses an empty attachment (400) and one over the limit (413), naming the limit", () => {
    assert.strictEqual(refusal(new Uint8Array(), { field: "file" }).code, "invalid_attachment")
    const big = refusal(Files.png(4, 4), { maxBytes: 10 })
    assert.strictEqual(big.code, "attachment_too_large")
    assert.strictEqual(big.limit, 10)
    assert.include(big.message, "over the limit of 10 bytes")
  })

  it("names files safely: no directories, no control characters; a made-up name otherwise", () => {
    assert.strictEqual(refOf(Files.png(1, 1), { name: "../../etc/pic\u0000.png" }).name, "pic.png")
    assert.match(refOf(Files.png(1, 1)).name, /^attachment-[0-9a-f]{8}\.png$/)
  })

  it("estimates tokens by dimensions and pages", () => {
    // OpenAI: 1024×1024 → 768×768 → 4 tiles → 765; Anthropic: 1024²/750 → 1399
    assert.strictEqual(TokenEstimator.imageTokensOpenAi(1024, 1024), 765)
    assert.strictEqual(TokenEstimator.imageTokensAnthropic(1024, 1024), 1399)
    assert.strictEqual(TokenEstimator.imageTokensOpenAi(512, 512), 255)
    assert.strictEqual(TokenEstimator.imageTokensAnthropic(200, 150), 40)
    assert.strictEqual(TokenEstimator.estimateFile(refOf(Files.png(200, 150))), 255)
    assert.strictEqual(TokenEstimator.estimateFile(refOf(Files.pdf(4))), 4 * TokenEstimator.PER_PDF_PAGE)
  })
})

describe("Attachments.layerMemory", () => {
  it.effect("stores the same bytes once; the reference keeps the name given", () =>
    Effect.gen(function*() {
      const store = Attachments.makeMemoryUnsafe()
      const a = yield* store.put(Files.png(3, 3), { name: "a.png" })
      const b = yield* store.put(Files.png(3, 3), { name: "b.png" })
      const c = yield* store.put(Files.png(3, 3))
      assert.strictEqual(store.count(), 1)
      assert.strictEqual(a.sha256, b.sha256)
      assert.deepStrictEqual([a.name, b.name, c.name], ["a.png", "b.png", "a.png"])
      const row = yield* store.get(a.sha256!)
      assert.deepStrictEqual(row.bytes, Files.png(3, 3))
      const missing = yield* Effect.flip(store.get("0".repeat(64)))
      assert.strictEqual(missing.code, "attachment_not_found")
    }))
})
