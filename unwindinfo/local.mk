# SWU: the per-method unwind metadata (encoder, decoder, validator, dumper),
# the swdump tool, its tests and its manual pages.

lib_libsw_unwindinfo_la_SOURCES += \
	unwindinfo/swu_format.h \
	unwindinfo/swu_format.c \
	unwindinfo/swu_state.h \
	unwindinfo/swu_state.c \
	unwindinfo/builder.c \
	unwindinfo/decoder.c \
	unwindinfo/swu_parent_slots.h \
	unwindinfo/swu_parent_slots.c \
	unwindinfo/swu_eh_format.h \
	unwindinfo/swu_eh.c \
	unwindinfo/dump.c

bin_PROGRAMS += examples/swdump
examples_swdump_SOURCES = examples/swdump.c \
	examples/tool_options.c examples/tool_options.h
examples_swdump_LDADD = libstackwalk.la

check_PROGRAMS += tests/check_swu
TESTS += tests/check_swu
tests_check_swu_SOURCES = tests/check_swu.c tests/rounds.h
tests_check_swu_CFLAGS = $(TEST_CFLAGS)
tests_check_swu_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/check_swu_eh
TESTS += tests/check_swu_eh
tests_check_swu_eh_SOURCES = tests/check_swu_eh.c tests/eh_clauses.h
tests_check_swu_eh_CFLAGS = $(TEST_CFLAGS)
tests_check_swu_eh_LDADD = $(TEST_LIBS)

# swdump's output on a known blob (runs ./examples/swdump from the build dir).
TESTS += tests/swdump.test tests/swdump-gc.test tests/swdump-eh.test
EXTRA_DIST += tests/swdump.test tests/swdump-gc.test tests/swdump-eh.test

dist_man_MANS += \
	man/swu.5 \
	man/swdump.1 \
	man/sw_swu_builder.3 \
	man/sw_swu_decode.3 \
	man/sw_swu_builder_create.3 \
	man/sw_swu_builder_destroy.3 \
	man/sw_swu_builder_reset.3 \
	man/sw_swu_push_reg.3 \
	man/sw_swu_alloc_stack.3 \
	man/sw_swu_set_frame.3 \
	man/sw_swu_save_reg.3 \
	man/sw_swu_end_prolog.3 \
	man/sw_swu_epilog_begin.3 \
	man/sw_swu_free_stack.3 \
	man/sw_swu_restore_sp_from_frame.3 \
	man/sw_swu_pop_reg.3 \
	man/sw_swu_restore_reg.3 \
	man/sw_swu_epilog_end.3 \
	man/sw_swu_finish.3 \
	man/sw_swu_decode_header.3 \
	man/sw_swu_validate.3 \
	man/sw_swu_dump.3 \
	man/sw_swu_push_reg_pair.3 \
	man/sw_swu_push_reg_sized.3 \
	man/sw_swu_save_reg_pair.3 \
	man/sw_swu_sign_return_address.3 \
	man/sw_swu_pop_reg_pair.3 \
	man/sw_swu_pop_reg_sized.3 \
	man/sw_swu_restore_reg_pair.3 \
	man/sw_swu_auth_return_address.3 \
	man/sw_swu_push_args.3 \
	man/sw_swu_pop_args.3 \
	man/sw_swu_call_pops_args.3 \
	man/sw_swu_decode_return_address.3 \
	man/sw_swu_gc_stack_slot.3 \
	man/sw_swu_psp_slot.3 \
	man/sw_swu_gc_register.3 \
	man/sw_swu_gc_live.3 \
	man/sw_swu_eh.3 \
	man/sw_swu_eh_clause.3 \
	man/sw_swu_eh_clauses.3 \
	man/sw_swu_eh_covering.3 \
	man/sw_swu_eh_handler_at.3 \
	man/sw_codemap_check_eh.3
