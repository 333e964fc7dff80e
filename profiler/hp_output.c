/* Buffered, line-oriented profile writer. Records are whole lines; the buffer is flushed
 * when full, when a context is first written (so a crash leaves header and contexts), and
 * at exit. */
#include "hp.h"

#define OUT_BUF (1 << 16)
static Int out_fd = -1;
static HChar out_buf[OUT_BUF];
static UInt out_used;
static Bool out_disabled;

/* CRC-32 (the zlib/IEEE polynomial, so Python's zlib.crc32 checks it) of every byte
 * written so far: the END record carries it, and the reader refuses a profile whose bytes
 * changed after it was written (a bit flip, a hand edit that broke a record). */
static UInt crc_table[8][256];   /* slicing-by-8: eight bytes per step, not one */
static UInt out_crc; /* running, pre- and post-inverted as zlib's */

static void crc_init(void)
{
   for (UInt n = 0; n < 256; n++) {
      UInt c = n;
      for (Int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      crc_table[0][n] = c;
   }
   for (UInt n = 0; n < 256; n++)
      for (UInt t = 1; t < 8; t++)
         crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^ crc_table[0][crc_table[t - 1][n] & 0xff];
   out_crc = 0;
}

/* Byte-at-a-time CRC cost 5% of a profiling run that writes a 10M-entry stream. */
static void crc_add(const HChar* s, UInt n)
{
   UInt c = ~out_crc;
   const UChar* p = (const UChar*)s;
   while (n >= 8) {
      UInt lo = c ^ ((UInt)p[0] | (UInt)p[1] << 8 | (UInt)p[2] << 16 | (UInt)p[3] << 24);
      UInt hi = (UInt)p[4] | (UInt)p[5] << 8 | (UInt)p[6] << 16 | (UInt)p[7] << 24;
      c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff]
        ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff]
        ^ crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
      p += 8;
      n -= 8;
   }
   for (UInt i = 0; i < n; i++) c = crc_table[0][(c ^ p[i]) & 0xff] ^ (c >> 8);
   out_crc = ~c;
}

Bool hp_out_open(const HChar* path)
{
   SysRes r = VG_(open)(path, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, 0644);
   if (sr_isError(r)) return False;
   out_fd = sr_Res(r);
   out_used = 0;
   crc_init();
   return True;
}

/* A forked child's profile is opened at its first write (start), so that a child that only
 * execs another program (fork + exec, posix_spawn, system) leaves no file behind. */
static void (*deferred_start)(void);

static inline void start_if_deferred(void)
{
   if (UNLIKELY(deferred_start != NULL)) {
      void (*start)(void) = deferred_start;
      deferred_start = NULL;
      start();   /* writes whole lines: the record being begun follows them */
   }
}

void hp_out_defer(void (*start)(void))
{
   out_used = 0;   /* the parent's bytes: the parent writes them to its own file */
   if (out_fd >= 0 && !out_disabled) VG_(close)(out_fd);
   out_fd = -1;
   out_disabled = False;
   deferred_start = start;
}

void hp_out_flush(void)
{
   UInt done = 0;
   if (out_fd < 0 || out_disabled) { out_used = 0; return; }
   crc_add(out_buf, out_used);
   while (done < out_used) {
      Int n = VG_(write)(out_fd, out_buf + done, out_used - done);
      if (n <= 0) break;
      done += n;
   }
   out_used = 0;
}

static void out_bytes(const HChar* s, UInt n)
{
   start_if_deferred();
   while (n > 0) {
      UInt room = OUT_BUF - out_used, k = n < room ? n : room;
      VG_(memcpy)(out_buf + out_used, s, k);
      out_used += k; s += k; n -= k;
      if (out_used == OUT_BUF) hp_out_flush();
   }
}

void hp_out_puts(const HChar* s) { out_bytes(s, VG_(strlen)(s)); }

void hp_out_char(HChar c)
{
   start_if_deferred();
   if (UNLIKELY(out_used == OUT_BUF)) hp_out_flush();
   out_buf[out_used++] = c;
}

void hp_out_u64(ULong v)
{
   start_if_deferred();
   HChar tmp[24];
   UInt k = 0;
   do { tmp[k++] = (HChar)('0' + v % 10); v /= 10; } while (v);
   if (UNLIKELY(out_used + k > OUT_BUF)) hp_out_flush();
   while (k) out_buf[out_used++] = tmp[--k];
}

void hp_out_i64(Long v)
{
   if (v < 0) { hp_out_char('-'); hp_out_u64((ULong)0 - (ULong)v); }
   else hp_out_u64((ULong)v);
}

void hp_out_printf(const HChar* fmt, ...)
{
   HChar line[4096];
   va_list vargs;
   va_start(vargs, fmt);
   UInt n = VG_(vsnprintf)(line, sizeof line, fmt, vargs);
   va_end(vargs);
   if (n >= sizeof line) n = sizeof line - 1;
   out_bytes(line, n);
}

void hp_out_escaped(const HChar* s)
{
   static const HChar hex[] = "0123456789ABCDEF";
   for (; *s; s++) {
      UChar c = (UChar)*s;
      if (c <= ' ' || c == '%' || c == 0x7f) {
         HChar e[3] = { '%', hex[c >> 4], hex[c & 15] };
         out_bytes(e, 3);
      } else {
         out_bytes((const HChar*)&c, 1);
      }
   }
}

UInt hp_out_checksum(void)
{
   hp_out_flush();
   return out_crc;
}

void hp_out_close(void)
{
   hp_out_flush();
   if (out_fd >= 0 && !out_disabled) VG_(close)(out_fd);
   out_fd = -1;
}

void hp_out_disable(void) { out_disabled = True; out_used = 0; }


/* ---- (k1,k2) -> count hash, open addressing, n == 0 marks an empty slot ---- */
void hp_cm_init(HpCountMap* m, ULong cap)
{
   m->tab = VG_(calloc)("hp.cm", cap, sizeof(HpCount));
   m->mask = cap - 1;
   m->used = 0;
   m->max_keys = 0;
   m->dropped_keys = m->dropped_n = 0;
}

void hp_cm_cap(HpCountMap* m) { m->max_keys = hp_opt.graph_max; }

void hp_cm_clear(HpCountMap* m)
{
   VG_(memset)(m->tab, 0, (m->mask + 1) * sizeof(HpCount));
   m->used = 0;
   m->dropped_keys = m->dropped_n = 0;
}

void hp_cm_write_dropped(const HpCountMap* m, const HChar* name)
{
   if (!m->dropped_keys) return;
   hp_out_printf("Z %s_dropped_adds %llu\n", name, m->dropped_keys);
   hp_out_printf("Z %s_dropped_count %llu\n", name, hp_est(m->dropped_n));
}

ULong hp_cm_get(const HpCountMap* m, ULong k1, ULong k2)
{
   for (ULong i = hp_cm_hash(k1, k2) & m->mask;; i = (i + 1) & m->mask) {
      const HpCount* c = &m->tab[i];
      if (c->n == 0) return 0;
      if (c->k1 == k1 && c->k2 == k2) return c->n;
   }
}

void hp_cm_add_slow(HpCountMap* m, ULong k1, ULong k2, ULong n)
{
   ULong i = hp_cm_hash(k1, k2) & m->mask;
   for (;;) {
      HpCount* c = &m->tab[i];
      if (c->n == 0) break;
      if (c->k1 == k1 && c->k2 == k2) { c->n += n; return; }
      i = (i + 1) & m->mask;
   }
   if (m->max_keys && m->used >= m->max_keys) {   /* bounded memory: a new key past the cap is dropped */
      m->dropped_keys++;
      m->dropped_n += n;
      return;
   }
   if ((m->used + 1) * 2 > m->mask + 1) {   /* at most half full: linear probes stay short */
      HpCount* old = m->tab;
      ULong oldcap = m->mask + 1;
      ULong max_keys = m->max_keys, dk = m->dropped_keys, dn = m->dropped_n;
      hp_cm_init(m, oldcap * 2);
      m->max_keys = max_keys; m->dropped_keys = dk; m->dropped_n = dn;
      for (ULong j = 0; j < oldcap; j++)
         if (old[j].n) hp_cm_add_slow(m, old[j].k1, old[j].k2, old[j].n);
      VG_(free)(old);
      hp_cm_add_slow(m, k1, k2, n);
      return;
   }
   m->tab[i].k1 = k1; m->tab[i].k2 = k2; m->tab[i].n = n;
   m->used++;
}
