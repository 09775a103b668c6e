/*
 * stack_set.c - every thread's native stack of a process or a core.
 *
 * Each file-backed mapping is loaded once as a native module (its CFI
 * imported into SWU) at the load bias its mapping gives, grouped as
 * swstack groups them (module_layout.c): consecutive mappings of one path
 * within its segments are one module, and a file mapped at several places
 * is loaded at one of them.  The vDSO has no file: its image
 * is copied out of the target's memory.  Code a JIT registered for gdb is
 * read from each file's __jit_debug_descriptor list (sw_gdbjit_read), and
 * a runtime's code map published for debuggers (sw_remote_read,
 * stackwalk-remote(5)) gives its methods and its threads' Frame lists, as
 * swstack reads them.  Threads are walked with native frames and the
 * frame-pointer fallback, as swstack(1) walks them.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include "array_grow.h"
#include "module_layout.h"
#include "stack_set.h"
#include "regular_file.h"

#define STACK_SET_MAX_VDSO (4u << 20)   /* a vDSO is a few pages */
#define STACK_SET_MAX_MODULES 4096      /* files loaded as modules; the rest are not */
#define STACK_SET_MAX_JIT_LISTS 16      /* GDB JIT lists read: one per file that defines one */
#define JIT_DESCRIPTOR_SYMBOL "__jit_debug_descriptor"

struct loaded_module {
	char *path;
	uint64_t lo, hi;                /* the target addresses its mappings cover */
	uint64_t bias;
	sw_module *m;                   /* NULL when it could not be loaded */
	int registered;
	int duplicate;                  /* another mapping of the same file is the one loaded */
};

/* A GDB JIT list read from the target, and which of its objects' modules are in the map. */
struct jit_list {
	sw_gdbjit_list *list;
	unsigned char *registered;
};

struct swi_stack_set {
	struct swi_target t;
	sw_codemap *map;
	struct loaded_module *mods;
	size_t nmods, cap;
	struct jit_list jit[STACK_SET_MAX_JIT_LISTS];
	size_t njit;
	sw_remote *remote;              /* a runtime's published code map, or NULL */
	int remote_registered;
};

static sw_status core_thread(const void *t, unsigned i, sw_context *c, int *tid)
{ return sw_core_thread(t, i, c, tid); }
static sw_status core_file(const void *t, unsigned i, sw_mapped_file *f)
{ return sw_core_module(t, i, f); }
static sw_status core_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{ return sw_core_stack_bounds(t, sp, lo, hi); }
static sw_status proc_thread(const void *t, unsigned i, sw_context *c, int *tid)
{ return sw_process_thread(t, i, c, tid); }
static sw_status proc_file(const void *t, unsigned i, sw_mapped_file *f)
{ return sw_process_module(t, i, f); }
static sw_status proc_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{ return sw_process_stack_bounds(t, sp, lo, hi); }

uint64_t swi_core_vdso(const struct sw_core *core);

void swi_target_from_core(struct swi_target *t, const sw_core *core)
{
	*t = (struct swi_target){ sw_core_arch(core), sw_core_memory(core),
	                          sw_core_thread_count(core), sw_core_module_count(core),
	                          core_thread, core_file, core_bounds, core, swi_core_vdso(core) };
}

void swi_target_from_process(struct swi_target *t, const sw_process *proc, uint64_t vdso)
{
	*t = (struct swi_target){ sw_process_arch(proc), sw_process_memory(proc),
	                          sw_process_thread_count(proc), sw_process_module_count(proc),
	                          proc_thread, proc_file, proc_bounds, proc, vdso };
}

static struct loaded_module *add_module(swi_stack_set *s, const char *path, uint64_t lo,
                                        uint64_t hi)
{
	struct loaded_module *m;

	if (swi_array_grow((void **)&s->mods, &s->cap, s->nmods + 1, sizeof *s->mods) != SW_OK)
		return NULL;
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof *m);
	if (!(m->path = strdup(path)))
		return NULL;
	m->lo = lo;
	m->hi = hi;
	s->nmods++;
	return m;
}

/*
 * The load bias of an ELF file whose offset `off` is mapped at `start`
 * (the PT_LOAD segment holding `off` was linked at p_vaddr for p_offset),
 * and where its segments end at that bias.
 */
static int elf_bias(Elf *e, uint64_t start, uint64_t off, uint64_t *bias, uint64_t *load_end)
{
	uint64_t end = 0;
	int found = 0;
	size_t n;

	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t page_off;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr + ph.p_memsz > end && ph.p_vaddr + ph.p_memsz >= ph.p_vaddr)
			end = ph.p_vaddr + ph.p_memsz;
		page_off = ph.p_offset & ~(uint64_t)0xfff;
		if (!found && off >= page_off && off < ph.p_offset + (ph.p_filesz ? ph.p_filesz : 1)) {
			*bias = start - off - (ph.p_vaddr - ph.p_offset);
			found = 1;
		}
	}
	if (!found)
		return -1;
	*load_end = *bias + end;
	return 0;
}

static int file_bias(const char *path, uint64_t start, uint64_t off, uint64_t *bias,
                     uint64_t *load_end)
{
	int fd = swi_open_regular(path, NULL), rc;
	Elf *e;

	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	rc = elf_bias(e, start, off, bias, load_end);
	elf_end(e);
	close(fd);
	return rc;
}

/* Load and register one module; on failure it stays, unloaded, to name frames' modules. */
static void load_module(swi_stack_set *s, struct loaded_module *m, const void *image, size_t size)
{
	sw_arch arch = SW_ARCH_NONE;
	sw_status st;

	st = image ? sw_module_load_image(image, size, m->bias, &arch, &m->m)
	           : sw_module_load(m->path, m->bias, &arch, &m->m);
	if (st != SW_OK) {
		m->m = NULL;
		return;
	}
	if (arch != s->t.arch) {
		sw_module_free(m->m);
		m->m = NULL;
		return;
	}
	m->registered = sw_module_register(m->m, s->map) == SW_OK;
}

/* module_layout's bias callback: the file's program headers. */
static const char *layout_bias(void *arg, const char *path, uint64_t start, uint64_t offset,
                               uint64_t *bias, uint64_t *load_end)
{
	(void)arg;
	return file_bias(path, start, offset, bias, load_end) == 0 ? NULL : "no load segment";
}

static sw_status load_files(swi_stack_set *s)
{
	sw_mapped_file *files = calloc(s->t.files ? s->t.files : 1, sizeof *files);
	struct module_layout ml = { NULL, 0, NULL };
	size_t n = 0, count;

	if (!files)
		return SW_E_NOMEM;
	for (unsigned i = 0; i < s->t.files; i++)
		if (s->t.file(s->t.handle, i, &files[n]) == SW_OK)
			n++;
	if (swi_module_layout_build(&ml, files, n, STACK_SET_MAX_MODULES, layout_bias, NULL) != 0) {
		free(files);
		return SW_E_NOMEM;
	}
	/* Loaded once each module's extent is known, each file once. */
	for (size_t i = 0; i < ml.count; i++) {
		const struct layout_module *l = &ml.mods[i];
		struct loaded_module *m = add_module(s, l->path, l->lo, l->hi);

		if (!m)
			break;
		m->bias = l->bias;
		m->duplicate = l->duplicate;
		if (!l->duplicate && l->placed && !l->no_bias)
			load_module(s, m, NULL, 0);
	}
	count = ml.count;
	swi_module_layout_free(&ml);
	free(files);
	return s->nmods == count ? SW_OK : SW_E_NOMEM;
}

/* The vDSO: its mapping (or core segment) copied out and loaded as an image. */
static sw_status load_vdso(swi_stack_set *s)
{
	uint64_t lo, hi, bias, load_end;
	unsigned char *image;
	struct loaded_module *m;
	sw_status st = SW_OK;
	Elf *e;

	if (!s->t.vdso || s->t.bounds(s->t.handle, s->t.vdso, &lo, &hi) != SW_OK ||
	    hi - s->t.vdso > STACK_SET_MAX_VDSO)
		return SW_OK;
	hi -= s->t.vdso;
	if (!(image = malloc(hi)))
		return SW_E_NOMEM;
	if (sw_memory_read(s->t.mem, s->t.vdso, image, hi) == SW_OK &&
	    (e = elf_memory((char *)image, hi)) != NULL) {
		if (elf_bias(e, s->t.vdso, 0, &bias, &load_end) == 0) {
			if ((m = add_module(s, "[vdso]", s->t.vdso, s->t.vdso + hi)) != NULL) {
				m->bias = bias;
				load_module(s, m, image, hi);
			} else {
				st = SW_E_NOMEM;
			}
		}
		elf_end(e);
	}
	free(image);
	return st;
}

/* The value of the defined symbol `name` in the ELF file `path` (dynamic symbols, then the table). */
static int file_symbol(const char *path, const char *name, uint64_t *value)
{
	int fd = swi_open_regular(path, NULL), rc = -1;
	Elf *e;

	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	for (int pass = 0; e && pass < 2 && rc != 0; pass++) {
		for (Elf_Scn *scn = NULL; rc != 0 && (scn = elf_nextscn(e, scn)) != NULL;) {
			Elf_Data *d;
			GElf_Shdr sh;
			GElf_Sym sym;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM) ||
			    sh.sh_entsize == 0 || !(d = elf_getdata(scn, NULL)))
				continue;
			for (size_t i = 1; i < sh.sh_size / sh.sh_entsize && gelf_getsym(d, (int)i, &sym); i++) {
				const char *n = elf_strptr(e, sh.sh_link, sym.st_name);

				if (sym.st_shndx != SHN_UNDEF && n && strcmp(n, name) == 0) {
					*value = sym.st_value;
					rc = 0;
					break;
				}
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

/*
 * Every loaded file that defines __jit_debug_descriptor has a list: its
 * objects join the map.  A list that cannot be read, or an object that
 * cannot be loaded or overlaps code already registered, is left out: the
 * walk then stops in that code with its reason, as without the list.
 */
static sw_status load_jit_lists(swi_stack_set *s)
{
	for (size_t i = 0; i < s->nmods && s->njit < STACK_SET_MAX_JIT_LISTS; i++) {
		const struct loaded_module *m = &s->mods[i];
		struct jit_list *j = &s->jit[s->njit];
		const sw_gdbjit_object *o;
		uint64_t value;
		size_t n = 0;

		if (!m->m || m->duplicate || m->path[0] == '[' ||
		    file_symbol(m->path, JIT_DESCRIPTOR_SYMBOL, &value) != 0)
			continue;
		if (sw_gdbjit_read(s->t.mem, s->t.arch, m->bias + value, 0, &j->list) == SW_E_NOMEM)
			return SW_E_NOMEM;
		if (!j->list)
			continue;
		s->njit++;
		sw_gdbjit_list_objects(j->list, &o, &n);
		if (n && !(j->registered = calloc(n, 1)))
			return SW_E_NOMEM;
		for (size_t k = 0; k < n; k++)
			j->registered[k] = o[k].module && sw_module_register(o[k].module, s->map) == SW_OK;
	}
	return SW_OK;
}

/*
 * The first loaded file that defines SW_REMOTE_SYMBOL holds a runtime's
 * published code map: its methods join the map (walked by their SWU),
 * its threads' Frame heads the walks.  A snapshot that cannot be read
 * (nothing published, torn under every retry, corrupt) leaves the walks
 * stopping in that code with their reason, as without it.
 */
static sw_status load_published(swi_stack_set *s)
{
	for (size_t i = 0; i < s->nmods; i++) {
		const struct loaded_module *m = &s->mods[i];
		uint64_t value;
		sw_status st;

		if (!m->m || m->duplicate || m->path[0] == '[' ||
		    file_symbol(m->path, SW_REMOTE_SYMBOL, &value) != 0)
			continue;
		st = sw_remote_read(s->t.mem, s->t.arch, m->bias + value, &s->remote);
		if (st != SW_OK) {
			s->remote = NULL;
			return st == SW_E_NOMEM ? st : SW_OK;
		}
		s->remote_registered = sw_remote_register(s->remote, s->map) == SW_OK;
		return SW_OK;
	}
	return SW_OK;
}

void swi_stack_set_close(swi_stack_set *s)
{
	if (!s)
		return;
	if (s->remote_registered)
		sw_remote_unregister(s->remote, s->map);
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i].registered)
			sw_module_unregister(s->mods[i].m, s->map);
	for (size_t i = 0; i < s->njit; i++) {
		const sw_gdbjit_object *o;
		size_t n = 0;

		sw_gdbjit_list_objects(s->jit[i].list, &o, &n);
		for (size_t k = 0; k < n && s->jit[i].registered; k++)
			if (s->jit[i].registered[k])
				sw_module_unregister(o[k].module, s->map);
	}
	if (s->map)
		sw_codemap_synchronize(s->map);
	for (size_t i = 0; i < s->njit; i++) {
		sw_gdbjit_list_free(s->jit[i].list);
		free(s->jit[i].registered);
	}
	sw_remote_free(s->remote);
	for (size_t i = 0; i < s->nmods; i++) {
		sw_module_free(s->mods[i].m);
		free(s->mods[i].path);
	}
	free(s->mods);
	sw_codemap_destroy(s->map);
	free(s);
}

sw_status swi_stack_set_open(const struct swi_target *t, swi_stack_set **out)
{
	swi_stack_set *s;
	sw_status st;

	*out = NULL;
	if (t->arch == SW_ARCH_NONE || sw_arch_pointer_size(t->arch) == 0)
		return SW_E_UNSUPPORTED;
	if (!(s = calloc(1, sizeof *s)))
		return SW_E_NOMEM;
	s->t = *t;
	elf_version(EV_CURRENT);
	if ((st = sw_codemap_create(&s->map)) != SW_OK || (st = load_files(s)) != SW_OK ||
	    (st = load_vdso(s)) != SW_OK || (st = load_jit_lists(s)) != SW_OK ||
	    (st = load_published(s)) != SW_OK) {
		swi_stack_set_close(s);
		return st;
	}
	*out = s;
	return SW_OK;
}

static const struct loaded_module *module_at(const swi_stack_set *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (addr >= s->mods[i].lo && addr < s->mods[i].hi)
			return &s->mods[i];
	return NULL;
}

/* Name a frame: a return address is looked up one byte back, in its call. */
static void symbolize(const swi_stack_set *s, struct swi_frame *f, int exact)
{
	uint64_t addr = exact || f->pc == 0 ? f->pc : f->pc - 1, off;
	const struct loaded_module *m = module_at(s, addr);

	f->function = NULL;
	f->offset = 0;
	f->module = m ? m->path : NULL;
	if (m && m->m && sw_module_symbolize(m->m, addr, &f->function, &off) == SW_OK) {
		f->offset = off + (f->pc - addr);
		return;
	}
	f->function = NULL;
	/* A runtime's method, by the name it published. */
	if (!m && s->remote) {
		sw_remote_method rm;

		if (sw_remote_find(s->remote, addr, &rm) == SW_OK && rm.name) {
			f->function = rm.name;
			f->offset = f->pc - rm.start;
			return;
		}
	}
	/* Code in no mapped file: a JIT's, named by the objects it registered for gdb. */
	for (size_t i = 0; !m && i < s->njit; i++) {
		if (sw_gdbjit_list_symbolize(s->jit[i].list, addr, &f->function, &off) == SW_OK) {
			f->offset = off + (f->pc - addr);
			return;
		}
	}
	f->function = NULL;
}

/*
 * The seed is reported as INITIAL_NATIVE when nothing describes its code;
 * when it is then walked as a native frame after all, that second report
 * is the same frame and is dropped (as swstack does).
 */
sw_status swi_stack_set_walk(swi_stack_set *s, unsigned index, sw_context *ctx, int *tid,
                             struct swi_frame *frames, size_t max, size_t *count,
                             sw_status *walk_status)
{
	unsigned flags = SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK |
	                 SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT;
	uint64_t lo = 0, hi = 0;
	int rc = 0, seen_seed = 0;
	sw_walk_error err;
	sw_thread th;
	sw_status st;
	sw_iter it;

	*count = 0;
	*walk_status = SW_OK;
	if ((st = s->t.thread(s->t.handle, index, ctx, tid)) != SW_OK)
		return st;
	/* A thread whose SP lies in no segment still has its first frame. */
	if (s->t.bounds(s->t.handle, sw_context_sp(ctx), &lo, &hi) != SW_OK) {
		lo = sw_context_sp(ctx);
		hi = lo + 1;
	}
	if ((st = sw_thread_init(&th, s->t.arch, s->map, s->t.mem, 0, lo, hi)) == SW_OK) {
		/* A handler on an alternate signal stack returns to a stack in another segment. */
		th.stack_bounds = s->t.bounds;
		th.stack_bounds_ctx = s->t.handle;
	}
	/* A thread the runtime published: its Frame list leads the walk through its stubs. */
	if (st == SW_OK && s->remote) {
		sw_remote_thread rt;

		if (sw_remote_thread_find(s->remote, (uint64_t)*tid, &rt) == SW_OK) {
			th.frame_head = rt.frame_head;
			th.exception_head = rt.exception_head;
		}
	}
	if (st != SW_OK || (st = sw_iter_init(&it, &th, ctx, 0, flags)) != SW_OK) {
		*walk_status = st;
		return SW_OK;
	}
	while (*count < max && (rc = sw_iter_next(&it)) == 1) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);
		sw_frame_state state = sw_crawl_frame_state(cf);
		struct swi_frame *f = &frames[*count];

		if (state != SW_STATE_NATIVE_FRAME && state != SW_STATE_INITIAL_NATIVE &&
		    state != SW_STATE_FRAMELESS)
			continue;
		if (state == SW_STATE_INITIAL_NATIVE) {
			seen_seed = 1;
		} else if (seen_seed && sw_crawl_frame_is_first(cf)) {
			seen_seed = 0;
			continue;
		}
		f->pc = sw_context_ip(&sw_crawl_frame_regdisplay(cf)->cur);
		symbolize(s, f, state == SW_STATE_INITIAL_NATIVE || sw_crawl_frame_is_first(cf) ||
		                sw_crawl_frame_is_interrupted(cf));
		(*count)++;
	}
	if (*count < max && rc < 0) {
		sw_iter_error(&it, &err);
		*walk_status = err.status;
	}
	sw_iter_end(&it);
	return SW_OK;
}
