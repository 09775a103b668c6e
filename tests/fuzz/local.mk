# Fuzz targets (tests/fuzz/README).  Each target is one file defining
# LLVMFuzzerTestOneInput; it builds two ways:
#
#  - `make check` links it with tests/fuzz/standalone_main.c (any compiler,
#    plus the sanitizers in a --enable-sanitizers build): it replays
#    tests/fuzz/corpus/TARGET/ and runs a few seconds of random inputs.
#  - `make fuzz` builds real libFuzzer binaries in fuzz/ with clang
#    -fsanitize=fuzzer,address,undefined, compiling the library's sources
#    directly (instrumented for coverage) into fuzz/libstackwalk-fuzz.a,
#    whatever compiler the tree itself is configured with.  `make fuzz-run`
#    runs each for FUZZ_SECONDS, new inputs going to fuzz/corpus/TARGET/.
#
# Adding a target: its file, one FUZZ_TARGETS line, and (for make check)
# its three-line standalone stanza below.

FUZZ_TARGETS = fuzz_swu_decode
FUZZ_TARGETS += fuzz_walk_mutated
FUZZ_TARGETS += fuzz_synth_diff
FUZZ_TARGETS += fuzz_frames
FUZZ_TARGETS += fuzz_elf_import
FUZZ_TARGETS += fuzz_core
FUZZ_TARGETS += fuzz_remote
FUZZ_TARGETS += fuzz_gdbjit_read
FUZZ_TARGETS += fuzz_dispatch
FUZZ_TARGETS += fuzz_module_layout
FUZZ_TARGETS += fuzz_scope_index

# ---- make check: the standalone replays --------------------------------
FUZZ_STANDALONE = tests/fuzz/standalone_main.c tests/fuzz/fuzz.h
FUZZ_STANDALONE_LDADD = libstackwalk_elf.la -lpthread

check_PROGRAMS += tests/fuzz/fuzz_swu_decode
tests_fuzz_fuzz_swu_decode_SOURCES = tests/fuzz/fuzz_swu_decode.c tests/eh_clauses.h $(FUZZ_STANDALONE)
tests_fuzz_fuzz_swu_decode_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_walk_mutated
tests_fuzz_fuzz_walk_mutated_SOURCES = tests/fuzz/fuzz_walk_mutated.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_walk_mutated_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_synth_diff
tests_fuzz_fuzz_synth_diff_SOURCES = tests/fuzz/fuzz_synth_diff.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_synth_diff_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_frames
tests_fuzz_fuzz_frames_SOURCES = tests/fuzz/fuzz_frames.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_frames_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_elf_import
tests_fuzz_fuzz_elf_import_SOURCES = tests/fuzz/fuzz_elf_import.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_elf_import_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_core
tests_fuzz_fuzz_core_SOURCES = tests/fuzz/fuzz_core.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_core_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_remote
tests_fuzz_fuzz_remote_SOURCES = tests/fuzz/fuzz_remote.c tests/fuzz/remote_target.h $(FUZZ_STANDALONE)
tests_fuzz_fuzz_remote_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_gdbjit_read
tests_fuzz_fuzz_gdbjit_read_SOURCES = tests/fuzz/fuzz_gdbjit_read.c tests/gdbjit_object.h $(FUZZ_STANDALONE)
tests_fuzz_fuzz_gdbjit_read_LDADD = $(FUZZ_STANDALONE_LDADD)

check_PROGRAMS += tests/fuzz/fuzz_dispatch
tests_fuzz_fuzz_dispatch_SOURCES = tests/fuzz/fuzz_dispatch.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_dispatch_LDADD = $(FUZZ_STANDALONE_LDADD)

# The grouping of mapped files into modules (lib/target/module_layout.c).
check_PROGRAMS += tests/fuzz/fuzz_module_layout
tests_fuzz_fuzz_module_layout_SOURCES = tests/fuzz/fuzz_module_layout.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_module_layout_LDADD = $(FUZZ_STANDALONE_LDADD)

# The names' scope index against libdw (lib/names/scope_index.c).
check_PROGRAMS += tests/fuzz/fuzz_scope_index
tests_fuzz_fuzz_scope_index_SOURCES = tests/fuzz/fuzz_scope_index.c $(FUZZ_STANDALONE)
tests_fuzz_fuzz_scope_index_CPPFLAGS = $(AM_CPPFLAGS) $(SW_INC_names) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_fuzz_fuzz_scope_index_LDADD = $(FUZZ_STANDALONE_LDADD) $(LIBDW_LIBS) $(LIBELF_LIBS)

TESTS += tests/fuzz/fuzz_swu_decode tests/fuzz/fuzz_walk_mutated tests/fuzz/fuzz_synth_diff \
	tests/fuzz/fuzz_frames tests/fuzz/fuzz_elf_import tests/fuzz/fuzz_core tests/fuzz/fuzz_remote \
	tests/fuzz/fuzz_gdbjit_read tests/fuzz/fuzz_dispatch tests/fuzz/fuzz_module_layout \
	tests/fuzz/fuzz_scope_index
EXTRA_DIST += tests/fuzz/README tests/fuzz/corpus tests/fuzz/make_scope_seeds.sh
CLEANFILES += fuzz_*-crash.bin

# ---- make fuzz: libFuzzer binaries --------------------------------------
FUZZ_CC = clang
FUZZ_SANITIZE = address,undefined
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_CPPFLAGS = $(SW_INC_all) \
	$(LIBELF_CFLAGS) $(LIBDW_CFLAGS) $(CAPSTONE_CFLAGS)
FUZZ_LIBS = $(LIBDW_LIBS) $(LIBELF_LIBS) $(CAPSTONE_LIBS) -lpthread
FUZZ_SECONDS = 600

# The library, instrumented for coverage, once for every target.
fuzz/libstackwalk-fuzz.a: $(SW_CORE_FILES) $(SW_ELF_FILES) config.h
	$(AM_V_at)rm -rf fuzz/obj && $(MKDIR_P) fuzz/obj
	$(AM_V_GEN)for f in $(SW_CORE_FILES) $(SW_ELF_FILES); do \
	  case $$f in *.c) ;; *) continue ;; esac; \
	  o=fuzz/obj/`echo "$$f" | sed 's|/|_|g; s|\.c$$|.o|'`; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SANITIZE) \
	    -DSW_BUILDING_LIBRARY $(FUZZ_CPPFLAGS) -c -o "$$o" "$(srcdir)/$$f" || exit 1; \
	done
	$(AM_V_at)rm -f $@ && $(AR) cr $@ fuzz/obj/*.o

fuzz: fuzz/libstackwalk-fuzz.a
	@for t in $(FUZZ_TARGETS); do \
	  echo "  FUZZ     fuzz/$$t"; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SANITIZE) $(FUZZ_CPPFLAGS) -I$(srcdir)/examples \
	    -o fuzz/$$t $(srcdir)/tests/fuzz/$$t.c fuzz/libstackwalk-fuzz.a $(FUZZ_LIBS) || exit 1; \
	done

# Each target for FUZZ_SECONDS (one after the other), from the committed corpus.
fuzz-run: fuzz
	@for t in $(FUZZ_TARGETS); do \
	  $(MKDIR_P) fuzz/corpus/$$t && \
	  ./fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
	    fuzz/corpus/$$t $(srcdir)/tests/fuzz/corpus/$$t || exit 1; \
	done

clean-local: fuzz-clean
fuzz-clean:
	-rm -rf fuzz
.PHONY: fuzz fuzz-run fuzz-clean
