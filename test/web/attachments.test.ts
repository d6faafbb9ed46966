/**
 * The page's attachments in headless Chromium against the real server
 * (test/utils/webAppServer.ts): a PNG dropped on the composer is uploaded at
 * once and shown as a thumbnail; sent with the message, it reaches the model as
 * a file part and stays in the user's bubble (also when the conversation is
 * opened again); a 20 MiB file is refused inline with the server's message and
 * never sent; a PDF shows as a chip.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import * as Files from "../utils/attachmentFiles.js"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

/** Drops files (name, type, bytes as base64) on `selector`, as a user dragging them from the desktop does. */
const drop = (
  page: Page,
  selector: string,
  files: ReadonlyArray<{ name: string; type: string; base64?: string; size?: number }>
) =>
  pw(() =>
    page.evaluate(({ selector, files }) => {
      const transfer = new DataTransfer()
      for (const f of files) {
        const bytes = f.base64 !== undefined
          ? Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))
          : new Uint8Array(f.size ?? 0)
        transfer.items.add(new File([bytes], f.name, { type: f.type }))
      }
      const target = document.querySelector(selector)!
      target.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }))
      target.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }))
    }, { selector, files })
  )

layer(ChromiumLive, { timeout: "90 seconds", excludeTestServices: true })("attachments on the page", (it) => {
  it.scoped("a dropped PNG is uploaded, shown and sent; a 20 MiB file is refused inline; a PDF is a chip", () =>
    Effect.gen(function*() {
      const server = yield* webAppServer({})
      const browser = yield* Chromium
      const { errors, page } = yield* openPage(browser)
      yield* pw(() => page.goto(server.url))
      const png = Buffer.from(Files.png(48, 32, [30, 160, 90])).toString("base64")
      yield* drop(page, "#composer", [{ name: "green.png", type: "image/png", base64: png }])
      yield* pw(() =>
        page.waitForSelector("#attachment-tray .attachment.ready img.attachment-thumb", { timeout: 15_000 })
      )
      // too large: the server's refusal, in the tray, never sent
      yield* drop(page, "#composer", [{ name: "huge.png", type: "image/png", size: 20 * 1024 * 1024 }])
      yield* pw(() => page.waitForSelector("#attachment-tray .attachment.failed", { timeout: 30_000 }))
      const refusal = yield* pw(() => page.textContent("#attachment-tray .attachment.failed .attachment-status"))
      assert.include(refusal ?? "", "over the limit of 10485760 bytes per attachment (REACT_MAX_ATTACHMENT_BYTES)")
      // a PDF: a chip with its page count once uploaded
      yield* drop(page, "#transcript", [{
        name: "report.pdf",
        type: "application/pdf",
        base64: Buffer.from(Files.pdf(3)).toString("base64")
      }])
      yield* pw(() =>
        page.waitForSelector("#attachment-tray .attachment.ready .attachment-chip.pdf", { timeout: 15_000 })
      )

      yield* pw(async () => {
        await page.fill("#composer-input", "What is in the picture?")
        await page.keyboard.press("Enter")
      })
      yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 30_000 }))
      // the user's bubble: the image as a thumbnail (its bytes fetched back), the PDF as a chip
      yield* pw(() =>
        page.waitForSelector(".turn:last-child .msg.user .attachments img.attachment-thumb[src^='blob:']", {
          timeout: 15_000
        })
      )
      const chips = yield* pw(() =>
        page.$$eval(".turn:last-child .msg.user .attachment-chip", (els) => els.map((e) => e.textContent))
      )
      assert.deepStrictEqual(chips, [`PDFreport.pdf${Files.pdf(3).length} B`])
      // the refused file stays in the tray with its reason; nothing else is left
      const tray = yield* pw(() => page.$$eval("#attachment-tray .attachment", (els) => els.map((e) => e.className)))
      assert.deepStrictEqual(tray, ["attachment failed"])
      // the model got the two files, by reference
      const request = server.llm.requests.find((r) =>
        JSON.stringify(r.request.messages).includes("What is in the picture?")
      )!
      const user = request.request.messages.find((m) => m.role === "user" && Array.isArray(m.content))!
      const parts = user.content as ReadonlyArray<any>
      assert.deepStrictEqual(parts.map((p) => p.type === "file" ? `${p.file.name}:${p.file.media_type}` : p.type), [
        "text",
        "green.png:image/png",
        "report.pdf:application/pdf"
      ])
      // opened again from the list: the stored conversation shows the thumbnail
      yield* pw(() => page.reload())
      yield* pw(() =>
        page.waitForSelector(".turn.past .msg.user .attachments img.attachment-thumb[src^='blob:']", {
          timeout: 15_000
        })
      )
      // the browser logs the refused upload's status itself; nothing else went wrong
      assert.deepStrictEqual(errors.filter((e) => !e.includes("status of 413")), [])
      assert.strictEqual(errors.filter((e) => e.includes("status of 413")).length, 1)
    }))
})
