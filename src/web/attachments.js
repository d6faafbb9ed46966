// @ts-check
/**
 * Images and files on the page (docs/attachments.md): an attach button, drag and drop and
 * paste put files in a tray above the message box; each is uploaded at once
 * (`POST /api/attachments`, the raw bytes) and shows a thumbnail (images) or a
 * chip (a PDF, a text file), or the server's refusal inline (too large, a type
 * it does not take) — a refused file is never sent. The next run takes the
 * uploaded ones by id; the user's bubble shows them (from the run's first
 * event, `input`, and from a stored conversation's file parts), their bytes
 * fetched with the page's token.
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"
import { api, errorText } from "./http.js"

/**
 * @typedef {{ name: string, media_type: string, size?: number, sha256?: string, url?: string, pages?: number }} AttachmentRef
 * @typedef {{ file: File, chip: HTMLElement, upload: Promise<AttachmentRef | null> }} Pending
 */

const kib = (
  /** @type {number} */ n
) => (n < 1024 ? `${n} B` : n < 1048576 ? `${Math.round(n / 1024)} KiB` : `${(n / 1048576).toFixed(1)} MiB`)

/** A stored attachment's bytes as an object URL (fetched with the token; cached per hash). */
const objectUrls = new Map()
/** @param {string} sha256 */
function bytesUrl(sha256) {
  let url = objectUrls.get(sha256)
  if (!url) {
    url = api(`/api/attachments/${sha256}`).then(async (res) => (res.ok ? URL.createObjectURL(await res.blob()) : ""))
    objectUrls.set(sha256, url)
  }
  return url
}

/** A chip for a non-image attachment: its kind, name and size. @param {AttachmentRef} ref */
function chip(ref) {
  const kind = ref.media_type === "application/pdf" ? "PDF" : ref.media_type.startsWith("image/") ? "Image" : "Text"
  const details = [ref.pages ? `${ref.pages} p.` : "", ref.size !== undefined ? kib(ref.size) : ""].filter(Boolean)
    .join(" · ")
  return h(
    "span",
    { class: `attachment-chip ${kind.toLowerCase()}`, title: ref.name },
    h("span", { class: "attachment-kind", text: kind }),
    h("span", { class: "attachment-name", text: ref.name }),
    details ? h("span", { class: "attachment-size", text: details }) : null
  )
}

/**
 * Shows a message's attachments in its bubble: images as thumbnails, others as chips.
 *
 * @param {HTMLElement} bubble @param {ReadonlyArray<AttachmentRef>} refs
 */
export function showAttachments(bubble, refs) {
  if (!bubble || refs.length === 0 || bubble.querySelector(".attachments")) return
  const row = h("div", { class: "attachments" })
  for (const ref of refs) {
    if (ref.media_type.startsWith("image/") && ref.sha256) {
      const img =
        /** @type {HTMLImageElement} */ (h("img", { class: "attachment-thumb", alt: ref.name, title: ref.name }))
      void bytesUrl(ref.sha256).then((url) => {
        if (url) img.src = url
      })
      row.append(img)
    } else row.append(chip(ref))
  }
  bubble.append(row)
}

/** The attachments of a stored message's content (its file parts). @param {unknown} content @returns {AttachmentRef[]} */
export function attachmentsOf(content) {
  return Array.isArray(content) ? content.filter((p) => p && p.type === "file" && p.file).map((p) => p.file) : []
}

/**
 * Adds the tray, the attach button, drag and drop and paste to the composer.
 *
 * @param {HTMLFormElement} composer @param {HTMLTextAreaElement} input
 * @returns {{ take: () => Promise<Array<{ attachment_id: string }>>, pending: () => number }}
 */
export function setupAttachments(composer, input) {
  /** @type {Pending[]} */
  let pending = []
  const tray = h("div", {
    id: "attachment-tray",
    class: "attachment-tray",
    hidden: true,
    "aria-label": "Attachments",
    role: "list"
  })
  const picker = /** @type {HTMLInputElement} */ (h("input", {
    type: "file",
    multiple: true,
    hidden: true,
    id: "attach-input",
    accept:
      "image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain,text/markdown,text/csv,application/json,.md,.csv,.txt,.json"
  }))
  const button = h(
    "button",
    { type: "button", id: "attach", class: "icon-btn attach", title: "Attach images or files (or drop / paste them)" },
    h("span", { "aria-hidden": "true", text: "📎" }),
    h("span", { class: "sr-only", text: "Attach files" })
  )
  const box = /** @type {HTMLElement} */ (composer.querySelector(".composer-box"))
  box.prepend(button, picker)
  composer.prepend(tray)

  const refresh = () => {
    tray.hidden = pending.length === 0
  }

  /** @param {File} file */
  const add = (file) => {
    const remove = h("button", { type: "button", class: "attachment-remove", title: `Remove ${file.name}`, text: "×" })
    const status = h("span", { class: "attachment-status", text: "Uploading…" })
    const preview = file.type.startsWith("image/")
      ? h("img", { class: "attachment-thumb", alt: file.name, src: URL.createObjectURL(file) })
      : chip({ name: file.name, media_type: file.type || "text/plain", size: file.size })
    const item = h(
      "div",
      { class: "attachment uploading", role: "listitem", "data-name": file.name },
      preview,
      status,
      remove
    )
    const query = `?name=${encodeURIComponent(file.name)}`
    const upload = api(`/api/attachments${query}`, {
      method: "POST",
      body: file,
      headers: { "content-type": file.type || "application/octet-stream" }
    })
      .then(async (res) => {
        if (!res.ok) throw new Error(await errorText(res))
        const ref = await res.json()
        item.classList.replace("uploading", "ready")
        status.textContent = kib(ref.size)
        return /** @type {AttachmentRef & { attachment_id: string }} */ (ref)
      })
      .catch((/** @type {Error} */ e) => {
        // refused (too large, a type the server does not take): said here, never sent
        item.classList.replace("uploading", "failed")
        status.textContent = e.message
        status.setAttribute("role", "alert")
        return null
      })
    const entry = { file, chip: item, upload }
    remove.addEventListener("click", () => {
      pending = pending.filter((p) => p !== entry)
      item.remove()
      refresh()
      input.focus()
    })
    pending.push(entry)
    tray.append(item)
    refresh()
  }
  /** @param {FileList | File[] | null | undefined} files */
  const addAll = (files) => {
    for (const f of files ?? []) add(f)
  }

  button.addEventListener("click", () => picker.click())
  picker.addEventListener("change", () => {
    addAll(picker.files)
    picker.value = ""
  })
  input.addEventListener("paste", (e) => {
    const files = e.clipboardData?.files
    if (files && files.length > 0) {
      e.preventDefault()
      addAll(files)
    }
  })
  for (const target of [composer, document.getElementById("transcript")]) {
    target?.addEventListener("dragover", (e) => {
      if (![...(e.dataTransfer?.types ?? [])].includes("Files")) return
      e.preventDefault()
      composer.classList.add("dropping")
    })
    target?.addEventListener("dragleave", () => composer.classList.remove("dropping"))
    target?.addEventListener("drop", (e) => {
      composer.classList.remove("dropping")
      if (!e.dataTransfer?.files?.length) return
      e.preventDefault()
      addAll(e.dataTransfer.files)
    })
  }

  return {
    pending: () => pending.length,
    /** The uploaded attachments for the next run (waiting for uploads in progress); the refused ones stay, with their reason. */
    take: async () => {
      const taken = pending
      const refs = await Promise.all(taken.map((p) => p.upload))
      pending = taken.filter((_, i) => refs[i] === null)
      for (const [i, p] of taken.entries()) if (refs[i] !== null) p.chip.remove()
      refresh()
      return refs.flatMap((ref) => (ref === null ? [] : [{ attachment_id: /** @type {any} */ (ref).attachment_id }]))
    }
  }
}
