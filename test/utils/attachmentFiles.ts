/**
 * Real files for attachment tests: a PNG of any size (valid: browsers draw it),
 * a PDF with N pages (valid: readers open it), the headers of a JPEG, a GIF and
 * the three WebP kinds with given dimensions (enough for type and size reading).
 */
import { deflateSync } from "node:zlib"

const crcTable = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

const crc32 = (bytes: Uint8Array): number => {
  let c = 0xffffffff
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const chunk = (type: string, data: Uint8Array): Buffer => {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, "latin1"), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

/** A valid RGB PNG of `width`×`height`, filled with `rgb` (a `seed` varies the bytes for distinct hashes). */
export const png = (
  width: number,
  height: number,
  rgb: readonly [number, number, number] = [200, 40, 40],
  seed = 0
): Uint8Array => {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // RGB
  const row = Buffer.alloc(1 + width * 3)
  for (let x = 0; x < width; x++) row.set([rgb[0], rgb[1], (rgb[2] + seed) & 0xff], 1 + x * 3)
  const raw = Buffer.concat(Array.from({ length: height }, () => row))
  return new Uint8Array(Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", new Uint8Array())
  ]))
}

/** A valid PDF with `pages` pages, each showing its number. */
export const pdf = (pages: number, title = "Test"): Uint8Array => {
  const objects: Array<string> = []
  const kids = Array.from({ length: pages }, (_, i) => `${3 + i * 2} 0 R`).join(" ")
  objects.push("<< /Type /Catalog /Pages 2 0 R >>")
  objects.push(`<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`)
  for (let i = 0; i < pages; i++) {
    const text = `BT /F1 24 Tf 72 720 Td (${title} page ${i + 1}) Tj ET`
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${4 + i * 2} 0 R >>`)
    objects.push(`<< /Length ${text.length} >>\nstream\n${text}\nendstream`)
  }
  let out = "%PDF-1.4\n"
  const offsets: Array<number> = []
  objects.forEach((o, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const off of offsets) out += `${String(off).padStart(10, "0")} 00000 n \n`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new Uint8Array(Buffer.from(out, "latin1"))
}

/** The start of a baseline JPEG of `width`×`height` (SOI, an APP0 segment, SOF0). */
export const jpegHeader = (width: number, height: number): Uint8Array =>
  new Uint8Array([
    0xff,
    0xd8,
    0xff,
    0xe0,
    0x00,
    0x10,
    0x4a,
    0x46,
    0x49,
    0x46,
    0x00,
    0x01,
    0x01,
    0x00,
    0x00,
    0x01,
    0x00,
    0x01,
    0x00,
    0x00,
    0xff,
    0xc0,
    0x00,
    0x11,
    0x08,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    0x03,
    0x01,
    0x22,
    0x00,
    0x02,
    0x11,
    0x01,
    0x03,
    0x11,
    0x01,
    0xff,
    0xd9
  ])

/** A GIF header of `width`×`height`. */
export const gifHeader = (width: number, height: number): Uint8Array =>
  new Uint8Array([
    ...Buffer.from("GIF89a", "latin1"),
    width & 0xff,
    width >> 8,
    height & 0xff,
    height >> 8,
    0,
    0,
    0,
    0x3b
  ])

const riff = (kind: string, payload: ReadonlyArray<number>): Uint8Array => {
  const body = [...Buffer.from("WEBP", "latin1"), ...Buffer.from(kind, "latin1"), payload.length, 0, 0, 0, ...payload]
  const size = body.length
  return new Uint8Array([...Buffer.from("RIFF", "latin1"), size & 0xff, (size >> 8) & 0xff, 0, 0, ...body])
}

/** The start of a WebP of each kind (`VP8 ` lossy, `VP8L` lossless, `VP8X` extended) with `width`×`height`. */
export const webpHeader = (kind: "VP8 " | "VP8L" | "VP8X", width: number, height: number): Uint8Array => {
  if (kind === "VP8X") {
    const w = width - 1
    const h = height - 1
    return riff("VP8X", [
      0,
      0,
      0,
      0,
      w & 0xff,
      (w >> 8) & 0xff,
      (w >> 16) & 0xff,
      h & 0xff,
      (h >> 8) & 0xff,
      (h >> 16) & 0xff
    ])
  }
  if (kind === "VP8L") {
    const bits = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14)
    return riff("VP8L", [0x2f, bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, (bits >>> 24) & 0xff, 0, 0, 0])
  }
  return riff("VP8 ", [
    0,
    0,
    0,
    0x9d,
    0x01,
    0x2a,
    width & 0xff,
    (width >> 8) & 0x3f,
    height & 0xff,
    (height >> 8) & 0x3f
  ])
}
