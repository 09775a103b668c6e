/*
 * names.c - sw_names: symbols, source lines and inline chains of code
 * addresses, read by elfutils' libdwfl and libdw (names.h).
 *
 * libdwfl does what a symbolizer must do as gdb does it, and this file
 * only drives it: it finds the separate debug file of a module (build-id,
 * .gnu_debuglink with its CRC, debuginfod when DEBUGINFOD_URLS is set),
 * reads MiniDebugInfo's symbols, maps loaded addresses to modules, and
 * gives the line table and the DWARF scopes at an address.  The names
 * the frames get follow eu-stack -i: a scope's linkage name (through
 * DW_AT_abstract_origin and DW_AT_specification) demangled, else its
 * DW_AT_name; the innermost frame's line from the line table, each
 * caller's from the inlined call's DW_AT_call_file and DW_AT_call_line.
 */
#include <config.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stackwalk/names.h>
#include "demangled.h"
#include "scope_index.h"

struct sw_names {
	Dwfl *dwfl;
	Dwfl_Callbacks callbacks;       /* libdwfl keeps a pointer to it */
	char *debug_dirs;               /* callbacks.debuginfo_path points here */
	struct swi_demangled demangled;
	struct swi_scope_units *scopes;     /* the units named so far, indexed by address */
	Elf *core;                      /* sw_names_add_core's, open while its modules are */
	int core_fd;
};

static const char default_debug_dirs[] = ":.debug:/usr/lib/debug";

/*
 * A module's ELF file, for modules reported without one: a core's (its
 * NT_FILE notes name each file; a file whose build-id differs from the
 * one the core saw is not taken), and a process's (its maps name each
 * file; the vDSO is read from its memory).
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
	int fd = dwfl_build_id_find_elf(mod, userdata, name, base, file_name, elfp);

	if (fd >= 0 || *elfp)
		return fd;
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

sw_status sw_names_create(const char *debug_dirs, sw_names **out)
{
	sw_names *n;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!(n = calloc(1, sizeof *n)))
		return SW_E_NOMEM;
	if (!(n->debug_dirs = strdup(debug_dirs ? debug_dirs : default_debug_dirs)) ||
	    !(n->scopes = swi_scope_units_create())) {
		free(n->debug_dirs);
		free(n);
		return SW_E_NOMEM;
	}
	/* Modules added by path need no find_elf; a core's and a process's do. */
	n->core_fd = -1;
	n->callbacks.find_elf = find_elf;
	n->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
	n->callbacks.section_address = dwfl_offline_section_address;
	n->callbacks.debuginfo_path = &n->debug_dirs;
	if (!(n->dwfl = dwfl_begin(&n->callbacks))) {
		swi_scope_units_free(n->scopes);
		free(n->debug_dirs);
		free(n);
		return SW_E_NOMEM;
	}
	*out = n;
	return SW_OK;
}

void sw_names_free(sw_names *n)
{
	if (!n)
		return;
	/* The index refers to the units of the modules dwfl_end frees: it goes first. */
	swi_scope_units_free(n->scopes);
	dwfl_end(n->dwfl);
	if (n->core)
		elf_end(n->core);
	if (n->core_fd >= 0)
		close(n->core_fd);
	swi_demangled_free(&n->demangled);
	free(n->debug_dirs);
	free(n);
}

sw_status sw_names_add_module(sw_names *n, const char *path, uint64_t load_bias)
{
	Dwfl_Module *mod;

	if (!n || !path)
		return SW_E_INVAL;
	dwfl_report_begin_add(n->dwfl);
	/* add_p_vaddr: `load_bias` is added to the segments' addresses, as
	 * sw_module_load adds it, rather than being where the first one lies. */
	mod = dwfl_report_elf(n->dwfl, path, path, -1, load_bias, true);
	dwfl_report_end(n->dwfl, NULL, NULL);
	return mod ? SW_OK : SW_E_NOTFOUND;
}

sw_status sw_names_add_process(sw_names *n, int pid)
{
	int rc;

	if (!n || pid <= 0)
		return SW_E_INVAL;
	dwfl_report_begin_add(n->dwfl);
	rc = dwfl_linux_proc_report(n->dwfl, pid);
	dwfl_report_end(n->dwfl, NULL, NULL);
	return rc == 0 ? SW_OK : SW_E_NOTFOUND;
}

sw_status sw_names_add_core(sw_names *n, const char *core, const char *executable)
{
	int rc;

	if (!n || !core)
		return SW_E_INVAL;
	if (n->core)
		return SW_E_EXISTS;
	if ((n->core_fd = open(core, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
		return SW_E_NOTFOUND;
	elf_version(EV_CURRENT);
	if (!(n->core = elf_begin(n->core_fd, ELF_C_READ_MMAP, NULL)) || elf_kind(n->core) != ELF_K_ELF) {
		if (n->core)
			elf_end(n->core);
		n->core = NULL;
		close(n->core_fd);
		n->core_fd = -1;
		return SW_E_NOTFOUND;
	}
	dwfl_report_begin_add(n->dwfl);
	rc = dwfl_core_file_report(n->dwfl, n->core, executable);
	dwfl_report_end(n->dwfl, NULL, NULL);
	return rc >= 0 ? SW_OK : SW_E_BADMETA;
}

const char *sw_names_demangle(sw_names *n, const char *name)
{
	const char *d;

	if (!n || !name)
		return name;
	d = swi_demangled_get(&n->demangled, name);
	return d ? d : name;    /* out of memory: the raw name is still a name */
}

/* A scope's name as eu-stack takes it: its linkage name, else its name. */
static const char *scope_raw_name(Dwarf_Die *scope)
{
	Dwarf_Attribute a;
	const char *s = dwarf_formstring(dwarf_attr_integrate(scope, DW_AT_linkage_name, &a));

	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(scope, DW_AT_MIPS_linkage_name, &a));
	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(scope, DW_AT_name, &a));
	return s;
}

static unsigned scope_udata(Dwarf_Die *scope, unsigned name)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_formudata(dwarf_attr(scope, name, &a), &w) != 0 || w > 0xffffffffu)
		return 0;
	return (unsigned)w;
}

/* Where an inlined call was made: its caller's file, line and column. */
static void call_site(Dwarf_Die *inlined, sw_name_frame *caller)
{
	Dwarf_Attribute a;
	Dwarf_Word index;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;

	caller->file = NULL;
	caller->line = scope_udata(inlined, DW_AT_call_line);
	caller->column = scope_udata(inlined, DW_AT_call_column);
	/* The file index is the line table's of the unit that holds the DIE. */
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &a), &index) == 0 &&
	    dwarf_diecu(inlined, &cu, NULL, NULL) != NULL &&
	    dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && index < nfiles)
		caller->file = dwarf_filesrc(files, index, NULL, NULL);
}

/*
 * The compile unit holding `address`.  libdw looks it up in
 * .debug_aranges, and takes a unit missing there as covering nothing;
 * clang and rustc emit none by default (elfutils bug 22288).  So when
 * that finds nothing, each unit's own ranges are asked, as gdb does.
 */
static Dwarf_Die *unit_at(Dwfl_Module *mod, uint64_t address, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mod, address, bias);

	if (cu)
		return cu;
	while ((cu = dwfl_module_nextcu(mod, cu, bias)) != NULL)
		if (dwarf_haspc(cu, address - *bias) == 1)
			return cu;
	return NULL;
}

/* The line table's file, line and column at `address`, in unit `cu` (NULL: none found). */
static void line_at(Dwarf_Die *cu, Dwarf_Addr bias, uint64_t address, sw_name_frame *f)
{
	Dwarf_Line *l = cu ? dwarf_getsrc_die(cu, address - bias) : NULL;
	int line = 0, column = 0;

	f->file = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
	if (f->file && (dwarf_lineno(l, &line) != 0 || dwarf_linecol(l, &column) != 0))
		line = column = 0;
	f->line = f->file && line > 0 ? (unsigned)line : 0;
	f->column = f->file && column > 0 ? (unsigned)column : 0;
}

static void put_frame(sw_name *out, sw_name_frame *frames, size_t max, const sw_name_frame *f)
{
	if (out->frames < max)
		frames[out->frames] = *f;
	out->frames++;
}

/*
 * The source-level frames at `address`: the function scopes there,
 * innermost first, up to the first that is not inlined (the function
 * that holds the code), from the unit's index where it has one.
 */
static void scope_frames(sw_names *n, Dwfl_Module *mod, uint64_t address, sw_name *out,
                         sw_name_frame *frames, size_t max)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = unit_at(mod, address, &bias);
	struct swi_scope_chain chain;
	sw_name_frame f;

	chain.n = 0;
	if (cu && swi_scope_chain(n->scopes, cu, address - bias, &chain) == 0)
		swi_scope_chain_libdw(cu, address - bias, &chain);
	memset(&f, 0, sizeof f);
	line_at(cu, bias, address, &f);
	for (size_t i = 0; i < chain.n; i++) {
		sw_name_frame caller;

		f.raw = scope_raw_name(&chain.die[i]);
		f.inlined = dwarf_tag(&chain.die[i]) == DW_TAG_inlined_subroutine;
		if (!f.raw && !f.inlined)
			f.raw = out->symbol;    /* a function DIE without a name */
		f.function = sw_names_demangle(n, f.raw);
		put_frame(out, frames, max, &f);
		if (!f.inlined)
			break;
		memset(&caller, 0, sizeof caller);
		call_site(&chain.die[i], &caller);
		f = caller;
	}
	/* No DWARF function here: the symbol is the one frame there is. */
	if (out->frames == 0 && (out->symbol || f.file)) {
		f.raw = out->symbol;
		f.function = out->symbol_demangled;
		f.inlined = 0;
		put_frame(out, frames, max, &f);
	}
}

/* The module holding `address` and its ELF symbol there, into *out (the rest 0). */
static Dwfl_Module *symbol_at(sw_names *n, uint64_t address, sw_name *out)
{
	Dwfl_Module *mod;
	GElf_Off off;
	GElf_Sym sym;

	memset(out, 0, sizeof *out);
	if (!(mod = dwfl_addrmodule(n->dwfl, address)))
		return NULL;
	out->module = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	out->symbol = dwfl_module_addrinfo(mod, address, &off, &sym, NULL, NULL, NULL);
	if (out->symbol) {
		out->symbol_demangled = sw_names_demangle(n, out->symbol);
		out->offset = off;
		out->symbol_start = address - off;
	}
	return mod;
}

sw_status sw_names_lookup(sw_names *n, uint64_t address, sw_name *out, sw_name_frame *frames,
                          size_t max)
{
	Dwfl_Module *mod;

	if (!n || !out || (max && !frames))
		return SW_E_INVAL;
	if (!(mod = symbol_at(n, address, out)))
		return SW_E_NOTFOUND;
	scope_frames(n, mod, address, out, frames, max);
	return SW_OK;
}

/*
 * The symbol tables only: libdwfl finds the separate debug file for its
 * .symtab (dwfl_module_getsymtab) but opens no DWARF, so a compressed
 * debug file is not inflated.
 */
sw_status sw_names_symbol(sw_names *n, uint64_t address, sw_name *out, const char **debug_file)
{
	Dwfl_Module *mod;

	if (debug_file)
		*debug_file = NULL;
	if (!n || !out)
		return SW_E_INVAL;
	if (!(mod = symbol_at(n, address, out)))
		return SW_E_NOTFOUND;
	if (debug_file) {
		const char *main_file = NULL, *debug = NULL;

		/* Reads the symbols, which looks for the debug file, if no lookup did yet. */
		dwfl_module_getsymtab(mod);
		dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &main_file, &debug);
		*debug_file = debug && (!main_file || strcmp(debug, main_file) != 0) ? debug : NULL;
	}
	return SW_OK;
}
