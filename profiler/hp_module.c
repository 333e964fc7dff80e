/* Modules (mapped objects) and frames. A frame is recorded as (module, offset) with
 * offset = address - the module's load bias (ELF l_addr; 0 for a non-PIE executable), so
 * the same frame can be recognised in a native run. Each module carries its GNU build-id
 * when the file has one. */
#include "hp.h"
#include <elf.h>

#define MAX_MODULES 4096
static HpModule* modules[MAX_MODULES];
static UInt nmodules;
static HpModule* unknown_module;

#define IPC_SIZE 4096
static struct { Addr ip; HpModule* m; Bool below_main; } ip_cache[IPC_SIZE];

static HpCountMap frames_written;

static Bool read_at(Int fd, void* buf, Int n, Off64T off)
{
   if (VG_(lseek)(fd, off, VKI_SEEK_SET) != off) return False;
   return VG_(read)(fd, buf, n) == n;
}

/* Read the NT_GNU_BUILD_ID note from the PT_NOTE segments of an ELF file. */
static void read_build_id(const HChar* path, HChar* out, UInt outsz)
{
   static const HChar hex[] = "0123456789abcdef";
   VG_(strcpy)(out, "-");
   if (!path || path[0] != '/') return;
   SysRes r = VG_(open)(path, VKI_O_RDONLY, 0);
   if (sr_isError(r)) return;
   Int fd = sr_Res(r);
   Elf64_Ehdr eh;
   if (!read_at(fd, &eh, sizeof eh, 0) || VG_(memcmp)(eh.e_ident, ELFMAG, SELFMAG) != 0
       || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)
       || eh.e_phnum > 256) {
      VG_(close)(fd);
      return;
   }
   for (UInt i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      if (!read_at(fd, &ph, sizeof ph, eh.e_phoff + (Off64T)i * sizeof ph)) break;
      if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > 8192) continue;
      UChar buf[8192];
      if (!read_at(fd, buf, ph.p_filesz, ph.p_offset)) continue;
      UInt pos = 0;
      while (pos + sizeof(Elf64_Nhdr) <= ph.p_filesz) {
         Elf64_Nhdr* nh = (Elf64_Nhdr*)(buf + pos);
         UInt name_off = pos + sizeof(Elf64_Nhdr);
         UInt desc_off = name_off + ((nh->n_namesz + 3) & ~3u);
         UInt next = desc_off + ((nh->n_descsz + 3) & ~3u);
         if (next > ph.p_filesz) break;
         if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4
             && VG_(memcmp)(buf + name_off, "GNU", 4) == 0 && nh->n_descsz * 2 + 1 <= outsz) {
            for (UInt k = 0; k < nh->n_descsz; k++) {
               out[2 * k] = hex[buf[desc_off + k] >> 4];
               out[2 * k + 1] = hex[buf[desc_off + k] & 15];
            }
            out[2 * nh->n_descsz] = 0;
            VG_(close)(fd);
            return;
         }
         pos = next;
      }
   }
   VG_(close)(fd);
}

static Bool is_system_path(const HChar* path)
{
   const HChar* p = hp_opt.trim;
   if (!path) return False;
   const HChar* base = VG_(basename)(path);
   while (p && *p) {
      const HChar* comma = VG_(strchr)(p, ',');
      UInt len = comma ? (UInt)(comma - p) : VG_(strlen)(p);
      if (len > 0 && len < 256) {
         HChar pat[256];
         VG_(memcpy)(pat, p, len);
         pat[len] = 0;
         if (VG_(strstr)(base, pat)) return True;
      }
      p = comma ? comma + 1 : NULL;
   }
   return False;
}

static HpModule* new_module(const DebugInfo* di)
{
   HpModule* m = VG_(calloc)("hp.module", 1, sizeof(HpModule));
   m->id = nmodules;
   m->di = di;
   if (di) {
      const HChar* fn = VG_(DebugInfo_get_filename)(di);
      m->path = VG_(strdup)("hp.module.path", fn ? fn : "?");
      m->text_lo = VG_(DebugInfo_get_text_avma)(di);
      m->text_hi = m->text_lo + VG_(DebugInfo_get_text_size)(di);
      m->bias = VG_(DebugInfo_get_text_bias)(di);
      read_build_id(m->path, m->build_id, sizeof m->build_id);
      m->system = is_system_path(m->path);
   } else {
      m->path = VG_(strdup)("hp.module.path", "?");
      VG_(strcpy)(m->build_id, "-");
   }
   if (nmodules < MAX_MODULES) modules[nmodules++] = m;
   return m;
}

void hp_module_init(void)
{
   hp_cm_init(&frames_written, 1 << 12);
}

HpModule* hp_module_of(Addr ip) { Bool bm; return hp_frame_module(ip, &bm); }

/* The module of a frame, and whether the frame is below main (where unwinding stops). */
HpModule* hp_frame_module(Addr ip, Bool* below_main)
{
   UWord slot = (ip >> 2) & (IPC_SIZE - 1);
   if (ip_cache[slot].ip == ip && ip_cache[slot].m) {
      *below_main = ip_cache[slot].below_main;
      return ip_cache[slot].m;
   }
   HpModule* m = NULL;
   for (UInt i = 0; i < nmodules; i++) {
      HpModule* c = modules[i];
      if (c->di && ip >= c->text_lo && ip < c->text_hi) { m = c; break; }
   }
   if (!m) {
      DebugInfo* di = VG_(find_DebugInfo)(VG_(current_DiEpoch)(), ip);
      if (di) {
         for (UInt i = 0; i < nmodules; i++)
            if (modules[i]->di == di) { m = modules[i]; break; }
         if (!m) m = new_module(di);
      } else {
         if (!unknown_module) unknown_module = new_module(NULL);
         m = unknown_module;
      }
   }
   *below_main = m->di && VG_(get_fnname_kind_from_IP)(VG_(current_DiEpoch)(), ip) == Vg_FnNameBelowMain;
   ip_cache[slot].ip = ip;
   ip_cache[slot].m = m;
   ip_cache[slot].below_main = *below_main;
   return m;
}

void hp_module_fork_child(void)
{
   for (UInt i = 0; i < nmodules; i++) modules[i]->written = False;
   if (unknown_module) unknown_module->written = False;
   hp_cm_clear(&frames_written);
}

void hp_module_write(HpModule* m)
{
   if (m->written) return;
   m->written = True;
   hp_out_printf("M %u %s %lx %d ", m->id, m->build_id, (UWord)m->bias, m->system ? 1 : 0);
   hp_out_escaped(m->path);
   hp_out_puts("\n");
}

/* Y <module> <offset hex> <line> <file> <function>: the symbol of a frame, once. Valgrind's
 * caller frames are return address - 1, inside the call instruction, so they symbolise as
 * the call's line. */
void hp_frame_write_symbol(HpModule* m, Addr ip)
{
   ULong off = (ULong)(ip - m->bias);
   ULong before = frames_written.used;
   hp_cm_add(&frames_written, m->id, off, 1);
   if (frames_written.used == before) return;
   DiEpoch ep = VG_(current_DiEpoch)();
   const HChar* fn = NULL;
   const HChar* file = NULL;
   const HChar* dir = NULL;
   UInt line = 0;
   HChar fnbuf[1024];
   if (VG_(get_fnname)(ep, ip, &fn) && fn) {
      VG_(strncpy)(fnbuf, fn, sizeof fnbuf - 1);
      fnbuf[sizeof fnbuf - 1] = 0;
   } else {
      VG_(strcpy)(fnbuf, "-");
   }
   if (!VG_(get_filename_linenum)(ep, ip, &file, &dir, &line) || !file) {
      file = "-";
      line = 0;
   }
   hp_out_printf("Y %u %llx %u ", m->id, off, line);
   hp_out_escaped(file[0] ? file : "-");
   hp_out_puts(" ");
   hp_out_escaped(fnbuf[0] ? fnbuf : "-");
   hp_out_puts("\n");
}
