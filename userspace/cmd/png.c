// SPDX-License-Identifier: GPL-2.0
/*
 * Just enough PNG for the report's heatmap: 8-bit palette images, zlib
 * "stored" blocks (no compression, so no dependency; the image is small
 * and of fixed size), and base64 for a data: URI.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cmd.h"

struct obuf {
	unsigned char	*p;
	size_t		len;
};

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
		crc_table[n] = c;
	}
}

static uint32_t crc32_buf(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static void put(struct obuf *o, const void *p, size_t n)
{
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

static void put32be(struct obuf *o, uint32_t v)
{
	unsigned char b[4] = { v >> 24, v >> 16, v >> 8, v };

	put(o, b, 4);
}

/* A chunk: length, type, data, CRC of type and data. */
static void chunk(struct obuf *o, const char *type, const unsigned char *d, size_t n)
{
	size_t start;

	put32be(o, (uint32_t)n);
	start = o->len;
	put(o, type, 4);
	if (n)
		put(o, d, n);
	put32be(o, crc32_buf(0, o->p + start, n + 4));
}

int png_indexed(const uint8_t *pix, unsigned int w, unsigned int h,
		const uint8_t (*pal)[3], unsigned int npal, unsigned char **out,
		size_t *outlen)
{
	size_t raw = (size_t)(w + 1) * h, nblk = raw / 65535 + 1;
	size_t zlen = 2 + raw + 5 * nblk + 4;
	unsigned char ihdr[13], *z;
	uint32_t a = 1, b = 0;
	struct obuf o;
	size_t zo = 0;

	crc_init();
	z = malloc(zlen);
	o.p = malloc(8 + 25 + 12 + 3 * npal + 12 + zlen + 12);
	if (!z || !o.p) {
		free(z);
		free(o.p);
		return -ENOMEM;
	}
	o.len = 0;
	put(&o, "\x89PNG\r\n\x1a\n", 8);
	put32be(&(struct obuf){ ihdr, 0 }, w);
	put32be(&(struct obuf){ ihdr + 4, 0 }, h);
	ihdr[8] = 8;	/* bit depth */
	ihdr[9] = 3;	/* palette */
	ihdr[10] = ihdr[11] = ihdr[12] = 0;
	chunk(&o, "IHDR", ihdr, 13);
	chunk(&o, "PLTE", (const unsigned char *)pal, 3 * npal);

	/* zlib: header, stored blocks of the filtered rows, adler32. */
	z[zo++] = 0x78;
	z[zo++] = 0x01;
	{
		size_t left = raw, y = 0, x = 0;

		while (left || !zo) {
			size_t n = left < 65535 ? left : 65535;

			z[zo++] = n == left;	/* BFINAL, BTYPE 00 */
			z[zo++] = n & 0xff;
			z[zo++] = n >> 8;
			z[zo++] = ~n & 0xff;
			z[zo++] = (~n >> 8) & 0xff;
			for (size_t i = 0; i < n; i++) {
				unsigned char c;

				/* Filter byte 0 (none) before each row. */
				c = x == 0 ? 0 : pix[y * w + x - 1];
				if (++x == w + 1) {
					x = 0;
					y++;
				}
				z[zo++] = c;
				a = (a + c) % 65521;
				b = (b + a) % 65521;
			}
			left -= n;
			if (!left)
				break;
		}
	}
	z[zo++] = b >> 8;
	z[zo++] = b;
	z[zo++] = a >> 8;
	z[zo++] = a;
	chunk(&o, "IDAT", z, zo);
	chunk(&o, "IEND", NULL, 0);
	free(z);
	*out = o.p;
	*outlen = o.len;
	return 0;
}

void base64_write(FILE *f, const unsigned char *p, size_t n)
{
	static const char t[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = p[i] << 16;

		if (i + 1 < n)
			v |= p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		fputc(t[v >> 18], f);
		fputc(t[(v >> 12) & 63], f);
		fputc(i + 1 < n ? t[(v >> 6) & 63] : '=', f);
		fputc(i + 2 < n ? t[v & 63] : '=', f);
	}
}
