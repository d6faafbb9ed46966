/**
 * What the bytes of an attachment are: the five binary formats by their magic
 * numbers (PNG, JPEG, GIF, WebP, PDF), an image's dimensions from its header,
 * a PDF's page count, and the text types checked to be UTF-8 text (JSON parsed).
 * No dependency: five formats need a few bytes each, and a general sniffing
 * library would recognise hundreds of formats the engine refuses anyway.
 *
 * @internal
 */

/** The media types an attachment may have. */
export const SUPPORTED = [
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "application/pdf",
  "text/plain",
  "text/markdown",
  "text/csv",
  "application/json"
] as const

export type MediaType = typeof SUPPORTED[number]

export const isImage = (mediaType: string): boolean => mediaType.startsWith("image/")
export const isPdf = (mediaType: string): boolean => mediaType === "application/pdf"
export const isText = (mediaType: string): boolean => mediaType.startsWith("text/") || mediaType === "application/json"

const ALIASES: Readonly<Record<string, MediaType>> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "text/x-markdown": "text/markdown",
  "application/x-pdf": "application/pdf",
  "text/json": "application/json"
}

const EXTENSIONS: Readonly<Record<string, MediaType>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  txt: "text/plain",
  text: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  markdown: "text/markdown",
  csv: "text/csv",
  json: "application/json"
}

/** A declared type, normalised: lower case, without parameters, aliases resolved; `""` when none. */
export const normalise = (declared: string | undefined): string => {
  const bare = (declared ?? "").split(";")[0].trim().toLowerCase()
  return ALIASES[bare] ?? bare
}

/** True for a type one of `SUPPORTED`. */
export const isSupported = (mediaType: string): mediaType is MediaType =>
  (SUPPORTED as ReadonlyArray<string>).includes(mediaType)

/** The type a file name's extension says (`undefined` for none or an unknown one). */
export const fromName = (name: string | undefined): MediaType | undefined => {
  const match = /\.([a-z0-9]+)$/i.exec(name ?? "")
  return match ? EXTENSIONS[match[1].toLowerCase()] : undefined
}

/** The usual extension of a type (for names made up for unnamed attachments). */
export const extensionOf = (mediaType: string): string =>
  ({
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "application/pdf": "pdf",
    "text/markdown": "md",
    "text/csv": "csv",
    "application/json": "json"
  } as Record<string, string>)[mediaType] ?? "txt"

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>, at = 0): boolean => {
  if (bytes.length < at + prefix.length) return false
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false
  return true
}

const ascii = (s: string): ReadonlyArray<number> => [...s].map((c) => c.charCodeAt(0))

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
const GIF87 = ascii("GIF87a")
const GIF89 = ascii("GIF89a")
const RIFF = ascii("RIFF")
const WEBP = ascii("WEBP")
const PDF = ascii("%PDF-")

/** Where a PDF's header starts: within its first KiB, as readers accept it (-1: not a PDF). */
const pdfStart = (bytes: Uint8Array): number => {
  const end = Math.min(bytes.length - PDF.length, 1024)
  for (let i = 0; i <= end; i++) if (startsWith(bytes, PDF, i)) return i
  return -1
}

/** The binary type the bytes are, by their magic numbers (`undefined`: none of the five). */
export const sniff = (bytes: Uint8Array): MediaType | undefined => {
  if (startsWith(bytes, PNG)) return "image/png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (startsWith(bytes, GIF87) || startsWith(bytes, GIF89)) return "image/gif"
  if (startsWith(bytes, RIFF) && startsWith(bytes, WEBP, 8)) return "image/webp"
  if (pdfStart(bytes) >= 0) return "application/pdf"
  return undefined
}

const be16 = (b: Uint8Array, i: number) => (b[i] << 8) | b[i + 1]
const le16 = (b: Uint8Array, i: number) => b[i] | (b[i + 1] << 8)
const be32 = (b: Uint8Array, i: number) => ((b[i] << 24) >>> 0) + (b[i + 1] << 16) + (b[i + 2] << 8) + b[i + 3]
const le24 = (b: Uint8Array, i: number) => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16)

export interface Dimensions {
  readonly width: number
  readonly height: number
}

const jpegSize = (b: Uint8Array): Dimensions | undefined => {
  let i = 2
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined
    const marker = b[i + 1]
    if (marker === 0xff) {
      i++
      continue
    }
    // standalone markers carry no length
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2
      continue
    }
    const length = be16(b, i + 2)
    // start of frame (baseline, progressive, …), not DHT (c4), JPG (c8) or DAC (cc)
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: be16(b, i + 5), width: be16(b, i + 7) }
    }
    if (length < 2) return undefined
    i += 2 + length
  }
  return undefined
}

const webpSize = (b: Uint8Array): Dimensions | undefined => {
  if (b.length < 25) return undefined
  const chunk = String.fromCharCode(b[12], b[13], b[14], b[15])
  if (chunk === "VP8X" && b.length >= 30) return { width: le24(b, 24) + 1, height: le24(b, 27) + 1 }
  if (chunk === "VP8L" && b[20] === 0x2f) {
    const bits = b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24)
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
  }
  if (chunk === "VP8 " && b.length >= 30 && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
    return { width: le16(b, 26) & 0x3fff, height: le16(b, 28) & 0x3fff }
  }
  return undefined
}

/** An image's dimensions from its header (`undefined` when the header is cut or unusual). */
export const dimensions = (mediaType: string, b: Uint8Array): Dimensions | undefined => {
  const found = mediaType === "image/png" && b.length >= 24
    ? { width: be32(b, 16), height: be32(b, 20) }
    : mediaType === "image/gif" && b.length >= 10
    ? { width: le16(b, 6), height: le16(b, 8) }
    : mediaType === "image/jpeg"
    ? jpegSize(b)
    : mediaType === "image/webp"
    ? webpSize(b)
    : undefined
  return found !== undefined && found.width > 0 && found.height > 0 ? found : undefined
}

const latin1 = new TextDecoder("latin1")

/**
 * A PDF's page count: its page objects (`/Type /Page`), else the largest
 * `/Count` of a page tree. `undefined` when neither is readable (both inside
 * compressed object streams): estimates then go by size.
 */
export const pdfPages = (b: Uint8Array): number | undefined => {
  const text = latin1.decode(b)
  const pages = text.match(/\/Type\s*\/Page(?![a-zA-Z])/g)?.length ?? 0
  if (pages > 0) return pages
  let count = 0
  for (const m of text.matchAll(/\/Type\s*\/Pages\b[^>]*?\/Count\s+(\d+)|\/Count\s+(\d+)[^>]*?\/Type\s*\/Pages\b/g)) {
    count = Math.max(count, Number(m[1] ?? m[2]))
  }
  return count > 0 ? count : undefined
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** The text of a text attachment; `undefined` when the bytes are not UTF-8 text (or not JSON, for JSON). */
export const textOf = (mediaType: string, b: Uint8Array): string | undefined => {
  let text: string
  try {
    text = utf8.decode(b)
  } catch {
    return undefined
  }
  if (text.includes("\u0000")) return undefined
  if (mediaType === "application/json") {
    try {
      JSON.parse(text)
    } catch {
      return undefined
    }
  }
  return text
}
